/*
 * json_scan_test - the 16-byte scans of common/base/json_scan.h held to a
 * byte-at-a-time reference (a byte loop that stops at every non-ASCII byte
 * and leaves it to utf8_run, as before the wide UTF-8 check): the same end
 * of every string, the same refusals, at every offset from a 16-byte
 * boundary; then whole documents with such strings
 * through json_validate_compact against the full check and json_compact,
 * and the file:line:col of refusals inside long strings.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/json_scan.h"
#include "t/tap.h"

/* ref_plain - plain_run one byte at a time: stops at any non-ASCII byte */
static const unsigned char *
ref_plain(const unsigned char *p, const unsigned char *end)
{
	while (p < end && !(cls[*p] & 2))
		p++;
	return p;
}

/* ref_string - the string scan with ref_plain: the reference */
static const unsigned char *
ref_string(const unsigned char *p, const unsigned char *end, int *escaped)
{
	return string_scan(p, end, escaped, ref_plain);
}

/* same_string - fast_string and the reference agree on s (n bytes, s[0] the quote) */
static int
same_string(const unsigned char *s, size_t n)
{
	/* a copy of exactly n bytes, so a read past the end is ASan's to see */
	unsigned char *c = xmalloc(n > 0 ? n : 1);
	const unsigned char *a, *b;
	int ea, eb, same;

	memcpy(c, s, n);
	a = fast_string(c, c + n, &ea);
	b = ref_string(c, c + n, &eb);
	same = a == b && (a == NULL || ea == eb);
	if (!same)
		diag("fast_string %td (escaped %d), reference %td (escaped %d): %.*s",
		    a ? a - c : -1, ea, b ? b - c : -1, eb, (int)n, (const char *)s);
	free(c);
	return same;
}

/*
 * piece_tests - each UTF-8 piece, escape and stray byte after 0-33 ASCII
 * bytes (so at every position of a 16-byte block and across the boundary),
 * followed by more text, by the closing quote, or by the end of the input
 */
static void
piece_tests(void)
{
	static const char *const pieces[] = {
		"\xc3\xa7", "\xc2\x80", "\xdf\xbf", "\xe2\x82\xac", "\xe4\xb8\xad",
		"\xef\xbf\xbd", "\xee\x80\x80", "\xf0\x9f\x98\x80", "\xf1\x80\x80\x80",
		"\xf3\xbf\xbf\xbf", "\xf4\x8f\xbf\xbf",
		/* the leads with a narrower second byte, right and wrong */
		"\xe0\xa0\x80", "\xe0\x9f\xbf", "\xed\x9f\xbf", "\xed\xa0\x80",
		"\xf0\x90\x80\x80", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80",
		/* invalid: overlong leads, past U+10FFFF, stray and missing continuations */
		"\xc0\xaf", "\xc1\xbf", "\xf5\x80\x80\x80", "\xff", "\x80", "\xbf",
		"\xc3", "\xc3\x41", "\xe2\x82", "\xe2\x82\x41", "\xf0\x9f\x98",
		"\xc3\xa7\xa7", "\xe2\x82\xac\x80", "\xc3\x22",
		/* escapes, control characters */
		"\\\"", "\\\\", "\\/", "\\n", "\\u00e9", "\\uD83D", "\\udfff", "\\u12",
		"\\x", "\x01", "\x1f", "\x7f", "\t",
	};
	static const char *const tails[] = { "", "\"", " and more text after it\", 1",
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"" };
	unsigned char s[256];
	int n = 0, same = 0;

	for (size_t pi = 0; pi < sizeof(pieces) / sizeof(pieces[0]); pi++)
		for (size_t pad = 0; pad < 34; pad++)
			for (size_t ti = 0; ti < sizeof(tails) / sizeof(tails[0]); ti++) {
				size_t len = 1, pl = strlen(pieces[pi]), tl = strlen(tails[ti]);

				s[0] = '"';
				for (size_t i = 0; i < pad; i++)
					s[len++] = (unsigned char)('a' + i % 26);
				memcpy(s + len, pieces[pi], pl);
				len += pl;
				memcpy(s + len, tails[ti], tl);
				len += tl;
				n++;
				same += same_string(s, len);
			}
	ok(same == n, "%d strings, each piece at every offset of a 16-byte block: "
	    "the wide scan ends and refuses where the byte loop does (%d agree)", n, same);
}

/* random_tests - random strings of UTF-8 pieces, ASCII, escapes and bad bytes */
static void
random_tests(void)
{
	static const char *const alphabet[] = {
		"a", "b", " ", "0", "\"", "\\\"", "\\n", "\\u00e7", "\\ud800",
		"\xc3\xa7", "\xc3\xa3", "\xe2\x82\xac", "\xe4\xb8\xad\xe6\x96\x87",
		"\xf0\x9f\x98\x80", "\xe0\xa4\x85", "\xed\x95\x9c", "\xf4\x8f\xbf\xbf",
		"\xc3", "\xa7", "\xe2\x82", "\xc0\x80", "\xed\xa0\x80", "\xf5", "\x01",
	};
	unsigned seed = 1207;
	unsigned char s[160];
	int n = 200000, same = 0;

	for (int i = 0; i < n; i++) {
		size_t len = 1;
		int plain = (int)(rand_r(&seed) % 4);	/* mostly letters: long runs */

		s[0] = '"';
		while (len < sizeof(s) - 16 && rand_r(&seed) % 40 != 0) {
			const char *a;

			if (plain != 0 && rand_r(&seed) % 8 < 6)
				a = "x";
			else if (rand_r(&seed) % 6 != 0)
				a = alphabet[9 + rand_r(&seed) % 8];	/* valid UTF-8 */
			else
				a = alphabet[rand_r(&seed) % (sizeof(alphabet) / sizeof(alphabet[0]))];
			memcpy(s + len, a, strlen(a));
			len += strlen(a);
		}
		if (rand_r(&seed) % 8 != 0)
			s[len++] = '"';
		same += same_string(s, len);
	}
	ok(same == n, "200,000 random strings: the wide scan and the byte loop agree "
	    "(%d of %d)", same, n);
}

/* ws_tests - ws_run ends where a byte loop over JSON's four does */
static void
ws_tests(void)
{
	static const char alphabet[] = " \n\t\r\f\v{\"";
	unsigned seed = 7;
	unsigned char s[80];
	int n = 50000, same = 0;

	for (int i = 0; i < n; i++) {
		size_t len = rand_r(&seed) % sizeof(s);
		const unsigned char *r = s;

		for (size_t j = 0; j < len; j++)
			s[j] = rand_r(&seed) % 6 != 0 ? " \n\t\r"[rand_r(&seed) % 4] :
			    (unsigned char)alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		while (r < s + len && (*r == ' ' || *r == '\n' || *r == '\t' || *r == '\r'))
			r++;
		same += ws_run(s, s + len) == r;
	}
	ok(same == n, "ws_run ends at the first byte that is not JSON white space "
	    "(%d of %d)", same, n);
}

/*
 * doc_tests - pretty documents whose strings are long UTF-8 text: the
 * fused check and compaction agree with the full check and json_compact,
 * valid or not (one byte in a string replaced now and then)
 */
static void
doc_tests(void)
{
	static const char *const words[] = {
		"Trocas", "Devolu\xc3\xa7\xc3\xb5" "es", "gr\xc3\xa1tis", "bru\xcc\x82l\xc3\xa9" "e",
		"\xe4\xb8\xad\xe6\x96\x87", "\xf0\x9f\x98\x80", "ni\xc3\xb1o", "\\\"x\\\"",
		"\\u00e9", "a\\nb", "https://cdn.example.com/a-long/path/banner-146.webp",
	};
	static const unsigned char bad[] = { 0xc3, 0xa7, 0xe0, 0xed, 0xf4, 0x80, 0x01, '"' };
	unsigned seed = 42;
	int n = 4000, same = 0, valid = 0;
	struct buf d, ca, cb;

	buf_init(&d);
	buf_init(&ca);
	buf_init(&cb);
	for (int i = 0; i < n; i++) {
		int want, got;

		buf_reset(&d);
		buf_adds(&d, "{\n");
		for (int k = 0, nk = 1 + (int)(rand_r(&seed) % 6); k < nk; k++) {
			buf_printf(&d, "%s  \"k%d\": \"", k ? ",\n" : "", k);
			for (int w = 0, nw = (int)(rand_r(&seed) % 12); w < nw; w++)
				buf_printf(&d, "%s%s", w ? " " : "",
				    words[rand_r(&seed) % (sizeof(words) / sizeof(words[0]))]);
			buf_adds(&d, "\"");
		}
		buf_adds(&d, "\n}\n");
		if (rand_r(&seed) % 3 == 0)
			d.data[rand_r(&seed) % d.len] = (char)bad[rand_r(&seed) % sizeof(bad)];
		want = json_validate_full(d.data, d.len, 8, NULL) == 0;
		buf_reset(&ca);
		buf_reset(&cb);
		got = json_validate_compact(&ca, d.data, d.len, 8, NULL) == 0;
		if (want)
			json_compact(&cb, d.data, d.len);
		valid += want;
		if (got == want && ca.len == cb.len && memcmp(ca.data, cb.data, ca.len + 1) == 0)
			same++;
		else
			diag("differs (full %d, fused %d): %.*s", want, got, (int)d.len, d.data);
	}
	ok(same == n && valid > n / 2 && valid < n,
	    "%d documents of long UTF-8 strings: json_validate_compact agrees with the "
	    "full check and writes json_compact's bytes (%d agree, %d valid)", n, same, valid);
	buf_free(&d);
	buf_free(&ca);
	buf_free(&cb);
}

int
main(void)
{
	/*
	 * refusals inside strings past 16 bytes: the full check's line and
	 * column (yajl's: the end of the string token for bad UTF-8)
	 */
	static const struct { const char *in; int line; int col; } bad[] = {
		{ "{\n  \"a\": \"Devolu\xc3\xa7\xc3\xb5" "es em at\xc3\xa9 30 dias \xc3\x41 x\"\n}", 2, 40 },
		{ "[\"0123456789abcdef0123\xa7\xa7 and on\"]", 1, 24 },
		{ "[\"0123456789abcde\xe2\x82\"]", 1, 21 },
		{ "[\n\"\xc3\xa7\xc3\xa7\xc3\xa7\xc3\xa7\xc3\xa7\xc3\xa7\xc3\xa7\xc3\xa7\x01\"]", 2, 18 },
	};
	struct json_error e, f;

	piece_tests();
	random_tests();
	ws_tests();
	doc_tests();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = json_validate(bad[i].in, strlen(bad[i].in), &e);

		json_validate_full(bad[i].in, strlen(bad[i].in), 0, &f);
		ok(rc == -1 && e.line == bad[i].line && e.column == bad[i].col &&
		    f.line == e.line && f.column == e.column && strcmp(e.msg, f.msg) == 0,
		    "bad %zu refused at %d:%d (got %d:%d: %s)", i, bad[i].line, bad[i].col,
		    e.line, e.column, e.msg);
	}
	return done_testing();
}
