/*
 * bench-replica - a benchmark replica that answers every reload call at
 * once, so it never caps a notify benchmark: one process, one epoll loop,
 * non-blocking sockets, tens of thousands of connections.  Every path is
 * accepted (the benchmark uses http://127.0.0.1:PORT/r/N as N replicas);
 * POST bodies are read and discarded, the answer is 200 {"success":true}.
 * By default each answer closes the connection, as distinct hosts would
 * need a connection each; --keepalive keeps them open.  With --any it
 * listens on every address, so URLs can name distinct loopback hosts
 * (127.0.X.Y), as distinct replicas would be.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define HDR_MAX 16384

struct conn {
	int fd;
	char hdr[HDR_MAX];
	size_t hlen;
	long long body_left;	/* -1: still reading the header */
	const char *out;
	size_t outlen, outoff;
};

static volatile sig_atomic_t stop;
static long long served;
static int keepalive;

static const char resp_close[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    "Content-Length: 16\r\nConnection: close\r\n\r\n{\"success\":true}";
static const char resp_keep[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    "Content-Length: 16\r\n\r\n{\"success\":true}";

static void
on_signal(int sig)
{
	stop = 1;
}

static void
conn_close(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

/* header_done - parse the header in c->hdr; 0 ok, -1 malformed */
static int
header_done(struct conn *c, size_t end)
{
	long long cl = 0;
	char *p;

	c->hdr[end] = '\0';
	for (p = strstr(c->hdr, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, "Content-Length:", 15) == 0) {
			cl = strtoll(p + 17, NULL, 10);
			if (cl < 0)
				return -1;
		}
	}
	c->body_left = cl;
	return 0;
}

/* conn_read - read what is there; 1 when a whole request is in, 0 more, -1 close */
static int
conn_read(struct conn *c)
{
	char tmp[65536];

	for (;;) {
		ssize_t n;

		if (c->body_left < 0) {
			char *e;

			n = read(c->fd, c->hdr + c->hlen, HDR_MAX - 1 - c->hlen);
			if (n == 0)
				return -1;
			if (n < 0)
				return errno == EAGAIN ? 0 : -1;
			c->hlen += (size_t)n;
			c->hdr[c->hlen] = '\0';
			if ((e = strstr(c->hdr, "\r\n\r\n")) == NULL) {
				if (c->hlen >= HDR_MAX - 1)
					return -1;
				continue;
			}
			{
				size_t end = (size_t)(e - c->hdr) + 4;
				size_t extra = c->hlen - end;

				if (header_done(c, end - 2) < 0)
					return -1;
				/* bytes past the header belong to the body */
				c->body_left -= (long long)extra;
				c->hlen = 0;
				if (c->body_left <= 0) {
					c->body_left = 0;
					return 1;
				}
			}
			continue;
		}
		n = read(c->fd, tmp, sizeof(tmp) < (size_t)c->body_left ?
		    sizeof(tmp) : (size_t)c->body_left);
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->body_left -= n;
		if (c->body_left == 0)
			return 1;
	}
}

/* conn_write - send the answer; 1 sent, 0 more to send, -1 error */
static int
conn_write(struct conn *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);

		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->outoff += (size_t)n;
	}
	return 1;
}

static void
conn_event(int ep, struct conn *c, unsigned int events)
{
	int r;

	if (c->out == NULL) {
		if ((r = conn_read(c)) < 0) {
			conn_close(ep, c);
			return;
		}
		if (r == 0)
			return;
		c->out = keepalive ? resp_keep : resp_close;
		c->outlen = strlen(c->out);
		c->outoff = 0;
		served++;
	}
	if ((r = conn_write(c)) < 0) {
		conn_close(ep, c);
		return;
	}
	if (r == 0) {
		struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };

		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
		return;
	}
	if (!keepalive) {
		conn_close(ep, c);
		return;
	}
	/* ready for the next request on this connection */
	c->out = NULL;
	c->body_left = -1;
	c->hlen = 0;
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "keepalive", no_argument, NULL, 'k' },
		{ "any", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct epoll_event ev, evs[1024];
	struct rlimit rl;
	int lfd, ep, c, one = 1, port = 0, any = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': port = atoi(optarg); break;
		case 'k': keepalive = 1; break;
		case 'a': any = 1; break;
		default:
			fprintf(stderr, "usage: bench-replica [--port N] [--keepalive] [--any]\n");
			return 2;
		}
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* --any: every address, so 127.0.0.0/8 gives as many hosts as wanted */
	sa.sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 65535) < 0) {
		perror("bind/listen");
		return 1;
	}
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("epoll_create1");
		return 1;
	}
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;	/* NULL: the listener */
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	printf("listening on %d\n", ntohs(sa.sin_port));
	fflush(stdout);

	while (!stop) {
		int n = epoll_wait(ep, evs, 1024, 500);

		if (n < 0 && errno != EINTR) {
			perror("epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct conn *cn = evs[i].data.ptr;

			if (cn != NULL) {
				conn_event(ep, cn, evs[i].events);
				continue;
			}
			for (;;) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

				if (fd < 0)
					break;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				cn = calloc(1, sizeof(*cn));
				if (cn == NULL)
					abort();
				cn->fd = fd;
				cn->body_left = -1;
				ev.events = EPOLLIN;
				ev.data.ptr = cn;
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				/* the request is often already there */
				conn_event(ep, cn, EPOLLIN);
			}
		}
	}
	fprintf(stderr, "bench-replica: served %lld\n", served);
	return 0;
}
