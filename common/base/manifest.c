/*
 * manifest - the tree manifest (manifest.h, PROTOCOL.md §3): the one writer
 * the fetcher uses and the one strict reader the renderer and spool
 * cleanup use.  A manifest the reader accepts has every field checked, so
 * no caller searches its text.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/manifest.h"
#include "common/util.h"

void
manifest_free(struct manifest *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].key);
		free(t->e[i].path);
	}
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/*
 * text_ok - non-empty, at most max bytes and valid UTF-8 (the manifest is
 * JSON).  Control bytes are allowed: a key is a file's name as the source
 * has it, and JSON escapes them.
 */
static int
text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && utf8_valid(s, n);
}

/* entry_cmp - the manifest's order: by key, then path */
static int
entry_cmp(const struct manifest_entry *x, const struct manifest_entry *y)
{
	int c = strcmp(x->key, y->key);

	return c != 0 ? c : strcmp(x->path, y->path);
}

/* check_entry - entry i of t; 0, or -1 with err */
static int
check_entry(const struct manifest *t, size_t i, char *err, size_t errlen)
{
	const struct manifest_entry *e = &t->e[i];

	if (e->key == NULL || !text_ok(e->key, MANIFEST_MAX_TEXT)) {
		snprintf(err, errlen, "entry %zu: key missing, empty, over %d bytes or not UTF-8", i,
		    MANIFEST_MAX_TEXT);
		return -1;
	}
	if (e->path == NULL || !text_ok(e->path, MANIFEST_MAX_TEXT)) {
		snprintf(err, errlen, "entry %zu (%.80s): path empty, over %d bytes or not UTF-8", i, e->key,
		    MANIFEST_MAX_TEXT);
		return -1;
	}
	if (!is_sha256_hex(e->blob)) {
		snprintf(err, errlen, "entry %zu (%.80s): blob is not a sha256", i, e->path);
		return -1;
	}
	if (i > 0 && entry_cmp(&t->e[i - 1], e) > 0) {
		snprintf(err, errlen, "entry %zu (%.80s): entries are not sorted by key, then path",
		    i, e->path);
		return -1;
	}
	return 0;
}

int
manifest_encode(const struct manifest *t, struct buf *out, char *err, size_t errlen)
{
	struct jw w;

	if (!proto_word_ok(t->source, sizeof(t->source))) {
		snprintf(err, errlen, "source \"%.40s\" is not a word", t->source);
		return -1;
	}
	if (t->commit[0] != '\0' && !proto_word_ok(t->commit, sizeof(t->commit))) {
		snprintf(err, errlen, "commit \"%.80s\" is not a word", t->commit);
		return -1;
	}
	if (t->n > MANIFEST_MAX_ENTRIES) {
		snprintf(err, errlen, "%zu entries, more than %d", t->n, MANIFEST_MAX_ENTRIES);
		return -1;
	}
	for (size_t i = 0; i < t->n; i++)
		if (check_entry(t, i, err, errlen) < 0)
			return -1;
	jw_init(&w, out);
	jw_obj(&w);
	jw_key(&w, "source");
	jw_str(&w, t->source);
	if (t->commit[0] != '\0') {
		jw_key(&w, "commit");
		jw_str(&w, t->commit);
	}
	jw_key(&w, "entries");
	jw_arr(&w);
	for (size_t i = 0; i < t->n; i++) {
		jw_obj(&w);
		jw_key(&w, "key");
		jw_str(&w, t->e[i].key);
		jw_key(&w, "path");
		jw_str(&w, t->e[i].path);
		jw_key(&w, "blob");
		jw_str(&w, t->e[i].blob);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	return 0;
}

/* string_field - v's string member k (absent: NULL); -1 if present but not a string */
static int
string_field(yajl_val v, const char *k, const char **out)
{
	yajl_val f = json_get(v, k, NULL);

	*out = NULL;
	if (f == NULL)
		return 0;
	if (!YAJL_IS_STRING(f))
		return -1;
	*out = YAJL_GET_STRING(f);
	return 0;
}

/* decode_entry - object v as entry i of t; 0, or -1 with err */
static int
decode_entry(yajl_val v, struct manifest *t, size_t i, char *err, size_t errlen)
{
	struct manifest_entry *e = &t->e[i];
	const char *key, *path, *blob;

	if (!YAJL_IS_OBJECT(v)) {
		snprintf(err, errlen, "entry %zu is not an object", i);
		return -1;
	}
	for (size_t k = 0; k < v->u.object.len; k++) {
		const char *name = v->u.object.keys[k];

		if (strcmp(name, "key") != 0 && strcmp(name, "path") != 0 &&
		    strcmp(name, "blob") != 0) {
			snprintf(err, errlen, "entry %zu: unknown field \"%.40s\"", i, name);
			return -1;
		}
	}
	if (string_field(v, "key", &key) < 0 || string_field(v, "path", &path) < 0 ||
	    string_field(v, "blob", &blob) < 0) {
		snprintf(err, errlen, "entry %zu: key, path and blob must be strings", i);
		return -1;
	}
	if (key == NULL || blob == NULL) {
		snprintf(err, errlen, "entry %zu: no %s", i, key == NULL ? "key" : "blob");
		return -1;
	}
	e->key = xstrdup(key);
	e->path = xstrdup(path != NULL ? path : key);	/* path defaults to the key */
	snprintf(e->blob, sizeof(e->blob), "%.64s", strlen(blob) == 64 ? blob : "");
	t->n = i + 1;
	return check_entry(t, i, err, errlen);
}

int
manifest_decode(const char *text, size_t len, struct manifest *t, char *err,
    size_t errlen)
{
	struct json_error je;
	yajl_val doc, entries, ver;
	const char *source, *commit;
	char e[512];
	int rc = -1;

	memset(t, 0, sizeof(*t));
	if (len > MANIFEST_MAX_LEN) {
		snprintf(err, errlen, "tree manifest of %zu bytes is over the %d-byte limit", len,
		    MANIFEST_MAX_LEN);
		return -1;
	}
	if ((doc = json_parse(text, len, &je)) == NULL) {
		snprintf(err, errlen, "tree manifest is not JSON (line %d, column %d: %s)",
		    je.line, je.column, je.msg);
		return -1;
	}
	if (!YAJL_IS_OBJECT(doc)) {
		snprintf(err, errlen, "tree manifest is not an object");
		goto out;
	}
	for (size_t k = 0; k < doc->u.object.len; k++) {
		const char *name = doc->u.object.keys[k];

		if (strcmp(name, "version") != 0 && strcmp(name, "source") != 0 &&
		    strcmp(name, "commit") != 0 && strcmp(name, "entries") != 0) {
			snprintf(err, errlen, "tree manifest: unknown field \"%.40s\"", name);
			goto out;
		}
	}
	/* no version: 1, the only one so far */
	if ((ver = json_get(doc, "version", NULL)) != NULL &&
	    (!YAJL_IS_INTEGER(ver) || YAJL_GET_INTEGER(ver) != MANIFEST_VERSION)) {
		snprintf(err, errlen, "tree manifest: version is not %d", MANIFEST_VERSION);
		goto out;
	}
	if (string_field(doc, "source", &source) < 0 ||
	    (source != NULL && !proto_word_ok(source, sizeof(t->source)))) {
		snprintf(err, errlen, "tree manifest: source is not a word of at most %zu bytes",
		    sizeof(t->source) - 1);
		goto out;
	}
	if (string_field(doc, "commit", &commit) < 0 ||
	    (commit != NULL && !proto_word_ok(commit, sizeof(t->commit)))) {
		snprintf(err, errlen, "tree manifest: commit is not a word of at most %zu bytes",
		    sizeof(t->commit) - 1);
		goto out;
	}
	snprintf(t->source, sizeof(t->source), "%s", source ? source : "");
	snprintf(t->commit, sizeof(t->commit), "%s", commit ? commit : "");
	entries = json_get(doc, "entries", NULL);
	if (entries == NULL || !YAJL_IS_ARRAY(entries)) {
		snprintf(err, errlen, "tree manifest: no entries array");
		goto out;
	}
	if (entries->u.array.len > MANIFEST_MAX_ENTRIES) {
		snprintf(err, errlen, "tree manifest: %zu entries, more than %d",
		    entries->u.array.len, MANIFEST_MAX_ENTRIES);
		goto out;
	}
	t->e = xcalloc(entries->u.array.len ? entries->u.array.len : 1, sizeof(*t->e));
	for (size_t i = 0; i < entries->u.array.len; i++) {
		if (decode_entry(entries->u.array.values[i], t, i, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "tree manifest: %s", e);
			goto out;
		}
	}
	rc = 0;
out:
	yajl_tree_free(doc);
	if (rc < 0)
		manifest_free(t);
	return rc;
}
