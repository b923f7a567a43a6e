/*
 * fetch_poll - the cheap part of a poll done on the stage loop: one curl
 * multi handle whose sockets and timer are the loop's, so hundreds of
 * conditional requests (GitHub's commits API with If-None-Match) are in
 * flight at once without holding a fetch worker.  Only what moved goes on
 * to the worker pool for the download.
 */
#ifndef DECOD_FETCH_POLL_H
#define DECOD_FETCH_POLL_H

#include <stddef.h>
#include <stdint.h>

struct stage;
struct fetch_poll;

/* what came back; err is non-NULL (and status 0) on a transport error */
struct fetch_poll_answer {
	long status;
	const char *etag;
	const char *body;
	size_t len;
	const char *err;
};

/* called once per request, on the loop; the answer lives only for the call */
typedef void (*fetch_poll_done_fn)(void *arg, const struct fetch_poll_answer *a);

/* fetch_poll_new - a multi handle wired into st's loop; fetch_poll_free(NULL) is fine */
struct fetch_poll *fetch_poll_new(struct stage *st);

/*
 * fetch_poll_free - stop every request in flight; their done callbacks are
 * not called (the caller frees what it gave as arg).
 */
void fetch_poll_free(struct fetch_poll *p);

/*
 * fetch_poll_get - start a GET of url (http only when allow_http) with the
 * header lines (copied) and the Authorization line auth (may be NULL;
 * copied, wiped when done, never logged), no redirects, a body up to 64 KiB,
 * ending within timeout_ms.  0, or -1 when it could not start (done is not
 * called then).
 */
int fetch_poll_get(struct fetch_poll *p, const char *url, const char *const *headers,
    const char *auth, int allow_http, int64_t timeout_ms, fetch_poll_done_fn done,
    void *arg);

/* fetch_poll_active - requests in flight */
size_t fetch_poll_active(const struct fetch_poll *p);

#endif
