/*
 * store - decod's key/value store: one interface, two backends chosen by a
 * URL ("local:/var/lib/decod/store" or "etcd:http://127.0.0.1:2379,...").
 * Values are opaque bytes (resources are JSON).  Every call has a deadline.
 * Errors: functions return -1 and store_error() says why; "not found" is
 * not an error (store_get returns 1).
 */
#ifndef DECOD_STORE_H
#define DECOD_STORE_H

#include <stddef.h>
#include <stdint.h>

struct conf;
struct store;
struct store_watch;

struct store_kv {
	char *key;
	char *value;		/* NUL-terminated for convenience */
	size_t vlen;
	int64_t mod_revision;	/* 0 where the backend has none */
};

struct store_list {
	struct store_kv *kvs;	/* sorted by key, ascending bytes */
	size_t n;
	int64_t revision;	/* store revision the list was read at (0: none) */
};

enum store_event_type {
	STORE_EV_PUT,
	STORE_EV_DELETE,
	STORE_EV_RELIST,	/* history was lost (compaction): re-list the prefix */
};

struct store_event {
	enum store_event_type type;
	const char *key;
	const char *value;	/* PUT only */
	size_t vlen;
	int64_t revision;
};

typedef void (*store_watch_cb)(void *arg, const struct store_event *ev);

/*
 * store_open - open the backend named by url; settings (TLS files, deadline,
 * prefix, session TTL) come from cf (may be NULL for defaults).  Returns
 * NULL with a message in err.
 */
struct store *store_open(const char *url, const struct conf *cf, char *err, size_t errlen);
/*
 * store_open_existing - store_open for a reader that must not create the
 * store: a local store whose folder is not there is not made; NULL with
 * "no store at PATH" in err and *missing set (1), where store_open would
 * have made an empty one.  Other failures as store_open, *missing 0.
 */
struct store *store_open_existing(const char *url, const struct conf *cf, int *missing,
    char *err, size_t errlen);
/*
 * store_url_check - url names a backend this build has, with what it needs
 * after the scheme ("local:" a folder, "etcd:" one URL or more), without
 * opening anything: 0, or -1 with the reason in err
 */
int store_url_check(const char *url, char *err, size_t errlen);
/* store_close - release leases and locks, free; NULL is a no-op */
void store_close(struct store *s);
/* store_error - text of the last error on this handle */
const char *store_error(const struct store *s);

int store_put(struct store *s, const char *key, const void *val, size_t len);
/*
 * store_put_volatile - store_put of a value that is rebuilt if lost (a
 * stage's status fragment): the local store does not fsync it (readers
 * and watchers see it at once; a power cut may lose the last one, which
 * the stage rewrites on its next change).  On etcd the same as store_put.
 */
int store_put_volatile(struct store *s, const char *key, const void *val, size_t len);
/*
 * store_put_many - put n distinct keys (keys[i] -> vals[i] of lens[i]
 * bytes), no TTL.  On etcd one txn per 127 keys (less when the values are
 * large), so a batch of n takes about n/127 round trips; each txn is all or
 * nothing, but a failure after the first leaves the earlier ones written.
 * The local backend puts them one by one.  0, or -1 (store_error).
 */
int store_put_many(struct store *s, const char *const *keys, const char *const *vals,
    const size_t *lens, size_t n);
/* store_put_many_volatile - store_put_many of values store_put_volatile would take */
int store_put_many_volatile(struct store *s, const char *const *keys,
    const char *const *vals, const size_t *lens, size_t n);
/* store_put_ttl - the key disappears ttl_s seconds after the last put */
int store_put_ttl(struct store *s, const char *key, const void *val, size_t len, int ttl_s);
/* store_get - 0 found (*val malloc'd, NUL-terminated; caller frees), 1 absent, -1 error */
int store_get(struct store *s, const char *key, char **val, size_t *len);
/* store_delete - 0 (absent is fine) or -1 */
int store_delete(struct store *s, const char *key);
/* store_delete_prefix - number of keys removed, or -1 */
long store_delete_prefix(struct store *s, const char *prefix);
/* store_list - every key under prefix; 0 or -1; free with store_list_free */
int store_list(struct store *s, const char *prefix, struct store_list *out);
void store_list_free(struct store_list *l);
/*
 * store_list_seek - the index of the first key of l (sorted) not below key:
 * l->n when every key is below it.  A key present is at that index.
 */
size_t store_list_seek(const struct store_list *l, const char *key);

/*
 * store_watch_new - events for keys under prefix from now on (from_rev > 0:
 * from that revision, where the backend keeps history).  The watch is
 * driven by the caller's loop: poll store_watch_fd() for reading (and wake
 * at least every store_watch_timeout_ms()), then call store_watch_dispatch(),
 * which calls cb on the caller's thread.  It reconnects by itself; it ends
 * only by store_watch_free().
 */
struct store_watch *store_watch_new(struct store *s, const char *prefix,
    int64_t from_rev, store_watch_cb cb, void *arg);
/*
 * store_watch_new_list - store_watch_new from now on, with every key under
 * prefix in *out as the watch saw it when it opened (as store_list: sorted,
 * free with store_list_free): a put after the list comes as an event, one
 * before it may come as both.  It replaces a watch followed by a list,
 * reading each value once where the backend can (the local store's opening
 * scan reads every value file anyway; etcd: the watch, then the list).
 * NULL with *out empty when either fails (store_error).
 */
struct store_watch *store_watch_new_list(struct store *s, const char *prefix,
    store_watch_cb cb, void *arg, struct store_list *out);
int store_watch_fd(const struct store_watch *w);
int store_watch_timeout_ms(const struct store_watch *w);
int store_watch_dispatch(struct store_watch *w);
void store_watch_free(struct store_watch *w);

/*
 * store_try_lock - take the job lock key for this handle's session without
 * waiting.  1: held by us (now or already), 0: held by someone else
 * (*holder, if non-NULL, gets its identity; caller frees), -1: error.
 * Locks die with the session (process exit, lease expiry).
 */
int store_try_lock(struct store *s, const char *key, char **holder);
/*
 * store_try_lock_many - store_try_lock for n keys at once, without waiting
 * and without holders: results[i] is 1 (ours, now or already) or 0 (held by
 * someone else).  The keys are independent: some may be ours and others not.
 * On etcd it takes one round trip (one txn of nested per-key txns) for up
 * to 100 keys.  Returns 0, or -1 (store_error) when some could not be asked;
 * results of keys not asked are 0 then.  Keys must be distinct.
 */
int store_try_lock_many(struct store *s, const char *const *keys, size_t n, int *results);
int store_unlock(struct store *s, const char *key);
/* store_identity - this handle's session identity (host:pid or configured) */
const char *store_identity(const struct store *s);

#endif
