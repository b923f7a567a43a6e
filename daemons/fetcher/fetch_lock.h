/*
 * fetch_lock - the job locks that split the decofiles between the decod
 * instances sharing one store.  The fetcher says which decofiles exist
 * (fetch_lock_want/fetch_lock_drop); this module takes their locks
 * (store_try_lock on key_lock(ns, name)), keeps the instance registry
 * (key_instance, a TTL record refreshed every session_ttl/3), shares the
 * work out (each instance takes up to its fair share at once, anything
 * still free after a short grace), takes a dead instance's locks over as
 * soon as etcd deletes them (watch on the lock prefix) and, as a fallback,
 * on a sweep every session_ttl/3.  It calls the fetcher back when it gains
 * or loses a lock.
 */
#ifndef DECOD_FETCH_LOCK_H
#define DECOD_FETCH_LOCK_H

#include <stdint.h>

struct stage;
struct fetch_lock;

struct fetch_lock_ops {
	/* the lock of ns/name is now ours: start working it */
	void (*gained)(struct stage *st, const char *ns, const char *name);
	/* the lock of ns/name is no longer ours: stop working it */
	void (*lost)(struct stage *st, const char *ns, const char *name);
	/* nonzero when ns/name has no work in flight (may be handed to another) */
	int (*settled)(struct stage *st, const char *ns, const char *name);
};

/*
 * fetch_lock_new - set up the registry, the lock watch and the sweep timer
 * on st's store.  Decofiles wanted before fetch_lock_start() are only
 * recorded; the start takes their locks in one pass.  NULL on error (logged).
 */
struct fetch_lock *fetch_lock_new(struct stage *st, const struct fetch_lock_ops *ops);
/* fetch_lock_start - first share-out of the decofiles wanted so far */
void fetch_lock_start(struct fetch_lock *fl);
/* fetch_lock_free - leave the registry; locks go with the store session */
void fetch_lock_free(struct fetch_lock *fl);

/*
 * fetch_lock_want - ns/name exists; returns 1 if its lock is ours (taken
 * now or before), 0 if not (yet).  Never calls ops->gained itself.
 */
int fetch_lock_want(struct fetch_lock *fl, const char *ns, const char *name);
/* fetch_lock_drop - ns/name was deleted: release its lock if ours, forget it */
void fetch_lock_drop(struct fetch_lock *fl, const char *ns, const char *name);
/* fetch_lock_held - 1 if ns/name's lock is ours */
int fetch_lock_held(const struct fetch_lock *fl, const char *ns, const char *name);

/* fetch_obj_hash - FNV-1a of "ns/name", for the fetcher's hash tables */
uint32_t fetch_obj_hash(const char *ns, const char *name);

#endif
