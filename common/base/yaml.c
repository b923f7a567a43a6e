/*
 * yaml - the one YAML reader.  It runs libyaml's event parser (not its
 * loader, which forgets whether a tag was written) and writes JSON text as
 * it goes, so quoting decides between string and number exactly as YAML
 * 1.2's core schema says.  Choosing YAML or JSON for a file is yaml_read.c.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/yaml.h"

/*
 * Alias expansion is capped three ways, so a few hundred bytes of nested
 * aliases cannot become gigabytes: the JSON of one document (the caller's
 * max_doc: decoctl's 1 MiB, as a resource over it is refused anyway; a
 * kubeconfig's 4 MiB), the aliases one document expands, and the bytes
 * kept for anchors (four documents' worth).
 */
#define YAML_MAX_ALIASES 10000
#define TAG_PREFIX "tag:yaml.org,2002:"

struct anchor {
	char *name;
	char *json;
};

struct yconv {
	yaml_parser_t p;
	struct anchor *anchors;
	size_t nanchors;
	size_t anchor_bytes;	/* JSON kept for anchors */
	size_t aliases;		/* aliases expanded in this document */
	size_t max_doc;		/* JSON bytes one document may become */
	int numbers_as_text;	/* plain numbers stay strings, as written */
	int depth;
	struct yaml_error *e;
};

static void
set_error(struct yaml_error *e, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_error(struct yaml_error *e, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return;
	e->line = m ? (int)m->line + 1 : 0;
	e->column = m ? (int)m->column + 1 : 0;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

void
yaml_docs_free(struct yaml_docs *docs)
{
	for (size_t i = 0; i < docs->n; i++)
		free(docs->v[i].json);
	free(docs->v);
	docs->v = NULL;
	docs->n = 0;
}

void
yaml_docs_add(struct yaml_docs *docs, char *json, int line)
{
	docs->v = xrealloc(docs->v, (docs->n + 1) * sizeof(*docs->v));
	docs->v[docs->n].json = json;
	docs->v[docs->n].line = line;
	docs->n++;
}

/* --- core schema ------------------------------------------------------ */

static int
eq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

static int
is_null(const char *s, size_t len)
{
	return len == 0 || eq(s, len, "~") || eq(s, len, "null") ||
	    eq(s, len, "Null") || eq(s, len, "NULL");
}

/* is_bool - 1 true, 0 false, -1 not a boolean */
static int
is_bool(const char *s, size_t len)
{
	if (eq(s, len, "true") || eq(s, len, "True") || eq(s, len, "TRUE"))
		return 1;
	if (eq(s, len, "false") || eq(s, len, "False") || eq(s, len, "FALSE"))
		return 0;
	return -1;
}

static int
all_in(const char *s, size_t len, const char *set)
{
	if (len == 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (strchr(set, s[i]) == NULL || s[i] == '\0')
			return 0;
	return 1;
}

#define DIGITS "0123456789"

/* is_special_float - .inf, -.inf, .nan and their spellings */
static int
is_special_float(const char *s, size_t len)
{
	if (len > 0 && (s[0] == '+' || s[0] == '-')) {
		s++;
		len--;
		if (eq(s, len, ".nan") || eq(s, len, ".NaN") || eq(s, len, ".NAN"))
			return 0;
	}
	return eq(s, len, ".inf") || eq(s, len, ".Inf") || eq(s, len, ".INF") ||
	    eq(s, len, ".nan") || eq(s, len, ".NaN") || eq(s, len, ".NAN");
}

/*
 * number_json - if s is a core-schema int or float, append its JSON form
 * to out and return 1; else 0.
 */
static int
number_json(const char *s, size_t len, struct buf *out)
{
	size_t i = 0, ib, ie, fb = 0, fe = 0, eb = 0;
	int neg = 0, dot = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		unsigned long long v;
		char tmp[80];

		if (len > sizeof(tmp) - 1 ||
		    !all_in(s + 2, len - 2, s[1] == 'o' ? "01234567" :
		    DIGITS "abcdefABCDEF"))
			return 0;
		memcpy(tmp, s + 2, len - 2);
		tmp[len - 2] = '\0';
		errno = 0;
		v = strtoull(tmp, NULL, s[1] == 'o' ? 8 : 16);
		if (errno == ERANGE)
			return 0;
		buf_printf(out, "%llu", v);
		return 1;
	}
	if (i < len && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	ib = i;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	ie = i;
	if (i < len && s[i] == '.') {
		dot = 1;
		fb = ++i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		fe = i;
	}
	if (ie == ib && fe == fb)
		return 0;	/* no digits at all */
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		eb = ++i;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i == len || !all_in(s + i, len - i, DIGITS))
			return 0;
		i = len;
	}
	if (i != len)
		return 0;
	if (neg)
		buf_addc(out, '-');
	while (ib + 1 < ie && s[ib] == '0')
		ib++;	/* JSON allows no leading zeros */
	if (ib == ie)
		buf_addc(out, '0');
	else
		buf_add(out, s + ib, ie - ib);
	if (dot) {
		buf_addc(out, '.');
		if (fe == fb)
			buf_addc(out, '0');
		else
			buf_add(out, s + fb, fe - fb);
	}
	if (eb) {
		buf_addc(out, 'e');
		buf_add(out, s + eb, len - eb);
	}
	return 1;
}

/*
 * resolve_plain - append the JSON of a plain scalar by the core schema; a
 * number as the string it was written when numbers_as_text
 */
static void
resolve_plain(const char *s, size_t len, int numbers_as_text, struct buf *out)
{
	size_t before = out->len;
	int b;

	if (is_null(s, len))
		buf_adds(out, "null");
	else if ((b = is_bool(s, len)) >= 0)
		buf_adds(out, b ? "true" : "false");
	else if (!number_json(s, len, out))
		json_escape(out, s, len);
	else if (numbers_as_text) {
		out->len = before;	/* "0123", "0x1F", "1e3": the text, not 123, 31, 1e3 */
		json_escape(out, s, len);
	}
}

char *
yaml_scalar_json(const char *s, size_t len)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "");
	resolve_plain(s, len, 0, &b);
	return buf_steal(&b, NULL);
}

/* --- YAML to JSON ----------------------------------------------------- */

static int
next_event(struct yconv *c, yaml_event_t *ev)
{
	if (yaml_parser_parse(&c->p, ev))
		return 0;
	if (c->p.context != NULL)
		set_error(c->e, &c->p.problem_mark, "%s %s", c->p.problem ?
		    c->p.problem : "syntax error", c->p.context);
	else
		set_error(c->e, &c->p.problem_mark, "%s", c->p.problem ?
		    c->p.problem : "syntax error");
	return -1;
}

static void
anchor_add(struct yconv *c, const yaml_char_t *name, const char *json, size_t len)
{
	if (name == NULL)
		return;
	c->anchor_bytes += len;
	c->anchors = xrealloc(c->anchors, (c->nanchors + 1) * sizeof(*c->anchors));
	c->anchors[c->nanchors].name = xstrdup((const char *)name);
	c->anchors[c->nanchors].json = xstrndup(json, len);
	c->nanchors++;
}

static const char *
anchor_find(struct yconv *c, const yaml_char_t *name)
{
	for (size_t i = c->nanchors; i-- > 0;)
		if (strcmp(c->anchors[i].name, (const char *)name) == 0)
			return c->anchors[i].json;
	return NULL;
}

/* alias_json - the JSON an alias event stands for, counted against the cap; NULL with c->e set */
static const char *
alias_json(struct yconv *c, const yaml_event_t *ev)
{
	const char *a = anchor_find(c, ev->data.alias.anchor);

	if (a == NULL) {
		set_error(c->e, &ev->start_mark, "unknown alias *%s",
		    (const char *)ev->data.alias.anchor);
		return NULL;
	}
	if (++c->aliases > YAML_MAX_ALIASES) {
		set_error(c->e, &ev->start_mark, "more than %d aliases in one document",
		    YAML_MAX_ALIASES);
		return NULL;
	}
	return a;
}

static void
anchors_clear(struct yconv *c)
{
	for (size_t i = 0; i < c->nanchors; i++) {
		free(c->anchors[i].name);
		free(c->anchors[i].json);
	}
	free(c->anchors);
	c->anchors = NULL;
	c->nanchors = 0;
	c->anchor_bytes = 0;
	c->aliases = 0;
}

/* scalar_json - append the JSON of a scalar event's value */
static int
scalar_json(struct yconv *c, const yaml_event_t *ev, struct buf *out)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	size_t before = out->len;
	int b;

	if (tag != NULL && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0) {
		const char *t = tag + strlen(TAG_PREFIX);

		if (strcmp(t, "null") == 0 && is_null(s, len))
			buf_adds(out, "null");
		else if (strcmp(t, "bool") == 0 && (b = is_bool(s, len)) >= 0)
			buf_adds(out, b ? "true" : "false");
		else if ((strcmp(t, "int") == 0 || strcmp(t, "float") == 0) &&
		    number_json(s, len, out))
			;
		else if (strcmp(t, "str") == 0 || strcmp(t, "binary") == 0 ||
		    strcmp(t, "timestamp") == 0)
			json_escape(out, s, len);
		else {
			set_error(c->e, &ev->start_mark, "value \"%.40s\" does not fit tag !!%s",
			    s, t);
			return -1;
		}
	} else if (tag == NULL && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		resolve_plain(s, len, c->numbers_as_text, out);
	} else {
		json_escape(out, s, len);	/* quoted, block, or a local tag */
	}
	anchor_add(c, ev->data.scalar.anchor, out->data + before, out->len - before);
	return 0;
}

static int convert_node(struct yconv *c, yaml_event_t *ev, struct buf *out);

/* key_text - the JSON string for a mapping key event; -1 if not a scalar */
static int
key_text(struct yconv *c, yaml_event_t *ev, struct buf *key)
{
	const char *a;

	if (ev->type == YAML_SCALAR_EVENT) {
		json_escape(key, (const char *)ev->data.scalar.value, ev->data.scalar.length);
		anchor_add(c, ev->data.scalar.anchor, key->data, key->len);
		return 0;
	}
	if (ev->type == YAML_ALIAS_EVENT) {
		if ((a = alias_json(c, ev)) == NULL)
			return -1;
		if (a[0] == '"')
			buf_adds(key, a);
		else if (a[0] != '{' && a[0] != '[')
			json_escape(key, a, strlen(a));
		else
			goto complex;
		return 0;
	}
complex:
	set_error(c->e, &ev->start_mark, "a mapping key must be a scalar");
	return -1;
}

/*
 * keyset - the keys of one mapping, for the duplicate check: open
 * addressing over the keys array (a slot holds index + 1), so a mapping of
 * n keys costs O(n), not O(n^2) comparisons
 */
struct keyset {
	struct buf *keys;
	size_t n, cap;
	size_t *slot, nslot;	/* nslot a power of two, at most half used */
};

/* key_compares - strcmp calls of the duplicate check, for its unit test */
static unsigned long long key_compares;

unsigned long long
yaml_key_compares(void)
{
	return key_compares;
}

/* keyset_add - add key (taken over); 0, or -1 when it is there already */
static int
keyset_add(struct keyset *ks, struct buf *key)
{
	size_t i;

	if ((ks->n + 1) * 2 > ks->nslot) {
		size_t nn = ks->nslot ? ks->nslot * 2 : 16;
		size_t *ns = xcalloc(nn, sizeof(*ns));

		for (size_t k = 0; k < ks->n; k++) {
			for (i = str_hash(ks->keys[k].data) & (nn - 1); ns[i]; i = (i + 1) & (nn - 1))
				;
			ns[i] = k + 1;
		}
		free(ks->slot);
		ks->slot = ns;
		ks->nslot = nn;
	}
	for (i = str_hash(key->data) & (ks->nslot - 1); ks->slot[i];
	    i = (i + 1) & (ks->nslot - 1))
		if (key_compares++, strcmp(ks->keys[ks->slot[i] - 1].data, key->data) == 0)
			return -1;
	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? ks->cap * 2 : 8;
		ks->keys = xrealloc(ks->keys, ks->cap * sizeof(*ks->keys));
	}
	ks->keys[ks->n++] = *key;
	ks->slot[i] = ks->n;
	return 0;
}

static void
keyset_free(struct keyset *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		buf_free(&ks->keys[i]);
	free(ks->keys);
	free(ks->slot);
}

static int
convert_mapping(struct yconv *c, yaml_event_t *start, struct buf *out)
{
	struct keyset ks = { 0 };
	size_t begin = out->len;
	yaml_event_t ev;
	int rc = -1;

	buf_addc(out, '{');
	for (;;) {
		struct buf key;
		yaml_mark_t mark;

		if (next_event(c, &ev) < 0)
			goto out;
		if (ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		buf_init(&key);
		buf_adds(&key, "");
		mark = ev.start_mark;
		rc = key_text(c, &ev, &key);
		yaml_event_delete(&ev);
		if (rc < 0) {
			buf_free(&key);
			goto out;
		}
		rc = -1;
		if (ks.n)
			buf_addc(out, ',');
		buf_add(out, key.data, key.len);
		buf_addc(out, ':');
		if (keyset_add(&ks, &key) < 0) {
			set_error(c->e, &mark, "duplicate key %s", key.data);
			buf_free(&key);
			goto out;
		}
		if (next_event(c, &ev) < 0)
			goto out;
		rc = convert_node(c, &ev, out);
		yaml_event_delete(&ev);
		if (rc < 0)
			goto out;
		rc = -1;
	}
	buf_addc(out, '}');
	anchor_add(c, start->data.mapping_start.anchor, out->data + begin, out->len - begin);
	rc = 0;
out:
	keyset_free(&ks);
	return rc;
}

static int
convert_sequence(struct yconv *c, yaml_event_t *start, struct buf *out)
{
	size_t begin = out->len;
	yaml_event_t ev;
	int first = 1;

	buf_addc(out, '[');
	for (;;) {
		int rc;

		if (next_event(c, &ev) < 0)
			return -1;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (!first)
			buf_addc(out, ',');
		first = 0;
		rc = convert_node(c, &ev, out);
		yaml_event_delete(&ev);
		if (rc < 0)
			return -1;
	}
	buf_addc(out, ']');
	anchor_add(c, start->data.sequence_start.anchor, out->data + begin, out->len - begin);
	return 0;
}

/* size_text - "1 MiB", or "1000000 bytes" when not whole MiB */
static struct size_text {
	char s[32];
} size_text(size_t n)
{
	struct size_text t;

	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(t.s, sizeof(t.s), "%zu MiB", n >> 20);
	else
		snprintf(t.s, sizeof(t.s), "%zu bytes", n);
	return t;
}

static void
doc_too_large(struct yconv *c, const yaml_event_t *ev)
{
	set_error(c->e, &ev->start_mark, "document larger than %s once aliases are "
	    "expanded", size_text(c->max_doc).s);
}

/* convert_node - append the JSON of the node that ev starts; ev stays the caller's */
static int
convert_node(struct yconv *c, yaml_event_t *ev, struct buf *out)
{
	const char *a;
	int rc;

	if (out->len > c->max_doc) {
		doc_too_large(c, ev);
		return -1;
	}
	if (c->anchor_bytes > 4 * c->max_doc) {
		set_error(c->e, &ev->start_mark, "anchors hold more than %s",
		    size_text(4 * c->max_doc).s);
		return -1;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return scalar_json(c, ev, out);
	case YAML_ALIAS_EVENT:
		if ((a = alias_json(c, ev)) == NULL)
			return -1;
		if (out->len + strlen(a) > c->max_doc) {
			doc_too_large(c, ev);
			return -1;
		}
		buf_adds(out, a);
		return 0;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		/* the same limit as JSON input (json_max_depth) */
		if (++c->depth > json_get_max_depth()) {
			set_error(c->e, &ev->start_mark, "nested deeper than %d levels",
			    json_get_max_depth());
			return -1;
		}
		rc = ev->type == YAML_MAPPING_START_EVENT ? convert_mapping(c, ev, out) :
		    convert_sequence(c, ev, out);
		c->depth--;
		return rc;
	default:
		set_error(c->e, &ev->start_mark, "unexpected YAML event");
		return -1;
	}
}

/* empty_document - a document that holds nothing ("---" alone, comments) */
static int
empty_document(const yaml_event_t *ev)
{
	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.tag == NULL &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    ev->data.scalar.anchor == NULL && ev->data.scalar.length == 0;
}

int
yaml_to_json_docs(const char *text, size_t len, const struct yaml_opts *o,
    struct yaml_docs *docs, struct yaml_error *e)
{
	struct yconv c;
	yaml_event_t ev;
	int rc = -1;

	memset(&c, 0, sizeof(c));
	c.e = e;
	c.max_doc = o->max_doc;
	c.numbers_as_text = o->numbers_as_text;
	if (!yaml_parser_initialize(&c.p)) {
		set_error(e, NULL, "cannot start the YAML parser");
		return -1;
	}
	yaml_parser_set_input_string(&c.p, (const unsigned char *)text, len);
	for (;;) {
		struct buf out;
		int line;

		if (next_event(&c, &ev) < 0)
			goto out;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type != YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			continue;	/* stream start, document end */
		}
		yaml_event_delete(&ev);
		if (next_event(&c, &ev) < 0)
			goto out;
		line = (int)ev.start_mark.line + 1;
		if (empty_document(&ev)) {
			yaml_event_delete(&ev);
			continue;
		}
		buf_init(&out);
		buf_adds(&out, "");
		if (convert_node(&c, &ev, &out) < 0) {
			yaml_event_delete(&ev);
			buf_free(&out);
			goto out;
		}
		yaml_event_delete(&ev);
		anchors_clear(&c);
		yaml_docs_add(docs, buf_steal(&out, NULL), line);
	}
	rc = 0;
out:
	anchors_clear(&c);
	yaml_parser_delete(&c.p);
	return rc;
}

/* --- writing: what stays a string when written plain ------------------- */

int
yaml_plain_is_safe(const char *s, size_t len)
{
	static const char *const v11[] = { "y", "Y", "yes", "Yes", "YES", "n", "N",
		"no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", NULL };
	struct buf tmp;
	int num;

	if (is_null(s, len) || is_bool(s, len) >= 0 || is_special_float(s, len))
		return 0;
	/* YAML 1.1 readers take dates and times ("2026-12-02...", "12:30") */
	if (len >= 8 && all_in(s, 4, DIGITS) && s[4] == '-' && s[5] >= '0' && s[5] <= '9')
		return 0;
	if (all_in(s, len, DIGITS ":._") && strchr(s, ':') != NULL)
		return 0;
	for (int i = 0; v11[i]; i++)
		if (eq(s, len, v11[i]))
			return 0;
	buf_init(&tmp);
	num = number_json(s, len, &tmp);
	buf_free(&tmp);
	return !num;
}
