/*
 * yaml - the one YAML reader: YAML (or JSON) text into JSON documents, for
 * decoctl's input and for kubeconfig files.
 */
#ifndef DECOD_YAML_H
#define DECOD_YAML_H

#include <stddef.h>

/* one document read from a file: JSON text and where it started */
struct yaml_doc {
	char *json;		/* compact JSON text (malloc'd) */
	int line;		/* 1-based line where the document starts */
};

struct yaml_docs {
	struct yaml_doc *v;
	size_t n;
};

/* where and why input could not be read */
struct yaml_error {
	int line;		/* 1-based; 0 when unknown */
	int column;		/* 1-based; 0 when unknown */
	char msg[256];
};

/* how the reader reads: each caller says (decoctl, kubeconfigs) */
struct yaml_opts {
	/*
	 * bytes of JSON one document may become, aliases expanded (anchors may
	 * keep four times that): decoctl's RESOURCE_MAX_SIZE, a kubeconfig's
	 * own cap
	 */
	size_t max_doc;
	/*
	 * plain scalars the core schema reads as numbers stay strings, exactly
	 * as written ("0123", "0x1F"): for a reader whose every scalar field
	 * is a string, such as a kubeconfig's `namespace: 123`
	 */
	int numbers_as_text;
};

/*
 * yaml_to_json_docs - convert every YAML document in text into JSON text,
 * appended to docs (free with yaml_docs_free).  Mappings become objects,
 * sequences arrays; plain scalars that are YAML 1.2 core-schema null,
 * booleans or numbers become JSON null/true/false/numbers (hex and octal
 * as decimal; numbers stay strings with o->numbers_as_text), every other
 * scalar (and every quoted one) a string.  Aliases are expanded; empty
 * documents are skipped; a document whose JSON passes o->max_doc is
 * refused.  Returns 0, or -1 with e filled (line and column of the problem).
 */
int yaml_to_json_docs(const char *text, size_t len, const struct yaml_opts *o,
    struct yaml_docs *docs, struct yaml_error *e);

/*
 * yaml_read_docs - read YAML or JSON: JSON when the name ends in ".json",
 * YAML when it ends in ".yaml"/".yml", else JSON when the text starts with
 * '{' or '[' and parses as JSON, else YAML (read by o, as yaml_to_json_docs).
 * A top-level JSON array, or an object of kind "List" with "items", gives
 * one document per element.  Returns 0 or -1 with e filled.
 */
int yaml_read_docs(const char *name, const char *text, size_t len,
    const struct yaml_opts *o, struct yaml_docs *docs, struct yaml_error *e);

void yaml_docs_free(struct yaml_docs *docs);

/*
 * yaml_plain_is_safe - a string that YAML readers (1.1 and 1.2) keep a
 * string when it is written plain (not a null, bool, number, date, time)
 */
int yaml_plain_is_safe(const char *s, size_t len);

/*
 * yaml_key_compares - key comparisons the duplicate-key check made so
 * far (a mapping of n keys costs about n, not n^2 / 2; for its unit test)
 */
unsigned long long yaml_key_compares(void);

/* yaml_scalar_json - the JSON text of a plain scalar (for tests); caller frees */
char *yaml_scalar_json(const char *s, size_t len);

/* yaml_docs_add - append one document (takes json) */
void yaml_docs_add(struct yaml_docs *docs, char *json, int line);

#endif
