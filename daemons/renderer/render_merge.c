/*
 * render_merge - the merge rules of SPEC §9 and the target size rules.
 * Inputs are sorted (by key, then layer, then path) through an index array;
 * each is validated and, if it is the one written, compacted into the output
 * in the same pass (json_validate_compact), and what was written is hashed
 * (render_hash) block by block while it is still in cache, by a second
 * thread for a big document: a 4 MB decofile costs one read of its bytes.
 * The output buffer is grown once, before the first byte, so it never
 * moves under the hashing thread.  Owns nothing beyond the call.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "daemons/renderer/render_hash.h"
#include "daemons/renderer/render_merge.h"

/* input_cmp - order by key bytes, then layer, then path */
static int
input_cmp(const void *a, const void *b)
{
	const struct render_input *x = *(const struct render_input *const *)a;
	const struct render_input *y = *(const struct render_input *const *)b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	return strcmp(x->path, y->path);
}

void
render_key_escape(struct buf *out, const char *k, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)k;
	size_t i = 0, start = 0, l;

	buf_grow(out, len + 2);
	buf_addc(out, '"');
	while (i < len) {
		unsigned char c = s[i];
		char u[7];
		const char *rep = NULL;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0x80) {
			l = utf8_seq(s + i, len - i);
			if (l == 3 && c == 0xe2 && s[i + 1] == 0x80 &&
			    (s[i + 2] == 0xa8 || s[i + 2] == 0xa9))
				rep = s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
			else if (l == 0) {
				rep = "\\ufffd";
				l = 1;
			}
			if (rep == NULL) {
				i += l;
				continue;
			}
		} else {
			l = 1;
			switch (c) {
			case '"': rep = "\\\""; break;
			case '\\': rep = "\\\\"; break;
			case '\b': rep = "\\b"; break;
			case '\f': rep = "\\f"; break;
			case '\n': rep = "\\n"; break;
			case '\r': rep = "\\r"; break;
			case '\t': rep = "\\t"; break;
			default:
				memcpy(u, "\\u00", 4);
				u[4] = hex[c >> 4];
				u[5] = hex[c & 15];
				u[6] = '\0';
				rep = u;
			}
		}
		buf_add(out, k + start, i - start);
		buf_adds(out, rep);
		i += l;
		start = i;
	}
	buf_add(out, k + start, len - start);
	buf_addc(out, '"');
}

int
render_merge(const struct render_input *in, size_t n, struct buf *out,
    char *hash, struct render_error *e)
{
	struct json_error je;
	const struct render_input **idx;
	struct render_hash *rh = NULL;
	const char *data0;
	size_t i, base = out->len, room = 2;
	int first = 1, depth = json_get_max_depth() - 1;

	memset(e, 0, sizeof(*e));
	idx = xmalloc(n * sizeof(*idx));
	for (i = 0; i < n; i++) {
		idx[i] = &in[i];
		/* the block at most, and its key escaped (\u00XX), quoted, ':' and ',' */
		room += in[i].len + 6 * strlen(in[i].key) + 4;
	}
	if (n > 1)
		qsort(idx, n, sizeof(*idx), input_cmp);

	/*
	 * every file must be JSON, even one a higher layer overrides, with
	 * no key twice and nested no deeper than the rendered document may
	 * be (the merged object adds one level above each block); the last
	 * of a run of one key is its highest layer, the one written, while
	 * nothing has been refused yet
	 */
	buf_grow(out, room);
	data0 = out->data;
	if (hash != NULL)
		rh = render_hash_new(out->data + base, room);
	buf_addc(out, '{');
	for (i = 0; i < n; i++) {
		const struct render_input *r = idx[i];
		int rc;

		if (e->count == 0 && (i + 1 == n || strcmp(r->key, idx[i + 1]->key) != 0)) {
			if (!first)
				buf_addc(out, ',');
			first = 0;
			render_key_escape(out, r->key, strlen(r->key));
			buf_addc(out, ':');
			rc = json_validate_compact(out, r->data, r->len, depth, &je);
			if (out->data != data0)
				abort();	/* room was short: the hash would read freed memory */
			if (rc == 0 && rh != NULL)
				render_hash_upto(rh, out->len - base);
		} else
			rc = json_validate_depth(r->data, r->len, depth, &je);
		if (rc == 0)
			continue;
		if (e->count++ == 0) {
			e->kind = RENDER_EINVALID;
			snprintf(e->msg, sizeof(e->msg), "%s:%d:%d: %s%s", r->path,
			    je.line, je.column, je.msg,
			    strncmp(je.msg, "nested deeper", 13) == 0 ?
			    " (json_max_depth counts the rendered decofile's own level)" : "");
		}
	}
	/* two files of one layer giving one key: neither wins silently */
	for (i = 0; i + 1 < n; i++) {
		const struct render_input *a = idx[i], *b = idx[i + 1];

		if (a->layer != b->layer || strcmp(a->key, b->key) != 0)
			continue;
		if (e->count++ == 0) {
			e->kind = RENDER_EDUPLICATE;
			snprintf(e->msg, sizeof(e->msg),
			    "duplicate key \"%s\": %s and %s", a->key, a->path,
			    b->path);
		}
	}
	if (e->count > 1) {
		size_t l = strlen(e->msg);

		snprintf(e->msg + l, sizeof(e->msg) - l, " (and %d more error%s)",
		    e->count - 1, e->count > 2 ? "s" : "");
	}
	free(idx);
	if (e->count > 0) {
		/* the thread first: it may still read what is cut here */
		if (rh != NULL)
			render_hash_final(rh, 0, NULL);
		out->len = base;
		out->data[base] = '\0';
		return -1;
	}
	buf_addc(out, '}');
	if (out->data != data0)
		abort();
	if (rh != NULL)
		render_hash_final(rh, out->len - base, hash);
	return 0;
}

int
render_want_bin(size_t json_len, uint64_t threshold, int configmap)
{
	return configmap || (uint64_t)json_len > threshold;
}

int
render_check_fits(size_t doc_len, int is_bin, int configmap, char *msg,
    size_t msglen)
{
	if (!configmap || doc_len <= RENDER_CM_ROOM)
		return 0;
	snprintf(msg, msglen,
	    "rendered decofile is %zu bytes%s, over the ConfigMap limit of "
	    "%d bytes; use target: s3", doc_len,
	    is_bin ? " even compressed (brotli+base64)" : "", RENDER_CM_ROOM);
	return -1;
}
