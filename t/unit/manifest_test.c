/*
 * manifest_test - the tree manifest: the writer's exact bytes (the tree
 * hash depends on them), a round trip, and a table of malformed manifests
 * the reader must refuse with its reason.
 */
#include "config.h"

#include "common/util.h"
#include "common/manifest.h"
#include "proto/proto.h"
#include "t/tap.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"

static void
test_write_read(void)
{
	struct manifest_entry e[2] = {
		{ "Footer", "blocks/Footer.json", H2 },
		{ "Header", "blocks/Header.json", H1 },
	};
	struct manifest t = { "git", "3f2a9c", 2, e }, back;
	struct buf b;
	char err[512];

	buf_init(&b);
	ok(manifest_encode(&t, &b, err, sizeof(err)) == 0, "manifest encodes");
	is_str(b.data, "{\"source\":\"git\",\"commit\":\"3f2a9c\",\"entries\":["
	    "{\"key\":\"Footer\",\"path\":\"blocks/Footer.json\",\"blob\":\"" H2 "\"},"
	    "{\"key\":\"Header\",\"path\":\"blocks/Header.json\",\"blob\":\"" H1 "\"}]}",
	    "... to the bytes fetch_tree always wrote");
	ok(manifest_decode(b.data, b.len, &back, err, sizeof(err)) == 0, "and decodes");
	ok(back.n == 2 && strcmp(back.source, "git") == 0 && strcmp(back.commit, "3f2a9c") == 0 &&
	    strcmp(back.e[1].key, "Header") == 0 && strcmp(back.e[1].path, "blocks/Header.json")
	    == 0 && strcmp(back.e[0].blob, H2) == 0, "every field comes back");
	manifest_free(&back);
	manifest_free(NULL);
	buf_reset(&b);
	t.commit[0] = '\0';
	manifest_encode(&t, &b, err, sizeof(err));
	ok(strstr(b.data, "commit") == NULL, "no commit: left out");
	buf_reset(&b);
	t.e = (struct manifest_entry[]){ e[1], e[0] };
	ok(manifest_encode(&t, &b, err, sizeof(err)) == -1 && strstr(err, "sorted") != NULL &&
	    b.len == 0, "unsorted entries are refused, nothing written");
	buf_free(&b);
}

static void
test_malformed(void)
{
	static const struct { const char *label, *in, *why; } rows[] = {
		{ "not JSON", "{\"entries\":[", "not JSON" },
		{ "an array", "[]", "not an object" },
		{ "no entries", "{\"source\":\"git\"}", "no entries" },
		{ "entries an object", "{\"entries\":{}}", "no entries" },
		{ "unknown field", "{\"entries\":[],\"extra\":1}", "unknown field" },
		{ "version 2", "{\"version\":2,\"entries\":[]}", "version" },
		{ "version a string", "{\"version\":\"1\",\"entries\":[]}", "version" },
		{ "source a number", "{\"source\":5,\"entries\":[]}", "source" },
		{ "source with a space", "{\"source\":\"g t\",\"entries\":[]}", "source" },
		{ "commit empty", "{\"commit\":\"\",\"entries\":[]}", "commit" },
		{ "entry a string", "{\"entries\":[\"x\"]}", "not an object" },
		{ "entry without blob", "{\"entries\":[{\"key\":\"a\",\"path\":\"a\"}]}", "no blob" },
		{ "entry without key", "{\"entries\":[{\"blob\":\"" H1 "\"}]}", "no key" },
		{ "blob short", "{\"entries\":[{\"key\":\"a\",\"blob\":\"abc\"}]}", "not a sha256" },
		{ "blob upper case", "{\"entries\":[{\"key\":\"a\",\"blob\":"
		  "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}",
		  "not a sha256" },
		{ "blob a number", "{\"entries\":[{\"key\":\"a\",\"blob\":5}]}", "must be strings" },
		{ "empty key", "{\"entries\":[{\"key\":\"\",\"blob\":\"" H1 "\"}]}", "key" },
		{ "unknown entry field", "{\"entries\":[{\"key\":\"a\",\"blob\":\"" H1 "\","
		  "\"mode\":1}]}", "unknown field" },
		{ "unsorted", "{\"entries\":[{\"key\":\"b\",\"blob\":\"" H1 "\"},"
		  "{\"key\":\"a\",\"blob\":\"" H1 "\"}]}", "not sorted" },
		{ "a rendered document", "{\"Header\":{\"title\":\"x\"}}", "unknown field" },
	};
	struct manifest t;
	char err[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		err[0] = '\0';
		ok(manifest_decode(rows[i].in, strlen(rows[i].in), &t, err, sizeof(err)) == -1 &&
		    strstr(err, rows[i].why) != NULL && t.n == 0 && t.e == NULL,
		    "refuses %s (%s)", rows[i].label, err);
	}
	{
		static const char m[] = "{\"entries\":[{\"key\":\"Header\",\"path\":"
		    "\"Header.json\",\"blob\":\"" H1 "\"}]}";

		ok(manifest_decode(m, strlen(m), &t, err, sizeof(err)) == 0 &&
		    t.source[0] == '\0', "a manifest without source or version (version 1) is read");
	}
	manifest_free(&t);
	ok(manifest_decode("{\"version\":1,\"entries\":[{\"key\":\"K\",\"blob\":\"" H1 "\"}]}",
	    strlen("{\"version\":1,\"entries\":[{\"key\":\"K\",\"blob\":\"" H1 "\"}]}"), &t, err,
	    sizeof(err)) == 0 && strcmp(t.e[0].path, "K") == 0, "version 1; path defaults to key");
	manifest_free(&t);
}

int
main(void)
{
	test_write_read();
	test_malformed();
	return done_testing();
}
