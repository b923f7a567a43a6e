/*
 * stage_metrics_http - a stage's /metrics answered from a thread of its
 * own, with its own poll() loop, so a scrape never waits for whatever one
 * operation the stage's loop is in (a journal commit, a store write of
 * 127 fragments; doc/benchmarks.md, "/metrics of a busy stage").  No
 * libmicrohttpd (which brings GnuTLS and its friends, some 2.5 MiB of
 * mapped pages, into a stage that has no other use for them; "Idle
 * stages").  HTTP/1.1, one request per connection: GET or HEAD of
 * /metrics (or /), answered with the whole exposition and Connection:
 * close.  At most MAX_CONNS connections at once (a new one closes the
 * oldest still sending its request), a request of at most REQ_MAX bytes,
 * and CONN_TIMEOUT_MS for the whole exchange.  The thread touches only
 * the registry (under its mutex) and what this file owns: never the
 * stage, the journal or the store.  It takes no signal, and stops on a
 * byte on its pipe (stage_metrics_stop, metrics_free).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "common/stage_impl.h"
#include "common/util.h"

#define MAX_CONNS 16
#define REQ_MAX 8192
#define CONN_TIMEOUT_MS 10000
#define ACCEPT_PAUSE_MS 100	/* out of descriptors: accept again after this */

struct mconn {
	int fd;
	int64_t since;		/* accepted at (now_ms) */
	size_t rlen;
	char *out;		/* the whole answer, once the request is read */
	size_t olen, off;
	char req[REQ_MAX];
};

/* the server: the thread owns the connections; the stage owns the rest */
struct mhttp {
	struct metrics *m;
	int lfd;
	int stop_pipe[2];	/* a byte on [1]: the thread returns */
	int64_t accept_after;	/* out of descriptors: no accept before (now_ms) */
	pthread_t th;
	int running;		/* th was started (and is not joined yet) */
	struct mconn *c[MAX_CONNS];
};

static void
conn_close(struct mhttp *h, size_t i)
{
	struct mconn *c = h->c[i];

	h->c[i] = NULL;
	(void)shutdown(c->fd, SHUT_RDWR);
	close(c->fd);
	free(c->out);
	free(c);
}

/* respond - the answer to the request in c->req (complete, NUL-terminated) */
static void
respond(struct mhttp *h, struct mconn *c)
{
	static const char *const ctype = "text/plain; version=0.0.4; charset=utf-8";
	const char *status = "200 OK";
	char *body, method[8] = "", path[64] = "";
	size_t len, sp;
	int head = 0;
	struct buf b = { 0 };

	sp = strcspn(c->req, " ");
	if (sp < sizeof(method))
		memcpy(method, c->req, sp);
	if (c->req[sp] == ' ') {
		const char *p = c->req + sp + 1;
		size_t pl = strcspn(p, " ?\r\n");

		if (pl < sizeof(path))
			memcpy(path, p, pl);
	}
	head = strcmp(method, "HEAD") == 0;
	if (strcmp(method, "GET") != 0 && !head) {
		status = "405 Method Not Allowed";
		body = xstrdup("method not allowed\n");
		len = strlen(body);
	} else if (strcmp(path, "/metrics") != 0 && strcmp(path, "/") != 0) {
		status = "404 Not Found";
		body = xstrdup("not found; try /metrics\n");
		len = strlen(body);
	} else {
		body = metrics_render(h->m, &len);
	}
	buf_printf(&b, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n", status, ctype, len);
	if (!head)
		buf_add(&b, body, len);
	free(body);
	c->out = buf_steal(&b, &c->olen);
}

/* conn_io - read the request, answer it, send the answer; closes when done */
static void
conn_io(struct mhttp *h, size_t i)
{
	struct mconn *c = h->c[i];
	ssize_t n;

	if (c->out == NULL) {
		n = read(c->fd, c->req + c->rlen, sizeof(c->req) - 1 - c->rlen);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(h, i);
			return;
		}
		c->rlen += (size_t)n;
		c->req[c->rlen] = '\0';
		if (strstr(c->req, "\r\n\r\n") == NULL && strstr(c->req, "\n\n") == NULL) {
			if (c->rlen < sizeof(c->req) - 1)
				return;
			c->out = xstrdup("HTTP/1.1 431 Request Header Fields Too Large\r\n"
			    "Content-Length: 0\r\nConnection: close\r\n\r\n");
			c->olen = strlen(c->out);
		} else {
			respond(h, c);
		}
	}
	while (c->off < c->olen) {
		n = send(c->fd, c->out + c->off, c->olen - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0)
			break;
		c->off += (size_t)n;
	}
	conn_close(h, i);
}

/* accept_all - take every waiting connection (a full table: see the header) */
static void
accept_all(struct mhttp *h)
{
	int cfd;

	while ((cfd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct mconn *c;
		size_t i;

		for (i = 0; i < MAX_CONNS && h->c[i] != NULL; i++)
			;
		if (i == MAX_CONNS) {
			/* full: the oldest that has not sent its request yet makes room */
			size_t old = MAX_CONNS;

			for (size_t k = 0; k < MAX_CONNS; k++)
				if (h->c[k]->out == NULL && (old == MAX_CONNS ||
				    h->c[k]->since < h->c[old]->since))
					old = k;
			if (old == MAX_CONNS) {
				close(cfd);	/* all answering: a scraper retries */
				continue;
			}
			conn_close(h, old);
			i = old;
		}
		c = xcalloc(1, sizeof(*c));
		c->fd = cfd;
		c->since = now_ms();
		h->c[i] = c;
	}
	/* out of descriptors or memory: the connection waits in the backlog, and
	 * a poll would say so again at once; look again in a while */
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
		h->accept_after = now_ms() + ACCEPT_PAUSE_MS;
}

/* serve - the thread: one poll() over the stop pipe, the socket and the connections */
static void *
serve(void *arg)
{
	struct mhttp *h = arg;
	struct pollfd p[MAX_CONNS + 2];
	size_t idx[MAX_CONNS + 2];

	for (;;) {
		int64_t now = now_ms(), wait = -1;
		nfds_t n = 0;

		/* the exchange's deadline first: a slow client is closed here */
		for (size_t i = 0; i < MAX_CONNS; i++) {
			int64_t left;

			if (h->c[i] == NULL)
				continue;
			if ((left = h->c[i]->since + CONN_TIMEOUT_MS - now) <= 0) {
				conn_close(h, i);
				continue;
			}
			if (wait < 0 || left < wait)
				wait = left;
			idx[n] = i;
			p[n++] = (struct pollfd){ .fd = h->c[i]->fd,
			    .events = h->c[i]->out != NULL ? POLLOUT : POLLIN };
		}
		if (now < h->accept_after && (wait < 0 || h->accept_after - now < wait))
			wait = h->accept_after - now;
		p[n++] = (struct pollfd){ .fd = h->lfd,
		    .events = now >= h->accept_after ? POLLIN : 0 };
		p[n++] = (struct pollfd){ .fd = h->stop_pipe[0], .events = POLLIN };
		if (poll(p, n, (int)wait) < 0) {
			if (errno == EINTR)
				continue;
			log_kv(LOG_ERROR, "metrics: poll failed; no more scrapes answered",
			    "error", strerror(errno), NULL);
			break;
		}
		if (p[n - 1].revents != 0)
			break;
		for (nfds_t k = 0; k + 2 < n; k++)
			if (p[k].revents != 0 && h->c[idx[k]] != NULL)
				conn_io(h, idx[k]);
		if (p[n - 2].revents & POLLIN)
			accept_all(h);	/* their requests: on the next turn */
	}
	return NULL;
}

/* stop - metrics_set_server's: stop the thread (if it runs), free everything */
static void
stop(void *arg)
{
	struct mhttp *h = arg;
	char c = 's';

	if (h->running) {
		if (write(h->stop_pipe[1], &c, 1) != 1)
			fatal("metrics: cannot stop the thread: %s", strerror(errno));
		pthread_join(h->th, NULL);
		h->running = 0;
	}
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (h->c[i] != NULL)
			conn_close(h, i);
	close(h->lfd);
	close(h->stop_pipe[0]);
	close(h->stop_pipe[1]);
	free(h);
}

int
stage_metrics_serve(struct stage *st, struct metrics *m, const char *addr, char *err,
    size_t errlen)
{
	struct mhttp *h;
	int fd;

	if (metrics_server(m) != NULL) {
		snprintf(err, errlen, "metrics are already served");
		return -1;
	}
	if ((fd = metrics_listen_socket(addr, err, errlen)) < 0)
		return -1;
	(void)set_nonblock(fd);
	h = xcalloc(1, sizeof(*h));
	h->m = m;
	h->lfd = fd;
	if (pipe2(h->stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(fd);
		free(h);
		return -1;
	}
	metrics_set_server(m, h, stop);
	st->mhttp = h;
	return 0;
}

void
stage_metrics_run(struct stage *st)
{
	struct mhttp *h = st->mhttp;
	sigset_t all, old;
	int rv;

	if (h == NULL || h->running)
		return;
	/* the thread takes no signal: the loop's handlers and EINTRs stay the loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rv = pthread_create(&h->th, NULL, serve, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rv != 0)
		fatal("metrics: cannot start the thread: %s", strerror(rv));
	h->running = 1;
}

void
stage_metrics_stop(struct stage *st)
{
	if (st->mhttp == NULL)
		return;
	if (metrics_server(st->mhttp->m) == st->mhttp)
		metrics_set_server(st->mhttp->m, NULL, NULL);
	stop(st->mhttp);
	st->mhttp = NULL;
}
