/*
 * cli_ctl - talking to the supervisor: stages, restart, stop and start go
 * as one text line over nng REQ to ipc://<runtime_dir>/control.ipc (5 s
 * deadline); the JSON reply is printed as a table or as JSON/YAML.  With
 * no supervisor (per-stage units, deploy/'s pod) each stage answers on its
 * own <runtime_dir>/<stage>.ctl.ipc (common/stage_ctl.c): `stages` then
 * asks every configured stage, and any other such socket found there.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "cli/cli.h"
#include "common/conf.h"
#include "common/json.h"
#include "common/stage_ctl.h"

#define CTL_TIMEOUT_MS 5000
#define CTL_SUFFIX ".ctl.ipc"

/*
 * ctl_ask - send req to addr, put the reply (NUL-terminated, caller frees)
 * in *reply; 0, or -1 with the reason in err and *unreachable set when
 * nothing listens there (as opposed to a listener that did not answer).
 */
static int
ctl_ask(const char *addr, const char *req, char **reply, char *err, size_t errlen,
    int *unreachable)
{
	nng_socket s;
	char *msg = NULL;
	size_t len = 0;
	int rv;

	*unreachable = 0;
	if ((rv = nng_req0_open(&s)) != 0) {
		snprintf(err, errlen, "cannot open a socket: %s", nng_strerror(rv));
		return -1;
	}
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, CTL_TIMEOUT_MS);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, CTL_TIMEOUT_MS);
	if ((rv = nng_dial(s, addr, NULL, 0)) != 0) {
		nng_close(s);
		snprintf(err, errlen, "%s: %s", addr, nng_strerror(rv));
		*unreachable = 1;
		return -1;
	}
	if ((rv = nng_send(s, (void *)req, strlen(req), 0)) != 0 ||
	    (rv = nng_recv(s, &msg, &len, NNG_FLAG_ALLOC)) != 0) {
		nng_close(s);
		snprintf(err, errlen, "no answer from %s: %s", addr, nng_strerror(rv));
		return -1;
	}
	*reply = xstrndup(msg, len);
	nng_free(msg, len);
	nng_close(s);
	return 0;
}

/* unit_addr - ipc address of stage name's own control socket (caller frees) */
static char *
unit_addr(struct cli *c, const char *name)
{
	char *path = stage_ctl_path(conf_get(c->cf, "runtime_dir"), name);
	char *addr = xasprintf("ipc://%s", path);

	free(path);
	return addr;
}

/* add_name - append name to the list (n entries) unless it is there */
static char **
add_name(char **names, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(names[i], name) == 0)
			return names;
	names = xrealloc(names, (*n + 1) * sizeof(*names));
	names[(*n)++] = xstrdup(name);
	return names;
}

/*
 * units_stages - no supervisor: ask each stage's own socket (the configured
 * stages, then any other *.ctl.ipc in runtime_dir) and put the answers
 * together in the supervisor's shape; a stage that does not answer is DOWN
 * with the reason.  *reply (caller frees) is NULL when none answered.
 */
static char *
units_stages(struct cli *c)
{
	const char *rdir = conf_get(c->cf, "runtime_dir");
	char *list = xstrdup(conf_get(c->cf, "stages")), *save = NULL, **names = NULL;
	size_t n = 0, answered = 0;
	struct dirent *de;
	struct buf b;
	struct jw w;
	DIR *d;

	for (char *s = strtok_r(list, " ,", &save); s; s = strtok_r(NULL, " ,", &save))
		names = add_name(names, &n, s);
	free(list);
	if ((d = opendir(rdir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			size_t len = strlen(de->d_name), sl = strlen(CTL_SUFFIX);
			char *name;

			if (len <= sl || strcmp(de->d_name + len - sl, CTL_SUFFIX) != 0)
				continue;
			name = xstrndup(de->d_name, len - sl);
			names = add_name(names, &n, name);
			free(name);
		}
		closedir(d);
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "role");
	jw_str(&w, "unit");
	jw_key(&w, "stages");
	jw_arr(&w);
	for (size_t i = 0; i < n; i++) {
		char *addr = unit_addr(c, names[i]), *reply = NULL, err[1400];
		struct json_error je;
		yajl_val v = NULL, st = NULL;
		int unreachable;

		if (ctl_ask(addr, "stages", &reply, err, sizeof(err), &unreachable) == 0 &&
		    (v = json_parse(reply, strlen(reply), &je)) != NULL &&
		    (st = json_get(v, "stages", NULL)) != NULL && YAJL_IS_ARRAY(st) &&
		    st->u.array.len == 1) {
			jw_value(&w, st->u.array.values[0]);
			answered++;
		} else {
			jw_obj(&w);
			jw_key(&w, "name");
			jw_str(&w, names[i]);
			jw_key(&w, "state");
			jw_str(&w, "DOWN");
			jw_key(&w, "pid");
			jw_int(&w, 0);
			jw_key(&w, "error");
			jw_str(&w, reply == NULL ? err : "its answer is not a stage's");
			jw_end_obj(&w);
		}
		if (v != NULL)
			yajl_tree_free(v);
		free(reply);
		free(addr);
		free(names[i]);
	}
	free(names);
	jw_end_arr(&w);
	jw_end_obj(&w);
	if (answered == 0) {
		buf_free(&b);
		return NULL;
	}
	buf_addc(&b, '\0');
	return buf_steal(&b, NULL);
}

static int
print_stages(struct cli *c, yajl_val v)
{
	yajl_val stages = json_get(v, "stages", NULL);
	struct table t;
	int with_metrics = 0;

	const char *role = json_get_str(v, "role", NULL);
	const char *holder = json_get_str(v, "holder", NULL);

	if (!YAJL_IS_ARRAY(stages))
		return cli_error("the supervisor's answer has no stages");
	/* a standby runs nothing: say who does, before its STANDBY rows */
	if (role != NULL && strcmp(role, "standby") == 0)
		printf("standby: the stages run where the Lease is held, by %s\n",
		    holder != NULL && *holder ? holder : "nobody yet");
	else if (role != NULL && strcmp(role, "unit") == 0)
		printf("no supervisor: each stage answered on its own control socket\n");
	/* a METRICS column once metrics_listen (or metrics_port) gives addresses */
	for (size_t i = 0; i < stages->u.array.len; i++)
		with_metrics |= json_get_str(stages->u.array.values[i], "metrics", NULL) != NULL;
	if (with_metrics)
		table_init(&t, 6, "STAGE", "STATE", "PID", "RESTARTS", "UPTIME", "METRICS");
	else
		table_init(&t, 5, "STAGE", "STATE", "PID", "RESTARTS", "UPTIME");
	for (size_t i = 0; i < stages->u.array.len; i++) {
		yajl_val s = stages->u.array.values[i];
		const char *name = json_get_str(s, "name", NULL);
		const char *state = json_get_str(s, "state", NULL);
		int64_t pid = json_get_int(s, 0, "pid", NULL);
		char spid[32], restarts[32], up[32], st[64];

		snprintf(spid, sizeof(spid), "%lld", (long long)pid);
		snprintf(restarts, sizeof(restarts), "%lld",
		    (long long)json_get_int(s, 0, "restarts", NULL));
		if (pid > 0)
			cli_age(json_get_int(s, 0, "uptime_s", NULL) * 1000, up, sizeof(up));
		else
			snprintf(up, sizeof(up), "-");
		snprintf(st, sizeof(st), "%s%s", state ? state : "?",
		    json_get_bool(s, 0, "admin_down", NULL) ? " (stopped by admin)" : "");
		if (with_metrics) {
			const char *ma = json_get_str(s, "metrics", NULL);

			table_row(&t, name ? name : "?", st, pid > 0 ? spid : "-", restarts, up,
			    ma != NULL ? ma : "-");
		} else {
			table_row(&t, name ? name : "?", st, pid > 0 ? spid : "-", restarts, up);
		}
	}
	table_print(&t, stdout);
	table_free(&t);
	for (size_t i = 0; i < stages->u.array.len; i++) {
		const char *e = json_get_str(stages->u.array.values[i], "error", NULL);

		if (e != NULL)
			fprintf(stderr, "%s: %s\n", json_get_str(stages->u.array.values[i],
			    "name", NULL), e);
	}
	return CLI_OK;
}

int
cli_ctl(struct cli *c)
{
	struct json_error je;
	char *req, *addr, *reply = NULL, err[1400];
	yajl_val v;
	int rc, unreachable;

	if (strcmp(c->cmd, "stages") == 0)
		req = xstrdup("stages");
	else if (strspn(c->argv[0], "abcdefghijklmnopqrstuvwxyz0123456789-_") !=
	    strlen(c->argv[0]) || c->argv[0][0] == '\0')
		return cli_usage_error(c, "bad stage name \"%s\"", c->argv[0]);
	else
		req = xasprintf("%s %s", c->cmd, c->argv[0]);
	addr = xasprintf("ipc://%s/control.ipc", conf_get(c->cf, "runtime_dir"));
	rc = ctl_ask(addr, req, &reply, err, sizeof(err), &unreachable);
	if (rc < 0 && unreachable) {
		/* no supervisor: the stages may run as their own units */
		char *uaddr = strcmp(c->cmd, "stages") == 0 ? NULL : unit_addr(c, c->argv[0]);
		char uerr[1400];
		int uun;

		if (uaddr == NULL)
			reply = units_stages(c);
		else if (ctl_ask(uaddr, req, &reply, uerr, sizeof(uerr), &uun) < 0)
			reply = NULL;
		rc = reply != NULL ? 0 : -1;
		free(uaddr);
	}
	free(req);
	if (rc < 0) {
		rc = cli_error("cannot reach the supervisor at %s%s: %s (is decod running?)",
		    addr, unreachable ? " nor a stage's own control socket" : "", err);
		free(addr);
		return rc;
	}
	free(addr);
	if ((v = json_parse(reply, strlen(reply), &je)) == NULL) {
		rc = cli_error("the supervisor answered something that is not JSON: %s", je.msg);
		free(reply);
		return rc;
	}
	free(reply);
	if (json_get(v, "ok", NULL) != NULL && !json_get_bool(v, 0, "ok", NULL)) {
		const char *e = json_get_str(v, "error", NULL);

		rc = cli_error("%s", e ? e : "the supervisor refused");
	} else if (c->out == OUT_JSON || c->out == OUT_YAML) {
		rc = cli_print(c, v);
	} else if (strcmp(c->cmd, "stages") == 0) {
		rc = print_stages(c, v);
	} else {
		printf("%s %s: %s\n", c->argv[0], strcmp(c->cmd, "stop") == 0 ? "stopping" :
		    strcmp(c->cmd, "start") == 0 ? "starting" : "restarting", "ok");
		rc = CLI_OK;
	}
	yajl_tree_free(v);
	return rc;
}
