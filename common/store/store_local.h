/*
 * store_local.h - the parts of the local store backend shared by its
 * three files: store_local.c (layout, values, revisions), store_local_lock.c
 * (the flock job locks) and store_local_watch.c (the inotify watch).  Only
 * those include this.
 */
#ifndef DECOD_STORE_LOCAL_H
#define DECOD_STORE_LOCAL_H

#include <stdint.h>
#include <time.h>

#include "common/store_impl.h"
#include "common/util.h"

/* keys: PATH_REL_MAX bytes, components PATH_COMP_MAX (253 = 255 minus ".d"/".v") */
#define LOCAL_REL_BUF (PATH_REL_MAX + 8)	/* room for path_clean's output */

#define LOCAL_HELD_BUCKETS 4096

struct held {
	char *rel;
	int fd;
	struct held *hnext;	/* in the bucket of rel's hash */
};

struct local {
	struct store *s;
	char *root, *kv, *tmp, *locks, *revpath;
	int revfd;
	unsigned seq;
	/* the held locks, by rel's hash: 10,000 job locks at start-up made a list scan quadratic */
	struct held *hbucket[LOCAL_HELD_BUCKETS];
};

/*
 * local_clean_key - key as the cleaned relative path rel (LOCAL_REL_BUF
 * bytes) by path_clean, the one key validator; empty_ok allows "" and "/"
 * (every key, for prefixes).  0, or -1 with the store error naming what.
 */
int local_clean_key(struct local *l, const char *what, const char *key, char *rel,
    int empty_ok);
/*
 * local_enc_path - base/rel with ".d" on folder components and suffix on
 * the last (malloc'd; caller frees)
 */
char *local_enc_path(const char *base, const char *rel, const char *suffix);
/* local_has_suffix - name ends with the two-byte suffix sfx and has a stem */
int local_has_suffix(const char *name, const char *sfx);
/* local_prefix_self - whether a prefix names its own key too (no trailing "/") */
int local_prefix_self(const char *prefix);
/* local_key_matches - key is pkey itself (when self) or under pkey/ */
int local_key_matches(const char *pkey, int self, const char *key);
/* local_ts_ns - a timespec in nanoseconds */
int64_t local_ts_ns(const struct timespec *ts);
/*
 * local_read_value - read the value file at path.  0: *val (malloc'd,
 * NUL-terminated; caller frees) with its revision and expiry; 1: absent;
 * -1: error with errno set.
 */
int local_read_value(const char *path, char **val, size_t *vlen, int64_t *rev,
    int64_t *exp);
/* local_read_value_fd - the same from an open value file (0 or -1; fd stays open) */
int local_read_value_fd(int fd, char **val, size_t *vlen, int64_t *rev, int64_t *exp);
/* local_rev - the store's revision counter as it is now */
int64_t local_rev(struct local *l);
/* local_expired - an expiry (unix ms, 0: none) has passed */
int local_expired(int64_t exp);
/*
 * local_expire_rel - remove rel's value file if it is still expired
 * (another process may have written it again meanwhile).  1 removed, 0 not.
 */
int local_expire_rel(struct local *l, const char *rel);

/* store_local_lock.c: the store_ops lock entries (see store_impl.h) */
int local_try_lock(void *be, const char *key, char **holder);
int local_try_lock_many(void *be, const char *const *keys, size_t n, int *results);
int local_unlock(void *be, const char *key);
/* local_locks_release - let every lock this backend holds go (at close) */
void local_locks_release(struct local *l);

/* store_local_watch.c: the store_ops watch entries (see store_impl.h) */
void *local_watch_new(void *be, struct store_watch *sw, const char *prefix, int64_t from_rev);
void *local_watch_new_list(void *be, struct store_watch *sw, const char *prefix,
    struct store_list *out);
int local_watch_fd(void *wbe);
int local_watch_timeout_ms(void *wbe);
int local_watch_dispatch(void *wbe, struct store_watch *sw);
void local_watch_free(void *wbe);

#endif
