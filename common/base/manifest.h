/*
 * manifest - the tree manifest codec (proto/PROTOCOL.md §3): the spool
 * blob that lists a fetched tree.  It lives here, above proto/, because it
 * is JSON (common/json.h); proto/ itself needs libc only.
 */
#ifndef DECOD_MANIFEST_H
#define DECOD_MANIFEST_H

#include <stddef.h>

#include "proto/proto.h"

/*
 * The tree manifest (PROTOCOL.md §3): the spool blob that lists a fetched
 * tree, {"source":S,"commit":C,"entries":[{"key","path","blob"}...]}, its
 * sha256 the tree hash renderer items carry.  Version 1 writes no
 * "version" field; a reader takes its absence as 1 and refuses any other.
 */
#define MANIFEST_VERSION 1
#define MANIFEST_MAX_LEN (64 << 20)
#define MANIFEST_MAX_ENTRIES 1000000
#define MANIFEST_MAX_TEXT 4096	/* a key or path, in bytes */

struct manifest_entry {
	char *key;		/* block name, decoded (SPEC §9) */
	char *path;		/* where it came from; what errors name */
	char blob[65];		/* sha256 of the file's bytes in the spool */
};

struct manifest {
	char source[PROTO_MAX_SOURCE + 1];	/* "" only in a hand-made manifest */
	char commit[PROTO_MAX_COMMIT + 1];	/* "": none */
	size_t n;
	struct manifest_entry *e;		/* sorted by key, then path */
};

struct buf;
/*
 * manifest_encode - append t as manifest JSON to out.  Checks what the
 * decoder checks (source a word, entries sorted, each key and path text,
 * each blob a sha256); 0, or -1 with the reason in err (out unchanged).
 */
int manifest_encode(const struct manifest *t, struct buf *out, char *err, size_t errlen);
/*
 * manifest_decode - parse and check a manifest whole (JSON object, known
 * fields only, version, sizes, every entry); t owns copies of every string
 * (free with manifest_free).  0, or -1 with the reason in err and t empty.
 */
int manifest_decode(const char *text, size_t len, struct manifest *t, char *err,
    size_t errlen);
/* manifest_free - free what t owns and empty it; NULL is fine */
void manifest_free(struct manifest *t);

#endif
