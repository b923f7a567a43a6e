/*
 * cli_yaml - decoctl's YAML: reading YAML or JSON input into JSON documents
 * (apply), and writing JSON trees as YAML or indented JSON (-o yaml|json).
 */
#ifndef DECOD_CLI_YAML_H
#define DECOD_CLI_YAML_H

#include <stddef.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "common/util.h"

/* one document read from a file: JSON text and where it started */
struct cli_doc {
	char *json;		/* compact JSON text (malloc'd) */
	int line;		/* 1-based line where the document starts */
};

struct cli_docs {
	struct cli_doc *v;
	size_t n;
};

/* where and why input could not be read */
struct cli_input_error {
	int line;		/* 1-based; 0 when unknown */
	int column;		/* 1-based; 0 when unknown */
	char msg[256];
};

/*
 * cli_yaml_to_json - convert every YAML document in text into JSON text,
 * appended to docs (free with cli_docs_free).  Mappings become objects,
 * sequences arrays; plain scalars that are YAML 1.2 core-schema null,
 * booleans or numbers become JSON null/true/false/numbers (hex and octal
 * as decimal), every other scalar (and every quoted one) a string.
 * Aliases are expanded; empty documents are skipped.  Returns 0, or -1
 * with e filled (line and column of the problem).
 */
int cli_yaml_to_json(const char *text, size_t len, struct cli_docs *docs,
    struct cli_input_error *e);

/*
 * cli_read_docs - read YAML or JSON: JSON when the name ends in ".json",
 * YAML when it ends in ".yaml"/".yml", else JSON when the text starts with
 * '{' or '[' and parses as JSON, else YAML.  A top-level JSON array, or an
 * object of kind "List" with "items", gives one document per element.
 * Returns 0 or -1 with e filled.
 */
int cli_read_docs(const char *name, const char *text, size_t len,
    struct cli_docs *docs, struct cli_input_error *e);

void cli_docs_free(struct cli_docs *docs);

/*
 * cli_yaml_plain_is_safe - a string that YAML readers (1.1 and 1.2) keep a
 * string when it is written plain (not a null, bool, number, date, time)
 */
int cli_yaml_plain_is_safe(const char *s, size_t len);

/*
 * cli_yaml_key_compares - key comparisons the duplicate-key check made so
 * far (a mapping of n keys costs about n, not n^2 / 2; for its unit test)
 */
unsigned long long cli_yaml_key_compares(void);

/* cli_yaml_scalar_json - the JSON text of a plain scalar (for tests); caller frees */
char *cli_yaml_scalar_json(const char *s, size_t len);

/*
 * cli_print_yaml - write v as a YAML document to out (block style; strings
 * that would read back as something else are quoted).  0 or -1.
 */
int cli_print_yaml(FILE *out, yajl_val v);

/* cli_print_json - write v as indented JSON and a newline; 0 or -1 */
int cli_print_json(FILE *out, yajl_val v);

#endif
