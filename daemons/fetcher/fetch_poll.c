/*
 * fetch_poll - curl multi on the fetcher's loop.  It owns the multi handle,
 * the easy handles in flight (each with its header list, body and the
 * caller's callback) and the loop timer curl asked for; curl's sockets are
 * registered with stage_add_fd as curl names them.  Nothing here blocks:
 * every call returns at once and answers come back through on_fd/on_timer.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "common/stage.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_poll.h"

#define MAX_BODY 65536

struct preq {
	CURL *h;
	struct curl_slist *hl;
	struct buf body;
	char etag[256];
	int over;
	fetch_poll_done_fn done;
	void *arg;
	struct preq *next;
};

struct fetch_poll {
	struct stage *st;
	CURLM *m;
	int64_t timer;
	int running;
	struct preq *reqs;
	size_t n;
};

static void check_done(struct fetch_poll *p);

static void
on_fd(struct stage *st, int fd, short revents, void *arg)
{
	struct fetch_poll *p = arg;
	int flags = 0;

	(void)st;
	if (revents & POLLIN)
		flags |= CURL_CSELECT_IN;
	if (revents & POLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (POLLERR | POLLHUP | POLLNVAL))
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(p->m, fd, flags, &p->running);
	check_done(p);
}

static int
sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct fetch_poll *p = userp;
	short ev = 0;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		stage_del_fd(p->st, s);
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev |= POLLIN;
	if (what & CURL_POLL_OUT)
		ev |= POLLOUT;
	if (socketp == NULL) {
		stage_add_fd(p->st, s, ev, on_fd, p);
		curl_multi_assign(p->m, s, p);
	} else {
		stage_mod_fd(p->st, s, ev);
	}
	return 0;
}

static void
on_timer(struct stage *st, void *arg)
{
	struct fetch_poll *p = arg;

	(void)st;
	p->timer = 0;
	curl_multi_socket_action(p->m, CURL_SOCKET_TIMEOUT, 0, &p->running);
	check_done(p);
}

static int
timer_cb(CURLM *m, long ms, void *userp)
{
	struct fetch_poll *p = userp;

	(void)m;
	if (p->timer > 0)
		stage_cancel_timer(p->st, p->timer);
	p->timer = 0;
	if (ms >= 0)
		p->timer = stage_add_timer(p->st, ms, on_timer, p);
	return 0;
}

static size_t
on_body(char *d, size_t sz, size_t n, void *arg)
{
	struct preq *r = arg;

	if (r->body.len + sz * n > MAX_BODY) {
		r->over = 1;
		return 0;
	}
	buf_add(&r->body, d, sz * n);
	return sz * n;
}

static size_t
on_header(char *d, size_t sz, size_t n, void *arg)
{
	struct preq *r = arg;
	size_t len = sz * n;
	const char *v, *end = d + len;

	if (len > 5 && strncasecmp(d, "ETag:", 5) == 0) {
		for (v = d + 5; v < end && (*v == ' ' || *v == '\t'); v++)
			;
		while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
			end--;
		snprintf(r->etag, sizeof(r->etag), "%.*s", (int)(end - v), v);
	}
	return len;
}

static void
req_free(struct fetch_poll *p, struct preq *r)
{
	for (struct preq **pp = &p->reqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	curl_multi_remove_handle(p->m, r->h);
	curl_easy_cleanup(r->h);
	/* the list holds the Authorization line: wipe it */
	for (struct curl_slist *l = r->hl; l != NULL; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(r->hl);
	buf_free(&r->body);
	free(r);
	p->n--;
}

static void
check_done(struct fetch_poll *p)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(p->m, &left)) != NULL) {
		struct fetch_poll_answer a;
		struct preq *r = NULL;
		char err[256];

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		memset(&a, 0, sizeof(a));
		if (msg->data.result != CURLE_OK) {
			snprintf(err, sizeof(err), "%s", r->over ? "answer too large" :
			    curl_easy_strerror(msg->data.result));
			a.err = err;
		} else {
			curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &a.status);
			a.etag = r->etag;
			a.body = r->body.data ? r->body.data : "";
			a.len = r->body.len;
		}
		r->done(r->arg, &a);
		req_free(p, r);
	}
}

struct fetch_poll *
fetch_poll_new(struct stage *st)
{
	struct fetch_poll *p = xcalloc(1, sizeof(*p));

	p->st = st;
	return p;
}

/*
 * poll_multi - the multi handle, made on the first poll: a fetcher with no
 * github source to poll never loads libcurl (common/curl_lazy.c)
 */
static int
poll_multi(struct fetch_poll *p)
{
	if (p->m != NULL)
		return 0;
	if ((p->m = curl_multi_init()) == NULL)
		return -1;
	curl_multi_setopt(p->m, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(p->m, CURLMOPT_SOCKETDATA, p);
	curl_multi_setopt(p->m, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(p->m, CURLMOPT_TIMERDATA, p);
	/* a few connections per host are reused: polls of one API ride on them */
	curl_multi_setopt(p->m, CURLMOPT_MAX_HOST_CONNECTIONS, 32L);
	return 0;
}

void
fetch_poll_free(struct fetch_poll *p)
{
	if (p == NULL)
		return;
	while (p->reqs != NULL)
		req_free(p, p->reqs);
	if (p->timer > 0)
		stage_cancel_timer(p->st, p->timer);
	if (p->m != NULL)
		curl_multi_cleanup(p->m);
	free(p);
}

int
fetch_poll_get(struct fetch_poll *p, const char *url, const char *const *headers,
    const char *auth, int allow_http, int64_t timeout_ms, fetch_poll_done_fn done,
    void *arg)
{
	struct preq *r;

	if (strncmp(url, "https://", 8) != 0 && !(allow_http && strncmp(url, "http://", 7) == 0))
		return -1;
	if (poll_multi(p) < 0)
		return -1;
	r = xcalloc(1, sizeof(*r));
	if ((r->h = curl_easy_init()) == NULL) {
		free(r);
		return -1;
	}
	buf_init(&r->body);
	r->done = done;
	r->arg = arg;
	for (const char *const *h = headers; h != NULL && *h != NULL; h++)
		r->hl = curl_slist_append(r->hl, *h);
	if (auth != NULL)
		r->hl = curl_slist_append(r->hl, auth);
	curl_easy_setopt(r->h, CURLOPT_URL, url);
	curl_easy_setopt(r->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hl);
	curl_easy_setopt(r->h, CURLOPT_USERAGENT, "decod-fetcher/" PACKAGE_VERSION);
	curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(timeout_ms < 10000 ? timeout_ms : 10000));
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	if (curl_multi_add_handle(p->m, r->h) != CURLM_OK) {
		curl_slist_free_all(r->hl);
		curl_easy_cleanup(r->h);
		buf_free(&r->body);
		free(r);
		return -1;
	}
	r->next = p->reqs;
	p->reqs = r;
	p->n++;
	return 0;
}

size_t
fetch_poll_active(const struct fetch_poll *p)
{
	return p != NULL ? p->n : 0;
}
