/*
 * json_validate - see json.h.  A document is first read by a strict
 * one-pass checker (fast_valid) that can only say "valid" or "not sure":
 * RFC 8259 with UTF-8 checked, no key twice in an object, nested no deeper
 * than the limit.  Whatever it is not sure of (an error, a key written
 * with escapes, a \\u escape of a surrogate) goes to the full check: yajl's
 * streaming parser with callbacks for depth and object keys, which gives
 * the reason and turns yajl's byte offset into the line and column people
 * need.  The full check decides; the fast one only saves its cost on the
 * documents that are fine, so it may refuse more than yajl does, never
 * less (a differential test in t/unit/json_test.c holds it to that).
 * json_validate_compact has the fast check write the compacted text as it
 * goes, so a renderer reads each block's bytes once.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "common/json.h"
#include "common/util.h"
#include "common/json_scan.h"

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
 * The keys of every open object, on one stack (a frame per open level,
 * arrays too).  A key is checked against its own object's keys only: by a
 * scan while the object is small, by a table of the frame's own past
 * KEYS_SCAN keys.  A closed object's keys and table are dropped at once,
 * so the work follows the object, not the document.
 */
#define KEYS_SCAN 16
#define KEY_IN_TEXT ((size_t)1 << (sizeof(size_t) * 8 - 1))

struct vkey {
	uint32_t hash;
	uint32_t len;
	size_t off;		/* KEY_IN_TEXT | offset into text, or offset into the arena */
};

struct vframe {
	size_t kstart;		/* the object's first key on the stack */
	size_t astart;		/* the arena's length when it opened */
	uint32_t *idx;		/* a big object's table: key index + 1 (0: empty) */
	size_t idxsize;
};

struct keyset {
	const char *text;
	size_t len;
	int depth;		/* open levels; frames[1..depth] */
	struct vframe *frames;
	size_t nframes_alloc;
	struct vkey *keys;
	size_t nkeys, keys_alloc;
	struct buf arena;	/* keys yajl unescaped (not in text) */
};

static void
ks_init(struct keyset *ks, const char *text, size_t len)
{
	memset(ks, 0, sizeof(*ks));
	ks->text = text;
	ks->len = len;
	buf_init(&ks->arena);
}

static void
ks_free(struct keyset *ks)
{
	for (int d = 1; d <= ks->depth; d++)
		free(ks->frames[d].idx);	/* left open by an error */
	free(ks->frames);
	free(ks->keys);
	buf_free(&ks->arena);
}

/* ks_open - one more level (the caller checked the depth) */
static void
ks_open(struct keyset *ks)
{
	struct vframe *f;

	ks->depth++;
	if ((size_t)ks->depth >= ks->nframes_alloc) {
		ks->nframes_alloc = ks->nframes_alloc ? ks->nframes_alloc * 2 : 64;
		ks->frames = xrealloc(ks->frames, ks->nframes_alloc * sizeof(*ks->frames));
	}
	f = &ks->frames[ks->depth];
	f->kstart = ks->nkeys;
	f->astart = ks->arena.len;
	f->idx = NULL;
	f->idxsize = 0;
}

/* ks_close - the innermost level ends: its keys, copies and table go */
static void
ks_close(struct keyset *ks)
{
	struct vframe *f = &ks->frames[ks->depth];

	ks->nkeys = f->kstart;
	ks->arena.len = f->astart;
	free(f->idx);
	f->idx = NULL;
	ks->depth--;
}

static uint32_t
key_hash(const unsigned char *k, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= k[i];
		h *= 16777619u;
	}
	return h;
}

/* key_bytes - where a stored key's bytes are */
static const char *
key_bytes(const struct keyset *ks, const struct vkey *k)
{
	return (k->off & KEY_IN_TEXT) ? ks->text + (k->off & ~KEY_IN_TEXT) :
	    ks->arena.data + k->off;
}

/* idx_put - key number ki into f's table (known absent, the table has room) */
static void
idx_put(struct vframe *f, const struct vkey *keys, size_t ki)
{
	size_t i = keys[ki].hash & (f->idxsize - 1);

	while (f->idx[i] != 0)
		i = (i + 1) & (f->idxsize - 1);
	f->idx[i] = (uint32_t)(ki - f->kstart + 1);
}

/* ks_add - key (n bytes) into the innermost object: 0, or -1 when it has it already */
static int
ks_add(struct keyset *ks, const unsigned char *key, size_t n)
{
	struct vframe *f = &ks->frames[ks->depth];
	size_t have = ks->nkeys - f->kstart;
	uint32_t h = 0;
	struct vkey *k;

	/* a small object's keys are compared as they are, hashed when it outgrows the scan */
	if (have < KEYS_SCAN) {
		for (size_t i = f->kstart; i < ks->nkeys; i++)
			if (ks->keys[i].len == n && memcmp(key_bytes(ks, &ks->keys[i]), key, n) == 0)
				return -1;
	} else {
		h = key_hash(key, n);
		if (f->idx == NULL)
			for (size_t i = f->kstart; i < ks->nkeys; i++)
				ks->keys[i].hash = key_hash((const unsigned char *)key_bytes(ks,
				    &ks->keys[i]), ks->keys[i].len);
		if (f->idx == NULL || (have + 1) * 2 > f->idxsize) {
			free(f->idx);
			f->idxsize = f->idxsize ? f->idxsize * 2 : 4 * KEYS_SCAN;
			while ((have + 1) * 2 > f->idxsize)
				f->idxsize *= 2;
			f->idx = xcalloc(f->idxsize, sizeof(*f->idx));
			for (size_t i = f->kstart; i < ks->nkeys; i++)
				idx_put(f, ks->keys, i);
		}
		for (size_t i = h & (f->idxsize - 1); f->idx[i] != 0;
		    i = (i + 1) & (f->idxsize - 1)) {
			const struct vkey *o = &ks->keys[f->kstart + f->idx[i] - 1];

			if (o->hash == h && o->len == n && memcmp(key_bytes(ks, o), key, n) == 0)
				return -1;
		}
	}
	if (ks->nkeys == ks->keys_alloc) {
		ks->keys_alloc = ks->keys_alloc ? ks->keys_alloc * 2 : 256;
		ks->keys = xrealloc(ks->keys, ks->keys_alloc * sizeof(*ks->keys));
	}
	k = &ks->keys[ks->nkeys];
	k->hash = h;		/* 0 while the object is scanned */
	k->len = (uint32_t)n;
	/* a key straight from the text (no escapes): not copied */
	if ((const char *)key >= ks->text && (const char *)key + n <= ks->text + ks->len)
		k->off = KEY_IN_TEXT | (size_t)((const char *)key - ks->text);
	else {
		k->off = ks->arena.len;
		buf_add(&ks->arena, (const char *)key, n);
	}
	ks->nkeys++;
	if (f->idx != NULL)
		idx_put(f, ks->keys, ks->nkeys - 1);
	return 0;
}

/* the full check: yajl's parser and these callbacks */
struct vstate {
	yajl_handle h;
	const char *text;
	size_t len;
	int max_depth;
	struct keyset ks;
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
v_open(void *ctx)
{
	struct vstate *s = ctx;
	size_t off = yajl_get_bytes_consumed(s->h);

	if (s->ks.depth + 1 > s->max_depth) {
		s->failed = 1;
		s->off = off > 0 ? off - 1 : 0;
		snprintf(s->msg, sizeof(s->msg), "nested deeper than %d levels",
		    s->max_depth);
		return 0;
	}
	ks_open(&s->ks);
	return 1;
}

/* v_top - a value at depth 0 just ended: remember where */
static void
v_top(struct vstate *s)
{
	if (s->ks.depth == 0 && s->top_end == SIZE_MAX)
		s->top_end = s->finishing ? s->len : yajl_get_bytes_consumed(s->h);
}

static int
v_end(void *ctx)
{
	struct vstate *s = ctx;

	ks_close(&s->ks);
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
	(void)b;
	v_top(ctx);
	return 1;
}

static int
v_number(void *ctx, const char *n, size_t len)
{
	(void)n;
	(void)len;
	v_top(ctx);
	return 1;
}

static int
v_string(void *ctx, const unsigned char *str, size_t len)
{
	(void)str;
	(void)len;
	v_top(ctx);
	return 1;
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

	if (ks_add(&s->ks, key, n) == 0)
		return 1;
	s->failed = 1;
	s->off = key_start(s->text, yajl_get_bytes_consumed(s->h));
	snprintf(s->msg, sizeof(s->msg), "duplicate key \"%.*s\"",
	    n > 80 ? 80 : (int)n, (const char *)key);
	return 0;
}

static const yajl_callbacks vcallbacks = {
	.yajl_null = v_null,
	.yajl_boolean = v_bool,
	.yajl_number = v_number,
	.yajl_string = v_string,
	.yajl_start_map = v_open,
	.yajl_map_key = v_map_key,
	.yajl_end_map = v_end,
	.yajl_start_array = v_open,
	.yajl_end_array = v_end,
};


/*
 * fast_valid - 1: text is one JSON value (white space around it), no key
 * twice in an object, no deeper than max_depth; 0: not sure (the full
 * check decides and says why).  With out, also write there what
 * json_compact would (room for len bytes) and move *out past it: every
 * byte but the white space between tokens, which is all WS() skips.
 */
static int
fast_valid(const char *text, size_t len, int max_depth, char **out)
{
	const unsigned char *p = (const unsigned char *)text, *end = p + len, *q;
	const unsigned char *run = p;	/* not yet written: run up to p */
	char *w = out != NULL ? *out : NULL;
	unsigned char *open = NULL;	/* per level: '{' or '[' */
	size_t nopen = 0;
	struct keyset ks;
	int ok = 0, escaped;

	ks_init(&ks, text, len);
#define WS() do {							\
	if (p < end && (cls[*p] & 1)) {					\
		if (w != NULL) {					\
			memcpy(w, run, (size_t)(p - run));		\
			w += p - run;					\
		}							\
		if (++p < end && (cls[*p] & 1))	/* more than ": " */	\
			p = ws_run(p, end);				\
		run = p;						\
	}								\
} while (0)
	WS();
value:
	if (p >= end)
		goto out;
	switch (*p) {
	case '{':
	case '[':
		if (ks.depth + 1 > max_depth)
			goto out;
		if ((size_t)ks.depth + 1 >= nopen) {
			nopen = nopen ? nopen * 2 : 64;
			open = xrealloc(open, nopen);
		}
		ks_open(&ks);
		open[ks.depth] = *p++;
		WS();
		if (p < end && *p == (open[ks.depth] == '{' ? '}' : ']')) {
			p++;
			ks_close(&ks);
			goto after;
		}
		if (open[ks.depth] == '{')
			goto key;
		goto value;
	case '"':
		if ((p = fast_string(p, end, &escaped)) == NULL)
			goto out;
		goto after;
	case 't':
		if (end - p < 4 || memcmp(p, "true", 4) != 0)
			goto out;
		p += 4;
		goto after;
	case 'f':
		if (end - p < 5 || memcmp(p, "false", 5) != 0)
			goto out;
		p += 5;
		goto after;
	case 'n':
		if (end - p < 4 || memcmp(p, "null", 4) != 0)
			goto out;
		p += 4;
		goto after;
	default:
		if ((p = fast_number(p, end)) == NULL)
			goto out;
		goto after;
	}
after:
	WS();
	if (ks.depth == 0) {
		ok = p == end;
		if (ok && w != NULL) {
			memcpy(w, run, (size_t)(p - run));
			*out = w + (p - run);
		}
		goto out;
	}
	if (p >= end)
		goto out;
	if (*p == ',') {
		p++;
		WS();
		if (open[ks.depth] == '{')
			goto key;
		goto value;
	}
	if (*p != (open[ks.depth] == '{' ? '}' : ']'))
		goto out;
	p++;
	ks_close(&ks);
	goto after;
key:
	if (p >= end || *p != '"' || (q = fast_string(p, end, &escaped)) == NULL || escaped ||
	    ks_add(&ks, p + 1, (size_t)(q - p - 2)) < 0)
		goto out;	/* a key with escapes: the full check compares it decoded */
	p = q;
	WS();
	if (p >= end || *p != ':')
		goto out;
	p++;
	WS();
	goto value;
#undef WS
out:
	ks_free(&ks);
	free(open);
	return ok;
}

int
json_validate_depth(const char *text, size_t len, int max_depth, struct json_error *e)
{
	if (max_depth <= 0)
		max_depth = json_max_depth;
	if (fast_valid(text, len, max_depth, NULL))
		return 0;
	return json_validate_full(text, len, max_depth, e);
}

int
json_validate_compact(struct buf *out, const char *text, size_t len, int max_depth,
    struct json_error *e)
{
	char *w;

	if (max_depth <= 0)
		max_depth = json_max_depth;
	buf_grow(out, len);
	w = out->data + out->len;
	if (fast_valid(text, len, max_depth, &w)) {
		out->len = (size_t)(w - out->data);
		out->data[out->len] = '\0';
		return 0;
	}
	out->data[out->len] = '\0';	/* the fast pass may have written past it */
	if (json_validate_full(text, len, max_depth, e) < 0)
		return -1;
	json_compact(out, text, len);
	return 0;
}

int
json_validate_full(const char *text, size_t len, int max_depth, struct json_error *e)
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
	ks_init(&s.ks, text, len);
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
	ks_free(&s.ks);
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

