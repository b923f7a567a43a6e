/*
 * fetch_kube_status - each stage's status fragment onto its CR: a store
 * watch of the fragments, one server-side apply per fragment under field
 * manager decod-<stage>, skipped when the CR already shows it, at most
 * MAX_INFLIGHT at once, a failed one tried again with a doubling pause.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_kube.h"
#include "daemons/fetcher/fetch_kube_int.h"

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

/*
 * One record per CR with a status write of any stage in flight, waiting
 * or queued: how many, how many were made, and the newest CR their answers
 * showed.  Concurrent writes of two stages are answered in any order, so
 * the answer that arrives last may show an older CR than the server holds
 * (the Syncing one stage merged before the other's landed last).  When the
 * CR's last write lands, the recheck compares with the newest CR seen.
 */
struct crw {
	struct crw *next;
	char *key;		/* plural/ns/name */
	unsigned nflight;	/* flights of this CR now */
	unsigned nmade;		/* flights made since the record began */
	yajl_val newest;	/* the newest CR answered, NULL before any */
};

static const struct kind_info *
kind_by_plural(const char *plural)
{
	for (size_t i = 0; i < sizeof(fk_kinds) / sizeof(fk_kinds[0]); i++)
		if (strcmp(fk_kinds[i].plural, plural) == 0)
			return &fk_kinds[i];
	return NULL;
}

/* ---- pure parts (unit-tested) ---- */

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
	jw_object_head(&w, API_VERSION, kind, ns, name);
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

/* ---- fragments onto the CRs ---- */

static void status_push(struct fetch_kube *fk, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage, const char *val, size_t vlen);
static void status_push_cur(struct fetch_kube *fk, const struct kind_info *ki,
    const char *ns, const char *name, const char *stage, const char *val, size_t vlen,
    yajl_val cur);

/* push_all_cur - every stage's fragment of ns/name onto the CR, compared with cur (NULL: cached) */
static void
push_all_cur(struct fetch_kube *fk, const struct kind_info *ki, const char *ns,
    const char *name, yajl_val cur)
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
				status_push_cur(fk, ki, ns, name, l.kvs[i].key + plen,
				    l.kvs[i].value, l.kvs[i].vlen, cur);
		yajl_tree_free(fk->pa_merged);
		fk->pa_merged = NULL;
		store_list_free(&l);
	}
	free(prefix);
}

void
fk_push_all(struct fetch_kube *fk, const struct kind_info *ki, const char *ns, const char *name)
{
	push_all_cur(fk, ki, ns, name, NULL);
}

/* crw_slot - the record of plural/ns/name, or where it would go */
static struct crw **
crw_slot(struct fetch_kube *fk, const char *plural, const char *ns, const char *name)
{
	char key[600];
	struct crw **c;

	snprintf(key, sizeof(key), "%s/%s/%s", plural, ns, name);
	for (c = &fk->crws[str_hash(key) % NFLIGHT]; *c != NULL; c = &(*c)->next)
		if (strcmp((*c)->key, key) == 0)
			break;
	return c;
}

static struct crw *
crw_get(struct fetch_kube *fk, const char *plural, const char *ns, const char *name)
{
	struct crw **cs = crw_slot(fk, plural, ns, name);

	if (*cs == NULL) {
		*cs = xcalloc(1, sizeof(**cs));
		(*cs)->key = xasprintf("%s/%s/%s", plural, ns, name);
	}
	return *cs;
}

static void
crw_free(struct crw *c)
{
	yajl_tree_free(c->newest);
	free(c->key);
	free(c);
}

/* crw_gc - drop ns/name's record once no write of it is left */
static void
crw_gc(struct fetch_kube *fk, const char *plural, const char *ns, const char *name)
{
	struct crw **cs = crw_slot(fk, plural, ns, name), *c = *cs;

	if (c != NULL && c->nflight == 0) {
		*cs = c->next;
		crw_free(c);
	}
}

/*
 * rv_newer - a's metadata.resourceVersion is above b's.  Kubernetes calls
 * resourceVersion opaque; every API server writes etcd's revision there,
 * a decimal that only grows, and anything else (not decimal) reads as
 * "not newer", so the answer that came last is used as before.
 */
static int
rv_newer(yajl_val a, yajl_val b)
{
	const char *ra = json_get_str(a, "metadata", "resourceVersion", NULL);
	const char *rb = json_get_str(b, "metadata", "resourceVersion", NULL);
	size_t la, lb;

	if (ra == NULL || rb == NULL || (la = strlen(ra)) == 0 || (lb = strlen(rb)) == 0 ||
	    strspn(ra, "0123456789") != la || strspn(rb, "0123456789") != lb)
		return 0;
	while (la > 1 && *ra == '0')
		ra++, la--;
	while (lb > 1 && *rb == '0')
		rb++, lb--;
	return la != lb ? la > lb : strcmp(ra, rb) > 0;
}

/* crw_note - keep r's CR (taken from the answer) when it is newer than the newest seen */
static void
crw_note(struct crw *c, const struct kube_resp *r)
{
	if (r->json == NULL || (c->newest != NULL && !rv_newer(r->json, c->newest)))
		return;
	yajl_tree_free(c->newest);
	c->newest = kube_resp_take_json(r);
}

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
	struct flight **f;

	for (f = &fk->flights[str_hash(key) % NFLIGHT]; *f != NULL; f = &(*f)->next)
		if (strcmp((*f)->key, key) == 0)
			break;
	return f;
}

static void flight_free(struct fetch_kube *fk, struct flight *f, int gc);

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
	flight_free(fk, f, 0);
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
	crw_gc(p->fk, p->ki->plural, p->ns, p->name);
	push_free(p);
}

/*
 * flight_new - the flight of fragment key (taken), counted on its CR's
 * record; the caller links it
 */
static struct flight *
flight_new(struct fetch_kube *fk, char *key, const struct kind_info *ki, const char *ns,
    const char *name, const char *stage)
{
	struct flight *f = xcalloc(1, sizeof(*f));
	struct crw *c = crw_get(fk, ki->plural, ns, name);

	c->nflight++;
	c->nmade++;
	f->key = key;
	f->ki = ki;
	f->ns = xstrdup(ns);
	f->name = xstrdup(name);
	f->stage = xstrdup(stage);
	return f;
}

/*
 * flight_free - uncount f on its CR's record and free it; gc: drop the
 * record when it was the last (else the caller does, after its recheck)
 */
static void
flight_free(struct fetch_kube *fk, struct flight *f, int gc)
{
	struct crw **cs = crw_slot(fk, f->ki->plural, f->ns, f->name), *c = *cs;

	if (c != NULL && c->nflight > 0 && --c->nflight == 0 && gc) {
		*cs = c->next;
		crw_free(c);
	}
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
	f = flight_new(fk, key, ki, ns, name, stage);
	f->queued = 1;
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
		flight_free(fk, f, 1);
	}
}

/*
 * recheck - after the last write in flight for a CR landed: compare with
 * the newest CR seen (the answers' newest, or the cache when it is newer).
 * A condition two stages set (Syncing) is applied by both with the merged
 * value; when the one that carried an older merge was applied last, the CR
 * shows that one: write again.  After writes of several stages every
 * stage's fragment is compared (the stale condition may be another's);
 * after one, p's.
 */
static void
recheck(struct fetch_kube *fk, const struct push *p, const struct crw *c, yajl_val answer)
{
	struct kube_informer *inf = p->ki->kd == &kube_decofiles ? fk->dfs : fk->tpls;
	yajl_val cr = c->newest != NULL ? c->newest : answer, cached;
	char *val = NULL;
	size_t len = 0;

	if ((cached = kube_informer_get(inf, p->ns, p->name)) != NULL && rv_newer(cached, cr))
		cr = cached;
	if (c->nmade > 1) {
		push_all_cur(fk, p->ki, p->ns, p->name, cr);
		return;
	}
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
	struct crw *c;
	int again = f != NULL && f->again;

	fk->inflight--;
	if (kube_ok(r)) {
		fk->status_writes++;
		if ((c = *crw_slot(fk, p->ki->plural, p->ns, p->name)) != NULL)
			crw_note(c, r);
	} else if (r->status != 404) {	/* 404: the CR went away meanwhile */
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
	c = *crw_slot(fk, p->ki->plural, p->ns, p->name);
	if (again)	/* it changed while this write was in flight: write what it is now */
		repush(fk, p, 0);
	else if (kube_ok(r) && c != NULL && c->nflight == 0 &&
	    (c->newest != NULL || r->json != NULL))
		recheck(fk, p, c, r->json);	/* the CR's last write landed */
	crw_gc(fk, p->ki->plural, p->ns, p->name);
	push_free(p);
	pump(fk);
	fk_caught_up(fk);
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

	if (cur == NULL || !fk_leading(fk))
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
	*flight_slot(fk, p->key) = flight_new(fk, xstrdup(p->key), ki, ns, name, stage);
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

int
fk_status_start(struct fetch_kube *fk, char *err, size_t errlen)
{
	struct stage *st = fk->st;

	fk->status_prefix = xasprintf("%s/status/", keys_prefix());
	if ((fk->sw = store_watch_new(stage_store(st), fk->status_prefix, 0, on_status, fk)) == NULL) {
		snprintf(err, errlen, "cannot watch status fragments: %s",
		    store_error(stage_store(st)));
		return -1;
	}
	fk->sw_attach = store_watch_attach(fk->sw, st, 1000);
	return 0;
}

void
fk_status_free(struct fetch_kube *fk)
{
	store_watch_detach(fk->sw_attach);
	fk->sw_attach = NULL;
	store_watch_free(fk->sw);
	fk->sw = NULL;
	for (size_t i = 0; i < NFLIGHT; i++)
		while (fk->flights[i] != NULL) {
			struct flight *f = fk->flights[i];

			fk->flights[i] = f->next;
			if (f->timer > 0)
				stage_cancel_timer(fk->st, f->timer);
			if (f->wait != NULL)
				push_free(f->wait);
			flight_free(fk, f, 0);
		}
	for (size_t i = 0; i < NFLIGHT; i++)
		while (fk->crws[i] != NULL) {
			struct crw *c = fk->crws[i];

			fk->crws[i] = c->next;
			crw_free(c);
		}
	free(fk->status_prefix);
	fk->status_prefix = NULL;
}
