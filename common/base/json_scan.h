/*
 * json_scan - the byte scanners of json_validate's one-pass check: plain
 * string bytes and white space 16 at a time (SSE2), UTF-8, strings and
 * numbers.  Private to common/base/json_validate.c (and its unit test,
 * which holds the wide scans to a byte-at-a-time reference); static inline
 * so that the check's loop keeps them in line.  Each returns past what it
 * accepted, or NULL (or the first byte it is not sure of) so the caller can
 * hand the document to the full check: they may refuse more than yajl, never
 * less.
 */
#ifndef DECOD_JSON_SCAN_H
#define DECOD_JSON_SCAN_H

#include <stddef.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/util.h"

/*
 * The fast check.  cls: 1 white space (JSON's four), and for bytes inside a
 * string 2 for the ones that end the plain run (quote, backslash, control
 * characters, non-ASCII).
 */
static const unsigned char cls[256] = {
	[0 ... 8] = 2, ['\t'] = 3, ['\n'] = 3, [0x0b ... 0x0c] = 2, ['\r'] = 3,
	[0x0e ... 0x1f] = 2, [' '] = 1, ['"'] = 2, ['\\'] = 2, [0x80 ... 0xff] = 2,
};

static inline int
hexdig(unsigned c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

#ifdef __SSE2__
/*
 * utf8_block_ok - nonzero when the non-ASCII bytes of the 16 at x (hi: their
 * mask, not 0), read from a character boundary, are whole UTF-8 characters
 * that end inside the 16: leads C2-DF, E1-EC, EE-EF and F1-F3 (the ones
 * whose continuations are any of 80-BF), each followed by exactly its
 * continuations.  Anything else (E0, ED, F0, F4 with their narrower second
 * byte, a character cut by the end of the 16, an invalid byte) gives 0 and
 * is left to utf8_run.  Text with accents then stays in the 16-byte loop.
 */
static inline int
utf8_block_ok(__m128i x, unsigned hi)
{
	/* signed compares: 0x80-0xff are -128..-1, ASCII is never below them */
	const __m128i c0 = _mm_set1_epi8((char)0xc0), c1 = _mm_set1_epi8((char)0xc1);
	const __m128i e0 = _mm_set1_epi8((char)0xe0), ed = _mm_set1_epi8((char)0xed);
	const __m128i f0 = _mm_set1_epi8((char)0xf0), f4 = _mm_set1_epi8((char)0xf4);
	unsigned cont, l2, l3, l4;

	cont = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(x, c0));
	l2 = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(x, c1),
	    _mm_cmplt_epi8(x, e0)));
	l3 = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(x, e0),
	    _mm_cmplt_epi8(x, f0))) &
	    ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, ed));
	l4 = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(x, f0),
	    _mm_cmplt_epi8(x, f4)));
	if ((cont | l2 | l3 | l4) != hi)
		return 0;
	/* where continuations must be, and nowhere else; past bit 15: cut */
	return cont == ((l2 << 1) | (l3 << 1) | (l3 << 2) | (l4 << 1) | (l4 << 2) |
	    (l4 << 3));
}
#endif

/*
 * plain_run - past the string bytes at p (a character boundary) that need
 * no second look: not a quote, backslash or control character, and
 * non-ASCII only as whole UTF-8 characters the 16-byte scan could check.
 * 16 at a time where there is SSE2 (every x86-64): most of a document is
 * such bytes.  Stops at the first byte it is not sure of: a caller takes a
 * non-ASCII byte there to utf8_run.  Always in line: string_scan gets it
 * as a pointer, which gcc would otherwise leave a call.
 */
static inline __attribute__((always_inline)) const unsigned char *
plain_run(const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(' ');

	while (end - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
		/* compared signed, bytes from 0x80 up are below ' ' too */
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
		    _mm_cmpeq_epi8(x, bslash)), _mm_cmplt_epi8(x, space));
		unsigned bits = (unsigned)_mm_movemask_epi8(m), hi;

		if (bits != 0) {
			hi = (unsigned)_mm_movemask_epi8(x);
			if (hi == 0 || !utf8_block_ok(x, hi))
				return p + __builtin_ctz(bits);
			/* the non-ASCII bytes are whole characters: the rest stops */
			if ((bits &= ~hi) != 0)
				return p + __builtin_ctz(bits);
		}
		p += 16;
	}
#endif
	while (p < end && !(cls[*p] & 2))
		p++;
	return p;
}

/*
 * ws_run - past the white space at p, 16 bytes at a time where there is
 * SSE2: an editor's 2-space indentation is over a quarter of a block
 */
static inline const unsigned char *
ws_run(const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
	const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n');
	const __m128i tab = _mm_set1_epi8('\t'), cr = _mm_set1_epi8('\r');

	while (end - p >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, sp),
		    _mm_cmpeq_epi8(x, nl)), _mm_or_si128(_mm_cmpeq_epi8(x, tab),
		    _mm_cmpeq_epi8(x, cr)));
		unsigned bits = ~(unsigned)_mm_movemask_epi8(m) & 0xffff;

		if (bits != 0)
			return p + __builtin_ctz(bits);
		p += 16;
	}
#endif
	while (p < end && (cls[*p] & 1))
		p++;
	return p;
}

/*
 * utf8_run - past the UTF-8 characters at p (p at a byte from 0x80), NULL
 * at an invalid one; the two- and three-byte forms that need no range
 * check of their second byte are taken here, the rest by utf8_seq
 */
static inline const unsigned char *
utf8_run(const unsigned char *p, const unsigned char *end)
{
	while (p < end && *p >= 0x80) {
		size_t l;

		if (*p >= 0xc2 && *p <= 0xdf && end - p >= 2 && (p[1] & 0xc0) == 0x80)
			l = 2;
		else if (((*p >= 0xe1 && *p <= 0xec) || *p == 0xee || *p == 0xef) &&
		    end - p >= 3 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80)
			l = 3;
		else if ((l = utf8_seq(p, (size_t)(end - p))) == 0)
			return NULL;
		p += l;
	}
	return p;
}

/*
 * escape_len - p at a backslash inside a string: the length of the escape
 * (2, or 6 for \uXXXX); 0 hands it to the full check, which owns the
 * rest: not an escape, the end of the input, or a \u of a surrogate
 */
static inline size_t
escape_len(const unsigned char *p, const unsigned char *end)
{
	if (end - p < 2)
		return 0;
	switch (p[1]) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
		return 2;
	case 'u':
		if (end - p < 6 || !hexdig(p[2]) || !hexdig(p[3]) || !hexdig(p[4]) ||
		    !hexdig(p[5]) || ((p[2] | 0x20) == 'd' && p[3] >= '8'))
			return 0;
		return 6;
	default:
		return 0;
	}
}

/* a scanner of plain string bytes: plain_run, or a test's byte loop */
typedef const unsigned char *(*json_plain_fn)(const unsigned char *, const unsigned char *);

/*
 * string_scan - p at the opening quote: past the closing one, *escaped set
 * when the string has an escape; NULL hands the string to the full check
 * (an error, or a \u of a surrogate, whose decoding that check owns).  plain skips the bytes
 * that need no second look.
 */
static inline const unsigned char *
string_scan(const unsigned char *p, const unsigned char *end, int *escaped,
    json_plain_fn plain)
{
	*escaped = 0;
	for (p++;;) {
		p = plain(p, end);
		if (p >= end)
			return NULL;
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			size_t l = escape_len(p, end);

			*escaped = 1;
			if (l == 0)
				return NULL;
			p += l;
			continue;
		}
		if (*p < 0x80)
			return NULL;	/* a raw control character */
		if ((p = utf8_run(p, end)) == NULL)
			return NULL;
	}
}

/* fast_string - string_scan with the 16-byte plain_run */
static inline const unsigned char *
fast_string(const unsigned char *p, const unsigned char *end, int *escaped)
{
	return string_scan(p, end, escaped, plain_run);
}

/* fast_number - past a number at p (RFC 8259's grammar), NULL when there is none */
static inline const unsigned char *
fast_number(const unsigned char *p, const unsigned char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p >= end)
		return NULL;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (p < end && *p == '.') {
		if (++p >= end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p | 0x20) == 'e') {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

#endif
