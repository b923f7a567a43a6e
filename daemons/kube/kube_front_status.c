/*
 * kube_front_status - the one writer of the CRs' status: a store watch of
 * every stage's fragment; per CR, the fragments merged (conditions by
 * type, as `decoctl get` shows them) and applied once, by server-side
 * apply under the one field manager `decod`, a burst of fragments within
 * COALESCE_MS coalesced into that one apply, skipped when the CR already
 * shows it, at most MAX_INFLIGHT at once, a failed one tried again with a
 * doubling pause.  A CR whose status entries were written by today's old
 * managers (decod-<stage>) or by the Go operator is adopted first: one
 * JSON patch, guarded by its resourceVersion, removes those entries.
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
#include "daemons/kube/kube_front.h"
#include "daemons/kube/kube_front_int.h"

/*
 * Status writes in flight at most.  Thousands at once (10,000 CRs created
 * together) queue in the API server until their deadline passes, and the
 * supervisor's Lease renewal waits behind them (it lost the lease and
 * stopped decod so); the rest wait here, one entry per CR, and are read
 * from the store when their turn comes (so a CR waiting here gathers every
 * stage's fragment into its one write).
 */
#define MAX_INFLIGHT 32
#define PUSH_RETRY_MIN_MS 500	/* a failed status write is tried again, doubling */
#define PUSH_RETRY_MAX_MS 30000
/*
 * A fragment change waits this long before the CR's write is made, so a
 * burst of fragments of one CR (a stage writing two, two stages at once,
 * a restart's list) is one apply.
 */
#define COALESCE_MS 10
/*
 * A Decofile whose change is mid-way through the pipeline (kf_hold: the
 * journal holds an item of it for a stage before the last one `stages`
 * names, or the last stage's word is not in) is held until the change
 * has passed the last stage, so one change is one apply with every
 * stage's word (not one per stage: 10,000 CRs created at once would cost
 * the API server three or four applies each).  Each fragment of it that
 * changes meanwhile re-evaluates at once; so does a look at the journal
 * every HOLD_STEP_MS, doubling up to HOLD_STEP_MAX_MS (a stage may finish
 * its item without changing its fragment).  The last stage's word is
 * waited for at most HOLD_MAX_MS from the first hold (a notifier stopped,
 * a rollout of slow pods), then what there is is written; an earlier
 * stage still carrying the change is waited for without a cap.
 */
#define HOLD_MAX_MS 60000
#define HOLD_STEP_MS 1000
#define HOLD_STEP_MAX_MS 4000
#define HOLD_STEP_LATE_MS 30000	/* ... past HOLD_MAX_MS (an earlier stage stalled) */

/*
 * One record per CR with a status write pending: changed and waiting out
 * the coalescing window (due), waiting for a slot (queued), in flight, or
 * waiting to try a failed one again (retry).  One write per CR is in
 * flight at a time, so two applies of the one manager never race (Unknown
 * landing after True); a fragment that changes meanwhile makes the CR
 * written again, from the store, after.  A write that fails (past its
 * deadline: the server down, 5xx, 429) is written again later, from the
 * store, with a doubling pause: no other event would bring the CR's status
 * back in step.  The record goes once the CR is idle.
 */
enum crw_state { CRW_IDLE, CRW_DUE, CRW_QUEUED, CRW_FLIGHT, CRW_RETRY, CRW_HELD };

struct crw {
	struct crw *next;	/* hash chain */
	struct crw *lnext;	/* the due or the queued list */
	struct kube_front *fk;
	char *key;		/* plural/ns/name */
	const struct kind_info *ki;
	char *ns, *name;
	enum crw_state state;
	int again;		/* a fragment changed while the write was in flight */
	int rechecked;		/* the answer of this burst's last write was compared */
	int adopting;		/* the call in flight removes old managers' entries */
	int adopt_tried;	/* ... done once per record: never a loop */
	int force;		/* write even when the CR shows it (just adopted) */
	int fails;		/* failed writes in a row */
	int64_t due;		/* monotonic ms: the coalescing window ends */
	int64_t timer;		/* > 0: waiting to write again (retry or held) */
	int64_t held_since;	/* > 0: monotonic ms the CR's write was first held */
	int64_t hold_step;	/* ms to the next look at the journal while held */
	yajl_val newest;	/* the newest CR answered, NULL before any */
	char what[600];
};

static const struct kind_info *
kind_by_plural(const char *plural)
{
	for (size_t i = 0; i < sizeof(kf_kinds) / sizeof(kf_kinds[0]); i++)
		if (strcmp(kf_kinds[i].plural, plural) == 0)
			return &kf_kinds[i];
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

/*
 * first_diff - does curst (the CR's status; may be NULL) show every field
 * and condition of frag as it is?  0 yes; 1 no, out naming the first that
 * differs ("contentHash", "conditions/Ready"; the why of an apply)
 */
static int
first_diff(yajl_val frag, yajl_val curst, char *out, size_t outlen)
{
	struct buf x, y;
	int differs = 0;

	snprintf(out, outlen, "status");
	if (frag == NULL || !YAJL_IS_OBJECT(frag) || curst == NULL)
		return 1;
	buf_init(&x);
	buf_init(&y);
	for (size_t i = 0; i < frag->u.object.len && !differs; i++) {
		const char *key = frag->u.object.keys[i];
		yajl_val v = frag->u.object.values[i];

		if (strcmp(key, "conditions") == 0 && YAJL_IS_ARRAY(v)) {
			for (size_t c = 0; c < v->u.array.len && !differs; c++)
				if (!cond_same(json_get(curst, "conditions", NULL),
				    v->u.array.values[c])) {
					snprintf(out, outlen, "conditions/%s",
					    json_get_str(v->u.array.values[c], "type", NULL) ?
					    json_get_str(v->u.array.values[c], "type", NULL) : "?");
					differs = 1;
				}
			continue;
		}
		value_text(v, &x);
		value_text(json_get(curst, key, NULL), &y);
		if (strcmp(x.data, y.data) != 0) {
			snprintf(out, outlen, "%s", key);
			differs = 1;
		}
	}
	buf_free(&x);
	buf_free(&y);
	return differs;
}

/* apply_body - the status apply body of a CR: its identity and frag as status */
static char *
apply_body(const char *kind, const char *ns, const char *name, yajl_val frag, size_t *len)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, API_VERSION, kind, ns, name);
	jw_end_obj(&w);
	jw_key(&w, "status");
	if (frag != NULL && YAJL_IS_OBJECT(frag))
		jw_value(&w, frag);
	else {
		jw_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_obj(&w);
	return buf_steal(&b, len);
}

char *
kube_front_status_body(const char *kind, const char *ns, const char *name,
    yajl_val frag, yajl_val cur, int *same, char *diff, size_t difflen, size_t *len)
{
	yajl_val curst = cur != NULL ? json_get(cur, "status", NULL) : NULL;
	char d[80];

	if (diff == NULL) {
		diff = d;
		difflen = sizeof(d);
	}
	*same = !first_diff(frag, curst, diff, difflen);
	return apply_body(kind, ns, name, frag, len);
}

/*
 * stale_manager - an entry of the CR's status written by a writer decod
 * replaces: decod's old per-stage managers and the Go operator's
 * (controller-runtime names it after its binary, kubebuilder's `manager`)
 */
static int
stale_manager(yajl_val e)
{
	static const char *operator[] = { "manager", "deco-operator", "decofile-operator" };
	const char *m = json_get_str(e, "manager", NULL);
	const char *sub = json_get_str(e, "subresource", NULL);

	if (m == NULL || sub == NULL || strcmp(sub, "status") != 0 || strcmp(m, FK_MANAGER) == 0)
		return 0;
	if (strncmp(m, FK_MANAGER "-", strlen(FK_MANAGER) + 1) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(operator) / sizeof(operator[0]); i++)
		if (strcmp(m, operator[i]) == 0)
			return 1;
	return 0;
}

char *
kube_front_adopt_patch(yajl_val cur, size_t *len)
{
	yajl_val mf = json_get(cur, "metadata", "managedFields", NULL);
	const char *rv = json_get_str(cur, "metadata", "resourceVersion", NULL);
	size_t stale = 0, kept = 0;
	struct buf b;
	struct jw w;

	if (mf == NULL || !YAJL_IS_ARRAY(mf) || rv == NULL || *rv == '\0')
		return NULL;
	for (size_t i = 0; i < mf->u.array.len; i++)
		stale += stale_manager(mf->u.array.values[i]);
	if (stale == 0)
		return NULL;
	buf_init(&b);
	jw_init(&w, &b);
	jw_arr(&w);
	jw_obj(&w);
	jw_key(&w, "op");
	jw_str(&w, "test");
	jw_key(&w, "path");
	jw_str(&w, "/metadata/resourceVersion");
	jw_key(&w, "value");
	jw_str(&w, rv);
	jw_end_obj(&w);
	jw_obj(&w);
	jw_key(&w, "op");
	jw_str(&w, "replace");
	jw_key(&w, "path");
	jw_str(&w, "/metadata/managedFields");
	jw_key(&w, "value");
	jw_arr(&w);
	for (size_t i = 0; i < mf->u.array.len; i++)
		if (!stale_manager(mf->u.array.values[i])) {
			jw_value(&w, mf->u.array.values[i]);
			kept++;
		}
	if (kept == 0) {	/* an empty list would mean "unchanged": [{}] clears them */
		jw_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	jw_end_arr(&w);
	return buf_steal(&b, len);
}

/* ---- the merged status onto the CRs ---- */

/* crw_slot - the record of plural/ns/name, or where it would go */
static struct crw **
crw_slot(struct kube_front *fk, const char *plural, const char *ns, const char *name)
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
crw_get(struct kube_front *fk, const struct kind_info *ki, const char *ns, const char *name)
{
	struct crw **cs = crw_slot(fk, ki->plural, ns, name);

	if (*cs == NULL) {
		*cs = xcalloc(1, sizeof(**cs));
		(*cs)->fk = fk;
		(*cs)->key = xasprintf("%s/%s/%s", ki->plural, ns, name);
		(*cs)->ki = ki;
		(*cs)->ns = xstrdup(ns);
		(*cs)->name = xstrdup(name);
		snprintf((*cs)->what, sizeof((*cs)->what), "%s/%s/%s", ki->plural, ns, name);
	}
	return *cs;
}

static void
crw_free(struct crw *c)
{
	yajl_tree_free(c->newest);
	free(c->key);
	free(c->ns);
	free(c->name);
	free(c);
}

static int rv_newer(yajl_val a, yajl_val b);
static struct kube_informer *informer_of(struct kube_front *fk, const struct crw *c);

/*
 * crw_gc - drop c's record once nothing of it is pending and the cache
 * holds the CR its last answer did (until then that answer is the newest
 * word on the CR: kf_cr_seen looks again when the watch brings it)
 */
static void
crw_gc(struct kube_front *fk, struct crw *c)
{
	struct crw **cs;
	yajl_val cached;

	if (c->state != CRW_IDLE || c->again)
		return;
	if (c->newest != NULL && (cached = kube_informer_get(informer_of(fk, c), c->ns,
	    c->name)) != NULL && rv_newer(c->newest, cached))
		return;
	cs = crw_slot(fk, c->ki->plural, c->ns, c->name);
	if (*cs == c) {
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

static struct kube_informer *
informer_of(struct kube_front *fk, const struct crw *c)
{
	return c->ki->kd == &kube_decofiles ? fk->dfs : fk->tpls;
}

static void on_answer(void *arg, const struct kube_resp *r);
static void on_retry(struct stage *st, void *arg);
static void on_hold(struct stage *st, void *arg);

/*
 * hold - c's write waits: for a fragment to change, or for the next look
 * at the journal (on_hold), whichever comes first
 */
static void
hold(struct kube_front *fk, struct crw *c, int64_t now)
{
	int64_t left = c->held_since + HOLD_MAX_MS - now, d;

	if (c->hold_step == 0)
		c->hold_step = HOLD_STEP_MS;
	d = c->hold_step;
	if (left > 0 && d > left)
		d = left;
	c->hold_step *= 2;
	if (c->hold_step > (left > 0 ? HOLD_STEP_MAX_MS : HOLD_STEP_LATE_MS))
		c->hold_step = left > 0 ? HOLD_STEP_MAX_MS : HOLD_STEP_LATE_MS;
	c->state = CRW_HELD;
	c->timer = stage_add_timer(fk->st, d > 1 ? d : 1, on_hold, c);
}

/*
 * write_cr - c's CR written now (the caller saw a free slot): its old managers'
 * entries removed first when it has any (a JSON patch of the CR itself:
 * its status subresource keeps the managedFields it had), else the merged
 * status applied
 * unless cur (NULL: the CR as cached) already shows it.  c is idle after
 * when nothing was sent.  via: why the caller writes (KF_RECHECK: the
 * server's answer differed; KF_HELD: a fragment changed), for the count.
 */
static void
write_cr(struct kube_front *fk, struct crw *c, yajl_val cur, enum kf_why via)
{
	yajl_val merged;
	struct buf m;
	char *body, *path, diff[80], detail[200];
	const char *rv;
	size_t len;
	int same;
	enum kf_why why = KF_UNHELD;

	c->state = CRW_IDLE;
	/*
	 * the cache, unless an answer of ours is newer: the watch may not
	 * have brought the CR our last write made yet, and the older status
	 * would look unwritten
	 */
	if (cur == NULL && (cur = kube_informer_get(informer_of(fk, c), c->ns, c->name)) != NULL &&
	    c->newest != NULL && rv_newer(c->newest, cur))
		cur = c->newest;
	if (cur == NULL || !kf_leading(fk))
		return;		/* no CR (decoctl's own resource), not yet seen, or standby */
	if (!c->adopt_tried && (body = kube_front_adopt_patch(cur, &len)) != NULL) {
		c->adopt_tried = 1;
		c->adopting = 1;
		c->state = CRW_FLIGHT;
		fk->inflight++;
		path = kube_path(c->ki->kd, c->ns, c->name, NULL, NULL);
		kube_send(fk->k, "PATCH", path, "application/json-patch+json", body, len, 0,
		    on_answer, c);
		free(path);
		free(body);
		return;
	}
	buf_init(&m);
	if ((kf_preload_merged(fk, c->ki->plural, c->ns, c->name, &m) < 0 &&
	    resource_status_merged(stage_store(fk->st), c->ki->plural, c->ns, c->name,
	    &m) < 0) || (merged = json_parse(m.data, m.len, NULL)) == NULL) {
		buf_free(&m);
		return;
	}
	buf_free(&m);
	/* no stage has written a fragment: nothing to say (the merge is conditions: []) */
	if (merged->u.object.len <= 1 && YAJL_IS_ARRAY(json_get(merged, "conditions", NULL)) &&
	    json_get(merged, "conditions", NULL)->u.array.len == 0) {
		yajl_tree_free(merged);
		return;
	}
	/* the body is made only for a write (a restart compares 10,000 and writes none) */
	same = !first_diff(merged, json_get(cur, "status", NULL), diff, sizeof(diff));
	/* the CR shows it already (every CR after a restart): no hold to decide */
	if (c->ki->kd == &kube_decofiles && !(same && !c->force)) {
		int64_t now = now_ms();

		why = kf_hold(fk, c->ns, c->name, merged, c->held_since > 0 &&
		    now - c->held_since >= HOLD_MAX_MS);
		if (why == KF_HELD) {
			if (c->held_since == 0)
				c->held_since = now;
			hold(fk, c, now);
			yajl_tree_free(merged);
			return;
		}
	}
	c->held_since = 0;
	c->hold_step = 0;
	kf_events_observe(fk, c->ki->kd->kind, cur, merged);
	if (same && !c->force) {
		yajl_tree_free(merged);
		return;
	}
	body = apply_body(c->ki->kd->kind, c->ns, c->name, merged, &len);
	yajl_tree_free(merged);
	rv = json_get_str(cur, "metadata", "resourceVersion", NULL);
	snprintf(detail, sizeof(detail), "%s differs from resourceVersion %s", diff,
	    rv != NULL ? rv : "?");
	kf_count_apply(fk, c->force ? KF_ADOPTED : via == KF_RECHECK ? KF_RECHECK : why,
	    c->what, detail);
	c->force = 0;
	c->state = CRW_FLIGHT;
	fk->inflight++;
	kube_apply(fk->k, c->ki->kd, c->ns, c->name, "status", FK_MANAGER, 1, body, len,
	    on_answer, c);
	free(body);
}

/* queue - c waits for a write slot */
static void
queue(struct kube_front *fk, struct crw *c)
{
	c->state = CRW_QUEUED;
	c->lnext = NULL;
	if (fk->qtail != NULL)
		fk->qtail->lnext = c;
	else
		fk->qhead = c;
	fk->qtail = c;
}

/* pump - write waiting CRs while slots are free, each as the store has it now */
static void
pump(struct kube_front *fk)
{
	while (fk->qhead != NULL && fk->inflight < MAX_INFLIGHT) {
		struct crw *c = fk->qhead;

		if ((fk->qhead = c->lnext) == NULL)
			fk->qtail = NULL;
		write_cr(fk, c, NULL, KF_HELD);
		crw_gc(fk, c);
	}
	kf_caught_up(fk);
}

static void on_due(struct stage *st, void *arg);

static void
arm_due(struct kube_front *fk)
{
	int64_t d;

	if (fk->dtimer > 0 || fk->dhead == NULL)
		return;
	d = fk->dhead->due - now_ms();
	fk->dtimer = stage_add_timer(fk->st, d > 1 ? d : 1, on_due, fk);
}

/* on_due - the CRs whose coalescing window ended queue for a slot */
static void
on_due(struct stage *st, void *arg)
{
	struct kube_front *fk = arg;
	int64_t now = now_ms();

	(void)st;
	fk->dtimer = 0;
	/*
	 * the fragments written before the window ended, even if this loop
	 * was slow to read them (a busy machine), join their CR's write
	 */
	(void)store_watch_dispatch(fk->sw);
	while (fk->dhead != NULL && fk->dhead->due <= now) {
		struct crw *c = fk->dhead;

		if ((fk->dhead = c->lnext) == NULL)
			fk->dtail = NULL;
		queue(fk, c);
	}
	arm_due(fk);
	pump(fk);
}

/* mark - a fragment of ns/name changed (or its CR was seen): write it after the window */
static void
mark(struct kube_front *fk, const struct kind_info *ki, const char *ns, const char *name)
{
	struct crw *c = crw_get(fk, ki, ns, name);

	c->rechecked = 0;
	switch (c->state) {
	case CRW_HELD:		/* looked at again after the window: settled, or held on */
		stage_cancel_timer(fk->st, c->timer);
		c->timer = 0;
		/* FALLTHROUGH */
	case CRW_IDLE:
		c->state = CRW_DUE;
		c->due = now_ms() + COALESCE_MS;
		c->lnext = NULL;
		if (fk->dtail != NULL)
			fk->dtail->lnext = c;
		else
			fk->dhead = c;
		fk->dtail = c;
		arm_due(fk);
		break;
	case CRW_FLIGHT:
		c->again = 1;	/* written again, from the store, when this one lands */
		break;
	default:		/* due, queued or retrying: that write reads the store */
		break;
	}
}

void
kf_push_all(struct kube_front *fk, const struct kind_info *ki, const char *ns, const char *name)
{
	mark(fk, ki, ns, name);
}

void
kf_cr_seen(struct kube_front *fk, const struct kind_info *ki, const char *ns, const char *name)
{
	struct crw *c = *crw_slot(fk, ki->plural, ns, name);

	if (c != NULL)
		crw_gc(fk, c);
}

static void
on_retry(struct stage *st, void *arg)
{
	struct crw *c = arg;

	(void)st;
	c->timer = 0;
	queue(c->fk, c);
	pump(c->fk);
}

/*
 * on_hold - a held CR's look at the journal: while an item of it waits
 * for any stage, a fragment change or that item's end is still to come
 * (looked at again later); else, or once the hold's cap has passed, the
 * whole decision is made again (write_cr)
 */
static void
on_hold(struct stage *st, void *arg)
{
	struct crw *c = arg;
	int64_t now = now_ms();

	(void)st;
	c->timer = 0;
	if (now - c->held_since < HOLD_MAX_MS && kf_pending(c->fk, c->ns, c->name)) {
		hold(c->fk, c, now);
		return;
	}
	queue(c->fk, c);
	pump(c->fk);
}

/*
 * on_answer - a write of c landed.  Fragments changed meanwhile: written
 * again.  Else the recheck: the newest CR seen (the answers', or the
 * cache when newer) is compared with the merged status once more, and
 * written when it differs (once per burst, so a server that keeps
 * answering otherwise is not written in a loop).  After an adoption the
 * status is applied at once, so `decod` owns every field it sets.
 */
static void
on_answer(void *arg, const struct kube_resp *r)
{
	struct crw *c = arg;
	struct kube_front *fk = c->fk;
	int adopting = c->adopting;
	yajl_val cr, cached;
	char *rest;

	fk->inflight--;
	c->state = CRW_IDLE;
	c->adopting = 0;
	if (kube_ok(r)) {
		c->fails = 0;
		/* before crw_note: it may take the answer's CR */
		rest = adopting && r->json != NULL ? kube_front_adopt_patch(r->json, NULL) : NULL;
		crw_note(c, r);
		if (rest != NULL) {
			free(rest);	/* adopt_tried stays: never a loop */
			log_kv(LOG_WARN, "CR not adopted: the server kept the old managers' "
			    "status entries", "object", c->what, NULL);
		} else if (adopting) {
			fk->adoptions++;
			c->force = 1;
			log_kv(LOG_INFO, "CR adopted: the old managers' status entries removed",
			    "object", c->what, NULL);
		} else
			fk->status_writes++;
		if (c->again || adopting || !c->rechecked) {
			enum kf_why via = c->again || adopting ? KF_HELD : KF_RECHECK;

			if (!c->again && !adopting)
				c->rechecked = 1;
			c->again = 0;
			cr = c->newest;
			if ((cached = kube_informer_get(informer_of(fk, c), c->ns, c->name)) !=
			    NULL && (cr == NULL || rv_newer(cached, cr)))
				cr = cached;
			write_cr(fk, c, cr, via);
		}
	} else if (r->status != 404) {	/* 404: the CR went away meanwhile */
		int64_t d = (int64_t)PUSH_RETRY_MIN_MS << (c->fails < 6 ? c->fails : 6);

		log_kv(LOG_WARN, adopting ? "cannot adopt the CR (remove its old managers' status "
		    "entries); trying again later" : "cannot write status to the CR; trying again "
		    "later", "object", c->what, "manager", FK_MANAGER, "error", r->err, NULL);
		if (adopting)
			c->adopt_tried = 0;
		c->fails++;
		c->again = 0;
		c->state = CRW_RETRY;
		c->timer = stage_add_timer(fk->st, d < PUSH_RETRY_MAX_MS ? d : PUSH_RETRY_MAX_MS,
		    on_retry, c);
	} else
		c->again = 0;
	crw_gc(fk, c);
	pump(fk);
}

static void
on_status(void *arg, const struct store_event *ev)
{
	struct kube_front *fk = arg;
	char plural[64], ns[254], name[254], stage[64];
	const struct kind_info *ki;
	const char *rest;

	kf_preload_drop(fk);	/* a fragment changed: the preload is no longer the store */
	if (ev->type == STORE_EV_RELIST || strncmp(ev->key, fk->status_prefix,
	    strlen(fk->status_prefix)) != 0)
		return;
	rest = ev->key + strlen(fk->status_prefix);
	if (sscanf(rest, "%63[^/]/%253[^/]/%253[^/]/%63[^/]", plural, ns, name, stage) != 4 ||
	    (ki = kind_by_plural(plural)) == NULL)
		return;
	mark(fk, ki, ns, name);
}

int
kf_status_start(struct kube_front *fk, char *err, size_t errlen)
{
	struct stage *st = fk->st;
	struct store_list l;

	fk->status_prefix = xasprintf("%s/status/", keys_prefix());
	if ((fk->sw = store_watch_open_list(st, fk->status_prefix, on_status, fk, 1000,
	    &fk->sw_attach, &l)) == NULL) {
		snprintf(err, errlen, "cannot watch status fragments: %s",
		    store_error(stage_store(st)));
		return -1;
	}
	/* what the watch read at its opening: the first comparisons read it */
	kube_front_preload(fk, &l);
	return 0;
}

void
kf_status_free(struct kube_front *fk)
{
	store_watch_close(fk->sw, fk->sw_attach);
	fk->sw_attach = NULL;
	fk->sw = NULL;
	if (fk->dtimer > 0)
		stage_cancel_timer(fk->st, fk->dtimer);
	fk->dtimer = 0;
	fk->dhead = fk->dtail = fk->qhead = fk->qtail = NULL;
	for (size_t i = 0; i < NFLIGHT; i++)
		while (fk->crws[i] != NULL) {
			struct crw *c = fk->crws[i];

			fk->crws[i] = c->next;
			if (c->timer > 0)
				stage_cancel_timer(fk->st, c->timer);
			crw_free(c);
		}
	free(fk->status_prefix);
	fk->status_prefix = NULL;
}
