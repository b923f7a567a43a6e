/*
 * proto_detail - the typed `detail` of each work item (proto.h,
 * PROTOCOL.md §2): one table of fields per item, one encoder and one
 * strict decoder over those tables.  A detail is "key=value" words joined
 * by single spaces; a decoder that accepts one has checked every word.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

enum dtype {
	D_WORD,		/* printable, no space; char[size] */
	D_INT,		/* decimal >= 0; int64_t, -1 when absent */
	D_HEX64,	/* 64 lowercase hex digits; char[65] */
	D_FORMAT,	/* "json" or "bin"; char[size] */
	D_COMMIT,	/* a word, "-" meaning none; char[size] */
};

struct dfield {
	const char *key;
	enum dtype type;
	int required;
	size_t off;
	size_t size;	/* of the char array; 0 for D_INT */
};

#define F(st, k, t, req, m) { k, t, req, offsetof(struct st, m), \
	sizeof(((struct st *)0)->m) }

static const struct dfield render_fields[] = {
	F(proto_render_detail, "source", D_WORD, 1, source),
	F(proto_render_detail, "commit", D_COMMIT, 0, commit),
	F(proto_render_detail, "generation", D_INT, 0, generation),
};
static const struct dfield publish_fields[] = {
	F(proto_publish_detail, "format", D_FORMAT, 1, format),
	F(proto_publish_detail, "bin", D_HEX64, 0, bin),
	F(proto_publish_detail, "commit", D_COMMIT, 0, commit),
};
static const struct dfield notify_fields[] = {
	F(proto_notify_detail, "timestamp", D_INT, 1, timestamp),
	F(proto_notify_detail, "commit", D_COMMIT, 0, commit),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * value_check - whether v is a good value of f; 0, or -1 with err.  *n gets
 * a D_INT's number.
 */
/* sha256_hex - 64 lowercase hex digits (proto/ needs libc only, so its own) */
static int
sha256_hex(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 64;
}

static int
value_check(const struct dfield *f, const char *v, long long *n, char *err, size_t errlen)
{
	char *end;

	switch (f->type) {
	case D_INT:
		errno = 0;
		*n = strtoll(v, &end, 10);
		if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
			snprintf(err, errlen, "%s=%.40s is not a whole number >= 0", f->key, v);
			return -1;
		}
		return 0;
	case D_HEX64:
		if (!sha256_hex(v)) {
			snprintf(err, errlen, "%s=%.80s is not a sha256 (64 lowercase hex)", f->key,
			    v);
			return -1;
		}
		break;
	case D_FORMAT:
		if (strcmp(v, "json") != 0 && strcmp(v, "bin") != 0) {
			snprintf(err, errlen, "%s=%.40s is not json or bin", f->key, v);
			return -1;
		}
		break;
	case D_WORD:
	case D_COMMIT:
		if (!proto_word_ok(v, 0)) {
			snprintf(err, errlen, "%s has a space or control byte", f->key);
			return -1;
		}
		break;
	}
	if (strlen(v) >= f->size) {
		snprintf(err, errlen, "%s is longer than %zu bytes", f->key, f->size - 1);
		return -1;
	}
	return 0;
}

/* value_set - check v for f and store it in obj; 0, or -1 with err */
static int
value_set(const struct dfield *f, const char *v, void *obj, char *err, size_t errlen)
{
	char *dst = (char *)obj + f->off;
	long long n = 0;

	if (value_check(f, v, &n, err, errlen) < 0)
		return -1;
	if (f->type == D_INT) {
		*(int64_t *)(void *)dst = n;
		return 0;
	}
	if (f->type == D_COMMIT && strcmp(v, "-") == 0)
		v = "";
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* decode - s into obj (zeroed first) by the table; 0, or -1 with err */
static int
decode(const char *what, const struct dfield *fs, size_t nf, const char *s, void *obj,
    size_t objsize, char *err, size_t errlen)
{
	unsigned seen = 0;
	char word[PROTO_MAX_DETAIL + 1], e[256];
	const char *p = s, *sp;

	memset(obj, 0, objsize);
	for (size_t i = 0; i < nf; i++)
		if (fs[i].type == D_INT)
			*(int64_t *)(void *)((char *)obj + fs[i].off) = -1;
	if (s == NULL || strlen(s) > PROTO_MAX_DETAIL) {
		snprintf(err, errlen, "%s detail: missing or longer than %d bytes", what,
		    PROTO_MAX_DETAIL);
		return -1;
	}
	while (*p != '\0') {
		const char *eq;
		size_t len, k;

		sp = strchr(p, ' ');
		len = sp != NULL ? (size_t)(sp - p) : strlen(p);
		memcpy(word, p, len);
		word[len] = '\0';
		p += len;
		if (*p == ' ' && *++p == '\0') {
			snprintf(err, errlen, "%s detail: a trailing space", what);
			return -1;
		}
		if ((eq = strchr(word, '=')) == NULL || eq == word) {
			snprintf(err, errlen, "%s detail: \"%.60s\" is not key=value", what, word);
			return -1;
		}
		word[eq - word] = '\0';
		if (strcmp(word, "v") == 0) {
			if (strcmp(eq + 1, "1") != 0) {
				snprintf(err, errlen, "%s detail: version %.20s, this build speaks %d",
				    what, eq + 1, PROTO_DETAIL_VERSION);
				return -1;
			}
			continue;
		}
		for (k = 0; k < nf && strcmp(fs[k].key, word) != 0; k++)
			;
		if (k == nf) {
			snprintf(err, errlen, "%s detail: unknown field \"%.40s\"", what, word);
			return -1;
		}
		if (seen & (1u << k)) {
			snprintf(err, errlen, "%s detail: %s given twice", what, word);
			return -1;
		}
		seen |= 1u << k;
		if (value_set(&fs[k], eq + 1, obj, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "%s detail: %s", what, e);
			return -1;
		}
	}
	for (size_t i = 0; i < nf; i++) {
		if (fs[i].required && !(seen & (1u << i))) {
			snprintf(err, errlen, "%s detail: no %s", what, fs[i].key);
			return -1;
		}
	}
	return 0;
}

/*
 * encode - obj by the table into out: fields in table order, optional ones
 * left out when empty (-1 for numbers); every value must pass the decoder's
 * check.  The length, or -1.
 */
static int
encode(const struct dfield *fs, size_t nf, const void *obj, char *out, size_t outlen)
{
	size_t o = 0;
	char num[32], e[256];
	long long dummy;

	if (outlen > 0)
		out[0] = '\0';
	for (size_t i = 0; i < nf; i++) {
		const char *v = (const char *)obj + fs[i].off;
		int n;

		if (fs[i].type == D_INT) {
			int64_t x = *(const int64_t *)(const void *)v;

			if (x < 0 && !fs[i].required)
				continue;
			snprintf(num, sizeof(num), "%lld", (long long)x);
			v = num;
		} else if (*v == '\0' && !fs[i].required) {
			continue;
		}
		if (value_check(&fs[i], v, &dummy, e, sizeof(e)) < 0)
			return -1;
		n = snprintf(out + o, outlen - o, "%s%s=%s", o ? " " : "", fs[i].key, v);
		if (n < 0 || (size_t)n >= outlen - o)
			return -1;
		o += (size_t)n;
	}
	return o > PROTO_MAX_DETAIL ? -1 : (int)o;
}

int
proto_render_detail_encode(const struct proto_render_detail *d, char *out, size_t outlen)
{
	return encode(render_fields, N(render_fields), d, out, outlen);
}

int
proto_render_detail_decode(const char *s, struct proto_render_detail *d, char *err,
    size_t errlen)
{
	return decode("renderer item", render_fields, N(render_fields), s, d, sizeof(*d), err,
	    errlen);
}

int
proto_publish_detail_encode(const struct proto_publish_detail *d, char *out, size_t outlen)
{
	if (strcmp(d->format, "bin") == 0 && d->bin[0] == '\0')
		return -1;
	return encode(publish_fields, N(publish_fields), d, out, outlen);
}

int
proto_publish_detail_decode(const char *s, struct proto_publish_detail *d, char *err,
    size_t errlen)
{
	if (decode("publisher item", publish_fields, N(publish_fields), s, d, sizeof(*d), err,
	    errlen) < 0)
		return -1;
	if (strcmp(d->format, "bin") == 0 && d->bin[0] == '\0') {
		snprintf(err, errlen, "publisher item detail: format=bin needs bin=<sha256>");
		return -1;
	}
	return 0;
}

int
proto_notify_detail_encode(const struct proto_notify_detail *d, char *out, size_t outlen)
{
	int n;

	if (d->commit[0] != '\0')
		return encode(notify_fields, N(notify_fields), d, out, outlen);
	/* no commit: written as "commit=-", as people reading the journal expect */
	if (d->timestamp < 0)
		return -1;
	n = snprintf(out, outlen, "timestamp=%lld commit=-", (long long)d->timestamp);
	return n < 0 || (size_t)n >= outlen ? -1 : n;
}

int
proto_notify_detail_decode(const char *s, struct proto_notify_detail *d, char *err,
    size_t errlen)
{
	return decode("notifier item", notify_fields, N(notify_fields), s, d, sizeof(*d), err,
	    errlen);
}
