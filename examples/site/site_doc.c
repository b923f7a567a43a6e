/*
 * site_doc - the reference replica's document: see site_doc.h.
 */
#include "config.h"

#include <brotli/decode.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/util.h"
#include "examples/site/site_doc.h"

/* site_read_ts - the leading integer of a timestamp file; -1 if absent or bad */
int64_t
site_read_ts(const char *path)
{
	char *text, *end;
	long long v;

	if (path == NULL || (text = read_file(path, NULL, 64)) == NULL)
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (end == text || errno != 0 || v < 0)
		v = -1;
	free(text);
	return v;
}

/* brotli_b64_decode - decofile.bin (base64 of brotli) to JSON; NULL if bad */
static char *
brotli_b64_decode(const char *b64, size_t b64len, size_t *outlen)
{
	BrotliDecoderState *st;
	BrotliDecoderResult r;
	unsigned char *raw, chunk[65536];
	const uint8_t *in;
	size_t rawlen, avail_in, avail_out;
	struct buf out;

	if ((raw = base64_decode(b64, b64len, &rawlen)) == NULL)
		return NULL;
	if ((st = BrotliDecoderCreateInstance(NULL, NULL, NULL)) == NULL)
		abort();
	buf_init(&out);
	in = raw;
	avail_in = rawlen;
	do {
		uint8_t *next = chunk;

		avail_out = sizeof(chunk);
		r = BrotliDecoderDecompressStream(st, &avail_in, &in, &avail_out,
		    &next, NULL);
		buf_add(&out, chunk, sizeof(chunk) - avail_out);
	} while (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT);
	BrotliDecoderDestroyInstance(st);
	free(raw);
	if (r != BROTLI_DECODER_RESULT_SUCCESS) {
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out, outlen);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * site_load_dir - the decofile held by dir: decofile.json, decofile.bin, or else
 * the *.json block files merged (key = file name without .json, ascending
 * bytes).  Returns a new compact JSON text or NULL with err set.
 */
char *
site_load_dir(const char *dir, size_t *len, char *err, size_t errlen)
{
	struct json_error je;
	struct buf out;
	char *path, *text, **names = NULL;
	size_t n = 0, cap = 0, tlen;
	struct dirent *de;
	DIR *d;

	path = xasprintf("%s/decofile.json", dir);
	text = read_file(path, &tlen, 0);
	free(path);
	if (text == NULL) {
		path = xasprintf("%s/decofile.bin", dir);
		if ((text = read_file(path, &tlen, 0)) != NULL) {
			char *json = brotli_b64_decode(text, tlen, &tlen);

			free(text);
			if ((text = json) == NULL) {
				snprintf(err, errlen, "%s: not base64 brotli", path);
				free(path);
				return NULL;
			}
		}
		free(path);
	}
	if (text != NULL) {
		if (json_validate(text, tlen, &je) < 0) {
			snprintf(err, errlen, "%s/decofile: %d:%d: %s", dir, je.line,
			    je.column, je.msg);
			free(text);
			return NULL;
		}
		buf_init(&out);
		json_compact(&out, text, tlen);
		free(text);
		return buf_steal(&out, len);
	}

	if ((d = opendir(dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return NULL;
	}
	while ((de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name);

		if (de->d_name[0] == '.' || nl <= 5 ||
		    strcmp(de->d_name + nl - 5, ".json") != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	buf_init(&out);
	buf_addc(&out, '{');
	for (size_t i = 0; i < n; i++) {
		path = xasprintf("%s/%s", dir, names[i]);
		text = read_file(path, &tlen, 0);
		if (text == NULL || json_validate(text, tlen, &je) < 0) {
			if (text == NULL)
				snprintf(err, errlen, "%s: %s", path, strerror(errno));
			else
				snprintf(err, errlen, "%s:%d:%d: %s", path, je.line,
				    je.column, je.msg);
			free(text);
			free(path);
			for (size_t k = i; k < n; k++)
				free(names[k]);
			free(names);
			buf_free(&out);
			return NULL;
		}
		if (i > 0)
			buf_addc(&out, ',');
		json_escape(&out, names[i], strlen(names[i]) - 5);
		buf_addc(&out, ':');
		json_compact(&out, text, tlen);
		free(text);
		free(path);
		free(names[i]);
	}
	free(names);
	buf_addc(&out, '}');
	return buf_steal(&out, len);
}

/*
 * json_skip - end of the JSON value starting at p (whitespace skipped by the
 * caller); the text was validated, so only nesting and strings matter.
 */
static const char *
json_skip(const char *p, const char *end)
{
	int depth = 0, in_str = 0;

	for (; p < end; p++) {
		char c = *p;

		if (in_str) {
			if (c == '\\')
				p++;
			else if (c == '"') {
				in_str = 0;
				if (depth == 0)
					return p + 1;
			}
			continue;
		}
		if (c == '"')
			in_str = 1;
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (--depth <= 0)
				return p + 1;
		} else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' ||
		    c == '\n' || c == '\r'))
			return p;
	}
	return end;
}

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/*
 * site_member_raw - the raw bytes of top-level member key of a validated JSON
 * object text; 0 with *vp and *vlen set, -1 absent or not an object.
 */
int
site_member_raw(const char *text, size_t len, const char *key, const char **vp, size_t *vlen)
{
	const char *p = text, *end = text + len, *k, *kend, *v;
	size_t klen = strlen(key);

	p = skip_ws(p, end);
	if (p >= end || *p != '{')
		return -1;
	p++;
	for (;;) {
		p = skip_ws(p, end);
		if (p >= end || *p != '"')
			return -1;
		k = p;
		kend = p = json_skip(p, end);
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return -1;
		v = skip_ws(p + 1, end);
		p = json_skip(v, end);
		if ((size_t)(kend - k) == klen + 2 && memcmp(k + 1, key, klen) == 0) {
			*vp = v;
			*vlen = (size_t)(p - v);
			return 0;
		}
		p = skip_ws(p, end);
		if (p >= end || *p != ',')
			return -1;
		p++;
	}
}

/* html_escape - s into b, safe inside HTML text and attribute values */
static void
html_escape(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': buf_adds(b, "&lt;"); break;
		case '>': buf_adds(b, "&gt;"); break;
		case '&': buf_adds(b, "&amp;"); break;
		case '"': buf_adds(b, "&quot;"); break;
		default: buf_addc(b, *s);
		}
	}
}

char *
site_doc_page(const char *doc, size_t len, const char *sha, const char *ts, const char *source)
{
	struct buf b;
	yajl_val tree;
	const char *title = NULL;

	buf_init(&b);
	tree = json_parse(doc, len, NULL);
	/* a top-level "title", else the first block that has one */
	if (tree != NULL && (title = json_get_str(tree, "title", NULL)) == NULL &&
	    YAJL_IS_OBJECT(tree)) {
		for (size_t i = 0; i < tree->u.object.len && title == NULL; i++)
			title = json_get_str(tree->u.object.values[i], "title", NULL);
	}
	buf_adds(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>");
	html_escape(&b, title ? title : "decod-site");
	buf_adds(&b, "</title></head><body>\n<h1>");
	html_escape(&b, title ? title : "decod-site");
	buf_printf(&b, "</h1>\n<p>decofile %s, timestamp %s, from %s</p>\n<ul>\n",
	    sha, ts[0] ? ts : "-", source);
	if (tree != NULL && YAJL_IS_OBJECT(tree)) {
		for (size_t i = 0; i < tree->u.object.len; i++) {
			buf_adds(&b, "<li>");
			html_escape(&b, tree->u.object.keys[i]);
			buf_adds(&b, "</li>\n");
		}
	}
	yajl_tree_free(tree);
	buf_adds(&b, "</ul>\n</body></html>\n");
	return buf_steal(&b, NULL);
}
