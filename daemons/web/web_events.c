/*
 * web_events - GET /api/v1/events: the status page's live updates as
 * Server-Sent Events, fed by web_rows (the rows in memory, kept by the
 * store watches).  A new client gets a "snapshot": {"total": N, "rows":
 * [the first rows]}, then "rows" events of the others (arrays), in the
 * page's order (failing first); with ?rows=0 the snapshot has no rows and
 * the client reads them from /api/v1/status (the page does: chromium's
 * EventSource parses a few hundred kilobytes a second).  Then one "row"
 * per Decofile that changed (an element of /api/v1/status) or "delete";
 * every client gets a new snapshot when web_rows read everything again.
 * A client's connection is suspended in libmicrohttpd while it has
 * nothing to read and resumed when it has; one that falls too far behind
 * is closed (the browser reconnects and gets a fresh snapshot).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "common/json.h"
#include "common/log.h"
#include "daemons/web/web.h"

#define CLIENT_MAX	(16u << 20)	/* bytes a slow client may have waiting */
#define FIRST_ROWS	100		/* the snapshot's own rows: a screenful and more */
#define CHUNK_ROWS	1000		/* then "rows" events of this many */

struct client {
	struct web_events *ev;
	struct MHD_Connection *c;
	struct buf out;
	size_t off;
	int suspended, lagging;
	int norows;		/* ?rows=0: snapshots without their rows */
	struct client *next;
};

struct web_events {
	struct web *w;
	struct client *clients;
	unsigned long sent;
};

/*
 * snapshot - the "snapshot" event and its "rows" events, of every row;
 * with norows only the count: the page reads the rows from
 * /api/v1/status (chromium's EventSource takes seconds a megabyte)
 */
static void
snapshot(struct web_events *ev, int norows, struct buf *out)
{
	struct web_text *v;
	size_t n = web_rows_texts(ev->w->rows, !norows, &v), i = 0;	/* no rows: no order */

	buf_printf(out, "event: snapshot\ndata: {\"total\":%zu,\"rows\":[", n);
	for (; !norows && i < n && i < FIRST_ROWS; i++) {
		if (i > 0)
			buf_addc(out, ',');
		buf_add(out, v[i].json, v[i].len);
	}
	buf_adds(out, "]}\n\n");
	while (!norows && i < n) {
		size_t end = i + CHUNK_ROWS < n ? i + CHUNK_ROWS : n;

		buf_adds(out, "event: rows\ndata: [");
		for (size_t k = i; k < end; k++) {
			if (k > i)
				buf_addc(out, ',');
			buf_add(out, v[k].json, v[k].len);
		}
		buf_adds(out, "]\n\n");
		i = end;
	}
	free(v);
}

/* deliver - append text (or the snapshot a client asked for) to every client; wake them */
static void
deliver(struct web_events *ev, const struct buf *text, const struct buf *snap[2])
{
	for (struct client *cl = ev->clients; cl != NULL; cl = cl->next) {
		const struct buf *t = text != NULL ? text : snap[cl->norows];

		if (cl->out.len - cl->off + t->len > CLIENT_MAX)
			cl->lagging = 1;
		else
			buf_add(&cl->out, t->data, t->len);
		if (cl->suspended) {
			cl->suspended = 0;
			MHD_resume_connection(cl->c);
		}
	}
	ev->sent++;
}

void
web_events_changed(void *arg, const char *key, const char *json, size_t len)
{
	struct web_events *ev = arg;
	struct buf b;

	if (ev == NULL || ev->clients == NULL)
		return;
	buf_init(&b);
	if (key == NULL) {
		struct buf full, bare;
		const struct buf *snap[2] = { &full, &bare };

		buf_init(&full);
		buf_init(&bare);
		snapshot(ev, 1, &bare);
		for (struct client *cl = ev->clients; cl != NULL; cl = cl->next)
			if (!cl->norows) {
				snapshot(ev, 0, &full);
				break;
			}
		deliver(ev, NULL, snap);
		buf_free(&full);
		buf_free(&bare);
	} else if (json != NULL) {
		buf_adds(&b, "event: row\ndata: ");
		buf_add(&b, json, len);
		buf_adds(&b, "\n\n");
	} else {
		const char *slash = strchr(key, '/');
		struct jw jw;

		if (slash == NULL) {
			buf_free(&b);
			return;
		}
		buf_adds(&b, "event: delete\ndata: ");
		jw_init(&jw, &b);
		jw_obj(&jw);
		jw_key(&jw, "namespace");
		jw_strn(&jw, key, (size_t)(slash - key));
		jw_key(&jw, "name");
		jw_str(&jw, slash + 1);
		jw_end_obj(&jw);
		buf_adds(&b, "\n\n");
	}
	if (b.len > 0)
		deliver(ev, &b, NULL);
	buf_free(&b);
	web_run_soon(ev->w);	/* not now: this may be inside a request's answer */
}

struct web_events *
web_events_new(struct web *w)
{
	struct web_events *ev = xcalloc(1, sizeof(*ev));

	ev->w = w;
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
	const char *v;

	cl->ev = ev;
	cl->c = c;
	buf_init(&cl->out);
	v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "rows");
	cl->norows = v != NULL && strcmp(v, "0") == 0;
	buf_adds(&cl->out, "retry: 2000\n\n");
	snapshot(ev, cl->norows, &cl->out);
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
