/*
 * json - reading with yajl's tree, writing with a small comma-aware writer
 * on struct buf, validation with line and column, and compaction that keeps
 * every byte of strings and numbers as written (Go's json.Compact rules).
 */
#ifndef DECOD_JSON_H
#define DECOD_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/util.h"

struct json_error {
	int line;		/* 1-based */
	int column;		/* 1-based, in bytes */
	char msg[256];
};

/*
 * json_parse - parse text (len bytes, need not be NUL-terminated) into a
 * tree, after json_validate's checks (depth, duplicate keys), so walking
 * the tree recursively is safe.  On error returns NULL and fills e (may be
 * NULL).  Free with yajl_tree_free().
 */
yajl_val json_parse(const char *text, size_t len, struct json_error *e);

/* the default of the json_max_depth setting */
#define JSON_MAX_DEPTH_DEFAULT 512

/*
 * json_set_max_depth - the deepest nesting (objects and arrays) that
 * json_validate and json_parse accept from now on, for the whole process
 * (every program sets it from json_max_depth at start).  <= 0: default.
 */
void json_set_max_depth(int depth);
int json_get_max_depth(void);

/*
 * json_validate - check that text is one JSON value and nothing else,
 * nested no deeper than the process limit, with no key twice in one
 * object, without building a tree.  0, or -1 with e filled (line and
 * column of the offending bracket, key or byte).
 */
int json_validate(const char *text, size_t len, struct json_error *e);

/* json_validate_depth - json_validate with its own depth limit (<= 0: the process's) */
int json_validate_depth(const char *text, size_t len, int max_depth, struct json_error *e);
/*
 * json_validate_full - json_validate_depth without its fast first pass: the
 * full check alone (yajl), which decides whatever the fast pass is not sure
 * of; for tests that hold the two to the same answers
 */
int json_validate_full(const char *text, size_t len, int max_depth, struct json_error *e);

/*
 * json_validate_compact - json_validate_depth, and when text is valid,
 * append to out what json_compact would (the same bytes), written in the
 * same pass over text as the check in the common case.  0, or -1 with e
 * filled and out as it was.
 */
int json_validate_compact(struct buf *out, const char *text, size_t len, int max_depth,
    struct json_error *e);

/*
 * json_compact - append text with insignificant white space removed; the
 * bytes of strings and numbers are kept exactly.  text must be valid JSON.
 */
void json_compact(struct buf *out, const char *text, size_t len);

/* json_get - walk object keys (NULL-terminated list); NULL if absent */
yajl_val json_get(yajl_val v, ...);
/* json_get_str - string at path or NULL (not a string: NULL) */
const char *json_get_str(yajl_val v, ...);
/* json_get_int - integer at path, or def */
int64_t json_get_int(yajl_val v, int64_t def, ...);
/* json_get_bool - true/false at path, or def */
int json_get_bool(yajl_val v, int def, ...);

/*
 * json writer: appends compact JSON to a buf.  Where a comma goes is read
 * from the last byte written (none after an opening bracket, a key, or at
 * the start), so nesting has no fixed limit.
 */
struct jw {
	struct buf *b;
	size_t start;		/* b->len at jw_init */
	int depth;
	int after_key;
};
void jw_init(struct jw *w, struct buf *b);
void jw_obj(struct jw *w);		/* { */
void jw_arr(struct jw *w);		/* [ */
void jw_end_obj(struct jw *w);		/* } */
void jw_end_arr(struct jw *w);		/* ] */
void jw_key(struct jw *w, const char *k);
void jw_str(struct jw *w, const char *s);	/* NULL writes null */
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, int64_t v);
void jw_bool(struct jw *w, int v);
void jw_null(struct jw *w);
void jw_raw(struct jw *w, const char *json, size_t n);	/* already JSON */
/* jw_value - re-emit a yajl tree value */
void jw_value(struct jw *w, yajl_val v);
/*
 * jw_object_head - open an API object: {"apiVersion":..,"kind":..,
 * "metadata":{"name":..,"namespace":.. (ns NULL: none), with metadata left
 * open for the caller's keys; two jw_end_obj... close metadata, the
 * caller's fields follow, then the object's own.
 */
void jw_object_head(struct jw *w, const char *api_version, const char *kind,
    const char *ns, const char *name);

/* json_escape - append s as a JSON string literal (quotes included) */
void json_escape(struct buf *b, const char *s, size_t n);

#endif
