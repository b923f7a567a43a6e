/* json_test - validation with line/column, compaction rules, writer */
#include "config.h"

#include <stdlib.h>

#include "common/json.h"
#include "t/tap.h"

int
main(void)
{
	static const struct { const char *in; int line; int col; } bad[] = {
		{ "{\"a\": 1,}", 1, 9 },
		{ "{\n  \"a\": 1\n  \"b\": 2\n}", 3, 5 },
		{ "{\"a\": tru}", 1, 10 },
		{ "", 1, 1 },
		{ "{\"a\":1} x", 1, 9 },
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
	return done_testing();
}
