/*
 * web_events - GET /api/v1/events: the status page's live updates as
 * Server-Sent Events, fed by two store watches (the Decofiles and their
 * status fragments).  A new client gets a "snapshot" (the whole status
 * list, as /api/v1/status), then one "row" per Decofile that changed (as
 * an element of that list) or "delete".  Changes are gathered for a few
 * milliseconds so a burst of fragment writes makes one row.  A client's
 * connection is suspended in libmicrohttpd while it has nothing to read
 * and resumed when it has; one that falls too far behind is closed (the
 * browser reconnects and gets a fresh snapshot).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/view.h"
#include "daemons/web/web.h"

#define GATHER_MS	20
#define CLIENT_MAX	(4u << 20)	/* bytes a slow client may have waiting */
#define DIRTY_MAX	4096		/* more changed at once: one snapshot */

struct client {
	struct web_events *ev;
	struct MHD_Connection *c;
	struct buf out;
	size_t off;
	int suspended, lagging;
	struct client *next;
};

struct web_events {
	struct web *w;
	char *res_prefix, *st_prefix;
	struct store_watch *res_watch, *st_watch;
	struct stage_watch *res_att, *st_att;
	struct client *clients;
	char **dirty;		/* "ns/name" */
	size_t ndirty;
	int relist;		/* everything changed: send snapshots */
	int64_t timer;
	unsigned long sent;
};

/* snapshot - "event: snapshot" with every Decofile's status row */
static void
snapshot(struct web_events *ev, struct buf *out)
{
	struct store *s = stage_store(ev->w->st);
	struct store_list l;
	struct buf b;
	struct jw jw;

	buf_init(&b);
	jw_init(&jw, &b);
	jw_arr(&jw);
	if (store_list(s, ev->res_prefix, &l) == 0) {
		struct view_bulk *vb = view_bulk_load(s, stage_journal(ev->w->st));

		for (size_t i = 0; i < l.n; i++) {
			yajl_val doc = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL);
			struct view_row r;

			if (doc == NULL)
				continue;
			view_bulk_row(vb, doc, ev->w->default_target, &r);
			view_row_json(&r, &jw);
			view_row_free(&r);
			yajl_tree_free(doc);
		}
		view_bulk_free(vb);
		store_list_free(&l);
	} else {
		log_kv(LOG_WARN, "events: cannot list the decofiles", "error", store_error(s),
		    NULL);
	}
	jw_end_arr(&jw);
	buf_adds(out, "event: snapshot\ndata: ");
	buf_add(out, b.data, b.len);
	buf_adds(out, "\n\n");
	buf_free(&b);
}

/* row - "event: row" (or "delete") for Decofile ns/name */
static void
row(struct web_events *ev, const char *ns, const char *name, struct buf *out)
{
	struct store *s = stage_store(ev->w->st);
	yajl_val doc = NULL;
	struct buf b;
	struct jw jw;
	char err[256];
	int got = resource_get(s, "decofiles", ns, name, &doc, err, sizeof(err));

	if (got < 0)
		return;
	buf_init(&b);
	jw_init(&jw, &b);
	if (got == 1) {
		jw_obj(&jw);
		jw_key(&jw, "namespace");
		jw_str(&jw, ns);
		jw_key(&jw, "name");
		jw_str(&jw, name);
		jw_end_obj(&jw);
		buf_adds(out, "event: delete\ndata: ");
	} else {
		struct view_row r;

		view_row(s, stage_journal(ev->w->st), doc, ev->w->default_target, &r);
		view_row_json(&r, &jw);
		view_row_free(&r);
		yajl_tree_free(doc);
		buf_adds(out, "event: row\ndata: ");
	}
	buf_add(out, b.data, b.len);
	buf_adds(out, "\n\n");
	buf_free(&b);
}

/* deliver - append text to every client and wake the ones waiting */
static void
deliver(struct web_events *ev, const struct buf *text)
{
	for (struct client *cl = ev->clients; cl != NULL; cl = cl->next) {
		if (cl->out.len - cl->off + text->len > CLIENT_MAX)
			cl->lagging = 1;
		else
			buf_add(&cl->out, text->data, text->len);
		if (cl->suspended) {
			cl->suspended = 0;
			MHD_resume_connection(cl->c);
		}
	}
	ev->sent++;
}

static void
flush(struct stage *st, void *arg)
{
	struct web_events *ev = arg;
	struct buf b;

	(void)st;
	ev->timer = 0;
	buf_init(&b);
	if (ev->clients != NULL) {
		if (ev->relist) {
			snapshot(ev, &b);
		} else {
			for (size_t i = 0; i < ev->ndirty; i++) {
				char *slash = strchr(ev->dirty[i], '/');

				*slash = '\0';
				row(ev, ev->dirty[i], slash + 1, &b);
				*slash = '/';
			}
		}
		if (b.len > 0)
			deliver(ev, &b);
	}
	buf_free(&b);
	for (size_t i = 0; i < ev->ndirty; i++)
		free(ev->dirty[i]);
	ev->ndirty = 0;
	ev->relist = 0;
	web_run(ev->w);
}

static void
mark(struct web_events *ev, const char *ns, size_t nslen, const char *name, size_t namelen)
{
	char *key = xasprintf("%.*s/%.*s", (int)nslen, ns, (int)namelen, name);

	for (size_t i = 0; i < ev->ndirty; i++)
		if (strcmp(ev->dirty[i], key) == 0) {
			free(key);
			return;
		}
	if (ev->ndirty >= DIRTY_MAX) {
		ev->relist = 1;
		free(key);
		return;
	}
	if (ev->ndirty % 64 == 0)
		ev->dirty = xrealloc(ev->dirty, (ev->ndirty + 64) * sizeof(*ev->dirty));
	ev->dirty[ev->ndirty++] = key;
}

/* on_event - a Decofile or a status fragment changed: its row is due */
static void
on_event(void *arg, const struct store_event *e, const char *prefix)
{
	struct web_events *ev = arg;
	const char *k, *slash, *end;

	if (e->type == STORE_EV_RELIST) {
		ev->relist = 1;
	} else if (strncmp(e->key, prefix, strlen(prefix)) == 0) {
		k = e->key + strlen(prefix);
		if ((slash = strchr(k, '/')) == NULL || slash == k)
			return;
		end = slash + 1 + strcspn(slash + 1, "/");
		if (end == slash + 1)
			return;
		mark(ev, k, (size_t)(slash - k), slash + 1, (size_t)(end - slash - 1));
	}
	if (ev->timer == 0)
		ev->timer = stage_add_timer(ev->w->st, GATHER_MS, flush, ev);
}

static void
on_res(void *arg, const struct store_event *e)
{
	on_event(arg, e, ((struct web_events *)arg)->res_prefix);
}

static void
on_status(void *arg, const struct store_event *e)
{
	on_event(arg, e, ((struct web_events *)arg)->st_prefix);
}

struct web_events *
web_events_new(struct web *w)
{
	struct web_events *ev = xcalloc(1, sizeof(*ev));

	ev->w = w;
	ev->res_prefix = key_resource_prefix("decofiles", NULL);
	ev->st_prefix = key_status_kind_prefix("decofiles");
	ev->res_watch = store_watch_open(w->st, ev->res_prefix, on_res, ev, 1000, &ev->res_att);
	ev->st_watch = store_watch_open(w->st, ev->st_prefix, on_status, ev, 1000, &ev->st_att);
	return ev;
}

void
web_events_free(struct web_events *ev)
{
	if (ev == NULL)
		return;
	/* the connections end with the server; let them be read to their end */
	for (struct client *cl = ev->clients; cl != NULL; cl = cl->next) {
		cl->lagging = 1;
		cl->ev = NULL;
		if (cl->suspended) {
			cl->suspended = 0;
			MHD_resume_connection(cl->c);
		}
	}
	if (ev->timer != 0)
		stage_cancel_timer(ev->w->st, ev->timer);
	store_watch_close(ev->res_watch, ev->res_att);
	store_watch_close(ev->st_watch, ev->st_att);
	for (size_t i = 0; i < ev->ndirty; i++)
		free(ev->dirty[i]);
	free(ev->dirty);
	free(ev->res_prefix);
	free(ev->st_prefix);
	free(ev);
}

static ssize_t
reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct client *cl = cls;
	size_t n;

	(void)pos;
	if (cl->lagging)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = cl->out.len - cl->off;
	if (n == 0) {
		buf_reset(&cl->out);
		cl->off = 0;
		cl->suspended = 1;
		MHD_suspend_connection(cl->c);
		return 0;
	}
	if (n > max)
		n = max;
	memcpy(out, cl->out.data + cl->off, n);
	cl->off += n;
	return (ssize_t)n;
}

/* client_gone - the response is destroyed: the connection ended */
static void
client_gone(void *cls)
{
	struct client *cl = cls;

	if (cl->ev != NULL)
		for (struct client **p = &cl->ev->clients; *p != NULL; p = &(*p)->next)
			if (*p == cl) {
				*p = cl->next;
				break;
			}
	buf_free(&cl->out);
	free(cl);
}

enum MHD_Result
web_events_answer(struct web_events *ev, struct MHD_Connection *c)
{
	struct client *cl = xcalloc(1, sizeof(*cl));
	struct MHD_Response *resp;
	enum MHD_Result rc;

	cl->ev = ev;
	cl->c = c;
	buf_init(&cl->out);
	buf_adds(&cl->out, "retry: 2000\n\n");
	snapshot(ev, &cl->out);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, reader, cl,
	    client_gone);
	if (resp == NULL) {
		buf_free(&cl->out);
		free(cl);
		return MHD_NO;
	}
	cl->next = ev->clients;
	ev->clients = cl;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	rc = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return rc;
}
