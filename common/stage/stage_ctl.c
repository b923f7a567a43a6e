/*
 * stage_ctl - a stage's own control socket when no supervisor runs it (see
 * stage_ctl.h).  Requests come through the REP socket's receive fd in the
 * stage's poll loop, never on an nng thread; each gets one JSON answer.
 */
#include "config.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "common/stage_ctl.h"
#include "common/util.h"

struct stage_ctl {
	nng_socket sock;
	int fd;
	int64_t started_ms;
};

char *
stage_ctl_path(const char *runtime_dir, const char *name)
{
	return xasprintf("%s/%s.ctl.ipc", runtime_dir, name);
}

/* answer - the reply to one request line, as JSON in b */
static void
answer(struct stage *st, struct stage_ctl *c, const char *req, size_t len, struct buf *b)
{
	struct jw w;

	jw_init(&w, b);
	jw_obj(&w);
	if (len == 6 && memcmp(req, "stages", 6) == 0) {
		jw_key(&w, "role");
		jw_str(&w, "unit");
		jw_key(&w, "stages");
		jw_arr(&w);
		jw_obj(&w);
		jw_key(&w, "name");
		jw_str(&w, stage_name(st));
		jw_key(&w, "pid");
		jw_int(&w, (int64_t)getpid());
		jw_key(&w, "state");
		jw_str(&w, stage_stopping(st) ? "STOPPING" : "READY");
		jw_key(&w, "restarts");
		jw_int(&w, 0);
		jw_key(&w, "uptime_s");
		jw_int(&w, (now_ms() - c->started_ms) / 1000);
		metrics_addr_json(&w, stage_conf(st), stage_name(st));
		jw_end_obj(&w);
		jw_end_arr(&w);
	} else {
		char *e = xasprintf("%s runs as its own unit, without the supervisor: use "
		    "systemctl restart|stop|start decod-%s", stage_name(st), stage_name(st));

		jw_key(&w, "ok");
		jw_bool(&w, 0);
		jw_key(&w, "error");
		jw_str(&w, e);
		free(e);
	}
	jw_end_obj(&w);
}

/* on_request - answer every request waiting on the socket */
static void
on_request(struct stage *st, int fd, short revents, void *arg)
{
	struct stage_ctl *c = arg;
	char *msg;
	size_t len;
	int rv;

	(void)fd;
	(void)revents;
	while ((rv = nng_recv(c->sock, &msg, &len, NNG_FLAG_ALLOC | NNG_FLAG_NONBLOCK)) == 0) {
		struct buf b;

		buf_init(&b);
		answer(st, c, msg, len, &b);
		nng_free(msg, len);
		if ((rv = nng_send(c->sock, b.data, b.len, NNG_FLAG_NONBLOCK)) != 0)
			log_kv(LOG_WARN, "control socket: cannot answer", "error",
			    nng_strerror(rv), NULL);
		buf_free(&b);
	}
	if (rv != NNG_EAGAIN)
		log_kv(LOG_WARN, "control socket: receive failed", "error", nng_strerror(rv),
		    NULL);
}

struct stage_ctl *
stage_ctl_open(struct stage *st)
{
	struct stage_ctl *c = xcalloc(1, sizeof(*c));
	char *path = stage_ctl_path(conf_get(stage_conf(st), "runtime_dir"), stage_name(st));
	char *addr = xasprintf("ipc://%s", path);
	int rv;

	c->started_ms = now_ms();
	if ((rv = nng_rep0_open(&c->sock)) != 0 ||
	    (rv = nng_listen(c->sock, addr, NULL, 0)) != 0 ||
	    (rv = nng_socket_get_int(c->sock, NNG_OPT_RECVFD, &c->fd)) != 0) {
		log_kv(LOG_WARN, "no control socket (decoctl stages will not list this stage)",
		    "addr", addr, "error", nng_strerror(rv), NULL);
		nng_close(c->sock);
		free(c);
		c = NULL;
	} else {
		stage_add_fd(st, c->fd, POLLIN, on_request, c);
	}
	free(addr);
	free(path);
	return c;
}

void
stage_ctl_close(struct stage *st, struct stage_ctl *c)
{
	if (c == NULL)
		return;
	stage_del_fd(st, c->fd);
	nng_close(c->sock);
	free(c);
}
