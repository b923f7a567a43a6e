/*
 * fetch_tree - a fetched tree being built: every block's bytes go into the
 * spool, and the tree manifest (proto/PROTOCOL.md §3) lists (key, path,
 * blob) sorted by key then path.  The manifest's own hash is the tree hash
 * carried by renderer items.  Also the result every source fills.
 */
#ifndef DECOD_FETCH_TREE_H
#define DECOD_FETCH_TREE_H

#include <stddef.h>
#include <stdint.h>

struct spool;
struct fetch_tree;

/* size caps: a file over max_file or a tree over max_tree is TooLarge */
struct fetch_limits {
	uint64_t max_file;
	uint64_t max_tree;
	/*
	 * nonzero: fetch_tree_finish leaves the tree's new blobs and its
	 * manifest staged (written, not synced, not under their hashes) in
	 * res->staged for the caller to make durable with others in one
	 * sync group (fetch_result_group) before anything names the tree
	 */
	int defer_sync;
};

/* what one fetch produced: a tree (and commit), or an error with a reason */
struct fetch_result {
	char tree_hash[65];	/* "" on error */
	char commit[96];	/* "" where the source has none; oci: "sha256:<hex>" */
	size_t entries;
	uint64_t bytes;
	const char *reason;	/* static: "FetchError", "TooLarge"; NULL when ok */
	char error[1024];	/* message naming the file or remote */
	int64_t retry_after_ms;	/* > 0: the remote asked us to wait this long (rate limit) */
	/* defer_sync: the files spool_stage wrote for this tree, not yet durable */
	char **staged;
	size_t nstaged;
};

/* fetch_tree_new - an empty tree writing blobs into sp (borrowed) */
struct fetch_tree *fetch_tree_new(struct spool *sp, const struct fetch_limits *lim);
void fetch_tree_free(struct fetch_tree *t);

/*
 * fetch_tree_add - put data into the spool and list it under key and
 * path.  0, or -1 with res->error and res->reason set (TooLarge when a
 * cap is passed, FetchError when the spool write fails).
 */
int fetch_tree_add(struct fetch_tree *t, const char *key, const char *path,
    const void *data, size_t len, struct fetch_result *res);

/*
 * fetch_tree_check_size - would a file of size len still fit?  0, or -1
 * with res filled (lets a source refuse before reading the bytes).
 */
int fetch_tree_check_size(struct fetch_tree *t, const char *path, uint64_t len,
    struct fetch_result *res);

/*
 * fetch_tree_finish - sort, write the manifest
 * {"source":S,"commit":C,"entries":[...]} (commit left out when NULL or
 * empty) into the spool, and fill res->tree_hash, commit, entries, bytes.
 * 0 or -1 with res filled.
 */
int fetch_tree_finish(struct fetch_tree *t, const char *source, const char *commit,
    struct fetch_result *res);

/*
 * fetch_result_group - hand res->staged to the sync group open on this
 * thread (spool_group); res->staged is emptied either way.  0 or -1 (the
 * files are then removed: the tree is not on disk).
 */
int fetch_result_group(struct fetch_result *res);
/* fetch_result_unstage - remove and forget res->staged (a tree never synced) */
void fetch_result_unstage(struct fetch_result *res);

/* fetch_result_error - set reason and a printf message; returns -1 */
int fetch_result_error(struct fetch_result *res, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
