/*
 * stage_metrics_http - a stage's /metrics answered from its own loop: no
 * thread and no libmicrohttpd (which brings GnuTLS and its friends, some
 * 2.5 MiB of mapped pages, into a stage that has no other use for them;
 * doc/benchmarks.md, "Idle stages").  HTTP/1.1, one request per
 * connection: GET or HEAD of /metrics (or /), answered with the whole
 * exposition and Connection: close.  At most MAX_CONNS connections at
 * once (a new one closes the oldest still sending its request), a request of at most REQ_MAX bytes, and
 * CONN_TIMEOUT_MS for the whole exchange; nothing a client sends can make
 * the loop wait.  A scrape is answered by the loop, or, while a callback
 * works through a long pass (thousands of decofiles), by stage_yield
 * between its items (stage_metrics_pending): it waits for one item, not
 * for the pass.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "common/metrics.h"
#include "common/stage.h"
#include "common/stage_impl.h"
#include "common/util.h"

#define MAX_CONNS 16
#define REQ_MAX 8192
#define CONN_TIMEOUT_MS 10000

struct mhttp;

struct mconn {
	struct mhttp *h;
	int fd;
	int64_t timer;
	int64_t since;		/* accepted at (now_ms) */
	size_t rlen;
	char *out;		/* the whole answer, once the request is read */
	size_t olen, off;
	char req[REQ_MAX];
};

struct mhttp {
	struct stage *st;
	struct metrics *m;
	int lfd;
	struct mconn *c[MAX_CONNS];
};

static void
conn_close(struct mconn *c)
{
	struct mhttp *h = c->h;

	for (size_t i = 0; i < MAX_CONNS; i++)
		if (h->c[i] == c)
			h->c[i] = NULL;
	if (c->timer > 0)
		stage_cancel_timer(h->st, c->timer);
	stage_del_fd(h->st, c->fd);
	(void)shutdown(c->fd, SHUT_RDWR);
	close(c->fd);
	free(c->out);
	free(c);
}

static void
conn_timeout(struct stage *st, void *arg)
{
	struct mconn *c = arg;

	(void)st;
	c->timer = 0;
	conn_close(c);
}

/* respond - the answer to the request in c->req (complete, NUL-terminated) */
static void
respond(struct mconn *c)
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
		body = metrics_render(c->h->m, &len);
	}
	buf_printf(&b, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n", status, ctype, len);
	if (!head)
		buf_add(&b, body, len);
	free(body);
	c->out = buf_steal(&b, &c->olen);
}

static void
conn_cb(struct stage *st, int fd, short revents, void *arg)
{
	struct mconn *c = arg;
	ssize_t n;

	(void)revents;	/* read and send say what happened (the fd may be new) */
	if (c->out == NULL) {
		n = read(fd, c->req + c->rlen, sizeof(c->req) - 1 - c->rlen);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(c);
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
			respond(c);
		}
		stage_mod_fd(st, fd, POLLOUT);
	}
	while (c->off < c->olen) {
		n = send(fd, c->out + c->off, c->olen - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0)
			break;
		c->off += (size_t)n;
	}
	conn_close(c);
}

static void
accept_cb(struct stage *st, int fd, short revents, void *arg)
{
	struct mhttp *h = arg;
	int cfd;

	(void)revents;
	while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct mconn *c = NULL;
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
			conn_close(h->c[old]);
			i = old;
		}
		c = xcalloc(1, sizeof(*c));
		c->h = h;
		c->fd = cfd;
		c->since = now_ms();
		h->c[i] = c;
		if (stage_add_fd(st, cfd, POLLIN, conn_cb, c) < 0) {
			h->c[i] = NULL;
			close(cfd);
			free(c);
			continue;
		}
		c->timer = stage_add_timer(st, CONN_TIMEOUT_MS, conn_timeout, c);
	}
}

/* is_open - c is still one of h's connections */
static int
is_open(const struct mhttp *h, const struct mconn *c)
{
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (h->c[i] == c)
			return 1;
	return 0;
}

void
stage_metrics_pending(struct stage *st)
{
	struct mhttp *h = st->mhttp;
	struct pollfd p[MAX_CONNS + 1];
	struct mconn *open[MAX_CONNS];
	size_t n = 0, k = 0;

	if (h == NULL)
		return;
	p[n++] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (h->c[i] != NULL)
			p[n++] = (struct pollfd){ .fd = h->c[i]->fd,
			    .events = h->c[i]->out != NULL ? POLLOUT : POLLIN };
	if (poll(p, n, 0) <= 0)
		return;
	if (p[0].revents != 0)
		accept_cb(st, h->lfd, p[0].revents, h);
	/* every connection, the new ones too (a request often comes with the connect) */
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (h->c[i] != NULL)
			open[k++] = h->c[i];
	for (size_t i = 0; i < k; i++)
		if (is_open(h, open[i]))
			conn_cb(st, open[i]->fd, POLLIN, open[i]);
}

static void
stop(void *arg)
{
	struct mhttp *h = arg;

	for (size_t i = 0; i < MAX_CONNS; i++)
		if (h->c[i] != NULL)
			conn_close(h->c[i]);
	stage_del_fd(h->st, h->lfd);
	close(h->lfd);
	if (h->st->mhttp == h)
		h->st->mhttp = NULL;
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
	h->st = st;
	h->m = m;
	h->lfd = fd;
	if (stage_add_fd(st, fd, POLLIN, accept_cb, h) < 0) {
		snprintf(err, errlen, "cannot watch the metrics socket");
		close(fd);
		free(h);
		return -1;
	}
	metrics_set_server(m, h, stop);
	st->mhttp = h;
	return 0;
}
