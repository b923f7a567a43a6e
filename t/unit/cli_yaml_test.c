/*
 * cli_yaml_test - decoctl's YAML/JSON reader: core-schema scalars, nesting,
 * several documents, quoting, aliases, Lists, and errors with their line;
 * and the YAML writer reading back as the same JSON.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_yaml.h"
#include "common/json.h"
#include "t/tap.h"

/* decoctl's reading: documents up to 1 MiB, core-schema numbers */
static const struct yaml_opts opts = { 1u << 20, 0 };

static const struct {
	const char *in;
	const char *json;
} scalars[] = {
	{ "", "null" }, { "~", "null" }, { "null", "null" }, { "Null", "null" },
	{ "NULL", "null" }, { "nULL", "\"nULL\"" },
	{ "true", "true" }, { "True", "true" }, { "FALSE", "false" },
	{ "yes", "\"yes\"" }, { "on", "\"on\"" }, { "tRUE", "\"tRUE\"" },
	{ "0", "0" }, { "-17", "-17" }, { "+17", "17" }, { "007", "7" },
	{ "0o17", "15" }, { "0x1F", "31" }, { "0x", "\"0x\"" }, { "0o8", "\"0o8\"" },
	{ "1.5", "1.5" }, { "-.5", "-0.5" }, { "1.", "1.0" }, { "1e3", "1e3" },
	{ "2.5E-3", "2.5e-3" }, { "+1.0e+2", "1.0e+2" }, { ".", "\".\"" },
	{ "1_000", "\"1_000\"" }, { ".inf", "\".inf\"" }, { "1.2.3", "\"1.2.3\"" },
	{ "3f2a9c", "\"3f2a9c\"" }, { "12345678901234567890123",
	  "12345678901234567890123" }, { "e3", "\"e3\"" }, { "1e", "\"1e\"" },
	{ "main", "\"main\"" }, { "a \"b\"", "\"a \\\"b\\\"\"" },
};

static const struct {
	const char *label;
	const char *yaml;
	int ndocs;
	const char *json[3];	/* first documents */
} docs_cases[] = {
	{ "nested mapping", "a:\n  b: 1\n  c: [x, 2, true]\n", 1,
	  { "{\"a\":{\"b\":1,\"c\":[\"x\",2,true]}}" } },
	{ "quoted numbers stay strings", "a: \"1\"\nb: '007'\nc: \"true\"\nd: 'null'\n", 1,
	  { "{\"a\":\"1\",\"b\":\"007\",\"c\":\"true\",\"d\":\"null\"}" } },
	{ "keys are strings", "1: a\ntrue: b\nnull: c\n", 1,
	  { "{\"1\":\"a\",\"true\":\"b\",\"null\":\"c\"}" } },
	{ "top-level sequence: one document per item", "- name: a\n  v: 1\n- name: b\n", 2,
	  { "{\"name\":\"a\",\"v\":1}", "{\"name\":\"b\"}" } },
	{ "two documents", "kind: A\n---\nkind: B\n", 2,
	  { "{\"kind\":\"A\"}", "{\"kind\":\"B\"}" } },
	{ "empty documents skipped", "---\n# nothing\n---\nkind: A\n---\n", 1,
	  { "{\"kind\":\"A\"}" } },
	{ "explicit tags", "a: !!str 12\nb: !!int \"12\"\nc: !custom 5\n", 1,
	  { "{\"a\":\"12\",\"b\":12,\"c\":\"5\"}" } },
	{ "aliases expand", "base: &b {x: 1}\nother: *b\nk: &s v\nl: *s\n", 1,
	  { "{\"base\":{\"x\":1},\"other\":{\"x\":1},\"k\":\"v\",\"l\":\"v\"}" } },
	{ "block scalars are strings", "a: |\n  12\nb: >-\n  x\n  y\n", 1,
	  { "{\"a\":\"12\\n\",\"b\":\"x y\"}" } },
	{ "dates quoted on output stay strings", "at: \"2026-12-02T10:00:00Z\"\n", 1,
	  { "{\"at\":\"2026-12-02T10:00:00Z\"}" } },
	{ "unicode kept", "name: \"caf\\u00e9\"\nt: ação\n", 1,
	  { "{\"name\":\"café\",\"t\":\"ação\"}" } },
	{ "empty collections", "a: {}\nb: []\nc:\n", 1,
	  { "{\"a\":{},\"b\":[],\"c\":null}" } },
	{ "List expands", "kind: List\nitems:\n- kind: A\n- kind: B\n", 2,
	  { "{\"kind\":\"A\"}", "{\"kind\":\"B\"}" } },
	{ "empty input", "", 0, { NULL } },
};

static const struct {
	const char *label;
	const char *yaml;
	int line;
	const char *msg;	/* substring */
} errors[] = {
	{ "bad indentation", "a: 1\nb:\n  c: 2\n d: 3\n", 4, "" },
	{ "unclosed flow", "a: [1, 2\nb: 3\n", 2, "" },
	{ "duplicate key", "kind: A\nspec:\n  x: 1\n  x: 2\n", 4, "duplicate key \"x\"" },
	{ "unknown alias", "a: 1\nb: *nope\n", 2, "unknown alias" },
	{ "complex key", "? [a, b]\n: 1\n", 1, "must be a scalar" },
	{ "bad tag value", "a: !!int abc\n", 1, "does not fit tag" },
	{ "error in second document", "a: 1\n---\nb: 2\n  c: 3\n", 4, "" },
	{ "tab indentation", "a:\n\tb: 1\n", 2, "" },
};

static void
test_scalars(void)
{
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		char *j = yaml_scalar_json(scalars[i].in, strlen(scalars[i].in));

		is_str(j, scalars[i].json, "plain scalar '%s'", scalars[i].in);
		free(j);
	}
}

static void
test_docs(void)
{
	for (size_t i = 0; i < sizeof(docs_cases) / sizeof(docs_cases[0]); i++) {
		struct yaml_docs d = { NULL, 0 };
		struct yaml_error e;
		int rc;

		memset(&e, 0, sizeof(e));
		rc = yaml_read_docs("in.yaml", docs_cases[i].yaml, strlen(docs_cases[i].yaml), &opts,
		    &d, &e);
		is_int(rc, 0, "%s: parses", docs_cases[i].label);
		if (rc != 0)
			diag("line %d: %s", e.line, e.msg);
		is_int((long long)d.n, docs_cases[i].ndocs, "%s: document count",
		    docs_cases[i].label);
		for (int k = 0; k < docs_cases[i].ndocs && k < 3 && (size_t)k < d.n; k++)
			is_str(d.v[k].json, docs_cases[i].json[k], "%s: document %d",
			    docs_cases[i].label, k + 1);
		yaml_docs_free(&d);
	}
}

static void
test_errors(void)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		struct yaml_docs d = { NULL, 0 };
		struct yaml_error e;
		int rc;

		memset(&e, 0, sizeof(e));
		rc = yaml_read_docs("bad.yaml", errors[i].yaml, strlen(errors[i].yaml), &opts, &d, &e);
		is_int(rc, -1, "%s: refused", errors[i].label);
		is_int(e.line, errors[i].line, "%s: line", errors[i].label);
		ok(strstr(e.msg, errors[i].msg) != NULL && e.msg[0] != '\0',
		    "%s: message '%s'", errors[i].label, e.msg);
		yaml_docs_free(&d);
	}
}

static void
test_json_input(void)
{
	struct yaml_docs d = { NULL, 0 };
	struct yaml_error e;
	const char *arr = "[\n {\"kind\": \"A\", \"n\": 1.50},\n {\"kind\": \"B\"}\n]\n";
	const char *bad = "{\n  \"kind\": \"A\",\n  \"spec\": {\"x\": 1,}\n}\n";
	const char *flow = "{a: 1, b: [x]}";

	is_int(yaml_read_docs("-", arr, strlen(arr), &opts, &d, &e), 0, "JSON array parses");
	is_int((long long)d.n, 2, "JSON array: two documents");
	if (d.n == 2) {
		is_str(d.v[0].json, "{\"kind\":\"A\",\"n\":1.50}", "JSON numbers kept as written");
		is_str(d.v[1].json, "{\"kind\":\"B\"}", "JSON second document");
	}
	yaml_docs_free(&d);
	memset(&e, 0, sizeof(e));
	is_int(yaml_read_docs("x.json", bad, strlen(bad), &opts, &d, &e), -1, "bad JSON refused");
	is_int(e.line, 3, "bad JSON: line of the error");
	ok(e.column > 0, "bad JSON: column %d", e.column);
	yaml_docs_free(&d);
	is_int(yaml_read_docs("-", flow, strlen(flow), &opts, &d, &e), 0,
	    "YAML flow mapping that is not JSON falls back to YAML");
	if (d.n == 1)
		is_str(d.v[0].json, "{\"a\":1,\"b\":[\"x\"]}", "flow mapping converted");
	yaml_docs_free(&d);
}

/* round trip: JSON -> YAML text -> JSON must give the same JSON */
static void
test_yaml_output(void)
{
	const char *cases[] = {
		"{\"a\":\"1\",\"b\":1,\"c\":\"true\",\"d\":null,\"e\":\"yes\",\"f\":\"\"}",
		"{\"list\":[{\"x\":\"0x1F\"},[],{}],\"s\":\"multi\\nline\",\"u\":\"ação\"}",
		"{\"k: v\":\"- a\",\"#\":\"# c\",\"n\":-1.5e3,\"q\":\"'x'\"}",
		"{\"at\":\"2026-12-02T10:00:00Z\",\"t\":\"12:30\",\"e\":[]}",
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		yajl_val v = json_parse(cases[i], strlen(cases[i]), NULL);
		struct yaml_docs d = { NULL, 0 };
		struct yaml_error e;
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		ok(v != NULL && cli_print_yaml(f, v) == 0, "case %zu: YAML written", i + 1);
		fclose(f);
		ok(len > 0 && text[len - 1] == '\n', "case %zu: ends with a newline", i + 1);
		is_int(yaml_read_docs("out.yaml", text, len, &opts, &d, &e), 0, "case %zu: reads back", i + 1);
		if (d.n == 1)
			is_str(d.v[0].json, cases[i], "case %zu: same JSON", i + 1);
		else
			ok(0, "case %zu: one document (%s)", i + 1, text);
		yaml_docs_free(&d);
		free(text);
		yajl_tree_free(v);
	}
}

/*
 * test_alias_caps - alias expansion is bounded by count and by size (issue
 * 13, defect 4): a 7x9 alias bomb, 10,001 small aliases (values and keys)
 */
static void
test_alias_caps(void)
{
	struct yaml_docs d = { NULL, 0 };
	struct yaml_error e;
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "a0: &a0 \"lol\"\n");
	for (int i = 1; i < 8; i++) {
		buf_printf(&b, "a%d: &a%d [", i, i);
		for (int k = 0; k < 9; k++)
			buf_printf(&b, "%s*a%d", k ? "," : "", i - 1);
		buf_adds(&b, "]\n");
	}
	memset(&e, 0, sizeof(e));
	is_int(yaml_read_docs("in.yaml", b.data, b.len, &opts, &d, &e), -1, "a 7x9 alias bomb is refused");
	ok(strstr(e.msg, "larger than 1 MiB") != NULL, "by the 1 MiB cap: %s", e.msg);
	yaml_docs_free(&d);

	buf_reset(&b);
	buf_adds(&b, "a: &a x\nb: [");
	for (int i = 0; i < 10001; i++)
		buf_adds(&b, i ? ",*a" : "*a");
	buf_adds(&b, "]\n");
	memset(&e, 0, sizeof(e));
	is_int(yaml_read_docs("in.yaml", b.data, b.len, &opts, &d, &e), -1, "10,001 aliases are refused");
	ok(strstr(e.msg, "more than 10000 aliases") != NULL, "by the alias cap: %s", e.msg);
	yaml_docs_free(&d);

	buf_reset(&b);
	buf_adds(&b, "k: &k x\nm:\n");
	for (int i = 0; i < 10001; i++)
		buf_adds(&b, "  - {*k : 1}\n");
	memset(&e, 0, sizeof(e));
	is_int(yaml_read_docs("in.yaml", b.data, b.len, &opts, &d, &e), -1, "10,001 aliases as keys are refused");
	ok(strstr(e.msg, "more than 10000 aliases") != NULL, "by the alias cap: %s", e.msg);
	yaml_docs_free(&d);
	buf_free(&b);
}

/*
 * test_many_keys - the duplicate-key check of a large mapping is linear:
 * 40,000 keys (accented and spaced, as block names are) cost a few
 * comparisons each (a pairwise check made 800 million and took 4.3 s)
 */
static void
test_many_keys(void)
{
	enum { N = 40000 };
	struct yaml_error e;
	struct yaml_docs docs = { 0 };
	struct buf b;
	unsigned long long before;

	buf_init(&b);
	buf_adds(&b, "kind: Decofile\nspec:\n  inline:\n    value:\n");
	for (int i = 0; i < N; i++)
		buf_printf(&b, "      \"Página %d\": %d\n", i, i);
	before = yaml_key_compares();
	is_int(yaml_to_json_docs(b.data, b.len, &opts, &docs, &e), 0, "%d keys in one mapping read", N);
	ok(yaml_key_compares() - before < 4ULL * N,
	    "... with %llu key comparisons (under 4 per key)", yaml_key_compares() - before);
	yaml_docs_free(&docs);
	buf_adds(&b, "      \"Página 31337\": 0\n");
	memset(&e, 0, sizeof(e));
	is_int(yaml_to_json_docs(b.data, b.len, &opts, &docs, &e), -1, "a duplicate among them refused");
	is_int(e.line, N + 5, "... at its line");
	ok(strstr(e.msg, "duplicate key \"Página 31337\"") != NULL, "... named (%s)", e.msg);
	yaml_docs_free(&docs);
	buf_free(&b);
}

int
main(void)
{
	test_scalars();
	test_docs();
	test_errors();
	test_json_input();
	test_yaml_output();
	test_alias_caps();
	test_many_keys();
	return done_testing();
}
