/*
 * decod_ctl - the control socket: nng REQ/REP on
 * ipc://<runtime_dir>/control.ipc, mode 0600.  A request is one text line
 * ("stages", "restart NAME", "stop NAME", "start NAME"); the reply is JSON:
 * {"role","holder","stages":[{"name","pid","state","restarts","uptime_s"}]}
 * (role alone, leader or standby; holder the Lease's, with leader election;
 * a standby's stages are all STANDBY and it refuses restart/stop/start) or
 * {"ok":true} / {"ok":false,"error":"..."}.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/transport/ipc/ipc.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "daemons/decod/decod.h"
#include "daemons/decod/decod_lease.h"

static nng_socket ctl_sock;
static int ctl_recv_fd = -1;

int
ctl_open(struct sup *s)
{
	char addr[1100], path[1024];
	nng_listener l;
	int rv;

	snprintf(path, sizeof(path), "%s/control.ipc", conf_get(s->cf, "runtime_dir"));
	snprintf(addr, sizeof(addr), "ipc://%s", path);
	if ((rv = nng_rep0_open(&ctl_sock)) != 0 ||
	    (rv = nng_listener_create(&l, ctl_sock, addr)) != 0) {
		log_kv(LOG_ERROR, "control socket", "addr", addr, "error", nng_strerror(rv), NULL);
		return -1;
	}
	nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, 0600);
	if ((rv = nng_listener_start(l, 0)) != 0) {
		log_kv(LOG_ERROR, "control socket", "addr", addr, "error", nng_strerror(rv), NULL);
		return -1;
	}
	if ((rv = nng_socket_get_int(ctl_sock, NNG_OPT_RECVFD, &ctl_recv_fd)) != 0) {
		log_kv(LOG_ERROR, "control socket fd", "error", nng_strerror(rv), NULL);
		return -1;
	}
	return 0;
}

int
ctl_fd(void)
{
	return ctl_recv_fd;
}

void
ctl_close(void)
{
	if (ctl_recv_fd >= 0)
		nng_close(ctl_sock);
	ctl_recv_fd = -1;
}

static struct child *
find_child(struct sup *s, const char *name)
{
	for (size_t i = 0; i < s->nchildren; i++)
		if (!s->children[i].removed && strcmp(s->children[i].name, name) == 0)
			return &s->children[i];
	return NULL;
}

static void
reply_stages(struct sup *s, struct jw *w)
{
	int64_t now = now_ms();

	jw_obj(w);
	/* a standby answers too: its stages wait for the Lease, held by holder */
	jw_key(w, "role");
	jw_str(w, s->lease == NULL ? "alone" : s->standby ? "standby" : "leader");
	if (s->lease != NULL) {
		jw_key(w, "holder");
		jw_str(w, decod_lease_holder(s->lease));
	}
	/* the supervisor's own metrics address */
	metrics_addr_json(w, s->cf, "decod");
	jw_key(w, "stages");
	jw_arr(w);
	for (size_t i = 0; i < s->nchildren; i++) {
		struct child *c = &s->children[i];

		if (c->removed)
			continue;
		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, c->name);
		jw_key(w, "pid");
		jw_int(w, c->pid);
		jw_key(w, "state");
		jw_str(w, s->standby ? "STANDBY" : child_state_name(c->state));
		jw_key(w, "restarts");
		jw_int(w, c->restarts);
		jw_key(w, "uptime_s");
		jw_int(w, c->pid > 0 ? (now - c->started) / 1000 : 0);
		jw_key(w, "admin_down");
		jw_bool(w, c->admin_down);
		metrics_addr_json(w, s->cf, c->name);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_end_obj(w);
}

static void
reply_ok(struct jw *w, const char *error)
{
	jw_obj(w);
	jw_key(w, "ok");
	jw_bool(w, error == NULL);
	if (error != NULL) {
		jw_key(w, "error");
		jw_str(w, error);
	}
	jw_end_obj(w);
}

/* ctl_request - answer one request line into w */
static void
ctl_request(struct sup *s, const char *req, struct jw *w)
{
	char verb[32] = "", arg[64] = "", err[160];
	struct child *c;

	if (sscanf(req, "%31s %63s", verb, arg) < 1) {
		reply_ok(w, "empty request");
		return;
	}
	if (strcmp(verb, "stages") == 0) {
		reply_stages(s, w);
		return;
	}
	if (strcmp(verb, "restart") != 0 && strcmp(verb, "stop") != 0 &&
	    strcmp(verb, "start") != 0) {
		snprintf(err, sizeof(err), "unknown request \"%s\" (stages, restart, stop, start)",
		    verb);
		reply_ok(w, err);
		return;
	}
	if (s->standby) {
		snprintf(err, sizeof(err), "standby: the stages run where the Lease is held (%s)",
		    *decod_lease_holder(s->lease) ? decod_lease_holder(s->lease) : "nobody yet");
		reply_ok(w, err);
		return;
	}
	if ((c = find_child(s, arg)) == NULL) {
		snprintf(err, sizeof(err), "no stage named \"%s\"", arg);
		reply_ok(w, err);
		return;
	}
	log_kv(LOG_INFO, "control request", "request", verb, "stage", c->name, NULL);
	if (strcmp(verb, "restart") == 0) {
		c->admin_down = 0;
		child_event(s, c, CHILD_EV_RESTART);
	} else if (strcmp(verb, "stop") == 0) {
		c->admin_down = 1;
		child_stop(s, c, conf_get_ms(s->cf, "stop_timeout"));
	} else {
		c->admin_down = 0;
		child_event(s, c, CHILD_EV_START);
	}
	reply_ok(w, NULL);
}

void
ctl_handle(struct sup *s)
{
	char *req;
	size_t len;
	struct buf b;
	struct jw w;
	int rv;

	while ((rv = nng_recv(ctl_sock, &req, &len, NNG_FLAG_NONBLOCK | NNG_FLAG_ALLOC)) == 0) {
		char line[256];

		snprintf(line, sizeof(line), "%.*s", (int)(len < 255 ? len : 255), req);
		nng_free(req, len);
		line[strcspn(line, "\r\n")] = '\0';
		buf_init(&b);
		jw_init(&w, &b);
		ctl_request(s, line, &w);
		if ((rv = nng_send(ctl_sock, b.data, b.len, NNG_FLAG_NONBLOCK)) != 0)
			log_kv(LOG_WARN, "control reply not sent", "error", nng_strerror(rv), NULL);
		buf_free(&b);
	}
}
