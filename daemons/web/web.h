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

/* the live updates (web_events.c): /api/v1/events and the store watch feeding it */
struct web_events *web_events_new(struct web *w);
void web_events_free(struct web_events *ev);
enum MHD_Result web_events_answer(struct web_events *ev, struct MHD_Connection *c);

/* web_run - let libmicrohttpd do what is due (after a resume, from a timer) */
void web_run(struct web *w);

#endif
