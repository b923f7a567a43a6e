/*
 * fetch_keys_test - the block key rules of SPEC §9, one table row per case:
 * base name, form URL-decoding, one ".json" stripped, non-JSON ignored;
 * and the one name rule (fetch_name_bad): a name or a decoded key that is
 * not UTF-8 is refused, quoted so that the message is UTF-8.
 */
#include "config.h"

#include "common/util.h"
#include "daemons/fetcher/fetch_keys.h"
#include "t/tap.h"

static const struct {
	const char *path;
	int rc;			/* 0 key, 1 ignored, -1 error */
	const char *key;	/* key, or a word the error must contain */
} cases[] = {
	{ "Header.json", 0, "Header" },
	{ "blocks/sub/Footer.json", 0, "Footer" },
	{ "pages/Home%20Page.json", 0, "Home Page" },
	{ "a+b.json", 0, "a b" },
	{ "%2Fslash%2f.json", 0, "/slash/" },
	{ "caf%C3%A9.json", 0, "caf\xc3\xa9" },
	{ "x.json.json", 0, "x.json" },
	{ "site.json%2Ejson", 0, "site.json" },
	{ "100%25.json", 0, "100%" },
	{ "a%2Ejson", 0, "a" },
	{ "README%.md", 1, NULL },
	{ "README.md", 1, NULL },
	{ ".gitkeep", 1, NULL },
	{ "Header.JSON", 1, NULL },
	{ "Header.json5", 1, NULL },
	{ "dir.json/", 1, NULL },
	{ "bad%zz.json", -1, "bad%zz.json" },
	{ "bad%2.json", -1, "URL form" },
	{ "trail%.json", -1, "trail%.json" },
	{ "nul%00.json", -1, "nul%00.json" },
	{ "sub/.json", -1, "empty block key" },
	{ "blocks/P\xc3\xa1gina Institucional.json", 0, "P\xc3\xa1gina Institucional" },
	{ "\xe9\xa6\x96\xe9\xa1\xb5.json", 0, "\xe9\xa6\x96\xe9\xa1\xb5" },
	{ "\xf0\x9f\x8e\x89 Promo.json", 0, "\xf0\x9f\x8e\x89 Promo" },
	{ "P%C3%A1gina%20Institucional.json", 0, "P\xc3\xa1gina Institucional" },
	{ "blocks/\xff.json", -1, "file 'blocks/\\xff.json' has a name that is not valid UTF-8" },
	{ "caf\xe9/Header.json", -1, "file 'caf\\xe9/Header.json' has a name that is not valid UTF-8" },
	{ "README\xff.md", -1, "file 'README\\xff.md' has a name that is not valid UTF-8" },
	{ "blocks/%FF.json", -1, "blocks/%FF.json: file name URL-decodes to a block key that is not "
	  "valid UTF-8 ('\\xff')" },
	{ "%C0%AF.json", -1, "not valid UTF-8 ('\\xc0\\xaf')" },
	{ "%ED%A0%80.json", -1, "not valid UTF-8" },
};

int
main(void)
{
	char key[512], err[512], small[4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		err[0] = '\0';
		rc = fetch_key_from_path(cases[i].path, key, sizeof(key), err, sizeof(err));
		is_int(rc, cases[i].rc, "%s: result", cases[i].path);
		if (cases[i].rc == 0 && rc == 0)
			is_str(key, cases[i].key, "%s: key", cases[i].path);
		if (cases[i].rc < 0) {
			ok(strstr(err, cases[i].key) != NULL, "%s: error says '%s' (%s)",
			    cases[i].path, cases[i].key, err);
			ok(utf8_valid(err, strlen(err)), "%s: the error is UTF-8", cases[i].path);
		}
	}
	is_int(fetch_form_decode("abcdef", small, sizeof(small)), -1, "decode: no room is an error");
	is_int(fetch_key_inline("a%20b", 5, err, sizeof(err)), 0, "inline keys are taken as written");
	is_int(fetch_key_inline("", 0, err, sizeof(err)), -1, "inline: empty key refused");
	is_int(fetch_key_inline("P\xc3\xa1gina", 7, err, sizeof(err)), 0, "inline: a UTF-8 key");
	is_int(fetch_key_inline("\xff", 1, err, sizeof(err)), -1, "inline: a key not UTF-8 refused");
	is_str(err, "inline: block key '\\xff' is not valid UTF-8", "inline: the key quoted");
	ok(fetch_name_bad("") != NULL && fetch_name_bad(NULL) != NULL, "the name rule: empty");
	return done_testing();
}
