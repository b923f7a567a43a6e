/*
 * metrics_http - the registry served from libmicrohttpd's own thread, so a
 * scrape never waits on the program's loop: what the supervisor uses.  In
 * a file of its own so that the stages, which serve from their loop
 * (stage_metrics_http.c), do not link libmicrohttpd (and GnuTLS with it).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "common/metrics.h"
#include "common/util.h"

static void
stop(void *d)
{
	MHD_stop_daemon(d);
}

/* answer - libmicrohttpd's request handler (its own thread) */
static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_len, void **state)
{
	struct metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result rv;
	unsigned status = MHD_HTTP_OK;
	char *body;
	size_t len;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		body = xstrdup("method not allowed\n");
		len = strlen(body);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") != 0 && strcmp(url, "/") != 0) {
		body = xstrdup("not found; try /metrics\n");
		len = strlen(body);
		status = MHD_HTTP_NOT_FOUND;
	} else {
		body = metrics_render(m, &len);
	}
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	rv = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rv;
}

int
metrics_serve_addr(struct metrics *m, const char *addr, char *err, size_t errlen)
{
	struct MHD_Daemon *d;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	if (addr == NULL || *addr == '\0')
		return 0;
	if (metrics_server(m) != NULL) {
		snprintf(err, errlen, "metrics are already served");
		return -1;
	}
	/* bind here, not in libmicrohttpd, to say why a port cannot be had */
	if ((fd = metrics_listen_socket(addr, err, errlen)) < 0)
		return -1;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		ss.ss_family = AF_INET;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
	    (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, answer, m,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
	if (d == NULL) {
		snprintf(err, errlen, "cannot serve metrics on %s", addr);
		close(fd);
		return -1;
	}
	metrics_set_server(m, d, stop);
	return 0;
}

int
metrics_serve(struct metrics *m, int port, char *err, size_t errlen)
{
	char addr[16];

	if (port <= 0)
		return 0;
	snprintf(addr, sizeof(addr), ":%d", port);
	return metrics_serve_addr(m, addr, err, errlen);
}
