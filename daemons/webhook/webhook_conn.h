/*
 * webhook_conn - the HTTPS server's connections: libmicrohttpd driven from
 * the stage loop, a deadline per connection that starts at accept, and a
 * free slot for a new connection when slow or idle ones hold them all.
 */
#ifndef DECOD_WEBHOOK_CONN_H
#define DECOD_WEBHOOK_CONN_H

#include <stdint.h>

#include <microhttpd.h>

#include "common/stage.h"

struct wh_conns;

/* the counters of /metrics */
struct wh_conn_counts {
	unsigned long open, total;
	unsigned long deadline_closed;	/* a request that overran request_ms */
	unsigned long idle_closed;	/* idle keep-alive past idle_ms */
	unsigned long evicted;		/* closed to make room at the limit */
};

/*
 * wh_conns_max - the most connections this libmicrohttpd can hold: it is
 * driven through select() sets, whose descriptors must stay under
 * FD_SETSIZE, with room for the stage's own descriptors.
 */
unsigned long wh_conns_max(void);

/*
 * wh_conns_new - a table for at most max connections (the daemon's
 * MHD_OPTION_CONNECTION_LIMIT, no more than wh_conns_max()), a request
 * deadline of request_ms from accept and an idle cap of idle_ms.
 * wh_conns_free(NULL) is a no-op; free after MHD_stop_daemon, whose
 * closing notifications still reach the table.
 */
struct wh_conns *wh_conns_new(struct stage *st, unsigned long max, int64_t request_ms,
    int64_t idle_ms);
void wh_conns_free(struct wh_conns *cs);

/* wh_conns_set_timeouts - new deadlines for what starts from now (SIGHUP) */
void wh_conns_set_timeouts(struct wh_conns *cs, int64_t request_ms, int64_t idle_ms);

/*
 * wh_conns_attach - drive mhd (started in external select mode, without
 * MHD_USE_EPOLL or a thread) from the stage loop; 0 or -1.
 */
int wh_conns_attach(struct wh_conns *cs, struct MHD_Daemon *mhd);

/* from libmicrohttpd's callbacks: a connection opened or closed (NOTIFY_CONNECTION) */
void wh_conns_notify(struct wh_conns *cs, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe);
/* a request's headers are in (the access handler's first call) */
void wh_conns_request(struct wh_conns *cs, struct MHD_Connection *c);
/* a request was answered whole: the connection is idle (NOTIFY_COMPLETED, OK) */
void wh_conns_answered(struct wh_conns *cs, struct MHD_Connection *c);

void wh_conns_counts(const struct wh_conns *cs, struct wh_conn_counts *out);

#endif
