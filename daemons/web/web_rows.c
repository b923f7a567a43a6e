/*
 * web_rows - every Decofile's status row, kept in memory by the web stage
 * so that /api/v1/status and the events snapshot are answered without
 * reading the store (13,000 keys of the local store take seconds to list).
 * Three store watches keep the parts of each row current from their
 * events' values: the Decofile, its status fragments, its job lock's
 * holder; a timer asks the journal for acks newer than the last one seen
 * (the replicas x/y), and reconciles them all now and then (a prune
 * removes old acks without adding one).  A watch that lost its history
 * (RELIST) or a reload (SIGHUP: the watches are opened again) re-reads
 * everything.  A row's JSON, view_row_json's element of `decoctl status -o
 * json`, is made again when one of its parts changed, a few milliseconds
 * after (a burst of fragment writes makes one), and handed to the events
 * stream.  The rows are kept by key in one sorted array.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/view.h"
#include "daemons/web/web.h"

#define GATHER_MS	20	/* changes gathered into one row build */
#define ACK_POLL_MS	500	/* new acks looked for */
#define ACK_FULL_MS	60000	/* every ack reconciled (prunes) */
#define RETRY_MS	1000	/* a failed load tried again */

enum { W_RES, W_STATUS, W_LOCK, W_N };

struct wack {
	char *hash;
	int confirmed;
};

struct acks {
	struct wack *v;
	size_t n, cap;
};

struct wrow {
	char *key;		/* "ns/name" */
	int have_doc;
	struct view_doc doc;	/* its strings are the row's (xstrdup'd) */
	struct web_push_source push;	/* what a git push is matched against */
	struct store_kv *frags;	/* status fragments by key (after "ns/name/") */
	size_t nfrags;
	char *owner;
	int have_acks;		/* the journal answered (x/y is shown) */
	struct acks acks, fresh;	/* fresh: a reconcile's answer */
	char *json;		/* NULL: none (no Decofile) */
	size_t jlen;
	int rank;		/* the page's order: failing, progressing, suspended, ready */
	int dirty, acks_due;
};

struct web_rows {
	struct web *w;
	struct wrow **v;	/* sorted by key */
	size_t n, cap;
	char *prefix[W_N];
	struct store_watch *watch[W_N];
	struct stage_watch *att[W_N];
	struct wrow **dirty;
	size_t ndirty, capdirty;
	int64_t gather, poll;	/* timer ids, 0: none */
	int64_t ack_id, acks_full_at;
	int loaded, reload_due;
	web_rows_cb cb;
	void *arg;
};

static void rows_gather(struct stage *st, void *arg);

/* ---- the sorted array ---- */

static size_t
row_pos(const struct web_rows *t, const char *key, int *found)
{
	size_t lo = 0, hi = t->n;

	*found = 0;
	if (t->n > 0 && strcmp(t->v[t->n - 1]->key, key) < 0)
		return t->n;	/* a sorted load appends */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->v[mid]->key, key);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct wrow *
row_find(const struct web_rows *t, const char *key)
{
	int found;
	size_t i = row_pos(t, key, &found);

	return found ? t->v[i] : NULL;
}

static struct wrow *
row_get(struct web_rows *t, const char *key)
{
	int found;
	size_t i = row_pos(t, key, &found);
	struct wrow *r;

	if (found)
		return t->v[i];
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	memmove(t->v + i + 1, t->v + i, (t->n - i) * sizeof(*t->v));
	r = xcalloc(1, sizeof(*r));
	r->key = xstrdup(key);
	t->v[i] = r;
	t->n++;
	return r;
}

static void
acks_clear(struct acks *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].hash);
	a->n = 0;
}

static void
acks_add(struct acks *a, const char *hash, int confirmed)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 4;
		a->v = xrealloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = (struct wack){ xstrdup(hash), confirmed };
}

static void
doc_clear(struct wrow *r)
{
	free((char *)r->doc.ns);
	free((char *)r->doc.name);
	free((char *)r->doc.source);
	free((char *)r->doc.target);
	free((char *)r->doc.created_at);
	memset(&r->doc, 0, sizeof(r->doc));
	web_push_source_free(&r->push);
	r->have_doc = 0;
}

static void
row_free(struct wrow *r)
{
	if (r == NULL)
		return;
	doc_clear(r);
	for (size_t i = 0; i < r->nfrags; i++) {
		free(r->frags[i].key);
		free(r->frags[i].value);
	}
	free(r->frags);
	acks_clear(&r->acks);
	acks_clear(&r->fresh);
	free(r->acks.v);
	free(r->fresh.v);
	free(r->owner);
	free(r->json);
	free(r->key);
	free(r);
}

static void
rows_clear(struct web_rows *t)
{
	for (size_t i = 0; i < t->n; i++)
		row_free(t->v[i]);
	t->n = 0;
	t->ndirty = 0;
}

/* ---- a row's parts ---- */

static void
row_set_doc(struct wrow *r, const char *value, size_t vlen, const char *default_target)
{
	yajl_val doc = value ? json_parse(value, vlen, NULL) : NULL;
	struct view_doc d;

	doc_clear(r);
	if (doc == NULL)
		return;		/* as the list skipped a Decofile that is not JSON */
	view_doc_of(doc, default_target, &d);
	r->doc.ns = d.ns ? xstrdup(d.ns) : NULL;
	r->doc.name = d.name ? xstrdup(d.name) : NULL;
	r->doc.source = d.source ? xstrdup(d.source) : NULL;
	r->doc.target = d.target ? xstrdup(d.target) : NULL;
	r->doc.created_at = d.created_at ? xstrdup(d.created_at) : NULL;
	r->doc.suspended = d.suspended;
	r->doc.generation = d.generation;
	(void)web_push_source_of(doc, &r->push);
	r->have_doc = 1;
	yajl_tree_free(doc);
}

/* row_set_frag - fragment sub (NULL value: gone), kept sorted by sub */
static void
row_set_frag(struct wrow *r, const char *sub, const char *value, size_t vlen)
{
	size_t i = 0;
	int c = 1;

	while (i < r->nfrags && (c = strcmp(r->frags[i].key, sub)) < 0)
		i++;
	if (i < r->nfrags && c == 0) {
		free(r->frags[i].value);
		if (value == NULL) {
			free(r->frags[i].key);
			memmove(r->frags + i, r->frags + i + 1,
			    (r->nfrags - i - 1) * sizeof(*r->frags));
			r->nfrags--;
			return;
		}
	} else {
		if (value == NULL)
			return;
		r->frags = xrealloc(r->frags, (r->nfrags + 1) * sizeof(*r->frags));
		memmove(r->frags + i + 1, r->frags + i, (r->nfrags - i) * sizeof(*r->frags));
		r->nfrags++;
		memset(&r->frags[i], 0, sizeof(r->frags[i]));
		r->frags[i].key = xstrdup(sub);
	}
	r->frags[i].value = xmalloc(vlen + 1);
	memcpy(r->frags[i].value, value, vlen);
	r->frags[i].value[vlen] = '\0';
	r->frags[i].vlen = vlen;
}

static void
row_set_owner(struct wrow *r, const char *value, size_t vlen)
{
	free(r->owner);
	r->owner = value != NULL && vlen > 0 ? xstrndup(value, vlen) : NULL;
}

static void
fresh_ack(void *arg, const struct journal_ack_row *a)
{
	acks_add(arg, a->content_hash, a->confirmed);
}

/* row_reload_acks - the newest ack of each of r's replicas, from the journal */
static void
row_reload_acks(struct web_rows *t, struct wrow *r)
{
	struct journal *j = stage_journal(t->w->st);
	char *ns = xstrdup(r->key), *name = strchr(ns, '/');

	r->acks_due = 0;
	*name++ = '\0';
	acks_clear(&r->fresh);
	r->have_acks = j != NULL && journal_acks_each(j, ns, name, fresh_ack, &r->fresh) >= 0;
	if (r->have_acks) {
		struct acks tmp = r->acks;

		r->acks = r->fresh;
		r->fresh = tmp;
	}
	acks_clear(&r->fresh);
	free(ns);
}

/* row_state - the page's order of a row's state (app.js's state()) */
static int
row_state(const struct view_row *v)
{
	if (v->suspended)
		return 2;
	if (strcmp(v->ready, "False") == 0 || strcmp(v->syncing, "False") == 0 ||
	    strcmp(v->pods_notified, "False") == 0)
		return 0;
	if (strcmp(v->ready, "True") == 0 && strcmp(v->pods_notified, "Unknown") != 0)
		return 3;
	return 1;
}

/* row_build - r's JSON from its parts (none without a Decofile) */
static void
row_build(struct web_rows *t, struct wrow *r)
{
	struct view_row v;
	struct buf b;
	struct jw jw;

	free(r->json);
	r->json = NULL;
	r->jlen = 0;
	if (!r->have_doc)
		return;
	view_row_assemble(&v, &r->doc, r->frags, r->nfrags, r->owner);
	if (r->have_acks) {
		v.have_replicas = 1;
		for (size_t i = 0; i < r->acks.n; i++)
			view_row_ack(&v, r->acks.v[i].hash, r->acks.v[i].confirmed);
	}
	buf_init(&b);
	jw_init(&jw, &b);
	view_row_json(&v, &jw);
	r->rank = row_state(&v);
	view_row_free(&v);
	r->json = buf_steal(&b, &r->jlen);
	(void)t;
}

static void
mark(struct web_rows *t, struct wrow *r)
{
	if (!r->dirty) {
		r->dirty = 1;
		if (t->ndirty == t->capdirty) {
			t->capdirty = t->capdirty ? 2 * t->capdirty : 64;
			t->dirty = xrealloc(t->dirty, t->capdirty * sizeof(*t->dirty));
		}
		t->dirty[t->ndirty++] = r;
	}
	if (t->gather == 0)
		t->gather = stage_add_timer(t->w->st, GATHER_MS, rows_gather, t);
}

/* ---- the whole table ---- */

/* split - the "ns/name" and what follows it of a key under prefix; -1: not one */
static int
split(const char *key, const char *prefix, char *nsname, size_t len, const char **rest)
{
	size_t plen = strlen(prefix);
	const char *k, *slash, *end;

	if (strncmp(key, prefix, plen) != 0)
		return -1;
	k = key + plen;
	if ((slash = strchr(k, '/')) == NULL || slash == k)
		return -1;
	end = slash + 1 + strcspn(slash + 1, "/");
	if (end == slash + 1 || (size_t)(end - k) >= len)
		return -1;
	memcpy(nsname, k, (size_t)(end - k));
	nsname[end - k] = '\0';
	*rest = *end == '/' ? end + 1 : end;
	return 0;
}

/* apply - one key's new value (NULL: deleted) to its row; the row, or NULL */
static struct wrow *
apply(struct web_rows *t, int which, const char *key, const char *value, size_t vlen)
{
	char nsname[512];
	const char *rest;
	struct wrow *r;

	if (split(key, t->prefix[which], nsname, sizeof(nsname), &rest) < 0)
		return NULL;
	if ((which == W_STATUS) != (*rest != '\0'))
		return NULL;	/* a fragment is below ns/name; the others are it */
	if (value == NULL && (r = row_find(t, nsname)) == NULL)
		return NULL;
	r = row_get(t, nsname);
	if (which == W_RES) {
		int had = r->have_doc;

		row_set_doc(r, value, vlen, t->w->default_target);
		if (!had && r->have_doc)
			r->acks_due = t->loaded;	/* a new one: its acks, if any */
	} else if (which == W_STATUS) {
		row_set_frag(r, rest, value, vlen);
	} else {
		row_set_owner(r, value, vlen);
	}
	return r;
}

static void
reconcile_ack(void *arg, const char *ns, const char *name, const struct journal_ack_row *a)
{
	struct web_rows *t = arg;
	char key[512];
	struct wrow *r;

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if ((r = row_find(t, key)) != NULL)
		acks_add(&r->fresh, a->content_hash, a->confirmed);
}

static int
acks_same(const struct acks *a, const struct acks *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].confirmed != b->v[i].confirmed || strcmp(a->v[i].hash, b->v[i].hash))
			return 0;
	return 1;
}

/*
 * acks_reconcile - every row's acks from one query; the rows whose acks
 * differ are marked (all of them when marking is 0, at a load)
 */
static void
acks_reconcile(struct web_rows *t, int marking)
{
	struct journal *j = stage_journal(t->w->st);
	int ok;

	t->acks_full_at = now_ms() + ACK_FULL_MS;
	if (j == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		acks_clear(&t->v[i]->fresh);
	if (journal_acks_since(j, &t->ack_id, NULL, NULL) < 0)
		log_kv(LOG_WARN, "web: cannot read the journal's acks", "error",
		    journal_error(j), NULL);
	ok = journal_acks_all(j, reconcile_ack, t) >= 0;
	for (size_t i = 0; i < t->n; i++) {
		struct wrow *r = t->v[i];
		int same = r->have_acks == ok && (!ok || acks_same(&r->acks, &r->fresh));

		if (ok) {
			struct acks tmp = r->acks;

			r->acks = r->fresh;
			r->fresh = tmp;
		}
		acks_clear(&r->fresh);
		r->have_acks = ok;
		r->acks_due = 0;
		if (marking && !same)
			mark(t, r);
	}
}

/*
 * rows_load - the table read whole: the three prefixes listed, then the
 * acks.  The watches are open before (an event for what the list holds is
 * applied twice, to the same end).  On a failure the old table stays and
 * a retry is due.  0 or -1.
 */
static int
rows_load(struct web_rows *t)
{
	struct store *s = stage_store(t->w->st);
	struct store_list l[W_N];
	int64_t t0 = now_ms();
	char took[32], count[32];
	int i;

	for (i = 0; i < W_N; i++)
		if (store_list(s, t->prefix[i], &l[i]) < 0) {
			log_kv(LOG_WARN, "web: cannot list the decofiles; trying again", "prefix",
			    t->prefix[i], "error", store_error(s), NULL);
			while (--i >= 0)
				store_list_free(&l[i]);
			return -1;
		}
	rows_clear(t);
	for (i = 0; i < W_N; i++) {
		for (size_t k = 0; k < l[i].n; k++)
			(void)apply(t, i, l[i].kvs[k].key, l[i].kvs[k].value, l[i].kvs[k].vlen);
		store_list_free(&l[i]);
	}
	acks_reconcile(t, 0);
	for (size_t k = 0; k < t->n; k++)
		row_build(t, t->v[k]);
	t->loaded = 1;
	t->reload_due = 0;
	snprintf(took, sizeof(took), "%lld", (long long)(now_ms() - t0));
	snprintf(count, sizeof(count), "%zu", t->n);
	log_kv(LOG_INFO, "web: status rows loaded", "rows", count, "ms", took, NULL);
	return 0;
}

/* sweep - drop the rows with nothing left (no Decofile, fragment, lock) */
static void
sweep(struct web_rows *t)
{
	size_t k = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct wrow *r = t->v[i];

		if (!r->have_doc && r->nfrags == 0 && r->owner == NULL && !r->dirty)
			row_free(r);
		else
			t->v[k++] = r;
	}
	t->n = k;
}

/*
 * rows_flush - what is due now: a reload, or the changed rows built and
 * handed to the callback (json NULL: the row went)
 */
static void
rows_flush(struct web_rows *t)
{
	int gone = 0;

	if (t->gather != 0) {
		stage_cancel_timer(t->w->st, t->gather);
		t->gather = 0;
	}
	if (t->reload_due || !t->loaded) {
		if (rows_load(t) < 0) {
			t->gather = stage_add_timer(t->w->st, RETRY_MS, rows_gather, t);
			return;
		}
		if (t->cb != NULL)
			t->cb(t->arg, NULL, NULL, 0);
		return;
	}
	for (size_t i = 0; i < t->ndirty; i++) {
		struct wrow *r = t->dirty[i];

		r->dirty = 0;
		if (r->acks_due && r->have_doc)
			row_reload_acks(t, r);
		row_build(t, r);
		if (t->cb != NULL)
			t->cb(t->arg, r->key, r->json, r->jlen);
		if (r->json == NULL)
			gone = 1;
	}
	t->ndirty = 0;
	if (gone)
		sweep(t);
}

static void
rows_gather(struct stage *st, void *arg)
{
	struct web_rows *t = arg;

	(void)st;
	t->gather = 0;
	rows_flush(t);
}

static void
on_watch(struct web_rows *t, int which, const struct store_event *e)
{
	struct wrow *r;

	if (e->type == STORE_EV_RELIST) {
		log_kv(LOG_INFO, "web: a store watch lost its history; reading every row again",
		    "prefix", t->prefix[which], NULL);
		t->reload_due = 1;
		if (t->gather == 0)
			t->gather = stage_add_timer(t->w->st, 0, rows_gather, t);
		return;
	}
	if (t->reload_due || !t->loaded)
		return;		/* the load to come reads it */
	r = apply(t, which, e->key, e->type == STORE_EV_PUT ? e->value : NULL, e->vlen);
	if (r != NULL)
		mark(t, r);
}

static void
on_res(void *arg, const struct store_event *e)
{
	on_watch(arg, W_RES, e);
}

static void
on_status(void *arg, const struct store_event *e)
{
	on_watch(arg, W_STATUS, e);
}

static void
on_lock(void *arg, const struct store_event *e)
{
	on_watch(arg, W_LOCK, e);
}

static void
new_ack(void *arg, const char *ns, const char *name)
{
	struct web_rows *t = arg;
	char key[512];
	struct wrow *r;

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if ((r = row_find(t, key)) != NULL && r->have_doc) {
		r->acks_due = 1;
		mark(t, r);
	}
}

/* on_poll - the journal's new acks (another stage's process writes them) */
static void
on_poll(struct stage *st, void *arg)
{
	struct web_rows *t = arg;
	struct journal *j = stage_journal(st);

	t->poll = stage_add_timer(st, ACK_POLL_MS, on_poll, t);
	if (j == NULL || !t->loaded || t->reload_due)
		return;
	if (now_ms() >= t->acks_full_at)
		acks_reconcile(t, 1);
	else if (journal_acks_since(j, &t->ack_id, new_ack, t) < 0)
		log_kv(LOG_WARN, "web: cannot read the journal's new acks", "error",
		    journal_error(j), NULL);
}

static void
watches_close(struct web_rows *t)
{
	for (int i = 0; i < W_N; i++) {
		store_watch_close(t->watch[i], t->att[i]);
		t->watch[i] = NULL;
		t->att[i] = NULL;
	}
}

static void
watches_open(struct web_rows *t)
{
	static const store_watch_cb cbs[W_N] = { on_res, on_status, on_lock };

	for (int i = 0; i < W_N; i++)
		t->watch[i] = store_watch_open(t->w->st, t->prefix[i], cbs[i], t, 1000,
		    &t->att[i]);
}

struct web_rows *
web_rows_new(struct web *w, web_rows_cb cb, void *arg)
{
	struct web_rows *t = xcalloc(1, sizeof(*t));
	char *lock = key_lock("", "");	/* ".../locks//": the prefix is before the last */

	lock[strlen(lock) - 1] = '\0';
	t->w = w;
	t->cb = cb;
	t->arg = arg;
	t->prefix[W_RES] = key_resource_prefix("decofiles", NULL);
	t->prefix[W_STATUS] = key_status_kind_prefix("decofiles");
	t->prefix[W_LOCK] = lock;
	watches_open(t);
	if (rows_load(t) < 0)
		t->gather = stage_add_timer(w->st, RETRY_MS, rows_gather, t);
	t->poll = stage_add_timer(w->st, ACK_POLL_MS, on_poll, t);
	return t;
}

void
web_rows_reload(struct web_rows *t)
{
	watches_close(t);
	watches_open(t);
	t->reload_due = 1;
	rows_flush(t);
}

void
web_rows_free(struct web_rows *t)
{
	if (t == NULL)
		return;
	if (t->gather != 0)
		stage_cancel_timer(t->w->st, t->gather);
	if (t->poll != 0)
		stage_cancel_timer(t->w->st, t->poll);
	watches_close(t);
	rows_clear(t);
	free(t->v);
	free(t->dirty);
	for (int i = 0; i < W_N; i++)
		free(t->prefix[i]);
	free(t);
}

static int
by_rank(const void *a, const void *b)
{
	const struct wrow *x = *(struct wrow *const *)a, *y = *(struct wrow *const *)b;

	return x->rank != y->rank ? x->rank - y->rank : strcmp(x->key, y->key);
}

size_t
web_rows_texts(struct web_rows *t, int display, struct web_text **out)
{
	struct wrow **v;
	size_t n = 0;

	rows_flush(t);
	*out = NULL;
	if (!t->loaded)
		return 0;
	v = xcalloc(t->n + 1, sizeof(*v));
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i]->json != NULL)
			v[n++] = t->v[i];
	if (display)
		qsort(v, n, sizeof(*v), by_rank);
	*out = xcalloc(n + 1, sizeof(**out));
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (struct web_text){ v[i]->json, v[i]->jlen };
	free(v);
	return n;
}

int
web_rows_ready(struct web_rows *t)
{
	if (!t->loaded)
		rows_flush(t);
	return t->loaded;
}

int
web_rows_push(struct web_rows *t, const struct web_push *p,
    int (*fn)(void *arg, const char *ns, const char *name), void *arg)
{
	int n = 0, failed = 0;

	if (!web_rows_ready(t))
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		struct wrow *r = t->v[i];

		if (r->have_doc && r->doc.ns != NULL && r->doc.name != NULL &&
		    web_push_source_matches(&r->push, p)) {
			if (fn(arg, r->doc.ns, r->doc.name) < 0)
				failed = 1;	/* the others are still asked */
			else
				n++;
		}
	}
	return failed ? -2 : n;
}
