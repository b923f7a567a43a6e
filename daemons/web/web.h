/*
 * web - the web stage's shared state (daemons/web/web.c owns it): the
 * HTTP server driven from the stage loop, the settings it read, and the
 * parts the route files (web_push.c, web_api.c) use to answer.
 */
#ifndef DECOD_WEB_H
#define DECOD_WEB_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "common/stage.h"
#include "common/util.h"
#include "daemons/web/web_hook.h"

struct web_events;
struct web_rows;

struct web {
	struct stage *st;
	struct MHD_Daemon *mhd;
	int epfd;			/* libmicrohttpd's epoll fd, in the loop */
	int64_t tick;			/* timer driving its timeouts */
	int soon;			/* a run is due at once (web_run) */
	uint64_t max_body;
	char *secret[WEB_NPROVIDERS];	/* NULL: that receiver is off (404) */
	size_t secret_len[WEB_NPROVIDERS];
	char *token;			/* bearer token of the actions; NULL: none */
	char *static_dir;
	char *default_target;
	struct web_ring *deliveries;
	struct web_rows *rows;		/* every status row, kept current */
	struct web_events *events;
	/* counted for the log and the tests */
	unsigned long pushes, synced, refused;
};

/* one request being read; libmicrohttpd's con_cls */
struct web_req {
	int64_t start;
	struct buf body;
	int too_large;
};

/* web_reply - queue status with b's bytes (taken) as type; MHD's result */
enum MHD_Result web_reply(struct MHD_Connection *c, unsigned int status, const char *type,
    struct buf *b);
/* web_reply_text - the same for a short text */
enum MHD_Result web_reply_text(struct MHD_Connection *c, unsigned int status,
    const char *text);
/* web_reply_json - the same for JSON in b (taken) */
enum MHD_Result web_reply_json(struct MHD_Connection *c, unsigned int status, struct buf *b);

/* web_push_answer - POST /hooks/{provider} with the whole body in q (web_push.c) */
enum MHD_Result web_push_answer(struct web *w, struct MHD_Connection *c,
    enum web_provider pv, struct web_req *q);

/*
 * web_api_answer - GET /api/v1/..., and the actions (POST with the bearer
 * token); MHD_NO... as libmicrohttpd's handler returns (web_api.c)
 */
enum MHD_Result web_api_answer(struct web *w, struct MHD_Connection *c, const char *url,
    const char *method, struct web_req *q);

/* web_static_answer - the page and its files from static_dir (web_page.c) */
enum MHD_Result web_static_answer(struct web *w, struct MHD_Connection *c, const char *url);

/*
 * the status rows (web_rows.c), kept in memory by store watches and the
 * journal's acks.  cb(arg, key, json, len) after a row changed: key
 * "ns/name", json its new JSON, NULL when it went; key NULL after
 * everything was read again.
 */
typedef void (*web_rows_cb)(void *arg, const char *key, const char *json, size_t len);
struct web_text {
	const char *json;
	size_t len;
};
struct web_rows *web_rows_new(struct web *w, web_rows_cb cb, void *arg);
void web_rows_free(struct web_rows *t);
/* web_rows_ready - the rows were read (a failed read is tried again now); 1 or 0 */
int web_rows_ready(struct web_rows *t);
/*
 * web_rows_texts - every row's JSON, changes due applied first: by key
 * (display 0, the order of /api/v1/status) or in the page's order
 * (display 1: failing, in progress, suspended, ready, then by key).  The
 * count; *out (caller frees the array) points at texts that stay valid
 * until the next call into web_rows.
 */
size_t web_rows_texts(struct web_rows *t, int display, struct web_text **out);
/*
 * web_rows_push - fn(arg, ns, name) for every Decofile the push p concerns
 * (web_push_source_matches), from the rows in memory: the count; -1 when
 * the rows are not read yet (ask the store), -2 when fn failed for one (it
 * said why; the others were still asked)
 */
int web_rows_push(struct web_rows *t, const struct web_push *p,
    int (*fn)(void *arg, const char *ns, const char *name), void *arg);
/* web_rows_reload - open the store watches again and read every row (SIGHUP) */
void web_rows_reload(struct web_rows *t);

/* the live updates (web_events.c): /api/v1/events, fed by web_rows */
struct web_events *web_events_new(struct web *w);
void web_events_free(struct web_events *ev);
enum MHD_Result web_events_answer(struct web_events *ev, struct MHD_Connection *c);
/* web_events_changed - a web_rows_cb: the row (or everything) to the clients */
void web_events_changed(void *arg, const char *key, const char *json, size_t len);

/* web_run - let libmicrohttpd do what is due (after a resume, from a timer) */
void web_run(struct web *w);
/* web_run_soon - web_run from the loop's next turn (safe inside an answer) */
void web_run_soon(struct web *w);

#endif
