/* util_test - durations, sizes, path cleaning, buffers, atomic writes */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/util.h"
#include "t/tap.h"

static void
test_durations(void)
{
	static const struct { const char *in; int ok; int64_t ms; } rows[] = {
		{ "15s", 1, 15000 }, { "500ms", 1, 500 }, { "2m", 1, 120000 },
		{ "1h", 1, 3600000 }, { "1.5s", 1, 1500 }, { "10", 1, 10000 },
		{ "", 0, 0 }, { "abc", 0, 0 }, { "-1s", 0, 0 }, { "5 parsecs", 0, 0 },
		{ "3d", 0, 0 }, { " 15s", 1, 15000 }, { "1e3", 1, 1000000 },
		{ ".5s", 1, 500 }, { "0", 1, 0 },
		/* non-finite, signed, hex and overflowing values are refused */
		{ "nan", 0, 0 }, { "NaN", 0, 0 }, { "nans", 0, 0 }, { "inf", 0, 0 },
		{ "infinity", 0, 0 }, { "-inf", 0, 0 }, { "-0", 0, 0 }, { "+5s", 0, 0 },
		{ "0x10", 0, 0 }, { "1e400", 0, 0 }, { "1e16ms", 0, 0 },
		{ "9e20h", 0, 0 }, { "3000000000000h", 0, 0 }, { "1e", 0, 0 },
		{ ".", 0, 0 }, { "s", 0, 0 }, { NULL, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int64_t ms = -1;
		int rc = parse_duration_ms(rows[i].in, &ms);

		ok((rc == 0) == rows[i].ok && (!rows[i].ok || ms == rows[i].ms),
		    "duration \"%s\" %s", rows[i].in ? rows[i].in : "(null)",
		    rows[i].ok ? "parsed" : "refused");
	}
}

static void
test_sizes(void)
{
	static const struct { const char *in; int ok; uint64_t n; } rows[] = {
		{ "4096", 1, 4096 }, { "2.5MB", 1, 2500000 }, { "1MiB", 1, 1048576 },
		{ "10k", 1, 10000 }, { "1 GiB", 1, 1073741824ULL }, { "x", 0, 0 },
		{ "5 furlongs", 0, 0 }, { "-3", 0, 0 }, { "0", 1, 0 },
		{ "1e3kb", 1, 1000000 },
		/* non-finite, signed, hex and overflowing values are refused */
		{ "nan", 0, 0 }, { "nanMB", 0, 0 }, { "inf", 0, 0 }, { "-inf", 0, 0 },
		{ "infinity", 0, 0 }, { "-0", 0, 0 }, { "0x10", 0, 0 }, { "1e400", 0, 0 },
		{ "1e30", 0, 0 }, { "9223372036854775808", 0, 0 }, { "1e10gib", 0, 0 },
		{ "MB", 0, 0 }, { NULL, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t n = 0;
		int rc = parse_size(rows[i].in, &n);

		ok((rc == 0) == rows[i].ok && (!rows[i].ok || n == rows[i].n),
		    "size \"%s\" %s", rows[i].in ? rows[i].in : "(null)",
		    rows[i].ok ? "parsed" : "refused");
	}
}

/* test_credentials - URLs whose userinfo is a secret (issue 13, defect 2) */
static void
test_credentials(void)
{
	static const struct { const char *in; int secret; } rows[] = {
		{ "https://user:pw@host/x.git", 1 }, { "https://ghp_token@github.com/a/b", 1 },
		{ "HTTP://u:p@h/x", 1 }, { "https://u:p@ss@host/x", 1 },
		{ "https://host/x.git", 0 }, { "https://host/a@b.git", 0 },
		{ "ssh://git@host/x.git", 0 }, { "ssh://git:pw@host/x.git", 1 },
		{ "git@github.com:a/b.git", 0 }, { "/srv/git/x.git", 0 },
		{ "https://host?u=a@b", 0 }, { "git://host/x", 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		is_int(url_has_credentials(rows[i].in), rows[i].secret, "credentials in %s",
		    rows[i].in);
	is_int(url_has_credentials(NULL), 0, "credentials in NULL");
}

static void
test_paths(void)
{
	static const struct { const char *in; const char *out; } rows[] = {
		{ "a/b/c", "a/b/c" }, { "a//b/./c/", "a/b/c" }, { "./x", "x" },
		{ "../x", NULL }, { "a/../../b", NULL }, { "a/..", NULL },
		{ "/abs", NULL }, { "", NULL }, { ".", NULL }, { "a\nb", NULL },
		{ "a\\b", NULL },
	};
	char out[2048], big[4200];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = path_clean_rel(rows[i].in, out, sizeof(out));

		if (rows[i].out == NULL)
			ok(rc == -1, "path \"%s\" refused", rows[i].in);
		else
			is_str(rc == 0 ? out : NULL, rows[i].out, "path \"%s\" cleaned", rows[i].in);
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ok(path_clean_rel(big, out, sizeof(out)) == -1, "a 4 KB name is refused");
	memset(big, 'a', 300);
	big[300] = '\0';
	ok(path_clean_rel(big, out, sizeof(out)) == -1, "a 300-byte component is refused");
	{
		/* the one key validator: its limits and the reason it gives */
		static const struct { const char *label; int len; const char *why; } lim[] = {
			{ "253-byte component (a Kubernetes name)", 253, NULL },
			{ "254-byte component", 254, "253" },
			{ "1024-byte path", 1024, NULL },
			{ "1025-byte path", 1025, "1024" },
		};
		static const struct { const char *in, *why; } bad[] = {
			{ "a/../b", "\"..\"" }, { "a\001b", "control" }, { "a\\b", "backslash" },
			{ "/abs", "clean relative" }, { "./", "clean relative" },
		};
		char in[1100];
		const char *why;

		for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
			memset(in, 'k', (size_t)lim[i].len);
			for (int k = 200; k < lim[i].len && lim[i].len > 300; k += 201)
				in[k] = '/';
			in[lim[i].len] = '\0';
			why = NULL;
			if (lim[i].why == NULL)
				ok(path_clean(in, out, sizeof(out), &why) == 0, "%s passes", lim[i].label);
			else
				ok(path_clean(in, out, sizeof(out), &why) == -1 && why != NULL &&
				    strstr(why, lim[i].why) != NULL, "%s refused: %s", lim[i].label,
				    why ? why : "(no reason)");
		}
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			why = NULL;
			ok(path_clean(bad[i].in, out, sizeof(out), &why) == -1 && why != NULL &&
			    strstr(why, bad[i].why) != NULL, "\"%s\" refused: %s", bad[i].in,
			    why ? why : "(no reason)");
		}
	}
}

/* utf8_valid by RFC 3629's table; str_show keeps UTF-8 and escapes the rest */
static void
test_utf8(void)
{
	static const struct { const char *label, *in; int valid; const char *shown; } rows[] = {
		{ "ASCII", "Header.json", 1, "Header.json" },
		{ "Portuguese", "P\xc3\xa1gina Institucional", 1, "P\xc3\xa1gina Institucional" },
		{ "Chinese", "\xe9\xa6\x96\xe9\xa1\xb5", 1, "\xe9\xa6\x96\xe9\xa1\xb5" },
		{ "emoji (4 bytes)", "\xf0\x9f\x8e\x89", 1, "\xf0\x9f\x8e\x89" },
		{ "U+10FFFF", "\xf4\x8f\xbf\xbf", 1, "\xf4\x8f\xbf\xbf" },
		{ "a lone 0xff", "\xff.json", 0, "\\xff.json" },
		{ "Latin-1 e-acute", "caf\xe9", 0, "caf\\xe9" },
		{ "a lone continuation byte", "\x80", 0, "\\x80" },
		{ "overlong slash", "\xc0\xaf", 0, "\\xc0\\xaf" },
		{ "overlong 3 bytes", "\xe0\x80\xaf", 0, "\\xe0\\x80\\xaf" },
		{ "a surrogate", "\xed\xa0\x80", 0, "\\xed\\xa0\\x80" },
		{ "past U+10FFFF", "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80" },
		{ "cut short", "ab\xe9\xa6", 0, "ab\\xe9\\xa6" },
		{ "control bytes and backslash", "a\nb\\c", 1, "a\\x0ab\\\\c" },
	};
	char out[64], small[6];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		is_int(utf8_valid(rows[i].in, strlen(rows[i].in)), rows[i].valid, "utf8_valid: %s",
		    rows[i].label);
		is_str(str_show(rows[i].in, out, sizeof(out)), rows[i].shown, "str_show: %s",
		    rows[i].label);
	}
	is_str(str_show("abc\xe9\xa6\x96", small, sizeof(small)), "abc",
	    "str_show cuts on a whole character");
	is_str(str_show("\xff\xff", small, sizeof(small)), "\\xff", "str_show never cuts an escape");

	/* a message snprintf cut mid-character ends on a whole one (the archive fuzzer) */
	static const struct { const char *in, *out; } cut[] = {
		{ "entry 'P\xc3\xa1gina", "entry 'P\xc3\xa1gina" },
		{ "entry 'P\xc3", "entry 'P" },
		{ "x\xe9\xa6", "x" },
		{ "x\xe9\xa6\x96", "x\xe9\xa6\x96" },
		{ "x\xf0\x9f\x98", "x" },
		{ "x\xf0\x9f\x98\x80", "x\xf0\x9f\x98\x80" },
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		char m[32];

		snprintf(m, sizeof(m), "%s", cut[i].in);
		utf8_cut_tail(m);
		is_str(m, cut[i].out, "utf8_cut_tail: case %zu", i);
	}
}

static void
test_buf_and_files(void)
{
	char dir[] = "/tmp/util_test.XXXXXX", path[256], *data;
	struct buf b;
	size_t len;
	struct stat st;

	buf_init(&b);
	for (int i = 0; i < 1000; i++)
		buf_printf(&b, "%d,", i);
	ok(b.len > 2000 && strncmp(b.data, "0,1,2,", 6) == 0, "buf grows and keeps data");
	buf_free(&b);

	ok(mkdtemp(dir) != NULL, "temp dir");
	snprintf(path, sizeof(path), "%s/x/y", dir);
	ok(mkdir_p(path, 0700) == 0, "mkdir_p makes parents");
	ok(mkdir_p(path, 0700) == 0, "mkdir_p of a folder already there");
	snprintf(path, sizeof(path), "%s/a//b/c/", dir);
	ok(mkdir_p(path, 0700) == 0, "mkdir_p with a doubled and a trailing slash");
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
	    "... made every folder, mode 0700");
	snprintf(path, sizeof(path), "%s/a/b/c/f", dir);
	ok(write_file_atomic(path, "x", 1, 0600) == 0, "a file inside");
	snprintf(path, sizeof(path), "%s/a/b/c/f/g/h", dir);
	ok(mkdir_p(path, 0700) == -1 && errno == ENOTDIR, "a file in the way: ENOTDIR");
	{
		char deep[4096];
		int n = snprintf(deep, sizeof(deep), "%s/d", dir);

		for (int i = 0; i < 300; i++)	/* deeper than the upward walk keeps */
			n += snprintf(deep + n, sizeof(deep) - (size_t)n, "/%d", i % 10);
		ok(mkdir_p(deep, 0700) == 0 && stat(deep, &st) == 0 && S_ISDIR(st.st_mode),
		    "mkdir_p 300 folders deep");
	}
	snprintf(path, sizeof(path), "%s/x/y/f", dir);
	ok(write_file_atomic(path, "hello", 5, 0600) == 0, "atomic write");
	data = read_file(path, &len, 0);
	ok(data != NULL && len == 5 && memcmp(data, "hello", 5) == 0, "read back");
	free(data);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode 0600");
	ok(read_file(path, &len, 3) == NULL && errno == EFBIG, "size cap gives EFBIG");
	snprintf(path, sizeof(path), "%s/nope/f", dir);
	ok(write_file_atomic(path, "x", 1, 0600) == -1, "write into a missing folder fails");
	ok(rm_rf(dir) == 0 && access(dir, F_OK) != 0, "rm_rf removes the tree");
}

int
main(void)
{
	char ts[40];

	test_durations();
	test_sizes();
	test_paths();
	test_utf8();
	test_buf_and_files();
	rfc3339_from(1731598481, ts, sizeof(ts));
	is_str(ts, "2024-11-14T15:34:41Z", "RFC 3339 from unix seconds");
	test_credentials();
	return done_testing();
}
