/*
 * json - see json.h: parsing (after json_validate, json_validate.c),
 * compacting, reading and writing JSON.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "common/json.h"

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
