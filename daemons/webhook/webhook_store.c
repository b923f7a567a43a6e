/*
 * webhook_store - the webhook's side of the store: the in-memory index
 * kept level by a list, then a watch, of the Decofiles and the records of
 * injected Services (rebuilt whole when a watch loses history), and those
 * records written back by a writer thread with its own store handle, so a
 * slow store never delays an answer.  Owns the index, the watches and the
 * writer.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/webhook/webhook_store.h"

#define WATCH_TICK_MS	1000

/* one store write of the writer thread; val NULL: delete */
struct wop {
	char *key, *val;
	struct wop *next;
};

struct writer {
	pthread_t th;
	int up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct wop *head, **tail;
	size_t pending;		/* (mu) */
	unsigned long errors;	/* (mu) */
	int stop;		/* (mu) */
	struct store *s;	/* the thread's own handle */
};

struct wh_store {
	struct stage *st;
	struct wh_index *ix;
	struct store_watch *df_watch, *svc_watch;
	struct stage_watch *df_sw, *svc_sw;
	char *df_prefix, *svc_prefix;
	char *def_target;
	struct writer w;
};

/* ---- the writer thread: records of injected Services to the store ---- */

static void *
writer_main(void *arg)
{
	struct writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct wop *o;
		int rc;

		while (w->head == NULL && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->head == NULL)
			break;
		o = w->head;
		pthread_mutex_unlock(&w->mu);
		rc = o->val != NULL ? store_put(w->s, o->key, o->val, strlen(o->val)) :
		    store_delete(w->s, o->key);
		pthread_mutex_lock(&w->mu);
		if (rc < 0) {
			struct timespec ts;

			w->errors++;
			log_kv(LOG_WARN, "cannot record an injected Service; will retry", "key",
			    o->key, "error", store_error(w->s), NULL);
			if (w->stop)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
			continue;
		}
		w->head = o->next;
		if (w->head == NULL)
			w->tail = &w->head;
		w->pending--;
		free(o->key);
		free(o->val);
		free(o);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* writer_push - queue a put (val) or delete (val NULL) of key; takes both */
static void
writer_push(struct writer *w, char *key, char *val)
{
	struct wop *o = xcalloc(1, sizeof(*o));

	o->key = key;
	o->val = val;
	pthread_mutex_lock(&w->mu);
	*w->tail = o;
	w->tail = &o->next;
	w->pending++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* wh_store_track - remember (or forget) which Decofile a Service uses */
void
wh_store_track(struct wh_store *ws, const struct wh_result *r)
{
	char at[40];
	struct buf b;
	struct jw j;

	if (r->track == WH_TRACK_SET) {
		if (!wh_index_set_service(ws->ix, r->ns, r->service, r->decofile))
			return;
		rfc3339_now(at, sizeof(at));
		buf_init(&b);
		jw_init(&j, &b);
		jw_obj(&j);
		jw_key(&j, "decofile");
		jw_str(&j, r->decofile);
		jw_key(&j, "injectedAt");
		jw_str(&j, at);
		jw_end_obj(&j);
		writer_push(&ws->w, key_injected(r->ns, r->service), buf_steal(&b, NULL));
	} else if (r->track == WH_TRACK_DROP) {
		if (wh_index_drop_service(ws->ix, r->ns, r->service))
			writer_push(&ws->w, key_injected(r->ns, r->service), NULL);
	}
}

/* ---- the store: list, then watch ---- */

static void
df_event(struct wh_store *ws, int put, const char *key, const char *val, size_t len)
{
	char kind[254], ns[254], name[254];

	if (key_parse_resource(key, kind, ns, name) < 0 || strcmp(kind, "decofiles") != 0)
		return;
	if (!put)
		wh_index_del_decofile(ws->ix, ns, name);
	else if (wh_index_put_decofile(ws->ix, ns, name, val, len, ws->def_target) < 0)
		log_kv(LOG_WARN, "a stored Decofile does not parse; ignored", "ns", ns, "name",
		    name, NULL);
}

static void
svc_event(struct wh_store *ws, int put, const char *key, const char *val, size_t len)
{
	char ns[254], svc[254];
	yajl_val v;

	if (strncmp(key, ws->svc_prefix, strlen(ws->svc_prefix)) != 0 ||
	    sscanf(key + strlen(ws->svc_prefix), "%253[^/]/%253[^/]", ns, svc) != 2)
		return;
	if (!put) {
		wh_index_drop_service(ws->ix, ns, svc);
		return;
	}
	if ((v = json_parse(val, len, NULL)) != NULL &&
	    json_get_str(v, "decofile", NULL) != NULL)
		wh_index_set_service(ws->ix, ns, svc, json_get_str(v, "decofile", NULL));
	yajl_tree_free(v);
}

/*
 * rebuild - a new index from a listing of both prefixes (at start, and when
 * a watch lost history), swapped in only when both listings succeeded
 */
static int
rebuild(struct wh_store *ws)
{
	struct store *s = stage_store(ws->st);
	struct store_list dl, sl;
	struct wh_index *old = ws->ix;

	if (store_list(s, ws->df_prefix, &dl) < 0) {
		log_kv(LOG_ERROR, "cannot list Decofiles", "error", store_error(s), NULL);
		return -1;
	}
	if (store_list(s, ws->svc_prefix, &sl) < 0) {
		log_kv(LOG_ERROR, "cannot list injected Services", "error", store_error(s), NULL);
		store_list_free(&dl);
		return -1;
	}
	ws->ix = wh_index_new();
	for (size_t i = 0; i < dl.n; i++)
		df_event(ws, 1, dl.kvs[i].key, dl.kvs[i].value, dl.kvs[i].vlen);
	for (size_t i = 0; i < sl.n; i++)
		svc_event(ws, 1, sl.kvs[i].key, sl.kvs[i].value, sl.kvs[i].vlen);
	store_list_free(&dl);
	store_list_free(&sl);
	wh_index_free(old);
	return 0;
}

static void
on_df_watch(void *arg, const struct store_event *ev)
{
	struct wh_store *ws = arg;

	if (ev->type == STORE_EV_RELIST)
		rebuild(ws);
	else
		df_event(ws, ev->type == STORE_EV_PUT, ev->key, ev->value, ev->vlen);
}

static void
on_svc_watch(void *arg, const struct store_event *ev)
{
	struct wh_store *ws = arg;

	if (ev->type == STORE_EV_RELIST)
		rebuild(ws);
	else
		svc_event(ws, ev->type == STORE_EV_PUT, ev->key, ev->value, ev->vlen);
}

struct wh_store *
wh_store_new(struct stage *st, const char *def_target)
{
	struct wh_store *ws = xcalloc(1, sizeof(*ws));
	struct conf *cf = stage_conf(st);
	char err[512];
	int rv;

	ws->st = st;
	ws->def_target = xstrdup(def_target);
	ws->ix = wh_index_new();
	pthread_mutex_init(&ws->w.mu, NULL);
	pthread_cond_init(&ws->w.cv, NULL);
	ws->w.tail = &ws->w.head;

	/* the index first, so the first request already has answers: watch, then list */
	ws->df_prefix = key_resource_prefix("decofiles", NULL);
	ws->svc_prefix = key_injected_prefix();
	if ((ws->df_watch = store_watch_open(st, ws->df_prefix, on_df_watch, ws,
	    WATCH_TICK_MS, &ws->df_sw)) == NULL ||
	    (ws->svc_watch = store_watch_open(st, ws->svc_prefix, on_svc_watch, ws,
	    WATCH_TICK_MS, &ws->svc_sw)) == NULL)
		goto fail;
	if (rebuild(ws) < 0)
		goto fail;

	/* the records' writer: its own store handle, used by its thread only */
	if ((ws->w.s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL) {
		log_kv(LOG_ERROR, "cannot open the store for the writer", "error", err, NULL);
		goto fail;
	}
	if ((rv = pthread_create(&ws->w.th, NULL, writer_main, &ws->w)) != 0) {
		log_kv(LOG_ERROR, "cannot start the writer thread", "error", strerror(rv), NULL);
		goto fail;
	}
	ws->w.up = 1;
	return ws;
fail:
	wh_store_free(ws);
	return NULL;
}

void
wh_store_free(struct wh_store *ws)
{
	struct wop *o;

	if (ws == NULL)
		return;
	if (ws->w.up) {
		pthread_mutex_lock(&ws->w.mu);
		ws->w.stop = 1;
		pthread_cond_signal(&ws->w.cv);
		pthread_mutex_unlock(&ws->w.mu);
		pthread_join(ws->w.th, NULL);
	}
	while ((o = ws->w.head) != NULL) {
		ws->w.head = o->next;
		log_kv(LOG_WARN, "record of an injected Service not written", "key", o->key,
		    NULL);
		free(o->key);
		free(o->val);
		free(o);
	}
	store_close(ws->w.s);
	store_watch_close(ws->df_watch, ws->df_sw);
	store_watch_close(ws->svc_watch, ws->svc_sw);
	wh_index_free(ws->ix);
	pthread_mutex_destroy(&ws->w.mu);
	pthread_cond_destroy(&ws->w.cv);
	free(ws->df_prefix);
	free(ws->svc_prefix);
	free(ws->def_target);
	free(ws);
}

struct wh_index *
wh_store_index(const struct wh_store *ws)
{
	return ws->ix;
}

void
wh_store_counts(struct wh_store *ws, size_t *pending, unsigned long *errors)
{
	pthread_mutex_lock(&ws->w.mu);
	*pending = ws->w.pending;
	*errors = ws->w.errors;
	pthread_mutex_unlock(&ws->w.mu);
}
