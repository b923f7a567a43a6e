/*
 * json - see json.h.  Validation runs yajl's streaming parser with four
 * callbacks (depth and object keys), so checking a large block costs no
 * allocation per value, refuses what would make a recursive reader
 * (yajl_tree_free, a replica) run out of stack and refuses duplicate keys
 * (readers disagree on which one wins), and turns yajl's byte offset into
 * the line and column people need.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "common/json.h"

static void
offset_to_linecol(const char *text, size_t off, struct json_error *e)
{
	int line = 1, col = 1;

	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	e->line = line;
	e->column = col;
}

/* first_line - copy the first line of yajl's message, trimmed */
static void
first_line(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	while (*src == ' ' || *src == '\n')
		src++;
	while (src[i] && src[i] != '\n' && i < len - 1) {
		dst[i] = src[i];
		i++;
	}
	while (i > 0 && (dst[i - 1] == ' ' || dst[i - 1] == '.'))
		i--;
	dst[i] = '\0';
}

/*
 * Validation state: nesting depth against the limit, and the keys of every
 * open object in one open-addressing table (entries carry the serial of the
 * object they belong to, so a closed object's keys never match again).
 */
struct vkey {
	uint64_t hash;		/* 0: empty slot */
	uint32_t serial;
	uint32_t len;
	size_t off;		/* into the key arena */
};

struct vstate {
	yajl_handle h;
	const char *text;
	size_t len;
	int depth, max_depth;
	uint32_t *serials;	/* per open level: the object's serial, 0 for arrays */
	size_t nserials_alloc;
	uint32_t next_serial;
	struct vkey *tab;
	size_t tabsize, tabused;
	struct buf arena;
	size_t top_end;		/* where the top-level value ended; SIZE_MAX: not yet */
	int finishing;		/* inside yajl_complete_parse: offsets are not ours */
	int failed;		/* a callback refused: off and msg are set */
	size_t off;
	char msg[256];
};

static int json_max_depth = JSON_MAX_DEPTH_DEFAULT;

void
json_set_max_depth(int depth)
{
	json_max_depth = depth > 0 ? depth : JSON_MAX_DEPTH_DEFAULT;
}

int
json_get_max_depth(void)
{
	return json_max_depth;
}

/* v_open - one more level; refuse past the limit, pointing at the bracket */
static int
v_open(struct vstate *s, uint32_t serial)
{
	size_t off = yajl_get_bytes_consumed(s->h);

	if (++s->depth > s->max_depth) {
		s->failed = 1;
		s->off = off > 0 ? off - 1 : 0;
		snprintf(s->msg, sizeof(s->msg), "nested deeper than %d levels",
		    s->max_depth);
		return 0;
	}
	if ((size_t)s->depth >= s->nserials_alloc) {
		s->nserials_alloc = s->nserials_alloc ? s->nserials_alloc * 2 : 64;
		s->serials = xrealloc(s->serials, s->nserials_alloc * sizeof(uint32_t));
	}
	s->serials[s->depth] = serial;
	return 1;
}

static int
v_start_map(void *ctx)
{
	struct vstate *s = ctx;

	return v_open(s, ++s->next_serial);
}

static int
v_start_array(void *ctx)
{
	return v_open(ctx, 0);
}

/* v_top - a value at depth 0 just ended: remember where */
static void
v_top(struct vstate *s)
{
	if (s->depth == 0 && s->top_end == SIZE_MAX)
		s->top_end = s->finishing ? s->len : yajl_get_bytes_consumed(s->h);
}

static int
v_end(void *ctx)
{
	struct vstate *s = ctx;

	s->depth--;
	v_top(s);
	return 1;
}

static int
v_null(void *ctx)
{
	v_top(ctx);
	return 1;
}

static int
v_bool(void *ctx, int b)
{
	v_top(ctx);
	return 1;
}

static int
v_number(void *ctx, const char *n, size_t len)
{
	v_top(ctx);
	return 1;
}

static int
v_string(void *ctx, const unsigned char *str, size_t len)
{
	v_top(ctx);
	return 1;
}

static uint64_t
key_hash(uint32_t serial, const unsigned char *k, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ serial;

	for (size_t i = 0; i < n; i++) {
		h ^= k[i];
		h *= 1099511628211ull;
	}
	return h ? h : 1;
}

/* tab_insert - place an entry known to be absent */
static void
tab_insert(struct vkey *tab, size_t size, const struct vkey *k)
{
	size_t i = (size_t)k->hash & (size - 1);

	while (tab[i].hash != 0)
		i = (i + 1) & (size - 1);
	tab[i] = *k;
}

/* key_start - offset of the opening quote of the key token that ends at end */
static size_t
key_start(const char *text, size_t end)
{
	size_t i = end > 0 ? end - 1 : 0;	/* the closing quote */

	while (i-- > 0) {
		size_t bs = 0;

		if (text[i] != '"')
			continue;
		while (bs < i && text[i - 1 - bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			return i;
	}
	return 0;
}

static int
v_map_key(void *ctx, const unsigned char *key, size_t n)
{
	struct vstate *s = ctx;
	uint32_t serial = s->serials[s->depth];
	uint64_t h = key_hash(serial, key, n);
	struct vkey k;
	size_t i;

	if (s->tabused * 2 >= s->tabsize) {
		size_t nsize = s->tabsize ? s->tabsize * 2 : 256;
		struct vkey *ntab = xcalloc(nsize, sizeof(*ntab));

		for (i = 0; i < s->tabsize; i++)
			if (s->tab[i].hash != 0)
				tab_insert(ntab, nsize, &s->tab[i]);
		free(s->tab);
		s->tab = ntab;
		s->tabsize = nsize;
	}
	for (i = (size_t)h & (s->tabsize - 1); s->tab[i].hash != 0;
	    i = (i + 1) & (s->tabsize - 1)) {
		if (s->tab[i].hash != h || s->tab[i].serial != serial ||
		    s->tab[i].len != n ||
		    memcmp(s->arena.data + s->tab[i].off, key, n) != 0)
			continue;
		s->failed = 1;
		s->off = key_start(s->text, yajl_get_bytes_consumed(s->h));
		snprintf(s->msg, sizeof(s->msg), "duplicate key \"%.*s\"",
		    n > 80 ? 80 : (int)n, (const char *)key);
		return 0;
	}
	k.hash = h;
	k.serial = serial;
	k.len = (uint32_t)n;
	k.off = s->arena.len;
	buf_add(&s->arena, (const char *)key, n);
	s->tab[i] = k;
	s->tabused++;
	return 1;
}

static const yajl_callbacks vcallbacks = {
	.yajl_null = v_null,
	.yajl_boolean = v_bool,
	.yajl_number = v_number,
	.yajl_string = v_string,
	.yajl_start_map = v_start_map,
	.yajl_map_key = v_map_key,
	.yajl_end_map = v_end,
	.yajl_start_array = v_start_array,
	.yajl_end_array = v_end,
};

int
json_validate_depth(const char *text, size_t len, int max_depth, struct json_error *e)
{
	struct vstate s;
	yajl_status st;
	size_t off;
	unsigned char *msg;
	int at_end = 0;

	/*
	 * yajl takes form feed and vertical tab for white space; JSON does not
	 * (nor do Go and JavaScript), and json_compact would copy them into a
	 * published document.  Neither may appear raw inside a string either,
	 * so any of them is an error (found by fuzz_site).
	 */
	{
		const char *ff = memchr(text, '\f', len), *vt = memchr(text, '\v', len);
		const char *bad = ff == NULL ? vt : vt == NULL || ff < vt ? ff : vt;

		if (bad != NULL) {
			if (e != NULL) {
				offset_to_linecol(text, (size_t)(bad - text), e);
				snprintf(e->msg, sizeof(e->msg), "invalid character (%s) in JSON",
				    *bad == '\f' ? "form feed" : "vertical tab");
			}
			return -1;
		}
	}
	memset(&s, 0, sizeof(s));
	s.text = text;
	s.len = len;
	s.max_depth = max_depth > 0 ? max_depth : json_max_depth;
	s.top_end = SIZE_MAX;
	buf_init(&s.arena);
	s.h = yajl_alloc(&vcallbacks, NULL, &s);
	yajl_config(s.h, yajl_allow_comments, 0);
	yajl_config(s.h, yajl_dont_validate_strings, 0);
	st = yajl_parse(s.h, (const unsigned char *)text, len);
	if (st == yajl_status_ok) {
		s.finishing = 1;
		st = yajl_complete_parse(s.h);
		at_end = 1;
	}
	/*
	 * yajl accepts an incomplete token after a complete value ("1\"",
	 * "{} t"): the value ended at top_end, and only white space may follow
	 */
	if (st == yajl_status_ok && s.top_end != SIZE_MAX) {
		size_t i = s.top_end;

		while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
		    text[i] == '\r'))
			i++;
		if (i < len) {
			s.failed = 1;
			s.off = i;
			snprintf(s.msg, sizeof(s.msg), "trailing data after the JSON value");
			st = yajl_status_error;
		}
	}
	free(s.serials);
	free(s.tab);
	buf_free(&s.arena);
	if (st == yajl_status_ok) {
		yajl_free(s.h);
		return 0;
	}
	if (e != NULL && s.failed) {
		offset_to_linecol(text, s.off, e);
		snprintf(e->msg, sizeof(e->msg), "%s", s.msg);
	} else if (e != NULL) {
		off = yajl_get_bytes_consumed(s.h);
		if (off > len)
			off = len;
		/*
		 * yajl_complete_parse feeds one byte of its own, so what it
		 * consumed says nothing about the input: the input ended too
		 * soon, point at its end.
		 */
		if (at_end)
			off = len;
		offset_to_linecol(text, off, e);
		msg = yajl_get_error(s.h, 0, (const unsigned char *)text, len);
		first_line(e->msg, sizeof(e->msg), (const char *)msg);
		if (e->msg[0] == '\0')
			snprintf(e->msg, sizeof(e->msg), "invalid JSON");
		yajl_free_error(s.h, msg);
	}
	yajl_free(s.h);
	return -1;
}

int
json_validate(const char *text, size_t len, struct json_error *e)
{
	return json_validate_depth(text, len, json_max_depth, e);
}

yajl_val
json_parse(const char *text, size_t len, struct json_error *e)
{
	char errbuf[256];
	char *copy;
	yajl_val v;

	if (json_validate(text, len, e) < 0)
		return NULL;
	copy = xstrndup(text, len);
	v = yajl_tree_parse(copy, errbuf, sizeof(errbuf));
	free(copy);
	if (v == NULL && e != NULL) {
		e->line = e->column = 1;
		snprintf(e->msg, sizeof(e->msg), "%s", errbuf);
	}
	return v;
}

/* depth_ok - text nests no deeper than the limit (strings skipped) */
static int
depth_ok(const char *text, size_t len, struct json_error *e)
{
	const char *p = text, *end = text + len;
	int depth = 0;

	while (p < end) {
		switch (*p) {
		case '"':
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			break;
		case '{':
		case '[':
			if (++depth > json_max_depth) {
				if (e != NULL) {
					offset_to_linecol(text, (size_t)(p - text), e);
					snprintf(e->msg, sizeof(e->msg), "nested deeper than %d",
					    json_max_depth);
				}
				return 0;
			}
			break;
		case '}':
		case ']':
			depth--;
			break;
		default:
			break;
		}
		p++;
	}
	return 1;
}

yajl_val
json_parse_peer(const char *text, size_t len, struct json_error *e)
{
	char errbuf[256];
	char *copy;
	yajl_val v;

	if (!depth_ok(text, len, e))
		return NULL;
	copy = xstrndup(text, len);
	v = yajl_tree_parse(copy, errbuf, sizeof(errbuf));
	free(copy);
	if (v == NULL && e != NULL) {
		e->line = e->column = 1;
		snprintf(e->msg, sizeof(e->msg), "%s", errbuf);
	}
	return v;
}

void
json_compact(struct buf *out, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	char *w;

	/*
	 * One pass straight into the buffer (never longer than the input):
	 * the renderer compacts every block, so this is a quarter of its
	 * time.  A string is copied whole up to its closing quote, found with
	 * memchr; a quote is escaped when an odd run of backslashes ends at it.
	 */
	buf_grow(out, len);
	w = out->data + out->len;
	while (p < end) {
		char c = *p;

		if (c == '"') {
			const char *q = p + 1, *e, *bs;

			for (;;) {
				e = memchr(q, '"', (size_t)(end - q));
				if (e == NULL) {
					q = end;
					break;
				}
				for (bs = e; bs > q && bs[-1] == '\\'; bs--)
					;
				q = e + 1;
				if (((e - bs) & 1) == 0)
					break;
			}
			memcpy(w, p, (size_t)(q - p));
			w += q - p;
			p = q;
			continue;
		}
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			*w++ = c;
		p++;
	}
	out->len = (size_t)(w - out->data);
	out->data[out->len] = '\0';
}

static yajl_val
json_vget(yajl_val v, va_list ap)
{
	const char *k;

	while ((k = va_arg(ap, const char *)) != NULL) {
		yajl_val next = NULL;

		if (v == NULL || !YAJL_IS_OBJECT(v))
			return NULL;
		for (size_t i = 0; i < v->u.object.len; i++) {
			if (strcmp(v->u.object.keys[i], k) == 0) {
				next = v->u.object.values[i];
				break;
			}
		}
		v = next;
	}
	return v;
}

yajl_val
json_get(yajl_val v, ...)
{
	va_list ap;

	va_start(ap, v);
	v = json_vget(v, ap);
	va_end(ap);
	return v;
}

const char *
json_get_str(yajl_val v, ...)
{
	va_list ap;

	va_start(ap, v);
	v = json_vget(v, ap);
	va_end(ap);
	return v != NULL && YAJL_IS_STRING(v) ? v->u.string : NULL;
}

int64_t
json_get_int(yajl_val v, int64_t def, ...)
{
	va_list ap;

	va_start(ap, def);
	v = json_vget(v, ap);
	va_end(ap);
	if (v != NULL && YAJL_IS_INTEGER(v))
		return v->u.number.i;
	if (v != NULL && YAJL_IS_STRING(v)) {
		char *end;
		long long n = strtoll(v->u.string, &end, 10);

		if (*v->u.string && *end == '\0')
			return n;
	}
	return def;
}

int
json_get_bool(yajl_val v, int def, ...)
{
	va_list ap;

	va_start(ap, def);
	v = json_vget(v, ap);
	va_end(ap);
	if (v != NULL && YAJL_IS_TRUE(v))
		return 1;
	if (v != NULL && YAJL_IS_FALSE(v))
		return 0;
	return def;
}

void
json_escape(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t start = 0;

	buf_grow(b, n + 2);
	buf_addc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *rep = NULL;
		char u[7];

		if (c == '"')
			rep = "\\\"";
		else if (c == '\\')
			rep = "\\\\";
		else if (c == '\n')
			rep = "\\n";
		else if (c == '\r')
			rep = "\\r";
		else if (c == '\t')
			rep = "\\t";
		else if (c < 0x20) {
			memcpy(u, "\\u00", 4);
			u[4] = hex[c >> 4];
			u[5] = hex[c & 15];
			u[6] = '\0';
			rep = u;
		}
		if (rep == NULL)
			continue;
		buf_add(b, s + start, i - start);
		buf_adds(b, rep);
		start = i + 1;
	}
	buf_add(b, s + start, n - start);
	buf_addc(b, '"');
}

void
jw_init(struct jw *w, struct buf *b)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
	w->start = b->len;
}

/* jw_sep - comma before a value unless it follows a key or opens a level */
static void
jw_sep(struct jw *w)
{
	char last;

	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (w->b->len <= w->start)
		return;
	last = w->b->data[w->b->len - 1];
	if (last != '[' && last != '{' && last != ':')
		buf_addc(w->b, ',');
}

static void
jw_open(struct jw *w, char c)
{
	jw_sep(w);
	buf_addc(w->b, c);
	w->depth++;
}

void
jw_obj(struct jw *w)
{
	jw_open(w, '{');
}

void
jw_arr(struct jw *w)
{
	jw_open(w, '[');
}

void
jw_end_obj(struct jw *w)
{
	buf_addc(w->b, '}');
	if (w->depth > 0)
		w->depth--;
}

void
jw_end_arr(struct jw *w)
{
	buf_addc(w->b, ']');
	if (w->depth > 0)
		w->depth--;
}

void
jw_object_head(struct jw *w, const char *api_version, const char *kind, const char *ns,
    const char *name)
{
	jw_obj(w);
	jw_key(w, "apiVersion");
	jw_str(w, api_version);
	jw_key(w, "kind");
	jw_str(w, kind);
	jw_key(w, "metadata");
	jw_obj(w);
	jw_key(w, "name");
	jw_str(w, name);
	if (ns != NULL) {
		jw_key(w, "namespace");
		jw_str(w, ns);
	}
}

void
jw_key(struct jw *w, const char *k)
{
	jw_sep(w);
	json_escape(w->b, k, strlen(k));
	buf_addc(w->b, ':');
	w->after_key = 1;
}

void
jw_str(struct jw *w, const char *s)
{
	if (s == NULL) {
		jw_null(w);
		return;
	}
	jw_strn(w, s, strlen(s));
}

void
jw_strn(struct jw *w, const char *s, size_t n)
{
	jw_sep(w);
	json_escape(w->b, s, n);
}

void
jw_int(struct jw *w, int64_t v)
{
	jw_sep(w);
	buf_printf(w->b, "%lld", (long long)v);
}

void
jw_bool(struct jw *w, int v)
{
	jw_sep(w);
	buf_adds(w->b, v ? "true" : "false");
}

void
jw_null(struct jw *w)
{
	jw_sep(w);
	buf_adds(w->b, "null");
}

void
jw_raw(struct jw *w, const char *json, size_t n)
{
	jw_sep(w);
	buf_add(w->b, json, n);
}

void
jw_value(struct jw *w, yajl_val v)
{
	if (v == NULL || YAJL_IS_NULL(v)) {
		jw_null(w);
	} else if (YAJL_IS_STRING(v)) {
		jw_str(w, v->u.string);
	} else if (YAJL_IS_NUMBER(v)) {
		jw_raw(w, v->u.number.r, strlen(v->u.number.r));
	} else if (YAJL_IS_TRUE(v)) {
		jw_bool(w, 1);
	} else if (YAJL_IS_FALSE(v)) {
		jw_bool(w, 0);
	} else if (YAJL_IS_ARRAY(v)) {
		jw_arr(w);
		for (size_t i = 0; i < v->u.array.len; i++)
			jw_value(w, v->u.array.values[i]);
		jw_end_arr(w);
	} else if (YAJL_IS_OBJECT(v)) {
		jw_obj(w);
		for (size_t i = 0; i < v->u.object.len; i++) {
			jw_key(w, v->u.object.keys[i]);
			jw_value(w, v->u.object.values[i]);
		}
		jw_end_obj(w);
	}
}
