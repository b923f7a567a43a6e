/*
 * render_merge - turn a decofile's blocks (and its templates' blocks) into
 * the one JSON document the Deco runtime reads (SPEC §4.2, §9), and the
 * size rules of the targets.  Pure functions on memory: no store, spool or
 * journal, so the unit tests and the benchmark drive it directly.
 */
#ifndef DECOD_RENDER_MERGE_H
#define DECOD_RENDER_MERGE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hash.h"
#include "common/util.h"

/* layer of the decofile's own blocks: above every template (0, 1, ...) */
#define RENDER_LAYER_OWN INT_MAX

struct render_input {
	const char *key;	/* block name (NUL-terminated, already decoded) */
	const char *path;	/* where it came from; what errors name */
	const char *data;	/* the file's bytes (need not be NUL-terminated) */
	size_t len;
	int layer;		/* template index in listed order, or RENDER_LAYER_OWN */
};

/* why render_merge refused its inputs */
enum render_err { RENDER_EINVALID = 1, RENDER_EDUPLICATE };

struct render_error {
	enum render_err kind;
	int count;		/* how many problems were found (the first is in msg) */
	char msg[1024];		/* "blocks/a.json:3:7: parse error: ..." */
};

/*
 * render_merge - validate every input as JSON (all of them, including the
 * ones a higher layer overrides), refuse two inputs of one layer with the
 * same key, and append to out the merged object: for each key the input of
 * the highest layer, keys in ascending byte order, each value compacted
 * with its string and number bytes kept as written, no HTML escaping, no
 * trailing newline.  hash (65 bytes, may be NULL) gets the bare lowercase
 * hex sha256 of what was appended.  The inputs are not modified.
 * Returns 0, or -1 with e filled (out then holds nothing new).
 */
int render_merge(const struct render_input *in, size_t n, struct buf *out,
    char *hash, struct render_error *e);

/*
 * render_key_escape - append k as a JSON string literal the way Go's
 * encoder writes map keys with HTML escaping off: \" \\ \b \f \n \r \t,
 * other control bytes as \u00XX, U+2028/U+2029 escaped, invalid UTF-8
 * replaced by \ufffd, everything else as is.
 */
void render_key_escape(struct buf *out, const char *k, size_t len);

/*
 * Target size rules.  A ConfigMap holds at most 1 MiB of data (keys and
 * values together); RENDER_CM_OVERHEAD is kept back for the key names and
 * timestamp.txt.
 */
#define RENDER_CM_MAX		(1024 * 1024)
#define RENDER_CM_OVERHEAD	4096
#define RENDER_CM_ROOM		(RENDER_CM_MAX - RENDER_CM_OVERHEAD)

/*
 * render_want_bin - nonzero when a document of json_len bytes is to be
 * published as decofile.bin: above threshold (bytes), and always for the
 * configmap target, as the Go operator does (sites its webhook admitted
 * read file:///app/decofile/decofile.bin whatever the size).
 */
int render_want_bin(size_t json_len, uint64_t threshold, int configmap);

/*
 * render_check_fits - 0 when a document of doc_len bytes (the .bin text if
 * is_bin, else the JSON) fits the target; -1 with a TooLarge message in msg
 * that suggests target s3.  Only the configmap target has a limit.
 */
int render_check_fits(size_t doc_len, int is_bin, int configmap, char *msg,
    size_t msglen);

#endif
