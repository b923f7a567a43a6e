/*
 * spool - content-addressed blobs under <state_dir>/spool/<aa>/<sha256>.
 * Work items carry hashes, never megabytes.  A blob is written once
 * (temp file + rename), so readers never see half a blob; putting the same
 * content twice costs one hash and one stat.
 */
#ifndef DECOD_SPOOL_H
#define DECOD_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

/* spool_open - use (and create) dir; NULL with errno on failure */
struct spool *spool_open(const char *dir);
void spool_close(struct spool *sp);

/* spool_put - store data; writes its hash into hash (65 bytes); 0 or -1 */
int spool_put(struct spool *sp, const void *data, size_t len, char *hash);
/*
 * spool_stage, spool_commit - spool_put of many blobs with the syncs
 * grouped: spool_stage writes data under a temporary name without fsync
 * (*tmp: that name, malloc'd; NULL when the blob is already there) and
 * hash as spool_put does; spool_commit fsyncs every staged file, renames
 * each to its hash and fsyncs each folder once, so a blob never shows
 * under its hash before its bytes are on disk.  The caller frees the
 * names.  0 or -1 (staged files that could not be committed are removed).
 */
int spool_stage(struct spool *sp, const void *data, size_t len, char *hash, char **tmp);
int spool_commit(struct spool *sp, char **tmps, size_t n);
/*
 * spool_group - hand n staged files (spool_stage's names; NULL ones are
 * skipped) to the sync group open on this thread (sync_group.h) instead of
 * spool_commit: sync_group_flush makes their bytes durable, renames each to
 * its hash and makes the names durable, so a blob still never shows under
 * its hash before its bytes are on disk.  The group copies the names (the
 * caller still frees its own).  0, or -1 with errno (EINVAL: not a staged
 * name; the files handed over before it stay in the group).
 */
int spool_group(char **tmps, size_t n);

/*
 * spool_get - read the blob named hash; returns a new NUL-terminated
 * buffer (caller frees) and its size, or NULL with errno (ENOENT: absent,
 * EINVAL: not a hash, EIO: content does not match its name).
 */
char *spool_get(struct spool *sp, const char *hash, size_t *len);

/* spool_has - nonzero when the blob exists */
int spool_has(struct spool *sp, const char *hash);

/* spool_path - the blob's file path into out; 0 or -1 for a bad hash */
int spool_path(struct spool *sp, const char *hash, char *out, size_t outlen);

/*
 * spool_gc - remove every blob older than min_age_ms for which keep(arg,
 * hash) returns 0.  Returns the number removed.
 */
long spool_gc(struct spool *sp, int64_t min_age_ms,
    int (*keep)(void *arg, const char *hash), void *arg);

#endif
