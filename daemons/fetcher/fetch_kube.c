/*
 * fetch_kube - the Kubernetes front door.  It owns a client on the
 * fetcher's loop, informers of Decofile and DecofileTemplate CRs, and a
 * store watch of the status fragments.  CR changes become store puts and
 * deletes (marked with the CR's uid so a re-list can tell its own mirrors
 * from what decoctl applied); each stage's fragment becomes a server-side
 * apply of the CR's status under field manager decod-<stage>, skipped when
 * the CR already shows it, so a restart writes nothing.
 */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_kube.h"

#define API_VERSION "deco.sites/v1alpha1"
#define NFLIGHT 4096	/* buckets of the writes-in-flight table */
/*
 * Status writes in flight at most.  Thousands at once (10,000 CRs created
 * together) queue in the API server until their deadline passes, and the
 * supervisor's Lease renewal waits behind them (it lost the lease and
 * stopped decod so); the rest wait here, one entry per fragment, and are
 * read from the store when their turn comes.
 */
#define MAX_INFLIGHT 32
#define PUSH_RETRY_MIN_MS 500	/* a failed status write is tried again, doubling */
#define PUSH_RETRY_MAX_MS 30000

/*
 * One status write in flight per fragment (kind/ns/name/stage): two applies
 * of one manager racing could land out of order (Unknown after True), so a
 * fragment that changes meanwhile is written again, from the store, after.
 * A write that fails (past its deadline: the server down, 5xx, 429) is
 * written again later, from the store, with a doubling pause: no other
 * event would bring the CR's status back in step.
 */
struct push;

struct flight {
	struct flight *next;
	char *key;		/* the fragment's store key */
	int again;
	int queued;		/* waiting for a slot (in fk->qhead), not sent */
	struct flight *qnext;
	const struct kind_info *ki;
	char *ns, *name, *stage;
	int fails;		/* failed writes in a row */
	int64_t timer;		/* > 0: waiting to write again */
	struct push *wait;	/* the push the timer will redo (owned) */
};

struct fetch_kube {
	struct stage *st;
	struct kube *k;
	struct kube_informer *dfs, *tpls;
	struct store_watch *sw;
	int64_t sw_timer;
	char *status_prefix;
	uint64_t mirrored, status_writes;
	uint64_t inflight;	/* status writes sent, not yet answered */
	struct flight *qhead, *qtail;	/* status writes waiting for a slot */
	yajl_val pa_merged;	/* push_all's CR, its merged status (read once, not per stage) */
	int caught_up;		/* "caught up" logged */
	struct flight *flights[NFLIGHT];
	/*
	 * Without a supervisor (deploy/'s pod: one container per stage) the
	 * fetcher holds the Lease for its pod: only the holder's front door
	 * mirrors, so a standby pod's store stays empty and its stages idle.
	 */
	struct kube_lease *lease;	/* NULL: no election here (always leads) */
};

struct kind_info {
	const char *plural;
	const struct kube_kind *kd;
};

static const struct kind_info kinds[] = {
	{ "decofiles", &kube_decofiles },
	{ "decofiletemplates", &kube_decofiletemplates },
};

static const struct kind_info *
kind_by_plural(const char *plural)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].plural, plural) == 0)
			return &kinds[i];
	return NULL;
}

/* ---- pure parts (unit-tested) ---- */

yajl_val
fetch_kube_mirror_doc(yajl_val obj)
{
	const char *name = kube_obj_name(obj), *ns = kube_obj_ns(obj), *uid = kube_obj_uid(obj);
	const char *kind = json_get_str(obj, "kind", NULL);
	yajl_val v, spec = json_get(obj, "spec", NULL);
	struct buf b;
	struct jw w;
	yajl_val doc;

	if (*name == '\0' || *ns == '\0' || kind == NULL || spec == NULL || !YAJL_IS_OBJECT(spec))
		return NULL;
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "apiVersion");
	jw_str(&w, API_VERSION);
	jw_key(&w, "kind");
	jw_str(&w, kind);
	jw_key(&w, "metadata");
	jw_obj(&w);
	jw_key(&w, "name");
	jw_str(&w, name);
	jw_key(&w, "namespace");
	jw_str(&w, ns);
	if ((v = json_get(obj, "metadata", "labels", NULL)) != NULL && YAJL_IS_OBJECT(v)) {
		jw_key(&w, "labels");
		jw_value(&w, v);
	}
	jw_key(&w, "annotations");
	jw_obj(&w);
	if ((v = json_get(obj, "metadata", "annotations", NULL)) != NULL && YAJL_IS_OBJECT(v))
		for (size_t i = 0; i < v->u.object.len; i++) {
			/* kubectl's copy of the whole object is noise in the store */
			if (strcmp(v->u.object.keys[i], FETCH_KUBE_UID_ANNOTATION) == 0 ||
			    strcmp(v->u.object.keys[i],
			    "kubectl.kubernetes.io/last-applied-configuration") == 0)
				continue;
			jw_key(&w, v->u.object.keys[i]);
			jw_value(&w, v->u.object.values[i]);
		}
	jw_key(&w, FETCH_KUBE_UID_ANNOTATION);
	jw_str(&w, uid);
	jw_end_obj(&w);
	jw_end_obj(&w);
	jw_key(&w, "spec");
	jw_value(&w, spec);
	jw_end_obj(&w);
	doc = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	return doc;
}

static void
value_text(yajl_val v, struct buf *out)
{
	struct jw w;

	buf_reset(out);
	jw_init(&w, out);
	if (v == NULL)
		jw_null(&w);
	else
		jw_value(&w, v);
}

/* cond_same - cur's conditions hold condition c as it is */
static int
cond_same(yajl_val curconds, yajl_val c)
{
	static const char *f[] = { "status", "reason", "message", "lastTransitionTime" };
	const char *type = json_get_str(c, "type", NULL);

	if (type == NULL || curconds == NULL || !YAJL_IS_ARRAY(curconds))
		return 0;
	for (size_t i = 0; i < curconds->u.array.len; i++) {
		yajl_val x = curconds->u.array.values[i];
		const char *t = json_get_str(x, "type", NULL);

		if (t == NULL || strcmp(t, type) != 0)
			continue;
		for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
			const char *a = json_get_str(c, f[k], NULL), *b = json_get_str(x, f[k], NULL);

			if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0))
				return 0;
		}
		return 1;
	}
	return 0;
}

char *
fetch_kube_status_body(const char *kind, const char *ns, const char *name,
    yajl_val frag, yajl_val cur, int *same, size_t *len)
{
	yajl_val curst = cur != NULL ? json_get(cur, "status", NULL) : NULL;
	struct buf b, x, y;
	struct jw w;

	*same = frag != NULL && YAJL_IS_OBJECT(frag) && curst != NULL;
	buf_init(&b);
	buf_init(&x);
	buf_init(&y);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "apiVersion");
	jw_str(&w, API_VERSION);
	jw_key(&w, "kind");
	jw_str(&w, kind);
	jw_key(&w, "metadata");
	jw_obj(&w);
	jw_key(&w, "name");
	jw_str(&w, name);
	jw_key(&w, "namespace");
	jw_str(&w, ns);
	jw_end_obj(&w);
	jw_key(&w, "status");
	jw_obj(&w);
	if (frag != NULL && YAJL_IS_OBJECT(frag)) {
		for (size_t i = 0; i < frag->u.object.len; i++) {
			const char *key = frag->u.object.keys[i];
			yajl_val v = frag->u.object.values[i];

			jw_key(&w, key);
			if (strcmp(key, "conditions") == 0 && YAJL_IS_ARRAY(v)) {
				jw_arr(&w);
				for (size_t c = 0; c < v->u.array.len; c++) {
					yajl_val cv = v->u.array.values[c];

					jw_value(&w, cv);
					if (*same && !cond_same(json_get(curst, "conditions", NULL), cv))
						*same = 0;
				}
				jw_end_arr(&w);
				continue;
			}
			jw_value(&w, v);
			if (*same) {
				value_text(v, &x);
				value_text(json_get(curst, key, NULL), &y);
				if (strcmp(x.data, y.data) != 0)
					*same = 0;
			}
		}
	} else
		*same = 0;
	jw_end_obj(&w);
	jw_end_obj(&w);
	buf_free(&x);
	buf_free(&y);
	return buf_steal(&b, len);
}

/* ---- CRs into the store ---- */

static struct flight **flight_slot(struct fetch_kube *fk, const char *key);
static void status_push_cur(struct fetch_kube *fk, const struct kind_info *ki,
    const char *ns, const char *name, const char *stage, const char *val, size_t vlen,
    yajl_val cur);

static void
status_push(struct fetch_kube *fk, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage, const char *val, size_t vlen);

/* push_all - every stage's fragment of ns/name onto the CR (when it differs) */
static void
push_all(struct fetch_kube *fk, const struct kind_info *ki, const char *ns, const char *name)
{
	struct store_list l;
	char *prefix = key_status_prefix(ki->plural, ns, name);

	if (store_list(stage_store(fk->st), prefix, &l) == 0) {
		size_t plen = strlen(prefix);
		struct buf m;

		buf_init(&m);
		if (l.n > 0 && resource_status_merged(stage_store(fk->st), ki->plural, ns, name,
		    &m) == 0)
			fk->pa_merged = json_parse(m.data, m.len, NULL);
		buf_free(&m);
		for (size_t i = 0; i < l.n; i++)
			if (strlen(l.kvs[i].key) > plen && strchr(l.kvs[i].key + plen, '/') == NULL)
				status_push(fk, ki, ns, name, l.kvs[i].key + plen, l.kvs[i].value,
				    l.kvs[i].vlen);
		yajl_tree_free(fk->pa_merged);
		fk->pa_merged = NULL;
		store_list_free(&l);
	}
	free(prefix);
}

/* cr_busy - a write of another stage's fragment of ns/name is in flight or waiting */
static int
cr_busy(struct fetch_kube *fk, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage)
{
	struct store_list l;
	char *prefix = key_status_prefix(ki->plural, ns, name);
	int busy = 0;

	if (store_list(stage_store(fk->st), prefix, &l) == 0) {
		size_t plen = strlen(prefix);

		for (size_t i = 0; i < l.n && !busy; i++)
			busy = strcmp(l.kvs[i].key + plen, stage) != 0 &&
			    *flight_slot(fk, l.kvs[i].key) != NULL;
		store_list_free(&l);
	}
	free(prefix);
	return busy;
}

static int
leading(const struct fetch_kube *fk)
{
	return fk->lease == NULL || kube_lease_leading(fk->lease);
}

static void
mirror(struct fetch_kube *fk, const struct kind_info *ki, enum kube_event ev, yajl_val obj)
{
	struct store *s = stage_store(fk->st);
	char plural[64], ns[254], name[254], err[512];
	yajl_val doc;
	int changed = 0;

	if (ev == KUBE_DELETED) {
		char *key = key_resource(ki->plural, kube_obj_ns(obj), kube_obj_name(obj));

		if (store_delete(s, key) < 0)
			log_kv(LOG_WARN, "cannot delete the mirror of a deleted CR", "key", key,
			    "error", store_error(s), NULL);
		else
			log_kv(LOG_INFO, "CR deleted: removed from the store", "kind", ki->plural,
			    "ns", kube_obj_ns(obj), "name", kube_obj_name(obj), NULL);
		free(key);
		return;
	}
	if ((doc = fetch_kube_mirror_doc(obj)) == NULL) {
		log_kv(LOG_WARN, "CR without name, namespace or spec: ignored", "kind", ki->plural,
		    "ns", kube_obj_ns(obj), "name", kube_obj_name(obj), NULL);
		return;
	}
	/* the CR's generation, so observedGeneration speaks of the CR's own */
	if (resource_put_gen(s, doc, json_get_int(obj, 0, "metadata", "generation", NULL),
	    NULL, &changed, plural, ns, name, err, sizeof(err)) < 0)
		log_kv(LOG_WARN, "cannot mirror the CR into the store", "kind", ki->plural,
		    "ns", kube_obj_ns(obj), "name", kube_obj_name(obj), "error", err, NULL);
	else if (changed) {
		fk->mirrored++;
		log_kv(LOG_INFO, changed == 2 ? "CR mirrored into the store" :
		    "CR change mirrored into the store", "kind", ki->plural, "ns", ns,
		    "name", name, NULL);
	}
	yajl_tree_free(doc);
	if (ev == KUBE_ADDED)
		push_all(fk, ki, kube_obj_ns(obj), kube_obj_name(obj));
}

/* sweep - after a complete list: mirrors whose CR is gone are deleted */
static void
sweep(struct fetch_kube *fk, const struct kind_info *ki, struct kube_informer *inf)
{
	struct store *s = stage_store(fk->st);
	char *prefix = key_resource_prefix(ki->plural, NULL);
	struct store_list l;

	if (store_list(s, prefix, &l) < 0) {
		free(prefix);
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		char kind[64], ns[254], name[254];
		yajl_val doc;

		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0)
			continue;
		if ((doc = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL)) == NULL)
			continue;
		if (json_get_str(doc, "metadata", "annotations", FETCH_KUBE_UID_ANNOTATION,
		    NULL) != NULL && kube_informer_get(inf, ns, name) == NULL) {
			log_kv(LOG_INFO, "CR gone while not watched: removed from the store",
			    "kind", ki->plural, "ns", ns, "name", name, NULL);
			store_delete(s, l.kvs[i].key);
		}
		yajl_tree_free(doc);
	}
	store_list_free(&l);
	free(prefix);
}

/*
 * caught_up - logged once, when both kinds are listed, every CR mirrored
 * and compared with its fragments, and the status writes that asked for
 * have landed (after a restart with everything reconciled: none)
 */
static void
caught_up(struct fetch_kube *fk)
{
	char crs[32], mirrored[32], writes[32];

	if (fk->caught_up || fk->inflight > 0 || fk->qhead != NULL ||
	    !kube_informer_synced(fk->dfs) ||
	    !kube_informer_synced(fk->tpls))
		return;
	fk->caught_up = 1;
	snprintf(crs, sizeof(crs), "%zu", kube_informer_count(fk->dfs) +
	    kube_informer_count(fk->tpls));
	snprintf(mirrored, sizeof(mirrored), "%" PRIu64, fk->mirrored);
	snprintf(writes, sizeof(writes), "%" PRIu64, fk->status_writes);
	log_kv(LOG_INFO, "Kubernetes front door caught up", "crs", crs, "mirrored", mirrored,
	    "status_writes", writes, NULL);
}

static void
on_cr(void *arg, enum kube_event ev, yajl_val obj, yajl_val old, const struct kind_info *ki,
    struct kube_informer *inf)
{
	struct fetch_kube *fk = arg;

	(void)old;
	if (!leading(fk))
		return;		/* a standby: the leader's pod does the work */
	if (ev == KUBE_SYNCED) {
		sweep(fk, ki, inf);
		caught_up(fk);
	} else
		mirror(fk, ki, ev, obj);
}

/* catch_up_one - a new leader takes in every CR the cache holds */
static void
catch_up_df(void *arg, yajl_val obj)
{
	mirror(arg, &kinds[0], KUBE_ADDED, obj);
}

static void
catch_up_tpl(void *arg, yajl_val obj)
{
	mirror(arg, &kinds[1], KUBE_ADDED, obj);
}

static void
on_lease(void *arg, int now_leading)
{
	struct fetch_kube *fk = arg;

	if (!now_leading) {
		/* as controller-runtime: stop; the kubelet restarts us as a standby */
		log_kv(LOG_ERROR, "leader election lost: exiting", NULL);
		exit(1);
	}
	if (kube_informer_synced(fk->dfs)) {
		sweep(fk, &kinds[0], fk->dfs);
		kube_informer_foreach(fk->dfs, catch_up_df, fk);
	}
	if (kube_informer_synced(fk->tpls)) {
		sweep(fk, &kinds[1], fk->tpls);
		kube_informer_foreach(fk->tpls, catch_up_tpl, fk);
	}
}

static void
on_df(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct fetch_kube *fk = arg;

	on_cr(arg, ev, obj, old, &kinds[0], fk->dfs);
}

static void
on_tpl(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct fetch_kube *fk = arg;

	on_cr(arg, ev, obj, old, &kinds[1], fk->tpls);
}

/* ---- fragments onto the CRs ---- */

struct push {
	struct fetch_kube *fk;
	char what[600];
	char *key;		/* the fragment's store key */
	const struct kind_info *ki;
	char ns[254], name[254], stage[64];
};

static struct flight **
flight_slot(struct fetch_kube *fk, const char *key)
{
	uint64_t h = 1469598103934665603ull;
	struct flight **f;

	for (const char *p = key; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (f = &fk->flights[h % NFLIGHT]; *f != NULL; f = &(*f)->next)
		if (strcmp((*f)->key, key) == 0)
			break;
	return f;
}

static void flight_free(struct flight *f);

/* repush - write p's fragment as the store holds it now; fails carries over */
static void
repush(struct fetch_kube *fk, const struct push *p, int fails)
{
	char *val = NULL;
	size_t len = 0;
	int rc = store_get(stage_store(fk->st), p->key, &val, &len);
	struct flight *f;

	if (rc == 0 || rc == 1)
		status_push(fk, p->ki, p->ns, p->name, p->stage, rc == 0 ? val : NULL, len);
	free(val);
	if ((f = *flight_slot(fk, p->key)) != NULL)
		f->fails = fails;
}

/* flight_end - forget key's flight; returns its failure count */
static int
flight_end(struct fetch_kube *fk, const char *key)
{
	struct flight **fs = flight_slot(fk, key), *f = *fs;
	int fails;

	if (f == NULL)
		return 0;
	fails = f->fails;
	*fs = f->next;
	flight_free(f);
	return fails;
}

static void
push_free(struct push *p)
{
	free(p->key);
	free(p);
}

static void
push_retry(struct stage *st, void *arg)
{
	struct push *p = arg;
	int fails;

	(void)st;
	fails = flight_end(p->fk, p->key);
	repush(p->fk, p, fails);
	push_free(p);
}

static void
flight_free(struct flight *f)
{
	free(f->key);
	free(f->ns);
	free(f->name);
	free(f->stage);
	free(f);
}

/* enqueue - fragment key waits for a slot (key is taken) */
static void
enqueue(struct fetch_kube *fk, char *key, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage)
{
	struct flight **fs = flight_slot(fk, key), *f;

	if (*fs != NULL) {
		free(key);
		return;
	}
	f = xcalloc(1, sizeof(*f));
	f->key = key;
	f->queued = 1;
	f->ki = ki;
	f->ns = xstrdup(ns);
	f->name = xstrdup(name);
	f->stage = xstrdup(stage);
	*fs = f;
	if (fk->qtail != NULL)
		fk->qtail->qnext = f;
	else
		fk->qhead = f;
	fk->qtail = f;
}

/* pump - send waiting writes while slots are free, each as the store has it now */
static void
pump(struct fetch_kube *fk)
{
	while (fk->qhead != NULL && fk->inflight < MAX_INFLIGHT) {
		struct flight *f = fk->qhead, **fs = flight_slot(fk, f->key);
		char *val = NULL;
		size_t len = 0;
		int rc;

		if ((fk->qhead = f->qnext) == NULL)
			fk->qtail = NULL;
		if (*fs == f)
			*fs = f->next;
		rc = store_get(stage_store(fk->st), f->key, &val, &len);
		if (rc == 0 || rc == 1)
			status_push(fk, f->ki, f->ns, f->name, f->stage, rc == 0 ? val : NULL, len);
		free(val);
		flight_free(f);
	}
}

/*
 * recheck - after the last write in flight for a CR landed: compare p's
 * fragment with the CR the answer shows.  A condition two stages set
 * (Syncing) is applied by both with the merged value; when the one that
 * carried an older merge lands last, the CR shows that one: write again.
 */
static void
recheck(struct fetch_kube *fk, const struct push *p, yajl_val cr)
{
	char *val = NULL;
	size_t len = 0;

	if (store_get(stage_store(fk->st), p->key, &val, &len) == 0)
		status_push_cur(fk, p->ki, p->ns, p->name, p->stage, val, len, cr);
	free(val);
}

static void
on_pushed(void *arg, const struct kube_resp *r)
{
	struct push *p = arg;
	struct fetch_kube *fk = p->fk;
	struct flight *f = *flight_slot(fk, p->key);
	int again = f != NULL && f->again;

	fk->inflight--;
	if (kube_ok(r))
		fk->status_writes++;
	else if (r->status != 404) {	/* 404: the CR went away meanwhile */
		log_kv(LOG_WARN, "cannot write status to the CR; trying again later",
		    "object", p->what, "error", r->err, NULL);
		if (f != NULL) {
			int64_t d = (int64_t)PUSH_RETRY_MIN_MS << (f->fails < 6 ? f->fails : 6);

			f->fails++;
			f->again = 0;
			f->wait = p;
			f->timer = stage_add_timer(fk->st, d < PUSH_RETRY_MAX_MS ? d :
			    PUSH_RETRY_MAX_MS, push_retry, p);
			pump(fk);	/* its slot is free while it waits */
			return;
		}
	}
	flight_end(fk, p->key);
	if (again)	/* it changed while this write was in flight: write what it is now */
		repush(fk, p, 0);
	else if (kube_ok(r) && r->json != NULL && !cr_busy(fk, p->ki, p->ns, p->name, p->stage))
		recheck(fk, p, r->json);
	push_free(p);
	pump(fk);
	caught_up(fk);
}

/*
 * with_merged_conds - frag with each condition replaced by the one the
 * merged status shows for its type (NULL: frag holds no condition, or
 * none could be read).  Two stages may set one condition type (Syncing:
 * the fetcher and the renderer); applying each stage's own value would
 * make the CR flip between them and every restart rewrite one of them.
 * Both apply the merged value instead (the one `decoctl get` shows), so
 * their managers share it and the CR settles.
 */
static yajl_val
with_merged_conds(struct fetch_kube *fk, const char *plural, const char *ns,
    const char *name, yajl_val frag)
{
	yajl_val conds = json_get(frag, "conditions", NULL), merged, mconds, out = NULL;
	struct buf m, b;
	struct jw w;

	if (conds == NULL || !YAJL_IS_ARRAY(conds) || conds->u.array.len == 0)
		return NULL;
	if (fk->pa_merged != NULL)
		merged = fk->pa_merged;		/* push_all read it for this CR */
	else {
		buf_init(&m);
		if (resource_status_merged(stage_store(fk->st), plural, ns, name, &m) < 0 ||
		    (merged = json_parse(m.data, m.len, NULL)) == NULL) {
			buf_free(&m);
			return NULL;
		}
		buf_free(&m);
	}
	mconds = json_get(merged, "conditions", NULL);
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	for (size_t i = 0; i < frag->u.object.len; i++) {
		yajl_val v = frag->u.object.values[i];

		jw_key(&w, frag->u.object.keys[i]);
		if (v != conds) {
			jw_value(&w, v);
			continue;
		}
		jw_arr(&w);
		for (size_t c = 0; c < conds->u.array.len; c++) {
			yajl_val cv = conds->u.array.values[c], use = cv;
			const char *t = json_get_str(cv, "type", NULL);

			for (size_t k = 0; t != NULL && mconds != NULL && YAJL_IS_ARRAY(mconds) &&
			    k < mconds->u.array.len; k++) {
				const char *mt = json_get_str(mconds->u.array.values[k], "type", NULL);

				if (mt != NULL && strcmp(mt, t) == 0) {
					use = mconds->u.array.values[k];
					break;
				}
			}
			jw_value(&w, use);
		}
		jw_end_arr(&w);
	}
	jw_end_obj(&w);
	out = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	if (merged != fk->pa_merged)
		yajl_tree_free(merged);
	return out;
}

static void
status_push(struct fetch_kube *fk, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage, const char *val, size_t vlen)
{
	status_push_cur(fk, ki, ns, name, stage, val, vlen, NULL);
}

/* status_push_cur - status_push against cur (NULL: the CR as cached) */
static void
status_push_cur(struct fetch_kube *fk, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage, const char *val, size_t vlen, yajl_val cur)
{
	struct kube_informer *inf = ki->kd == &kube_decofiles ? fk->dfs : fk->tpls;
	yajl_val frag = NULL;

	if (cur == NULL)
		cur = kube_informer_get(inf, ns, name);
	char manager[64];
	struct push *p;
	char *body;
	size_t len;
	int same;

	if (cur == NULL || !leading(fk))
		return;		/* no CR (decoctl's own resource), not yet seen, or standby */
	{
		char *key = key_status(ki->plural, ns, name, stage);
		struct flight **fs = flight_slot(fk, key);

		if (*fs != NULL) {
			/* written again when the one in flight lands; a waiting one reads the store */
			if (!(*fs)->queued)
				(*fs)->again = 1;
			free(key);
			return;
		}
		if (fk->inflight >= MAX_INFLIGHT) {
			enqueue(fk, key, ki, ns, name, stage);
			return;
		}
		free(key);
	}
	if (val != NULL && (frag = json_parse(val, vlen, NULL)) == NULL)
		return;
	if (frag != NULL && YAJL_IS_OBJECT(frag)) {
		yajl_val m = with_merged_conds(fk, ki->plural, ns, name, frag);

		if (m != NULL) {
			yajl_tree_free(frag);
			frag = m;
		}
	}
	body = fetch_kube_status_body(ki->kd->kind, ns, name, frag, val != NULL ? cur : NULL,
	    &same, &len);
	yajl_tree_free(frag);
	if (same) {
		free(body);
		return;
	}
	snprintf(manager, sizeof(manager), "decod-%s", stage);
	p = xcalloc(1, sizeof(*p));
	p->fk = fk;
	p->ki = ki;
	p->key = key_status(ki->plural, ns, name, stage);
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->stage, sizeof(p->stage), "%s", stage);
	{
		struct flight **fs = flight_slot(fk, p->key), *f = xcalloc(1, sizeof(*f));

		f->key = xstrdup(p->key);
		*fs = f;
	}
	snprintf(p->what, sizeof(p->what), "%s/%s/%s (%s)", ki->plural, ns, name, manager);
	fk->inflight++;
	kube_apply(fk->k, ki->kd, ns, name, "status", manager, 1, body, len, on_pushed, p);
	free(body);
}

static void
on_status(void *arg, const struct store_event *ev)
{
	struct fetch_kube *fk = arg;
	char plural[64], ns[254], name[254], stage[64];
	const struct kind_info *ki;
	const char *rest;

	if (ev->type == STORE_EV_RELIST || strncmp(ev->key, fk->status_prefix,
	    strlen(fk->status_prefix)) != 0)
		return;
	rest = ev->key + strlen(fk->status_prefix);
	if (sscanf(rest, "%63[^/]/%253[^/]/%253[^/]/%63[^/]", plural, ns, name, stage) != 4 ||
	    (ki = kind_by_plural(plural)) == NULL)
		return;
	status_push(fk, ki, ns, name, stage, ev->type == STORE_EV_PUT ? ev->value : NULL,
	    ev->type == STORE_EV_PUT ? ev->vlen : 0);
}

static void
sw_dispatch(struct fetch_kube *fk)
{
	if (store_watch_dispatch(fk->sw) < 0)
		log_kv(LOG_WARN, "store watch error", "error", store_error(stage_store(fk->st)),
		    NULL);
}

static void
on_sw_fd(struct stage *st, int fd, short revents, void *arg)
{
	(void)st;
	(void)fd;
	(void)revents;
	sw_dispatch(arg);
}

static void
sw_timer(struct stage *st, void *arg)
{
	struct fetch_kube *fk = arg;
	int t;

	sw_dispatch(fk);
	t = store_watch_timeout_ms(fk->sw);
	fk->sw_timer = stage_add_timer(st, t > 0 && t < 1000 ? t : 1000, sw_timer, fk);
}

/* ---- life ---- */

struct fetch_kube *
fetch_kube_new(struct stage *st, char *err, size_t errlen)
{
	struct conf *cf = stage_conf(st);
	struct kube_config kc;
	struct fetch_kube *fk;
	int fd;

	err[0] = '\0';
	if (kube_config_from_conf(&kc, cf, err, errlen) != 0)
		return NULL;
	fk = xcalloc(1, sizeof(*fk));
	fk->st = st;
	if ((fk->k = kube_new(&kc, conf_get_ms(cf, "kube_timeout"), err, errlen)) == NULL) {
		kube_config_free(&kc);
		free(fk);
		return NULL;
	}
	kube_config_free(&kc);
	kube_attach(fk->k, st);
	fk->status_prefix = xasprintf("%s/status/", keys_prefix());
	if ((fk->sw = store_watch_new(stage_store(st), fk->status_prefix, 0, on_status, fk)) == NULL) {
		snprintf(err, errlen, "cannot watch status fragments: %s",
		    store_error(stage_store(st)));
		fetch_kube_free(fk);
		return NULL;
	}
	if ((fd = store_watch_fd(fk->sw)) >= 0)
		stage_add_fd(st, fd, POLLIN, on_sw_fd, fk);
	fk->sw_timer = stage_add_timer(st, 1000, sw_timer, fk);
	fk->dfs = kube_informer_new(fk->k, &kube_decofiles, NULL, NULL, on_df, fk);
	fk->tpls = kube_informer_new(fk->k, &kube_decofiletemplates, NULL, NULL, on_tpl, fk);
	/* under the supervisor, the supervisor holds the Lease */
	if (!stage_supervised(st) && conf_get_bool(cf, "leader_elect") &&
	    strncmp(conf_get(cf, "store"), "local:", 6) == 0) {
		struct kube_lease_params p;
		char host[256], id[300];
		const char *pod = getenv("POD_NAME");

		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "decod");
		host[sizeof(host) - 1] = '\0';
		/* the pod is the unit: its name (the hostname in a pod) */
		snprintf(id, sizeof(id), "%s", pod != NULL && *pod != '\0' ? pod : host);
		p.duration_ms = conf_get_ms(cf, "leader_lease_duration");
		p.renew_deadline_ms = conf_get_ms(cf, "leader_renew_deadline");
		p.retry_ms = conf_get_ms(cf, "leader_retry_period");
		log_kv(LOG_INFO, "leader election: contending for the pod", "identity", id, NULL);
		fk->lease = kube_lease_new(fk->k, kube_namespace(fk->k),
		    conf_get(cf, "leader_lease_name"), id, &p, on_lease, fk);
	}
	log_kv(LOG_INFO, "Kubernetes front door on", "server", kube_server(fk->k), NULL);
	return fk;
}

void
fetch_kube_free(struct fetch_kube *fk)
{
	if (fk == NULL)
		return;
	if (fk->sw != NULL) {
		int fd = store_watch_fd(fk->sw);

		if (fd >= 0)
			stage_del_fd(fk->st, fd);
		store_watch_free(fk->sw);
	}
	if (fk->sw_timer > 0)
		stage_cancel_timer(fk->st, fk->sw_timer);
	kube_lease_free(fk->lease);
	kube_free(fk->k);	/* cancels the writes in flight: their pushes go too */
	for (size_t i = 0; i < NFLIGHT; i++)
		while (fk->flights[i] != NULL) {
			struct flight *f = fk->flights[i];

			fk->flights[i] = f->next;
			if (f->timer > 0)
				stage_cancel_timer(fk->st, f->timer);
			if (f->wait != NULL)
				push_free(f->wait);
			flight_free(f);
		}
	free(fk->status_prefix);
	free(fk);
}
