/* json_test - validation with line/column, compaction rules, writer */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "t/tap.h"

/* nested - n opening brackets, then n closing ones when closed */
static char *
nested(size_t n, int closed, const char *inner)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < n; i++)
		buf_addc(&b, '[');
	buf_adds(&b, inner);
	for (size_t i = 0; closed && i < n; i++)
		buf_addc(&b, ']');
	return buf_steal(&b, NULL);
}

/* deep_tests - the depth limit (issue 13, defect 1) and end-of-input columns */
static void
deep_tests(void)
{
	struct json_error e;
	char *s;
	const char *c;
	int rc;
	yajl_val v;
	struct buf b;
	struct jw w;

	s = nested(1000000, 1, "");
	memset(&e, 0, sizeof(e));
	ok(json_validate(s, strlen(s), &e) == -1, "1,000,000 nested [ refused");
	ok(e.line == 1 && e.column == 513, "at the 513th bracket (got %d:%d)", e.line, e.column);
	ok(strstr(e.msg, "nested deeper than 512 levels") != NULL, "message: %s", e.msg);
	ok(json_parse(s, strlen(s), NULL) == NULL, "json_parse refuses it too");
	free(s);

	s = nested(512, 1, "1");
	ok(json_validate(s, strlen(s), NULL) == 0, "512 levels accepted");
	v = json_parse(s, strlen(s), NULL);
	ok(v != NULL, "and parsed");
	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, v);
	is_str(b.data, s, "and re-written as it was");
	buf_free(&b);
	yajl_tree_free(v);
	free(s);
	s = nested(513, 1, "");
	ok(json_validate(s, strlen(s), NULL) == -1, "513 levels refused");
	free(s);

	/* objects count too; brackets inside strings do not */
	c = "{\"a\":{\"b\":[\"[[[[\\\"[[\"]}}";
	ok(json_validate_depth(c, strlen(c), 3, NULL) == 0,
	    "brackets in strings are not nesting");
	json_set_max_depth(2);
	memset(&e, 0, sizeof(e));
	c = "{\"a\":{\"b\":{}}}";
	rc = json_validate(c, strlen(c), &e);
	ok(rc == -1 && e.column == 11,
	    "objects count (limit 2: refused at 1:11, got %d:%d)", e.line, e.column);
	c = "[\"[[[[[[\",[]]";
	ok(json_validate(c, strlen(c), NULL) == 0, "a string of brackets at limit 2");
	json_set_max_depth(0);
	is_int(json_get_max_depth(), JSON_MAX_DEPTH_DEFAULT, "0 restores the default");

	/* unclosed input: the error points at the end, not at column 2 */
	s = nested(100000, 0, "");
	memset(&e, 0, sizeof(e));
	ok(json_validate_depth(s, strlen(s), 200000, &e) == -1, "100,000 unclosed [ refused");
	ok(e.line == 1 && e.column == 100001, "at the end of input (got %d:%d)", e.line, e.column);
	free(s);
	memset(&e, 0, sizeof(e));
	ok(json_validate("[[[", 3, &e) == -1 && e.column == 4, "[[[ ends at 1:4 (got %d:%d)",
	    e.line, e.column);
	memset(&e, 0, sizeof(e));
	ok(json_validate("{\"a\":\n [1,\n", 11, &e) == -1 && e.line == 3 && e.column == 1,
	    "unclosed over lines: 3:1 (got %d:%d)", e.line, e.column);
}

/*
 * fast_pass_tests - json_validate (a fast pass, then the full check when not
 * sure) gives the full check's answer on near-JSON: valid documents with a
 * few bytes replaced, inserted or deleted
 */
static void
fast_pass_tests(void)
{
	static const char *const bases[] = {
		"{\"a\":1,\"b\":[true,false,null,-0.5e+3,1E9,0],\"c\":{\"d\":\"x\\\"y\\\\z\\/\\u00e7\"}}",
		" [ \"p\u00e3o \xc3\xa7 \xe2\x82\xac \xf0\x9f\x98\x80\", {\"k\" : -12.25 } ]\r\n",
		"{\"Trocas%20%26%20Devolu%C3%A7%C3%B5es\":{\"t\":\"\\ud83d\\ude00\",\"n\":[1,2,[3,[4]]]}}",
		"\"top\"", "-0", "123.456e-7", "true", "{}", "[]", "{\"\":{\"\":[]}}",
		/* strings past 16 bytes: the wide scan of plain bytes, stopped anywhere */
		"{\n  \"texto\": \"Trocas e Devolu\xc3\xa7\xc3\xb5" "es em at\xc3\xa9 30 dias, "
		"\\\"gr\xc3\xa1tis\\\" \xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87 \xf0\x9f\x98\x80!\",\n"
		"  \"img\": [\"https://cdn.example.com/assets/banners/black-friday-1200x400.webp?v=3\"]\n}\n",
	};
	static const char alphabet[] = "{}[]\":,\\ -+.eE0123456789tfnulrsa\t\n\r\f\v\x01\x7f"
	    "\x80\xc0\xc3\xa7\xe0\xed\xf0\xf4\xf5\xff/bu";
	unsigned seed = 1206;
	int n = 60000, agree = 0, valid = 0, fused = 0;
	struct buf ca, cb;

	buf_init(&ca);
	buf_init(&cb);

	for (int i = 0; i < n; i++) {
		const char *b = bases[rand_r(&seed) % (sizeof(bases) / sizeof(bases[0]))];
		char doc[512];
		size_t len = strlen(b);
		int muts = 1 + (int)(rand_r(&seed) % 3), want, got;

		memcpy(doc, b, len);
		for (int m = 0; m < muts; m++) {
			size_t at = len ? rand_r(&seed) % (len + 1) : 0;
			char c = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];

			switch (rand_r(&seed) % 3) {
			case 0:	/* replace */
				if (at < len)
					doc[at] = c;
				break;
			case 1:	/* insert */
				if (len + 1 < sizeof(doc)) {
					memmove(doc + at + 1, doc + at, len - at);
					doc[at] = c;
					len++;
				}
				break;
			default:	/* delete */
				if (at < len) {
					memmove(doc + at, doc + at + 1, len - at - 1);
					len--;
				}
			}
		}
		want = json_validate_full(doc, len, 8, NULL) == 0;
		got = json_validate_depth(doc, len, 8, NULL) == 0;
		agree += want == got;
		valid += want;
		if (want != got)
			diag("fast pass disagrees (full %d, with fast pass %d): %.*s", want, got,
			    (int)len, doc);
		/* the fused check and compaction: same answer, json_compact's bytes */
		buf_reset(&ca);
		buf_reset(&cb);
		buf_adds(&ca, "pre");
		buf_adds(&cb, "pre");
		got = json_validate_compact(&ca, doc, len, 8, NULL) == 0;
		if (want)
			json_compact(&cb, doc, len);
		if (got == want && ca.len == cb.len && memcmp(ca.data, cb.data, ca.len + 1) == 0)
			fused++;
		else
			diag("json_validate_compact differs (valid %d, got %d, '%s' for '%s'): %.*s",
			    want, got, ca.data, cb.data, (int)len, doc);
	}
	ok(agree == n && valid > n / 20,
	    "60,000 mutated documents: json_validate and the full check alone agree on "
	    "each (%d agree, %d valid)", agree, valid);
	ok(fused == n, "json_validate_compact agrees with the full check and writes "
	    "json_compact's bytes, nothing when refused (%d of %d)", fused, n);
	buf_free(&ca);
	buf_free(&cb);
}

/* big_object_tests - objects past the scan size: the table of each object alone */
static void
big_object_tests(void)
{
	struct json_error e;
	struct buf b;

	/* 30 keys, a nested object of 30 of the same names, then a repeat of k3 */
	buf_init(&b);
	buf_addc(&b, '{');
	for (int i = 0; i < 30; i++)
		buf_printf(&b, "\"k%d\":%d,", i, i);
	buf_adds(&b, "\"in\":{");
	for (int i = 0; i < 30; i++)
		buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
	buf_adds(&b, "},\"k30\":0");
	ok(json_validate(b.data, b.len, NULL) == -1, "an open object is not complete: refused");
	buf_adds(&b, "}");
	ok(json_validate(b.data, b.len, NULL) == 0,
	    "a nested object may repeat its parent's 30 names");
	b.len--;
	buf_adds(&b, ",\"k3\":1}");
	memset(&e, 0, sizeof(e));
	ok(json_validate(b.data, b.len, &e) == -1 && strstr(e.msg, "\"k3\"") != NULL,
	    "after the nested object closes, a repeat of the parent's k3 is found (%s)", e.msg);
	buf_free(&b);
	/* an escaped spelling (unescaped by yajl, not in the text) among 20 keys */
	buf_init(&b);
	buf_addc(&b, '{');
	for (int i = 0; i < 20; i++)
		buf_printf(&b, "\"k%d\":%d,", i, i);
	buf_adds(&b, "\"k\\u0031\\u0037\":0}");
	ok(json_validate(b.data, b.len, NULL) == -1, "\\u0031\\u0037 spells k17 again: refused");
	b.len -= strlen("\"k\\u0031\\u0037\":0}");
	buf_adds(&b, "\"k\\u0031\\u0037x\":0,\"k17x\":1}");
	ok(json_validate(b.data, b.len, NULL) == -1, "an escaped key first, then its plain twin");
	buf_free(&b);
	/* too deep inside a big object: refused, nothing leaked (ASan says) */
	buf_init(&b);
	buf_addc(&b, '{');
	for (int i = 0; i < 40; i++)
		buf_printf(&b, "\"k%d\":%d,", i, i);
	buf_adds(&b, "\"d\":");
	for (int i = 0; i < 200; i++)
		buf_adds(&b, "{\"a\":1,\"b\":");
	buf_adds(&b, "0");
	for (int i = 0; i < 200; i++)
		buf_adds(&b, "}");
	buf_adds(&b, "}");
	memset(&e, 0, sizeof(e));
	ok(json_validate_depth(b.data, b.len, 64, &e) == -1 && strstr(e.msg, "deeper") != NULL,
	    "too deep under a big object: refused (%s)", e.msg);
	buf_free(&b);
}

/* naive_dups - a repeated key in any object of v, by comparing every pair */
static int
naive_dups(yajl_val v)
{
	if (YAJL_IS_ARRAY(v)) {
		for (size_t i = 0; i < v->u.array.len; i++)
			if (naive_dups(v->u.array.values[i]))
				return 1;
	} else if (YAJL_IS_OBJECT(v)) {
		for (size_t i = 0; i < v->u.object.len; i++) {
			for (size_t j = 0; j < i; j++)
				if (strcmp(v->u.object.keys[i], v->u.object.keys[j]) == 0)
					return 1;
			if (naive_dups(v->u.object.values[i]))
				return 1;
		}
	}
	return 0;
}

static void
rand_value(struct buf *b, unsigned *seed, int depth)
{
	static const char *const names[] = { "a", "b", "\\u0061", "c", "ab", "a\\\"",
	    "\\u00e7", "\xc3\xa7", "x y", "%2F" };
	int r = (int)(rand_r(seed) % 10);

	if (depth > 4 || r < 4) {
		buf_printf(b, "%d", r);
		return;
	}
	if (r < 6) {
		int n = (int)(rand_r(seed) % 4);

		buf_addc(b, '[');
		for (int i = 0; i < n; i++) {
			if (i)
				buf_addc(b, ',');
			rand_value(b, seed, depth + 1);
		}
		buf_addc(b, ']');
		return;
	}
	{
		/* up to 40 keys: small objects are scanned, big ones use a table */
		int n = (int)(rand_r(seed) % (rand_r(seed) % 3 == 0 ? 40 : 6));

		buf_addc(b, '{');
		for (int i = 0; i < n; i++) {
			int k = (int)(rand_r(seed) % 60);

			if (i)
				buf_addc(b, ',');
			if (k < 10)
				buf_printf(b, "\"%s\":", names[k]);
			else
				buf_printf(b, "\"n%d\":", k + (int)(rand_r(seed) % 4) * 100);
			rand_value(b, seed, depth + 1);
		}
		buf_addc(b, '}');
	}
}

/* dup_random_tests - the validator and a pairwise check agree on random documents */
static void
dup_random_tests(void)
{
	unsigned seed = 20261206;
	int agree = 0, dups = 0, n = 3000;
	char err[128];

	for (int i = 0; i < n; i++) {
		struct buf b;
		yajl_val v;

		buf_init(&b);
		rand_value(&b, &seed, 0);
		buf_addc(&b, '\0');
		v = yajl_tree_parse(b.data, err, sizeof(err));
		if (v != NULL) {
			int want = naive_dups(v), got = json_validate(b.data, b.len - 1, NULL) < 0;

			agree += want == got;
			dups += want;
			if (want != got)
				diag("disagree (pairwise %d, validator %d): %s", want, got, b.data);
			yajl_tree_free(v);
		}
		buf_free(&b);
	}
	ok(agree == n && dups > n / 10 && dups < n - n / 10,
	    "3,000 random documents: the validator agrees with a pairwise check on each "
	    "(%d agree, %d with a repeated key)", agree, dups);
}

/* dup_tests - a key twice in one object is refused (issue 13, defect 7) */
static void
dup_tests(void)
{
	static const struct { const char *in; int ok; int col; } cases[] = {
		{ "{\"a\":1,\"a\":2}", 0, 8 },
		{ "{\"source\":\"inline\",\"x\":1,\"source\":\"git\"}", 0, 26 },
		{ "{\"a\":{\"a\":1},\"b\":{\"a\":2}}", 1, 0 },
		{ "[{\"a\":1},{\"a\":1}]", 1, 0 },
		{ "{\"a\":1,\"\\u0061\":2}", 0, 8 },
		{ "{\"a\\\"\":1,\"a\\\"\":2}", 0, 10 },
		{ "{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":1,\"x\":2}}", 0, 31 },
		{ "{\"ab\":1,\"a\":1,\"b\":1}", 1, 0 },
	};
	struct json_error e;
	struct buf big;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&e, 0, sizeof(e));
		if (cases[i].ok) {
			ok(json_validate(cases[i].in, strlen(cases[i].in), &e) == 0,
			    "dup #%zu accepted (%s)", i, e.msg);
			continue;
		}
		ok(json_validate(cases[i].in, strlen(cases[i].in), &e) == -1 &&
		    strstr(e.msg, "duplicate key") != NULL, "dup #%zu refused (%s)", i, e.msg);
		ok(e.line == 1 && e.column == cases[i].col, "dup #%zu at 1:%d (got %d:%d)",
		    i, cases[i].col, e.line, e.column);
		ok(json_parse(cases[i].in, strlen(cases[i].in), NULL) == NULL,
		    "dup #%zu: json_parse refuses it", i);
	}
	/* many keys: the table grows, the last one is still found */
	buf_init(&big);
	buf_addc(&big, '{');
	for (int i = 0; i < 20000; i++)
		buf_printf(&big, "\"k%d\":%d,", i, i);
	buf_adds(&big, "\"k19999\":0}");
	ok(json_validate(big.data, big.len, &e) == -1, "20,000 keys then a repeat: refused");
	big.len -= strlen("\"k19999\":0}");
	buf_adds(&big, "\"k20000\":0}");
	ok(json_validate(big.data, big.len, NULL) == 0, "20,001 distinct keys accepted");
	buf_free(&big);
	big_object_tests();
	dup_random_tests();
	fast_pass_tests();
}

int
main(void)
{
	static const struct { const char *in; int line; int col; } bad[] = {
		{ "{\"a\": 1,}", 1, 9 },
		{ "{\n  \"a\": 1\n  \"b\": 2\n}", 3, 5 },
		{ "{\"a\": tru}", 1, 10 },
		{ "", 1, 1 },
		{ "{\"a\":1} x", 1, 9 },
		/* an incomplete token after a complete value (found by fuzz_render) */
		{ "1\"", 1, 2 },
		{ "{} t", 1, 4 },
		{ "[]\n \"", 2, 2 },
		{ "\"a\" 1", 1, 5 },
		/* yajl's extra white space, which JSON has not (found by fuzz_site) */
		{ "{\"a\":\f1}", 1, 6 },
		{ "[1,\v2]", 1, 4 },
	};
	static const struct { const char *in; const char *out; } compact[] = {
		{ "{ \"a\" : [ 1 , 2 ] }", "{\"a\":[1,2]}" },
		{ "\"a b\\\" c\"", "\"a b\\\" c\"" },
		{ "{\"x\": \"\\u00e9 <&>\"}", "{\"x\":\"\\u00e9 <&>\"}" },
		{ "[1.0e+10, -0.5]", "[1.0e+10,-0.5]" },
		{ "\n{\"é\":\t\"ü\"}\n", "{\"é\":\"ü\"}" },
	};
	struct json_error e;
	struct buf b;
	struct jw w;
	yajl_val v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		ok(json_validate(bad[i].in, strlen(bad[i].in), &e) == -1 && e.msg[0],
		    "invalid #%zu refused (%s)", i, e.msg);
		ok(e.line == bad[i].line, "invalid #%zu line %d (got %d)", i, bad[i].line, e.line);
		ok(e.column >= bad[i].col - 1 && e.column <= bad[i].col + 1,
		    "invalid #%zu column about %d (got %d)", i, bad[i].col, e.column);
	}
	ok(json_validate("{\"a\":[1,{\"b\":null}]}", 20, &e) == 0, "valid JSON accepted");
	for (size_t i = 0; i < sizeof(compact) / sizeof(compact[0]); i++) {
		buf_init(&b);
		json_compact(&b, compact[i].in, strlen(compact[i].in));
		is_str(b.data, compact[i].out, "compact #%zu", i);
		buf_free(&b);
	}
	{
		const char *doc = "{\"metadata\":{\"name\":\"loja\",\"generation\":\"7\"},"
		    "\"n\":3,\"t\":true}";

		v = json_parse(doc, strlen(doc), &e);
	}
	ok(v != NULL, "parse");
	is_str(json_get_str(v, "metadata", "name", NULL), "loja", "json_get_str path");
	is_int(json_get_int(v, 0, "metadata", "generation", NULL), 7, "int from a string");
	is_int(json_get_int(v, 0, "n", NULL), 3, "int");
	is_int(json_get_bool(v, 0, "t", NULL), 1, "bool");
	ok(json_get(v, "nope", "x", NULL) == NULL, "absent path is NULL");
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "a");
	jw_arr(&w);
	jw_int(&w, 1);
	jw_str(&w, "x\"y\n");
	jw_null(&w);
	jw_end_arr(&w);
	jw_key(&w, "b");
	jw_value(&w, v);
	jw_end_obj(&w);
	is_str(b.data, "{\"a\":[1,\"x\\\"y\\n\",null],\"b\":{\"metadata\":{\"name\":\"loja\","
	    "\"generation\":\"7\"},\"n\":3,\"t\":true}}", "writer output");
	buf_free(&b);
	yajl_tree_free(v);
	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, "v1", "ConfigMap", "ns", "cm");
	jw_key(&w, "uid");
	jw_str(&w, "u");
	jw_end_obj(&w);
	jw_key(&w, "data");
	jw_obj(&w);
	jw_end_obj(&w);
	jw_end_obj(&w);
	is_str(b.data, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
	    "\"namespace\":\"ns\",\"uid\":\"u\"},\"data\":{}}", "object head, metadata left open");
	buf_reset(&b);
	jw_init(&w, &b);
	jw_object_head(&w, "v1", "Namespace", NULL, "n");
	jw_end_obj(&w);
	jw_end_obj(&w);
	is_str(b.data, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"n\"}}",
	    "object head without a namespace");
	buf_free(&b);
	deep_tests();
	dup_tests();
	return done_testing();
}
