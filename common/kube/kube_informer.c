/*
 * kube_informer - a cache of one kind, kept current as client-go's
 * reflector does: list (pages of 500), then watch from the list's
 * resourceVersion with bookmarks; a watch that ends is resumed from the last
 * version seen, one that fails is retried with backoff, and 410 Gone (the
 * version was compacted away) re-lists and delivers the differences.  It
 * owns the cached objects (yajl trees keyed "namespace/name").
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/backoff.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/kube_impl.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/util.h"

#define INF_PAGE		500
#define INF_BACKOFF_MIN_MS	250
#define INF_BACKOFF_MAX_MS	30000
#define INF_WATCH_MIN_S		300	/* server-side watch timeout, like client-go */
#define INF_LINE_MAX		(64u << 20)
/* metadata only: the server sends PartialObjectMetadata, falling back to the full object */
#define ACCEPT_META_LIST	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
#define ACCEPT_META		"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json"

struct ent {
	struct ent *next;
	char *key;
	yajl_val obj;
	int seen;		/* re-list: present in the new list */
};

struct table {
	struct ent **b;
	size_t nb, n;
};

enum inf_state { INF_LISTING, INF_WATCHING, INF_WAITING };

struct kube_informer {
	struct kube *k;
	const struct kube_kind *kd;
	char *ns, *sel;		/* sel escaped, or NULL */
	char *fsel;		/* field selector escaped, or NULL */
	int meta;		/* metadata only (PartialObjectMetadata) */
	kube_event_fn fn;
	void *arg;
	struct table t;
	enum inf_state state;
	int synced;
	char rv[64];
	struct kube_call *call;	/* the list page or watch in flight */
	/* listing */
	struct table fresh;
	char *cont;
	int64_t list_t0, list_work;	/* when the list began; ms spent delivering it */
	unsigned list_pages;
	/*
	 * Pages not yet delivered, oldest first: each next one is asked for
	 * as soon as one lands (also from kube_progress, while the program
	 * is still starting), and the pump delivers one a turn, so the
	 * consumer works while the server prepares the next.  list_end: the
	 * last page is among them (the list ends when it is delivered).
	 */
	struct ipage *pages, **pages_tail;
	int list_end;
	/* watching */
	struct buf in;		/* bytes of the stream not yet handled */
	int gone;		/* the stream said 410: re-list when it ends */
	int relist;		/* an error event asks for a re-list */
	int64_t backoff;
	struct kube_informer_stats stats;
};

struct ipage {
	yajl_val *objs;
	size_t n;
	struct ipage *next;
};

/* ---- the table ---- */

static struct ent **
t_slot(const struct table *t, const char *key)
{
	struct ent **e;

	if (t->nb == 0)
		return NULL;
	for (e = &t->b[str_hash(key) & (t->nb - 1)]; *e != NULL; e = &(*e)->next)
		if (strcmp((*e)->key, key) == 0)
			return e;
	return e;
}

static void
t_grow(struct table *t)
{
	size_t nb = t->nb == 0 ? 64 : t->nb * 2;
	struct ent **b = xcalloc(nb, sizeof(*b));

	for (size_t i = 0; i < t->nb; i++) {
		struct ent *e = t->b[i], *next;

		for (; e != NULL; e = next) {
			size_t j = str_hash(e->key) & (nb - 1);

			next = e->next;
			e->next = b[j];
			b[j] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
}

static struct ent *
t_get(const struct table *t, const char *key)
{
	struct ent **e = t_slot(t, key);

	return e != NULL ? *e : NULL;
}

/* t_put - store obj under key (takes obj); returns the old object (caller frees) or NULL */
static yajl_val
t_put(struct table *t, const char *key, yajl_val obj)
{
	struct ent **s, *e;
	yajl_val old;

	if (t->n + 1 > t->nb)
		t_grow(t);
	s = t_slot(t, key);
	if (*s != NULL) {
		old = (*s)->obj;
		(*s)->obj = obj;
		return old;
	}
	e = xcalloc(1, sizeof(*e));
	e->key = xstrdup(key);
	e->obj = obj;
	*s = e;
	t->n++;
	return NULL;
}

/* t_del - remove key; returns its object (caller frees) or NULL */
static yajl_val
t_del(struct table *t, const char *key)
{
	struct ent **s = t_slot(t, key), *e;
	yajl_val obj;

	if (s == NULL || *s == NULL)
		return NULL;
	e = *s;
	*s = e->next;
	obj = e->obj;
	free(e->key);
	free(e);
	t->n--;
	return obj;
}

static void
t_free(struct table *t)
{
	for (size_t i = 0; i < t->nb; i++) {
		struct ent *e = t->b[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			yajl_tree_free(e->obj);
			free(e->key);
			free(e);
		}
	}
	free(t->b);
	memset(t, 0, sizeof(*t));
}

static char *
obj_key(yajl_val obj)
{
	return xasprintf("%s/%s", kube_obj_ns(obj), kube_obj_name(obj));
}

/* ---- list, then watch ---- */

static void list_page(struct kube_informer *inf, int64_t delay);
static void watch_start(struct kube_informer *inf, int64_t delay);

static int64_t
next_backoff(struct kube_informer *inf)
{
	int64_t b = inf->backoff == 0 ? INF_BACKOFF_MIN_MS : inf->backoff * 2;

	if (b > INF_BACKOFF_MAX_MS)
		b = INF_BACKOFF_MAX_MS;
	inf->backoff = b;
	return backoff_jitter(b);
}

/*
 * list_take - one page of a list (its n objects, taken): each is delivered
 * (added, or modified when its resourceVersion moved) and its key noted
 * for list_done_all
 */
static void
list_take(struct kube_informer *inf, yajl_val *objs, size_t n)
{
	int64_t t0 = now_ms();

	for (size_t i = 0; i < n; i++) {
		yajl_val o = objs[i], old;
		char *key = obj_key(o);
		struct ent *cur = t_get(&inf->t, key);

		objs[i] = NULL;
		yajl_tree_free(t_put(&inf->fresh, key, NULL));
		if (cur != NULL && strcmp(kube_obj_rv(cur->obj), kube_obj_rv(o)) == 0) {
			yajl_tree_free(o);
			free(key);
			continue;
		}
		old = t_put(&inf->t, key, o);
		inf->stats.events++;
		inf->fn(inf->arg, old != NULL ? KUBE_MODIFIED : KUBE_ADDED, o, old);
		yajl_tree_free(old);
		free(key);
	}
	inf->list_work += now_ms() - t0;
}

/* page_drop - forget the pages not yet delivered (the list starts again) */
static void
page_drop(struct kube_informer *inf)
{
	struct ipage *pg;

	while ((pg = inf->pages) != NULL) {
		inf->pages = pg->next;
		for (size_t i = 0; i < pg->n; i++)
			yajl_tree_free(pg->objs[i]);
		free(pg->objs);
		free(pg);
	}
	inf->pages_tail = &inf->pages;
	inf->list_end = 0;
}

static void list_done_all(struct kube_informer *inf);

/* page_deliver - the oldest page kept for the pump; the list's end after its last */
static void
page_deliver(struct kube_informer *inf)
{
	struct ipage *pg = inf->pages;
	char objects[32], pages[32], ms[32], work[32];

	if ((inf->pages = pg->next) == NULL)
		inf->pages_tail = &inf->pages;
	list_take(inf, pg->objs, pg->n);
	free(pg->objs);
	free(pg);
	if (inf->pages != NULL) {
		kube_mark_pending(inf->k);	/* the next one on the next turn */
		return;
	}
	if (!inf->list_end)
		return;
	inf->list_end = 0;
	inf->stats.lists++;
	snprintf(objects, sizeof(objects), "%zu", inf->fresh.n);
	snprintf(pages, sizeof(pages), "%u", inf->list_pages);
	snprintf(ms, sizeof(ms), "%lld", (long long)(now_ms() - inf->list_t0));
	snprintf(work, sizeof(work), "%lld", (long long)inf->list_work);
	log_kv(LOG_INFO, "kube listed", "resource", inf->kd->resource, "objects", objects,
	    "pages", pages, "ms", ms, "deliver_ms", work, NULL);
	list_done_all(inf);
}

/* list_done_all - the list is whole: what it did not hold was deleted; then watch */
static void
list_done_all(struct kube_informer *inf)
{
	for (size_t i = 0; i < inf->t.nb; i++) {
		struct ent *e = inf->t.b[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			if (t_get(&inf->fresh, e->key) == NULL) {
				char *key = xstrdup(e->key);
				yajl_val obj = t_del(&inf->t, key);

				inf->stats.events++;
				inf->fn(inf->arg, KUBE_DELETED, obj, NULL);
				yajl_tree_free(obj);
				free(key);
			}
		}
	}
	t_free(&inf->fresh);
	inf->synced = 1;
	inf->fn(inf->arg, KUBE_SYNCED, NULL, NULL);
	watch_start(inf, 0);
}

/*
 * on_list - a page landed: kept for the pump, the next asked for.  Runs
 * from kube_progress too (kube_call_early): it calls no handler.
 */
static void
on_list(void *arg, const struct kube_resp *r)
{
	struct kube_informer *inf = arg;
	struct ipage *pg;
	yajl_val items;
	const char *c, *v;

	inf->call = NULL;
	if (r->status == 410 && inf->cont != NULL) {
		/* the continue token expired: list again from the start */
		page_drop(inf);
		t_free(&inf->fresh);
		free(inf->cont);
		inf->cont = NULL;
		list_page(inf, 0);
		return;
	}
	if (!kube_ok(r) || r->json == NULL) {
		int64_t d = next_backoff(inf);

		log_kv(LOG_WARN, "kube list failed", "resource", inf->kd->resource,
		    "error", r->err, NULL);
		page_drop(inf);
		t_free(&inf->fresh);
		free(inf->cont);
		inf->cont = NULL;
		list_page(inf, d);
		return;
	}
	pg = xcalloc(1, sizeof(*pg));
	if ((items = json_get(r->json, "items", NULL)) != NULL && YAJL_IS_ARRAY(items) &&
	    items->u.array.len > 0) {
		pg->n = items->u.array.len;
		pg->objs = xcalloc(pg->n, sizeof(*pg->objs));
		for (size_t i = 0; i < pg->n; i++) {
			pg->objs[i] = items->u.array.values[i];
			items->u.array.values[i] = NULL;	/* ours now */
		}
	}
	*inf->pages_tail = pg;
	inf->pages_tail = &pg->next;
	v = json_get_str(r->json, "metadata", "resourceVersion", NULL);
	snprintf(inf->rv, sizeof(inf->rv), "%s", v != NULL ? v : "");
	c = json_get_str(r->json, "metadata", "continue", NULL);
	free(inf->cont);
	inf->cont = c != NULL && *c != '\0' ? kube_escape(c) : NULL;
	inf->list_pages++;
	/* the next page on the wire first (the client's next round), then this one */
	if (inf->cont != NULL)
		list_page(inf, 0);
	else
		inf->list_end = 1;
	kube_mark_pending(inf->k);
}

static void
list_page(struct kube_informer *inf, int64_t delay)
{
	struct buf q;
	char *path;

	inf->state = INF_LISTING;
	if (inf->cont == NULL) {	/* a list begins */
		inf->list_t0 = now_ms() + delay;
		inf->list_work = 0;
		inf->list_pages = 0;
	}
	buf_init(&q);
	buf_printf(&q, "limit=%d", INF_PAGE);
	if (inf->sel != NULL)
		buf_printf(&q, "&labelSelector=%s", inf->sel);
	if (inf->fsel != NULL)
		buf_printf(&q, "&fieldSelector=%s", inf->fsel);
	if (inf->cont != NULL)
		buf_printf(&q, "&continue=%s", inf->cont);
	path = kube_path(inf->kd, inf->ns, NULL, NULL, q.data);
	buf_free(&q);
	inf->call = kube_send_later(inf->k, "GET", path, inf->meta ? ACCEPT_META_LIST : NULL,
	    delay, on_list, inf);
	kube_call_early(inf->call);
	free(path);
}

static void
relist(struct kube_informer *inf, int64_t delay)
{
	metrics_watch_relist("kube");
	page_drop(inf);
	t_free(&inf->fresh);
	free(inf->cont);
	inf->cont = NULL;
	list_page(inf, delay);
}

static void
on_watch_data(void *arg, const char *p, size_t n)
{
	struct kube_informer *inf = arg;

	if (inf->in.len + n > INF_LINE_MAX) {
		log_kv(LOG_WARN, "kube watch event too large: re-listing", "resource",
		    inf->kd->resource, NULL);
		inf->relist = 1;
		return;
	}
	buf_add(&inf->in, p, n);
}

/* handle_event - one line of the watch stream */
static void
handle_event(struct kube_informer *inf, const char *line, size_t len)
{
	struct json_error je;
	yajl_val ev = json_parse(line, len, &je), obj;
	const char *type, *v;
	char *key;
	int deleted;

	if (ev == NULL) {
		log_kv(LOG_WARN, "kube watch: unreadable event, re-listing", "resource",
		    inf->kd->resource, "error", je.msg, NULL);
		inf->relist = 1;
		return;
	}
	type = json_get_str(ev, "type", NULL);
	obj = json_get(ev, "object", NULL);
	if (type == NULL || obj == NULL || !YAJL_IS_OBJECT(obj)) {
		yajl_tree_free(ev);
		return;
	}
	if (strcmp(type, "ERROR") == 0) {
		int64_t code = json_get_int(obj, 0, "code", NULL);

		if (code == 410) {
			inf->gone = 1;
			inf->stats.gone++;
		} else {
			log_kv(LOG_WARN, "kube watch error event", "resource", inf->kd->resource,
			    "message", json_get_str(obj, "message", NULL), NULL);
			inf->relist = 1;
		}
		yajl_tree_free(ev);
		return;
	}
	if ((v = kube_obj_rv(obj)) != NULL && *v != '\0')
		snprintf(inf->rv, sizeof(inf->rv), "%s", v);
	if (strcmp(type, "BOOKMARK") == 0) {
		inf->stats.bookmarks++;
		yajl_tree_free(ev);
		return;
	}
	deleted = strcmp(type, "DELETED") == 0;
	/* take obj out of the event's tree (type dies with it) */
	for (size_t i = 0; i < ev->u.object.len; i++)
		if (ev->u.object.values[i] == obj)
			ev->u.object.values[i] = NULL;
	yajl_tree_free(ev);
	key = obj_key(obj);
	inf->stats.events++;
	inf->backoff = 0;
	if (deleted) {
		yajl_val old = t_del(&inf->t, key);

		inf->fn(inf->arg, KUBE_DELETED, obj, NULL);
		yajl_tree_free(old);
		yajl_tree_free(obj);
	} else {
		yajl_val old = t_put(&inf->t, key, obj);

		inf->fn(inf->arg, old != NULL ? KUBE_MODIFIED : KUBE_ADDED, obj, old);
		yajl_tree_free(old);
	}
	free(key);
}

int
kube_informer_pump(struct kube_informer *inf)
{
	struct buf work;
	char *nl;
	size_t used = 0;

	if (inf->pages != NULL) {
		page_deliver(inf);
		return 0;
	}
	if (inf->state != INF_WATCHING || inf->in.len == 0)
		return 0;
	/*
	 * Work on a buffer of our own: a callback may call kube_do(), which
	 * lets the stream append to inf->in meanwhile.
	 */
	work = inf->in;
	buf_init(&inf->in);
	while (!inf->gone && !inf->relist && used < work.len &&
	    (nl = memchr(work.data + used, '\n', work.len - used)) != NULL) {
		size_t n = (size_t)(nl - (work.data + used));

		if (n > 0)
			handle_event(inf, work.data + used, n);
		used += n + 1;
	}
	if (used < work.len) {
		struct buf rest;

		buf_init(&rest);
		buf_add(&rest, work.data + used, work.len - used);
		if (inf->in.len > 0)
			buf_add(&rest, inf->in.data, inf->in.len);
		buf_free(&inf->in);
		inf->in = rest;
	}
	buf_free(&work);
	if (inf->gone || inf->relist) {
		/* drop the stream now and list again */
		kube_cancel(inf->call);
		inf->call = NULL;
		buf_reset(&inf->in);
		inf->relist = 0;
		if (inf->gone) {
			inf->gone = 0;
			log_kv(LOG_INFO, "kube watch: resourceVersion gone (410), re-listing",
			    "resource", inf->kd->resource, NULL);
			relist(inf, 0);
		} else
			relist(inf, next_backoff(inf));
		return 0;
	}
	return inf->in.len > 0 && memchr(inf->in.data, '\n', inf->in.len) != NULL;
}

static void
on_watch_end(void *arg, const struct kube_resp *r)
{
	struct kube_informer *inf = arg;

	inf->call = NULL;
	kube_informer_pump(inf);
	if (inf->state != INF_WATCHING)
		return;		/* pump started a re-list */
	buf_reset(&inf->in);
	if (r->status == 410) {
		inf->stats.gone++;
		log_kv(LOG_INFO, "kube watch: resourceVersion gone (410), re-listing",
		    "resource", inf->kd->resource, NULL);
		relist(inf, 0);
	} else if (kube_ok(r)) {
		/* the server's timeout, or a clean close: go on from where we are */
		metrics_watch_reconnect("kube");
		watch_start(inf, 0);
	} else if (r->status == 0) {
		inf->stats.reconnects++;
		metrics_watch_reconnect("kube");
		log_kv(LOG_INFO, "kube watch broken, reconnecting", "resource",
		    inf->kd->resource, "error", r->err, NULL);
		watch_start(inf, next_backoff(inf));
	} else {
		log_kv(LOG_WARN, "kube watch refused, re-listing", "resource",
		    inf->kd->resource, "error", r->err, NULL);
		relist(inf, next_backoff(inf));
	}
}

static void
watch_start(struct kube_informer *inf, int64_t delay)
{
	struct buf q;
	char *path;
	int secs = INF_WATCH_MIN_S + (int)(backoff_jitter(INF_WATCH_MIN_S * 1000) / 1000) / 2;

	inf->state = INF_WATCHING;
	buf_reset(&inf->in);
	buf_init(&q);
	buf_printf(&q, "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d", secs);
	if (inf->rv[0] != '\0')
		buf_printf(&q, "&resourceVersion=%s", inf->rv);
	if (inf->sel != NULL)
		buf_printf(&q, "&labelSelector=%s", inf->sel);
	if (inf->fsel != NULL)
		buf_printf(&q, "&fieldSelector=%s", inf->fsel);
	path = kube_path(inf->kd, inf->ns, NULL, NULL, q.data);
	buf_free(&q);
	inf->stats.watches++;
	inf->call = kube_send_stream(inf->k, path, inf->meta ? ACCEPT_META : NULL, delay, (int64_t)(secs + 30) * 1000,
	    on_watch_data, on_watch_end, inf);
	free(path);
}

/* ---- public ---- */

struct kube_informer *
kube_informer_new(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *label_selector, kube_event_fn fn, void *arg)
{
	return kube_informer_new_fs(k, kd, ns, label_selector, NULL, fn, arg);
}

static struct kube_informer *
informer_new(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *label_selector, const char *field_selector, int meta, kube_event_fn fn,
    void *arg)
{
	struct kube_informer *inf = xcalloc(1, sizeof(*inf));

	inf->meta = meta;
	inf->k = k;
	inf->kd = kd;
	inf->ns = ns != NULL && *ns != '\0' ? xstrdup(ns) : NULL;
	inf->sel = label_selector != NULL && *label_selector != '\0' ?
	    kube_escape(label_selector) : NULL;
	inf->fsel = field_selector != NULL && *field_selector != '\0' ?
	    kube_escape(field_selector) : NULL;
	inf->fn = fn;
	inf->arg = arg;
	inf->pages_tail = &inf->pages;
	buf_init(&inf->in);
	kube_informer_register(k, inf);
	list_page(inf, 0);
	return inf;
}

struct kube_informer *
kube_informer_new_fs(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *label_selector, const char *field_selector, kube_event_fn fn, void *arg)
{
	return informer_new(k, kd, ns, label_selector, field_selector, 0, fn, arg);
}

struct kube_informer *
kube_informer_new_meta(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *label_selector, kube_event_fn fn, void *arg)
{
	return informer_new(k, kd, ns, label_selector, NULL, 1, fn, arg);
}

void
kube_informer_free(struct kube_informer *inf)
{
	if (inf == NULL)
		return;
	kube_informer_unregister(inf->k, inf);
	kube_cancel(inf->call);
	t_free(&inf->t);
	t_free(&inf->fresh);
	page_drop(inf);
	buf_free(&inf->in);
	free(inf->cont);
	free(inf->ns);
	free(inf->sel);
	free(inf->fsel);
	free(inf);
}

int
kube_informer_synced(const struct kube_informer *inf)
{
	return inf->synced;
}

yajl_val
kube_informer_get(const struct kube_informer *inf, const char *ns, const char *name)
{
	char *key = xasprintf("%s/%s", ns != NULL ? ns : "", name);
	struct ent *e = t_get(&inf->t, key);

	free(key);
	return e != NULL ? e->obj : NULL;
}

size_t
kube_informer_count(const struct kube_informer *inf)
{
	return inf->t.n;
}

void
kube_informer_foreach(const struct kube_informer *inf,
    void (*fn)(void *arg, yajl_val obj), void *arg)
{
	for (size_t i = 0; i < inf->t.nb; i++)
		for (struct ent *e = inf->t.b[i]; e != NULL; e = e->next)
			fn(arg, e->obj);
}

const char *
kube_informer_rv(const struct kube_informer *inf)
{
	return inf->rv;
}

void
kube_informer_get_stats(const struct kube_informer *inf, struct kube_informer_stats *s)
{
	*s = inf->stats;
}
