/*
 * store_impl - what a store backend provides.  store.c dispatches the
 * public calls of store.h through this table; each backend file
 * (store_local.c, store_etcd.c) defines one table and an open function.
 * Only store*.c include this header.
 */
#ifndef DECOD_STORE_IMPL_H
#define DECOD_STORE_IMPL_H

#include "common/store.h"

struct store_ops {
	const char *scheme;	/* "local", "etcd" */
	/* open: spec is the URL without "scheme:"; returns backend state or NULL */
	void *(*open)(struct store *s, const char *spec, const struct conf *cf);
	void (*close)(void *be);
	int (*put)(void *be, const char *key, const void *val, size_t len, int ttl_s);
	/* put_volatile: a put the backend need not sync to disk; NULL: put */
	int (*put_volatile)(void *be, const char *key, const void *val, size_t len);
	/* put_many: n distinct keys, no TTL; 0 or -1.  NULL: store.c loops over put */
	int (*put_many)(void *be, const char *const *keys, const char *const *vals,
	    const size_t *lens, size_t n);
	int (*get)(void *be, const char *key, char **val, size_t *len);
	int (*del)(void *be, const char *key);
	long (*del_prefix)(void *be, const char *prefix);
	int (*list)(void *be, const char *prefix, struct store_list *out);
	/* watch: returns backend watch state, or NULL */
	void *(*watch_new)(void *be, struct store_watch *w, const char *prefix, int64_t from_rev);
	/*
	 * watch_new_list: watch_new from now on, *out (zeroed by the caller)
	 * what the watch saw at its opening, sorted.  NULL: store.c opens the
	 * watch, then lists.
	 */
	void *(*watch_new_list)(void *be, struct store_watch *w, const char *prefix,
	    struct store_list *out);
	int (*watch_fd)(void *wbe);
	int (*watch_timeout_ms)(void *wbe);
	int (*watch_dispatch)(void *wbe, struct store_watch *w);
	void (*watch_free)(void *wbe);
	int (*try_lock)(void *be, const char *key, char **holder);
	/* try_lock_many: results[i] 1 ours, 0 someone else's; 0 or -1 */
	int (*try_lock_many)(void *be, const char *const *keys, size_t n, int *results);
	int (*unlock)(void *be, const char *key);
};

struct store {
	const struct store_ops *ops;
	void *be;
	char identity[128];
	char err[512];
	int no_create;		/* store_open_existing: make no folder, no file */
	int missing;		/* ... and there was none */
};

struct store_watch {
	struct store *s;
	void *wbe;
	store_watch_cb cb;
	void *arg;
};

/* store_set_error - record the last error text (printf-style) */
void store_set_error(struct store *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* store_emit - deliver one event to the watch's callback */
void store_emit(struct store_watch *w, const struct store_event *ev);

extern const struct store_ops store_local_ops;
extern const struct store_ops store_etcd_ops;

#endif
