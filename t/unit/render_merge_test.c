/*
 * render_merge_test - the merge rules of SPEC §9 (order, compaction,
 * escaping, layers), validation errors naming file:line:column, the
 * ConfigMap size rules and a brotli + base64 round trip.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <brotli/decode.h>

#include "common/hash.h"
#include "daemons/renderer/render_brotli.h"
#include "daemons/renderer/render_merge.h"
#include "t/tap.h"

#define OWN RENDER_LAYER_OWN

struct in {
	const char *key, *path, *data;
	int layer;
};

static const struct {
	const char *label;
	struct in in[6];
	const char *want;	/* merged document, or NULL when an error is expected */
	const char *err;	/* expected error message (exact), or NULL */
} cases[] = {
	{ "empty folder gives {}", { { NULL } }, "{}", NULL },
	{ "one block, whitespace removed",
	  { { "Header", "blocks/Header.json", " {\n  \"a\" : [1, 2 ,3],\n\t\"b\": null }\n", OWN } },
	  "{\"Header\":{\"a\":[1,2,3],\"b\":null}}", NULL },
	{ "keys in byte order: B < a < é",
	  { { "\xc3\xa9", "e.json", "1", OWN }, { "a", "a.json", "2", OWN },
	    { "B", "B.json", "3", OWN }, { "Ab", "Ab.json", "4", OWN } },
	  "{\"Ab\":4,\"B\":3,\"a\":2,\"\xc3\xa9\":1}", NULL },
	{ "escapes and number spellings kept as written",
	  { { "x", "x.json", "{ \"s\": \"\\u00e9 \\/ \\\"q\\\"\", \"n\": [1.50, 1e+3, -0, 1E2] }", OWN } },
	  "{\"x\":{\"s\":\"\\u00e9 \\/ \\\"q\\\"\",\"n\":[1.50,1e+3,-0,1E2]}}", NULL },
	{ "no HTML escaping, UTF-8 as is, spaces in strings kept",
	  { { "h", "h.json", "\"<a href='x'>&amp; caf\xc3\xa9  \xe2\x80\xa8</a>\"", OWN } },
	  "{\"h\":\"<a href='x'>&amp; caf\xc3\xa9  \xe2\x80\xa8</a>\"}", NULL },
	{ "keys are JSON-escaped",
	  { { "q\"b\\s\n<&>", "k.json", "true", OWN }, { "t\tx\x01", "t.json", "false", OWN },
	    { "ls\xe2\x80\xa8", "ls.json", "0", OWN } },
	  "{\"ls\\u2028\":0,\"q\\\"b\\\\s\\n<&>\":true,\"t\\tx\\u0001\":false}", NULL },
	{ "own blocks override templates, later templates override earlier",
	  { { "Header", "base/Header.json", "{\"v\":0}", 0 },
	    { "Footer", "base/Footer.json", "{\"v\":0}", 0 },
	    { "Header", "bf/Header.json", "{\"v\":1}", 1 },
	    { "Promo", "bf/Promo.json", "{\"v\":1}", 1 },
	    { "Header", "own/Header.json", "{\"v\":2,\"w\":2}", OWN },
	    { "Footer", "bf/Footer.json", "{\"w\":1}", 1 } },
	  "{\"Footer\":{\"w\":1},\"Header\":{\"v\":2,\"w\":2},\"Promo\":{\"v\":1}}", NULL },
	{ "same key twice in one layer names both files",
	  { { "Header", "blocks/b/Header.json", "{}", OWN },
	    { "Header", "blocks/a/Header.json", "{}", OWN } },
	  NULL, "duplicate key \"Header\": blocks/a/Header.json and blocks/b/Header.json" },
	{ "same key in two templates is an override, not a duplicate",
	  { { "Header", "t0/Header.json", "1", 0 }, { "Header", "t1/Header.json", "2", 1 } },
	  "{\"Header\":2}", NULL },
	{ "malformed JSON names file:line:column (multi-line)",
	  { { "ok", "blocks/ok.json", "{}", OWN },
	    { "Bad", "blocks/Bad.json", "{\n  \"a\": 1,\n  \"b\": tru\n}\n", OWN } },
	  NULL, "blocks/Bad.json:3:" },
	{ "an overridden file must still be valid",
	  { { "Header", "base/Header.json", "{\"a\":", 0 },
	    { "Header", "own/Header.json", "{}", OWN } },
	  NULL, "base/Header.json:1:" },
	{ "empty file is not JSON",
	  { { "e", "blocks/e.json", "", OWN } }, NULL, "blocks/e.json:1:1:" },
	{ "two values in one file is not JSON",
	  { { "two", "blocks/two.json", "{} {}", OWN } }, NULL, "blocks/two.json:1:" },
	{ "a refusal after blocks were written leaves nothing",
	  { { "a", "a.json", "{ \"x\": [1, 2] }", OWN }, { "b", "b.json", "\"ok\"", OWN },
	    { "z", "z.json", "[1,", OWN } },
	  NULL, "z.json:1:" },
	{ "a duplicate after blocks were written leaves nothing",
	  { { "a", "a.json", "{ \"x\": 1 }", OWN }, { "b", "b1.json", "1", OWN },
	    { "b", "b2.json", "2", OWN } },
	  NULL, "duplicate key \"b\": b1.json and b2.json" },
	{ "blocks the fast check leaves to yajl (escaped keys, surrogates) compact the same",
	  { { "a", "a.json", "{ \"k\\u0041\": 1,\n  \"k\\u0042\": \"\\ud83d\\ude00\" }", OWN },
	    { "b", "b.json", " [ \"\xe4\xb8\xad\xc3\xa7 x\" , 2 ] ", OWN } },
	  "{\"a\":{\"k\\u0041\":1,\"k\\u0042\":\"\\ud83d\\ude00\"},"
	  "\"b\":[\"\xe4\xb8\xad\xc3\xa7 x\",2]}", NULL },
	{ "several errors: first named, rest counted",
	  { { "a", "a.json", "[", OWN }, { "b", "b.json", "]", OWN },
	    { "c", "c1.json", "1", OWN }, { "c", "c2.json", "2", OWN } },
	  NULL, "a.json:1:" },
};

static void
run_case(size_t ci)
{
	struct render_input in[6];
	struct render_error e;
	struct buf out;
	char hash[65], want_hash[65];
	size_t n = 0;
	int rv;

	for (; n < 6 && cases[ci].in[n].key != NULL; n++) {
		in[n].key = cases[ci].in[n].key;
		in[n].path = cases[ci].in[n].path;
		in[n].data = cases[ci].in[n].data;
		in[n].len = strlen(cases[ci].in[n].data);
		in[n].layer = cases[ci].in[n].layer;
	}
	buf_init(&out);
	buf_adds(&out, "prefix");	/* render_merge appends */
	rv = render_merge(in, n, &out, hash, &e);
	if (cases[ci].want != NULL) {
		is_int(rv, 0, "%s: merges", cases[ci].label);
		is_str(out.data + 6, cases[ci].want, "%s: document", cases[ci].label);
		sha256_hex(cases[ci].want, strlen(cases[ci].want), want_hash);
		is_str(hash, want_hash, "%s: hash of the document", cases[ci].label);
	} else {
		is_int(rv, -1, "%s: refused", cases[ci].label);
		ok(strncmp(e.msg, cases[ci].err, strlen(cases[ci].err)) == 0,
		    "%s: message starts with '%s'", cases[ci].label, cases[ci].err);
		if (strncmp(e.msg, cases[ci].err, strlen(cases[ci].err)) != 0)
			diag("got '%s'", e.msg);
		is_str(out.data, "prefix", "%s: nothing written", cases[ci].label);
	}
	buf_free(&out);
}

static void
test_error_details(void)
{
	struct render_input in[3] = {
		{ "Bad", "blocks/Bad.json", "{\n  \"a\": 1,\n  \"b\": tru\n}\n", 0, OWN },
		{ "x", "x.json", "[1,", 0, OWN },
		{ "x", "y.json", "1", 0, OWN },
	};
	struct render_error e;
	struct buf out;

	in[0].len = strlen(in[0].data);
	in[1].len = strlen(in[1].data);
	in[2].len = strlen(in[2].data);
	buf_init(&out);
	is_int(render_merge(in, 3, &out, NULL, &e), -1, "three problems refused");
	is_int(e.count, 3, "all three counted");
	is_int(e.kind, RENDER_EINVALID, "first is a validation error");
	ok(strstr(e.msg, "blocks/Bad.json:3:") == e.msg, "names file and line: %s", e.msg);
	{
		int line = 0, col = 0;

		ok(sscanf(e.msg, "blocks/Bad.json:%d:%d:", &line, &col) == 2 &&
		    line == 3 && col >= 8 && col <= 11, "line 3, a column in 'tru' (%d)", col);
	}
	ok(strstr(e.msg, "(and 2 more errors)") != NULL, "counts the others");
	is_int(render_merge(in + 2, 1, &out, NULL, &e), 0, "one good file merges");
	buf_free(&out);
}

static void
test_sizes(void)
{
	char msg[256];

	is_int(render_want_bin(1000, 2500000, 0), 0, "small: json");
	is_int(render_want_bin(2500001, 2500000, 0), 1, "over threshold: bin");
	is_int(render_want_bin(2500000, 2500000, 0), 0, "at threshold: json");
	is_int(render_want_bin(RENDER_CM_ROOM + 1, 2500000, 1), 1,
	    "configmap: over 1 MiB minus overhead compresses below threshold");
	is_int(render_want_bin(RENDER_CM_ROOM + 1, 2500000, 0), 0,
	    "file target: same size stays json");
	is_int(render_want_bin(10, 2500000, 1), 1,
	    "configmap: always decofile.bin, whatever the size (as the Go operator)");
	is_int(render_check_fits(RENDER_CM_ROOM, 1, 1, msg, sizeof(msg)), 0, "bin that fits");
	is_int(render_check_fits(RENDER_CM_MAX + 1, 1, 1, msg, sizeof(msg)), -1,
	    "bin over 1 MiB: TooLarge");
	ok(strstr(msg, "target: s3") != NULL, "TooLarge suggests s3: %s", msg);
	is_int(render_check_fits(50u << 20, 1, 0, msg, sizeof(msg)), 0,
	    "no limit for other targets");
}

static void
test_brotli(void)
{
	struct buf json, br, back;
	unsigned char *raw;
	size_t rawlen, binlen, declen;
	uint8_t *dec;
	char *bin;
	int q;

	buf_init(&json);
	buf_adds(&json, "{");
	for (int i = 0; i < 5000; i++)
		buf_printf(&json, "%s\"k%05d\":{\"title\":\"caf\xc3\xa9 %d\",\"n\":%d}",
		    i ? "," : "", i, i % 37, i * 7);
	buf_adds(&json, "}");

	for (q = 0; q <= 11; q += 11) {
		buf_init(&br);
		is_int(render_brotli_compress(json.data, json.len, q, 22, &br), 0,
		    "compress at quality %d", q);
		ok(br.len > 0 && br.len < json.len, "quality %d makes it smaller (%zu < %zu)",
		    q, br.len, json.len);
		/* decode with the library's one-shot decoder, independent of ours */
		declen = json.len;
		dec = xmalloc(declen);
		is_int(BrotliDecoderDecompress(br.len, (const uint8_t *)br.data, &declen, dec),
		    BROTLI_DECODER_RESULT_SUCCESS, "BrotliDecoderDecompress reads it");
		ok(declen == json.len && memcmp(dec, json.data, declen) == 0,
		    "quality %d round-trips", q);
		free(dec);
		buf_free(&br);
	}
	buf_init(&br);
	is_int(render_brotli_compress(json.data, json.len, 12, 22, &br), -1, "quality 12 refused");
	is_int(render_brotli_compress(json.data, json.len, 5, 25, &br), -1, "window 25 refused");
	buf_free(&br);

	bin = render_bin(json.data, json.len, RENDER_BROTLI_QUALITY, RENDER_BROTLI_WINDOW, &binlen);
	ok(bin != NULL && strlen(bin) == binlen, "render_bin gives text");
	ok(strspn(bin, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == binlen,
	    "standard base64 alphabet");
	raw = base64_decode(bin, binlen, &rawlen);
	ok(raw != NULL, "base64 decodes");
	buf_init(&back);
	is_int(render_brotli_decompress(raw, rawlen, 0, &back), 0, "our decoder reads it");
	ok(back.len == json.len && memcmp(back.data, json.data, json.len) == 0,
	    "decofile.bin round-trips to the JSON");
	buf_reset(&back);
	is_int(render_brotli_decompress(raw, rawlen, 1000, &back), -1, "output limit enforced");
	buf_reset(&back);
	is_int(render_brotli_decompress(raw, rawlen / 2, 0, &back), -1, "truncated stream refused");
	is_int((int)back.len, 0, "nothing left behind on error");
	is_int(render_brotli_decompress("not brotli at all", 17, 0, &back), -1,
	    "garbage refused");
	free(raw);
	free(bin);
	buf_free(&back);
	buf_free(&json);
}

/*
 * test_hostile - a key twice in one block (readers disagree on which wins)
 * and a block nested past the limit stop the publish, naming file, line
 * and column (issue 13, defects 1 and 7)
 */
static void
test_hostile(void)
{
	struct render_input in[1];
	struct render_error e;
	struct buf out, deep;

	in[0].key = "Header";
	in[0].path = "blocks/Header.json";
	in[0].data = "{\"source\": \"inline\",\n \"source\": \"git\"}";
	in[0].len = strlen(in[0].data);
	in[0].layer = OWN;
	buf_init(&out);
	is_int(render_merge(in, 1, &out, NULL, &e), -1, "a duplicate key in a block is refused");
	is_str(e.msg, "blocks/Header.json:2:2: duplicate key \"source\"", "naming file, line, column");
	is_int((int)out.len, 0, "nothing rendered");

	buf_init(&deep);
	for (int i = 0; i < 1000000; i++)
		buf_addc(&deep, '[');
	for (int i = 0; i < 1000000; i++)
		buf_addc(&deep, ']');
	in[0].path = "blocks/Deep.json";
	in[0].data = deep.data;
	in[0].len = deep.len;
	is_int(render_merge(in, 1, &out, NULL, &e), -1, "a 1,000,000-deep block is refused");
	ok(strncmp(e.msg, "blocks/Deep.json:1:512: nested deeper than 511 levels", 53) == 0,
	    "at the bracket past the limit: %s", e.msg);
	deep.len = 0;
	for (int i = 0; i < 511; i++)
		buf_addc(&deep, '[');
	for (int i = 0; i < 511; i++)
		buf_addc(&deep, ']');
	in[0].data = deep.data;
	in[0].len = deep.len;
	is_int(render_merge(in, 1, &out, NULL, &e), 0, "511 levels render (512 with the document)");
	buf_free(&deep);
	buf_free(&out);
}

int
main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(i);
	test_error_details();
	test_sizes();
	test_brotli();
	test_hostile();
	return done_testing();
}
