/*
 * cli_jsonpath_test - decoctl's JSONPath: the templates kubectl's users
 * type (fields, indexes, slices, wildcards, filters, range/end, quoted
 * text) over a List of decofiles, the refusals with their reason,
 * custom-columns cells, and the one AGE format every table uses.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_jsonpath.h"
#include "common/json.h"
#include "t/tap.h"

static const char list[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
    "{\"kind\":\"Decofile\",\"metadata\":{\"name\":\"loja-são-paulo\",\"namespace\":"
    "\"sites loja\",\"generation\":3,\"labels\":{\"team\":\"web\"}},"
    "\"spec\":{\"source\":\"inline\"},\"status\":{\"conditions\":["
    "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Syncing\",\"status\":\"False\","
    "\"reason\":\"ValidationError\"}],\"timestamp\":1764000000,\"pods\":[1,2,3,4]}},"
    "{\"kind\":\"Decofile\",\"metadata\":{\"name\":\"vitrine%20nova\",\"namespace\":"
    "\"default\",\"generation\":1},\"spec\":{\"source\":\"git\",\"suspend\":true},"
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}]}";

static const struct {
	const char *tmpl;
	const char *want;
} runs[] = {
	{ "{.kind}", "List" },
	{ "{$.kind}", "List" },
	{ "{.items[0].metadata.name}", "loja-são-paulo" },
	{ "{.items[*].metadata.name}", "loja-são-paulo vitrine%20nova" },
	{ "{.items[-1].metadata.name}", "vitrine%20nova" },
	{ "{.items[5].metadata.name}", "" },
	{ "{.items[0].metadata.generation}", "3" },
	{ "{.items[1].spec.suspend}", "true" },
	{ "{.items[0].metadata.labels}", "{\"team\":\"web\"}" },
	{ "{.items[0].status.pods}", "[1,2,3,4]" },
	{ "{.items[0].status.pods[1:3]}", "2 3" },
	{ "{.items[0].status.pods[::2]}", "1 3" },
	{ "{.items[0].status.pods[-2:]}", "3 4" },
	{ "{.items[0].status.pods[::-1]}", "4 3 2 1" },
	{ "{.items[0].status.pods[1::9223372036854775807]}", "2" },
	{ "{.items[0].status.pods[-9223372036854775807:99999999999999999999]}", "1 2 3 4" },
	{ "{.items[0].status.pods[2::-9223372036854775807]}", "3" },
	{ "{.items[0]['metadata']['name']}", "loja-são-paulo" },
	{ "{.items[0].metadata.*}", "loja-são-paulo sites loja 3 {\"team\":\"web\"}" },
	{ "{.items[*].status.conditions[?(@.type==\"Ready\")].status}", "True False" },
	{ "{.items[0].status.conditions[?(@.status!='True')].reason}", "ValidationError" },
	{ "{.items[?(@.metadata.generation>1)].metadata.name}", "loja-são-paulo" },
	{ "{.items[?(@.metadata.generation<=1)].metadata.name}", "vitrine%20nova" },
	{ "{.items[?(@.spec.suspend)].metadata.name}", "vitrine%20nova" },
	{ "{.items[?(@.spec.suspend==true)].metadata.name}", "vitrine%20nova" },
	{ "{.nothing.here}", "" },
	{ "names: {.items[0].metadata.name}!", "names: loja-são-paulo!" },
	{ "{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.source}{\"\\n\"}{end}",
	  "loja-são-paulo\tinline\nvitrine%20nova\tgit\n" },
	{ "{range .items[*]}[{range .status.conditions[*]}{.type}={.status} {end}]{end}",
	  "[Ready=True Syncing=False ][Ready=False ]" },
	{ "{range .items[*]}{$.kind}/{@.metadata.namespace};{end}",
	  "List/sites loja;List/default;" },
	{ "{ .items[1].metadata.namespace }", "default" },
	{ "plain text", "plain text" },
};

static const struct {
	const char *tmpl;
	const char *why;	/* part of the error */
} refusals[] = {
	{ "{..name}", "recursive descent" },
	{ "{.items..name}", "recursive descent" },
	{ "{.items[0,1]}", "unions" },
	{ "{.items['a','b']}", "unions" },
	{ "{.items[?(@.a==1 && @.b==2)]}", "one comparison per filter" },
	{ "{.items[?(@.a=~/x/)]}", "=~" },
	{ "{.items[?(.a==1)]}", "must start with @" },
	{ "{range .items[*]}{.x}", "{range} without {end}" },
	{ "{.x}{end}", "{end} without {range}" },
	{ "{.items[0]", "missing }" },
	{ "{.items[0}", "missing ]" },
	{ "{metadata.name}", "starts with . or [" },
	{ "{\"open}", "unterminated" },
	{ "{.items[foo]}", "unsupported subscript" },
	{ "{.a b}", "unexpected \"b\"" },
};

static const struct {
	const char *spec;
	const char *cells[2][3];	/* per item, per column */
} columns[] = {
	{ "NAME:.metadata.name,READY:.status.conditions[?(@.type==\"Ready\")].status",
	  { { "loja-são-paulo", "True" }, { "vitrine%20nova", "False" } } },
	{ "N:metadata.namespace,G:{.metadata.generation},L:.metadata.labels.team",
	  { { "sites loja", "3", "web" }, { "default", "1", "<none>" } } },
	{ "TYPES:.status.conditions[*].type",
	  { { "Ready,Syncing" }, { "Ready" } } },
};

static const struct {
	long long s;
	const char *want;
} ages[] = {
	{ -5, "<invalid>" }, { -1, "0s" }, { 0, "0s" }, { 5, "5s" }, { 119, "119s" }, { 120, "2m" },
	{ 185, "3m5s" }, { 600, "10m" }, { 3 * 3600 - 1, "179m" }, { 3 * 3600, "3h" },
	{ 2 * 3600 + 0, "120m" }, { 5 * 3600 + 60, "5h1m" }, { 8 * 3600, "8h" },
	{ 47 * 3600, "47h" }, { 48 * 3600, "2d" }, { 4 * 86400 + 7200, "4d2h" },
	{ 8 * 86400, "8d" }, { 400 * 86400LL, "400d" }, { 730 * 86400LL, "2y" },
	{ 800 * 86400LL, "2y70d" }, { 9 * 365 * 86400LL, "9y" },
};

int
main(void)
{
	yajl_val root = json_parse(list, strlen(list), NULL);
	char err[512];
	struct buf out;

	ok(root != NULL, "the fixture parses");
	buf_init(&out);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct cli_jsonpath *p = cli_jsonpath_parse(runs[i].tmpl, err, sizeof(err));

		if (p == NULL) {
			ok(0, "%s compiles", runs[i].tmpl);
			diag("%s", err);
			continue;
		}
		buf_reset(&out);
		cli_jsonpath_exec(p, root, &out);
		is_str(out.data, runs[i].want, "%s", runs[i].tmpl);
		cli_jsonpath_free(p);
	}
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		struct cli_jsonpath *p = cli_jsonpath_parse(refusals[i].tmpl, err, sizeof(err));

		ok(p == NULL && strstr(err, refusals[i].why) != NULL &&
		    strstr(err, refusals[i].tmpl) != NULL,
		    "%s is refused: %s", refusals[i].tmpl, p ? "(accepted)" : err);
		cli_jsonpath_free(p);
	}
	for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
		struct cli_jsonpath_columns *cols = cli_jsonpath_columns_parse(columns[i].spec,
		    err, sizeof(err));
		size_t n = 0;
		yajl_val *items = cli_jsonpath_items(root, &n);

		if (cols == NULL) {
			ok(0, "custom-columns=%s parses: %s", columns[i].spec, err);
			free(items);
			continue;
		}
		is_int(n, 2, "a List has a row per item");
		for (size_t r = 0; r < n && r < 2; r++)
			for (size_t k = 0; k < cols->n; k++) {
				cli_jsonpath_cell(cols, k, items[r], &out);
				is_str(out.data, columns[i].cells[r][k], "custom-columns %s: row %zu "
				    "column %s", columns[i].spec, r, cols->headers[k]);
			}
		free(items);
		cli_jsonpath_columns_free(cols);
	}
	is_str(cli_jsonpath_columns_parse("NAME", err, sizeof(err)) ? "" : err,
	    "custom-columns: \"NAME\" is not NAME:EXPR", "custom-columns without : is refused");
	ok(cli_jsonpath_columns_parse("A:.x,B:..y", err, sizeof(err)) == NULL &&
	    strstr(err, "recursive descent"), "custom-columns with .. is refused: %s", err);
	ok(cli_jsonpath_columns_parse("", err, sizeof(err)) == NULL &&
	    strstr(err, "NAME:EXPR"), "empty custom-columns is refused");
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		char age[32];

		cli_age(ages[i].s * 1000, age, sizeof(age));
		is_str(age, ages[i].want, "age of %llds", ages[i].s);
	}
	buf_free(&out);
	yajl_tree_free(root);
	return done_testing();
}
