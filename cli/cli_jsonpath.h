/*
 * cli_jsonpath - kubectl's JSONPath templates (-o jsonpath=...) and custom
 * columns (-o custom-columns=...) over a yajl tree.
 */
#ifndef DECOD_CLI_JSONPATH_H
#define DECOD_CLI_JSONPATH_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "common/util.h"

struct cli_jsonpath;

/*
 * cli_jsonpath_parse - compile a template: text with {EXPR}, {"literal"},
 * {range EXPR}...{end}.  EXPR is $ or @ (optional) then steps: .name,
 * .*, ['name'], [N], [-N], [*], [A:B(:S)], [?(@.path OP value)] with OP one
 * of == != < <= > >= (or none: the path exists).  What kubectl has beyond
 * that (.., unions, && and ||, regular expressions) is refused.  NULL with
 * the reason, naming the offending part, in err.  Free with
 * cli_jsonpath_free (NULL is a no-op).
 */
struct cli_jsonpath *cli_jsonpath_parse(const char *tmpl, char *err, size_t errlen);
void cli_jsonpath_free(struct cli_jsonpath *p);

/*
 * cli_jsonpath_exec - append the template's output for root to out, as
 * kubectl prints it: strings bare, numbers and booleans as written, objects
 * and arrays as compact JSON, several results of one {EXPR} separated by a
 * space.  A key that is not there prints nothing (kubectl's default
 * --allow-missing-template-keys).
 */
void cli_jsonpath_exec(const struct cli_jsonpath *p, yajl_val root, struct buf *out);

/* custom columns: "HEADER:EXPR,HEADER:EXPR"; EXPR may omit the braces and the first dot */
struct cli_jsonpath_columns {
	size_t n;
	char **headers;
	struct cli_jsonpath **paths;
};

/* cli_jsonpath_columns_parse - NULL with the reason in err; free with ..._free */
struct cli_jsonpath_columns *cli_jsonpath_columns_parse(const char *spec, char *err,
    size_t errlen);
void cli_jsonpath_columns_free(struct cli_jsonpath_columns *cols);

/*
 * cli_jsonpath_cell - column i of obj into out (reset first): the results
 * joined by ",", or "<none>" when there are none, as kubectl prints them
 */
void cli_jsonpath_cell(const struct cli_jsonpath_columns *cols, size_t i, yajl_val obj,
    struct buf *out);

/*
 * cli_jsonpath_items - the objects a table has one row each for: the
 * elements of v's "items" when v is a List, of v when v is an array, else
 * v alone.  Sets *n; the array points into v (caller frees the array only).
 */
yajl_val *cli_jsonpath_items(yajl_val v, size_t *n);

#endif
