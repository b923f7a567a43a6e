/*
 * fetch_lock - job locks that split the decofiles between decod instances
 * on one store (see fetch_lock.h).  It owns one entry per known decofile
 * (held or not, who holds it), this instance's registry record, the watch
 * on the lock prefix and the sweep timer.  Everything runs on the stage
 * loop's thread; store calls are synchronous and short (one etcd txn).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_lock.h"

#define NBUCKET 16384
#define GRACE_MS 300		/* an under-share instance gets first pick */
/*
 * lock attempts per loop turn: 2 etcd txns.  A turn of 1,000 (the lock's
 * gained callback, each with its status and journal work) held the loop
 * 100 ms at a restart of 10,000 CRs, while the front door's next list page
 * waited for the loop to ask for it.
 */
#define BATCH 200
#define TAKE_CHUNK 100		/* ... per store_try_lock_many call (one etcd txn) */

struct ent {
	char *ns, *name, *key;
	int held;
	int seen_locked;	/* someone holds it (last listing or event) */
	int free_sweeps;	/* sweeps in a row it was seen free */
	int64_t released_ms;	/* we let it go to even out the split */
	int in_grace;		/* waiting for the shared grace timer */
	struct fetch_lock *fl;
	struct ent *next;
};

struct fetch_lock {
	struct stage *st;
	const struct fetch_lock_ops *ops;
	struct ent *tab[NBUCKET];
	size_t total, held;
	char *lock_prefix, *inst_prefix, *inst_key;
	int ttl_s;
	int64_t sweep_ms;
	int64_t sweep_timer;
	int64_t grace_timer;	/* one for every entry in grace: one batch when it fires */
	struct store_watch *watch;
	struct stage_watch *sw;
	int started, more;	/* more: the last sweep stopped at BATCH */
	size_t ninst, prev_ninst;
	int prev_over;
	int64_t since;
	int64_t beat_ms;	/* the last heartbeat */
};

static struct store *
S(struct fetch_lock *fl)
{
	return stage_store(fl->st);
}

uint32_t
fetch_obj_hash(const char *ns, const char *name)
{
	uint32_t h = 2166136261u;	/* FNV-1a over "ns/name" */

	for (const char *p = ns; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	h = (h ^ '/') * 16777619u;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

static unsigned
hash2(const char *ns, const char *name)
{
	return fetch_obj_hash(ns, name) % NBUCKET;
}

static struct ent *
ent_find(const struct fetch_lock *fl, const char *ns, const char *name)
{
	for (struct ent *e = fl->tab[hash2(ns, name)]; e != NULL; e = e->next)
		if (strcmp(e->ns, ns) == 0 && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* fair - the most decofiles one instance takes without waiting */
static size_t
fair(const struct fetch_lock *fl)
{
	size_t n = fl->ninst > 0 ? fl->ninst : 1;

	return (fl->total + n - 1) / n;
}

static int64_t
jittered(int64_t ms)
{
	unsigned r = 0;

	random_bytes(&r, sizeof(r));
	return ms - ms / 10 + (int64_t)(r % (unsigned)(ms / 5 + 1));
}

/* try - take e's lock; 1 taken, 0 someone else's, -1 error (logged) */
static int
try(struct fetch_lock *fl, struct ent *e)
{
	char *holder = NULL;
	int rv;

	if (e->held)
		return 1;
	rv = store_try_lock(S(fl), e->key, &holder);
	if (rv == 1) {
		e->held = 1;
		e->seen_locked = 1;
		e->free_sweeps = 0;
		fl->held++;
		log_kv(LOG_DEBUG, "job lock taken", "ns", e->ns, "name", e->name, NULL);
	} else if (rv == 0) {
		e->seen_locked = 1;
		e->free_sweeps = 0;
	} else {
		log_kv(LOG_WARN, "job lock: cannot take", "ns", e->ns, "name", e->name,
		    "error", store_error(S(fl)), NULL);
	}
	free(holder);
	return rv;
}

static void
lose(struct fetch_lock *fl, struct ent *e, const char *why)
{
	if (!e->held)
		return;
	e->held = 0;
	fl->held--;
	log_kv(LOG_WARN, "job lock lost; stopped working the decofile", "ns", e->ns,
	    "name", e->name, "why", why, NULL);
	fl->ops->lost(fl->st, e->ns, e->name);
}

/* take - try e and tell the fetcher when it became ours */
static void
take(struct fetch_lock *fl, struct ent *e)
{
	if (!e->held && try(fl, e) == 1)
		fl->ops->gained(fl->st, e->ns, e->name);
}

/*
 * take_chunk - try the locks of es[0..n) in one store_try_lock_many (one
 * etcd round trip per 100) and tell the fetcher of each one gained.
 * Returns how many became ours.
 */
static size_t
take_chunk(struct fetch_lock *fl, struct ent **es, size_t n)
{
	const char **keys;
	int *res;
	size_t gained = 0;

	if (n == 0)
		return 0;
	keys = xcalloc(n, sizeof(*keys));
	res = xcalloc(n, sizeof(*res));
	for (size_t i = 0; i < n; i++)
		keys[i] = es[i]->key;
	if (store_try_lock_many(S(fl), keys, n, res) < 0)
		log_kv(LOG_WARN, "job locks: cannot take some", "error", store_error(S(fl)), NULL);
	for (size_t i = 0; i < n; i++) {
		struct ent *e = es[i];

		if (e->held)
			continue;
		e->free_sweeps = 0;
		if (res[i] != 1) {
			e->seen_locked = 1;
			continue;
		}
		e->held = 1;
		e->seen_locked = 1;
		fl->held++;
		gained++;
		stage_yield(fl->st);	/* a supervisor gone, between decofiles */
		fl->ops->gained(fl->st, e->ns, e->name);
	}
	free(keys);
	free(res);
	return gained;
}

/*
 * take_many - take_chunk over es[0..n), TAKE_CHUNK at a time, the
 * supervisor checked between chunks (one call for 1,000 locks held the
 * loop for most of a second on a local store under load)
 */
static size_t
take_many(struct fetch_lock *fl, struct ent **es, size_t n)
{
	size_t gained = 0;

	for (size_t i = 0; i < n; i += TAKE_CHUNK) {
		if (i > 0)
			stage_yield(fl->st);
		gained += take_chunk(fl, es + i, n - i < TAKE_CHUNK ? n - i : TAKE_CHUNK);
	}
	return gained;
}

/* grace_cb - the grace is over: take every entry still free in one batch */
static void
grace_cb(struct stage *st, void *arg)
{
	struct fetch_lock *fl = arg;
	struct ent **es = xcalloc(fl->total + 1, sizeof(*es));
	size_t n = 0;

	(void)st;
	fl->grace_timer = 0;
	for (size_t b = 0; b < NBUCKET; b++)
		for (struct ent *e = fl->tab[b]; e != NULL; e = e->next) {
			if (!e->in_grace)
				continue;
			e->in_grace = 0;
			if (!e->held && !e->seen_locked && n < fl->total)
				es[n++] = e;
		}
	take_many(fl, es, n);
	free(es);
}

static void
grace_add(struct fetch_lock *fl, struct ent *e)
{
	e->in_grace = 1;
	if (fl->grace_timer == 0)
		fl->grace_timer = stage_add_timer(fl->st, jittered(GRACE_MS), grace_cb, fl);
}

/* freed - nobody holds e now: ours at once if under our share, else after a grace */
static void
freed(struct fetch_lock *fl, struct ent *e)
{
	e->seen_locked = 0;
	if (e->held || e->in_grace)
		return;
	if (e->released_ms > 0 && now_ms() - e->released_ms < 3 * fl->sweep_ms)
		return;		/* we gave it away on purpose */
	/*
	 * The grace lets an instance under its share pick first.  With two
	 * instances registered the only other one is the one that let go (or
	 * died): nobody to defer to, so take it now.
	 */
	if (fl->held < fair(fl) || fl->ninst <= 2)
		take(fl, e);
	else
		grace_add(fl, e);
}

/* ---- the instance registry ---- */

static void
heartbeat(struct fetch_lock *fl)
{
	char v[512], since[40], held[32];

	rfc3339_from(fl->since, since, sizeof(since));
	fl->beat_ms = now_ms();
	snprintf(held, sizeof(held), "%zu", fl->held);
	snprintf(v, sizeof(v), "{\"id\":\"%s\",\"since\":\"%s\",\"decofiles\":%s}",
	    store_identity(S(fl)), since, held);
	if (store_put_ttl(S(fl), fl->inst_key, v, strlen(v), fl->ttl_s) < 0)
		log_kv(LOG_WARN, "instance registry: heartbeat failed", "error",
		    store_error(S(fl)), NULL);
}

static void
count_instances(struct fetch_lock *fl)
{
	struct store_list l;

	if (store_list(S(fl), fl->inst_prefix, &l) < 0) {
		log_kv(LOG_WARN, "instance registry: cannot list", "error", store_error(S(fl)),
		    NULL);
		return;
	}
	fl->ninst = l.n > 0 ? l.n : 1;
	store_list_free(&l);
}

/* ---- the sweep ---- */

/* mark - what the lock listing says about every entry */
static void
mark(struct fetch_lock *fl)
{
	struct store_list l;
	size_t plen = strlen(fl->lock_prefix);
	char ns[254], name[254];
	size_t k = 0;
	struct ent **all;

	if (store_list(S(fl), fl->lock_prefix, &l) < 0) {
		log_kv(LOG_WARN, "job locks: cannot list", "error", store_error(S(fl)), NULL);
		return;
	}
	all = xcalloc(fl->total + 1, sizeof(*all));
	for (size_t b = 0; b < NBUCKET; b++)
		for (struct ent *e = fl->tab[b]; e != NULL; e = e->next)
			if (k < fl->total)
				all[k++] = e;
	for (size_t i = 0; i < k; i++)
		all[i]->seen_locked = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct ent *e;

		if (strncmp(l.kvs[i].key, fl->lock_prefix, plen) != 0 ||
		    sscanf(l.kvs[i].key + plen, "%253[^/]/%253s", ns, name) != 2 ||
		    (e = ent_find(fl, ns, name)) == NULL)
			continue;
		e->seen_locked = 1;
		if (e->held && strcmp(l.kvs[i].value, store_identity(S(fl))) != 0)
			lose(fl, e, "held by another instance");
	}
	store_list_free(&l);
	/* ours but not listed: our session was lost (etcd) or the backend lists no locks */
	for (size_t i = 0; i < k; i++) {
		struct ent *e = all[i];

		if (e->held && !e->seen_locked) {
			e->held = 0;
			fl->held--;
			if (try(fl, e) != 1)
				fl->ops->lost(fl->st, e->ns, e->name);
		}
	}
	free(all);
}

static void
sweep(struct fetch_lock *fl)
{
	size_t f, gained = 0, released = 0, k = 0, tries = 0;
	struct ent **all;
	int over, cont = fl->more;	/* cont: finishing the last sweep's batch */

	/*
	 * A batch carried over is the same sweep: the instance count and the
	 * lock listing are fresh (the lock watch keeps seen_locked), only the
	 * heartbeat is kept on time, however many turns the carry-over takes.
	 */
	if (!cont) {
		heartbeat(fl);
		count_instances(fl);
		mark(fl);
	} else if (now_ms() - fl->beat_ms >= fl->sweep_ms)
		heartbeat(fl);
	f = fair(fl);
	all = xcalloc(fl->total + 1, sizeof(*all));
	for (size_t b = 0; b < NBUCKET; b++)
		for (struct ent *e = fl->tab[b]; e != NULL; e = e->next)
			if (k < fl->total)
				all[k++] = e;
	/* candidates first, then one store_try_lock_many for all of them */
	for (size_t i = 0; i < k; i++) {
		struct ent *e = all[i];

		if (e->held || e->seen_locked) {
			e->free_sweeps = 0;
			continue;
		}
		if (!cont)
			e->free_sweeps++;
		if (e->released_ms > 0 && now_ms() - e->released_ms < 3 * fl->sweep_ms)
			continue;
		if (fl->held + tries < f || e->free_sweeps >= 2) {
			if (tries == BATCH) {
				tries++;	/* more than one batch: go on next turn */
				break;
			}
			all[tries++] = e;	/* i >= tries: all[i] is read already */
		}
	}
	gained = take_many(fl, all, tries > BATCH ? BATCH : tries);
	/* even out: hand settled decofiles beyond our share to the others */
	over = fl->held > f && fl->ninst > 1;
	if (!cont && over && fl->prev_over && fl->ninst == fl->prev_ninst) {
		k = 0;
		for (size_t b = 0; b < NBUCKET; b++)
			for (struct ent *e = fl->tab[b]; e != NULL; e = e->next)
				if (k < fl->total)
					all[k++] = e;
		for (size_t i = 0; i < k && fl->held > f; i++) {
			struct ent *e = all[i];

			if (!e->held || !fl->ops->settled(fl->st, e->ns, e->name))
				continue;
			if (store_unlock(S(fl), e->key) < 0) {
				log_kv(LOG_WARN, "job lock: cannot release", "ns", e->ns, "name",
				    e->name, "error", store_error(S(fl)), NULL);
				continue;
			}
			e->held = 0;
			fl->held--;
			e->released_ms = now_ms();
			released++;
			fl->ops->lost(fl->st, e->ns, e->name);
		}
	}
	fl->more = tries > BATCH;
	fl->prev_over = over;
	fl->prev_ninst = fl->ninst;
	free(all);
	if (gained > 0 || released > 0) {
		char g[32], r[32], h[32], n[32], t[32];

		snprintf(g, sizeof(g), "%zu", gained);
		snprintf(r, sizeof(r), "%zu", released);
		snprintf(h, sizeof(h), "%zu", fl->held);
		snprintf(n, sizeof(n), "%zu", fl->ninst);
		snprintf(t, sizeof(t), "%zu", fl->total);
		log_kv(LOG_INFO, "job locks", "gained", g, "released", r, "held", h,
		    "decofiles", t, "instances", n, "identity", store_identity(S(fl)), NULL);
	}
}

static void
sweep_cb(struct stage *st, void *arg)
{
	struct fetch_lock *fl = arg;

	fl->sweep_timer = 0;
	sweep(fl);
	fl->sweep_timer = stage_add_timer(st, fl->more ? 0 : jittered(fl->sweep_ms),
	    sweep_cb, fl);
}

/* ---- the lock watch ---- */

static void
on_lock_event(void *arg, const struct store_event *ev)
{
	struct fetch_lock *fl = arg;
	size_t plen = strlen(fl->lock_prefix);
	char ns[254], name[254];
	struct ent *e;

	if (ev->type == STORE_EV_RELIST) {
		if (fl->started)
			sweep(fl);
		return;
	}
	if (strncmp(ev->key, fl->lock_prefix, plen) != 0 ||
	    sscanf(ev->key + plen, "%253[^/]/%253s", ns, name) != 2 ||
	    (e = ent_find(fl, ns, name)) == NULL || !fl->started)
		return;
	if (ev->type == STORE_EV_PUT) {
		e->seen_locked = 1;
		if (e->held && (ev->vlen != strlen(store_identity(S(fl))) ||
		    memcmp(ev->value, store_identity(S(fl)), ev->vlen) != 0))
			lose(fl, e, "held by another instance");
		return;
	}
	if (e->held) {
		/* our own key went away (session expired): take it again at once */
		e->held = 0;
		fl->held--;
		if (try(fl, e) != 1)
			fl->ops->lost(fl->st, e->ns, e->name);
		return;
	}
	freed(fl, e);
}

/* ---- the interface ---- */

struct fetch_lock *
fetch_lock_new(struct stage *st, const struct fetch_lock_ops *ops)
{
	struct fetch_lock *fl = xcalloc(1, sizeof(*fl));
	int64_t ttl_ms = conf_get_ms(stage_conf(st), "session_ttl");

	fl->st = st;
	fl->ops = ops;
	fl->ttl_s = (int)((ttl_ms + 999) / 1000);
	if (fl->ttl_s < 1)
		fl->ttl_s = 1;
	fl->sweep_ms = ttl_ms / 3 > 300 ? ttl_ms / 3 : 300;
	fl->lock_prefix = xasprintf("%s/locks/", keys_prefix());
	fl->inst_prefix = xasprintf("%s/instances/", keys_prefix());
	fl->inst_key = key_instance(store_identity(stage_store(st)));
	fl->since = wall_ms() / 1000;
	fl->ninst = 1;
	fl->watch = store_watch_open(st, fl->lock_prefix, on_lock_event, fl, 1000, &fl->sw);
	if (fl->watch == NULL) {
		fetch_lock_free(fl);
		return NULL;
	}
	return fl;
}

void
fetch_lock_start(struct fetch_lock *fl)
{
	fl->started = 1;
	fl->sweep_timer = stage_add_timer(fl->st, 0, sweep_cb, fl);
}

int
fetch_lock_want(struct fetch_lock *fl, const char *ns, const char *name)
{
	struct ent *e = ent_find(fl, ns, name);
	unsigned b;

	if (e == NULL) {
		e = xcalloc(1, sizeof(*e));
		e->ns = xstrdup(ns);
		e->name = xstrdup(name);
		e->key = key_lock(ns, name);
		e->fl = fl;
		b = hash2(ns, name);
		e->next = fl->tab[b];
		fl->tab[b] = e;
		fl->total++;
	}
	if (e->held || !fl->started)
		return e->held;
	/* a new decofile: ours if we are under our share, else after a grace */
	if (fl->held < fair(fl))
		try(fl, e);
	else if (!e->in_grace)
		grace_add(fl, e);
	return e->held;
}

void
fetch_lock_drop(struct fetch_lock *fl, const char *ns, const char *name)
{
	unsigned b = hash2(ns, name);

	for (struct ent **pp = &fl->tab[b], *e; (e = *pp) != NULL; pp = &e->next) {
		if (strcmp(e->ns, ns) != 0 || strcmp(e->name, name) != 0)
			continue;
		*pp = e->next;
		if (e->held) {
			if (store_unlock(S(fl), e->key) < 0)
				log_kv(LOG_WARN, "job lock: cannot release", "ns", ns, "name",
				    name, "error", store_error(S(fl)), NULL);
			fl->held--;
		}
		fl->total--;
		free(e->ns);
		free(e->name);
		free(e->key);
		free(e);
		return;
	}
}

int
fetch_lock_held(const struct fetch_lock *fl, const char *ns, const char *name)
{
	const struct ent *e = ent_find(fl, ns, name);

	return e != NULL && e->held;
}

void
fetch_lock_free(struct fetch_lock *fl)
{
	if (fl == NULL)
		return;
	if (fl->started && store_delete(S(fl), fl->inst_key) < 0)
		log_kv(LOG_WARN, "instance registry: cannot leave", "error", store_error(S(fl)),
		    NULL);
	if (fl->sweep_timer > 0)
		stage_cancel_timer(fl->st, fl->sweep_timer);
	if (fl->grace_timer > 0)
		stage_cancel_timer(fl->st, fl->grace_timer);
	store_watch_close(fl->watch, fl->sw);
	for (size_t b = 0; b < NBUCKET; b++) {
		struct ent *e, *next;

		for (e = fl->tab[b]; e != NULL; e = next) {
			next = e->next;
			free(e->ns);
			free(e->name);
			free(e->key);
			free(e);
		}
	}
	free(fl->lock_prefix);
	free(fl->inst_prefix);
	free(fl->inst_key);
	free(fl);
}
