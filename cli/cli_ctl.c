/*
 * cli_ctl - talking to the supervisor: stages, restart, stop and start go
 * as one text line over nng REQ to ipc://<runtime_dir>/control.ipc (5 s
 * deadline); the JSON reply is printed as a table or as JSON/YAML.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "cli/cli.h"
#include "common/conf.h"
#include "common/json.h"

#define CTL_TIMEOUT_MS 5000

/* ctl_call - send req, put the reply (NUL-terminated, caller frees) in *reply */
static int
ctl_call(struct cli *c, const char *req, char **reply)
{
	char addr[1200];
	nng_socket s;
	char *msg = NULL;
	size_t len = 0;
	int rv;

	snprintf(addr, sizeof(addr), "ipc://%s/control.ipc", conf_get(c->cf, "runtime_dir"));
	if ((rv = nng_req0_open(&s)) != 0)
		return cli_error("cannot open a socket: %s", nng_strerror(rv));
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, CTL_TIMEOUT_MS);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, CTL_TIMEOUT_MS);
	if ((rv = nng_dial(s, addr, NULL, 0)) != 0) {
		nng_close(s);
		return cli_error("cannot reach the supervisor at %s: %s (is decod running?)",
		    addr, nng_strerror(rv));
	}
	if ((rv = nng_send(s, (void *)req, strlen(req), 0)) != 0 ||
	    (rv = nng_recv(s, &msg, &len, NNG_FLAG_ALLOC)) != 0) {
		nng_close(s);
		return cli_error("no answer from the supervisor at %s: %s", addr,
		    nng_strerror(rv));
	}
	*reply = xstrndup(msg, len);
	nng_free(msg, len);
	nng_close(s);
	return CLI_OK;
}

static int
print_stages(struct cli *c, yajl_val v)
{
	yajl_val stages = json_get(v, "stages", NULL);
	struct table t;

	if (!YAJL_IS_ARRAY(stages))
		return cli_error("the supervisor's answer has no stages");
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
		table_row(&t, name ? name : "?", st, pid > 0 ? spid : "-", restarts, up);
	}
	table_print(&t, stdout);
	table_free(&t);
	return CLI_OK;
}

int
cli_ctl(struct cli *c)
{
	struct json_error je;
	char *req, *reply = NULL;
	yajl_val v;
	int rc;

	if (strcmp(c->cmd, "stages") == 0)
		req = xstrdup("stages");
	else if (strspn(c->argv[0], "abcdefghijklmnopqrstuvwxyz0123456789-_") !=
	    strlen(c->argv[0]) || c->argv[0][0] == '\0')
		return cli_usage_error(c, "bad stage name \"%s\"", c->argv[0]);
	else
		req = xasprintf("%s %s", c->cmd, c->argv[0]);
	rc = ctl_call(c, req, &reply);
	free(req);
	if (rc != CLI_OK)
		return rc;
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
