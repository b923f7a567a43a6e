/*
 * yaml_read - choosing between YAML and JSON for a file's text, and
 * splitting it into documents (a JSON array or a List gives one per item).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/yaml.h"

/* --- choosing the input format ---------------------------------------- */

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* line_of - 1-based line of byte offset off */
static int
line_of(const char *text, size_t off)
{
	int line = 1;

	for (size_t i = 0; i < off; i++)
		if (text[i] == '\n')
			line++;
	return line;
}

/* add_json_value - one document, or one per item of an array or a List */
static void
add_json_value(struct yaml_docs *docs, yajl_val v, int line)
{
	yajl_val items;
	const char *kind;
	struct buf b;
	struct jw w;

	if (YAJL_IS_ARRAY(v)) {
		for (size_t i = 0; i < v->u.array.len; i++)
			add_json_value(docs, v->u.array.values[i], line);
		return;
	}
	kind = json_get_str(v, "kind", NULL);
	items = json_get(v, "items", NULL);
	if (kind != NULL && strcmp(kind, "List") == 0 && YAJL_IS_ARRAY(items)) {
		add_json_value(docs, items, line);
		return;
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, v);
	yaml_docs_add(docs, buf_steal(&b, NULL), line);
}

/* expand_lists - replace each List or array document by its items */
static void
expand_lists(struct yaml_docs *in, struct yaml_docs *out)
{
	for (size_t i = 0; i < in->n; i++) {
		yajl_val v = json_parse(in->v[i].json, strlen(in->v[i].json), NULL);

		if (v == NULL) {	/* cannot happen: we wrote it */
			yaml_docs_add(out, in->v[i].json, in->v[i].line);
			in->v[i].json = NULL;
			continue;
		}
		add_json_value(out, v, in->v[i].line);
		yajl_tree_free(v);
	}
	yaml_docs_free(in);
}

/*
 * nul_refused - JSON text (valid) has a string holding \u0000: -1 with e
 * filled (line counted from line0), else 0.  yajl's tree, which every
 * reader of a resource uses, ends a string at its first NUL, so "a\u0000b"
 * would be stored as "a": refused rather than cut short.
 */
static int
nul_refused(const char *json, size_t len, int line0, struct yaml_error *e)
{
	int in_str = 0, line = line0, col = 1;

	for (size_t i = 0; i < len; i++, col++) {
		if (json[i] == '\n') {
			line++;
			col = 0;
		} else if (json[i] == '"') {
			in_str = !in_str;
		} else if (in_str && json[i] == '\\' && i + 1 < len) {
			if (json[i + 1] == 'u' && i + 5 < len && memcmp(json + i + 2, "0000", 4) == 0) {
				if (e != NULL) {
					e->line = line;
					e->column = col;
					snprintf(e->msg, sizeof(e->msg), "a string holds \\u0000 (a "
					    "NUL byte): refused, it would be cut short there");
				}
				return -1;
			}
			i++;	/* the escaped character, a quote too */
			col++;
		}
	}
	return 0;
}

/* docs_nul_refused - nul_refused for every document YAML gave */
static int
docs_nul_refused(const struct yaml_docs *raw, struct yaml_error *e)
{
	for (size_t k = 0; k < raw->n; k++) {
		/* one line of compact JSON: the document's line says where */
		if (nul_refused(raw->v[k].json, strlen(raw->v[k].json), raw->v[k].line, e) < 0) {
			if (e != NULL)
				e->column = 0;
			return -1;
		}
	}
	return 0;
}

/* docs_finish - raw's documents into docs, one per List item; raw is used up */
static int
docs_finish(struct yaml_docs *raw, struct yaml_docs *docs, struct yaml_error *e)
{
	if (docs_nul_refused(raw, e) < 0) {
		yaml_docs_free(raw);
		return -1;
	}
	expand_lists(raw, docs);
	return 0;
}

int
yaml_read_docs(const char *name, const char *text, size_t len,
    const struct yaml_opts *o, struct yaml_docs *docs, struct yaml_error *e)
{
	struct yaml_docs raw = { NULL, 0 };
	struct json_error je;
	size_t i = 0;
	int as_json, as_yaml;
	yajl_val v;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
	    text[i] == '\r'))
		i++;
	as_json = ends_with(name, ".json");
	as_yaml = ends_with(name, ".yaml") || ends_with(name, ".yml");
	if (!as_yaml && (as_json || (i < len && (text[i] == '{' || text[i] == '[')))) {
		memset(&je, 0, sizeof(je));
		v = json_parse(text, len, &je);
		if (v != NULL && nul_refused(text, len, 1, e) < 0) {
			yajl_tree_free(v);
			return -1;
		}
		if (v != NULL) {
			add_json_value(docs, v, line_of(text, i));
			yajl_tree_free(v);
			return 0;
		}
		if (as_json || yaml_to_json_docs(text, len, o, &raw, NULL) < 0) {
			yaml_docs_free(&raw);
			if (e != NULL) {
				e->line = je.line;
				e->column = je.column;
				snprintf(e->msg, sizeof(e->msg), "%s", je.msg);
			}
			return -1;
		}
		return docs_finish(&raw, docs, e);
	}
	if (yaml_to_json_docs(text, len, o, &raw, e) < 0) {
		yaml_docs_free(&raw);
		return -1;
	}
	return docs_finish(&raw, docs, e);
}
