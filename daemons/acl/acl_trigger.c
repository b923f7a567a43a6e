/*
 * acl_trigger - the resync triggers decoctl writes under
 * key_acl_resync_prefix(), watched by the stage itself whatever the tenant
 * source: "_all" resyncs every tenant, "<ns>/<name>" the tenant (ns, name).
 * The Kubernetes source keys a namespace's tenant (ns, ns), so decoctl
 * writes "<ns>/<ns>" against a cluster (cli_acl) and nothing here needs to
 * know which source is in use.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/acl/acl.h"
#include "daemons/acl/acl_impl.h"

struct acl_trigger {
	struct acl *a;
	struct stage *st;
	struct store_watch *w;
	char *prefix;
	int fd;
	int64_t timer;
};

static void
on_trigger(void *arg, const struct store_event *ev)
{
	struct acl_trigger *tr = arg;
	char ns[254], name[254];
	const char *rest;

	if (ev->type != STORE_EV_PUT || strncmp(ev->key, tr->prefix, strlen(tr->prefix)) != 0)
		return;
	rest = ev->key + strlen(tr->prefix);
	if (strcmp(rest, "_all") == 0)
		acl_resync(tr->a, NULL, NULL);
	else if (sscanf(rest, "%253[^/]/%253[^/]", ns, name) == 2)
		acl_resync(tr->a, ns, name);
}

static void
dispatch(struct acl_trigger *tr)
{
	if (store_watch_dispatch(tr->w) < 0)
		log_kv(LOG_WARN, "store watch error", "error", store_error(stage_store(tr->st)),
		    NULL);
}

static void
on_fd(struct stage *st, int fd, short revents, void *arg)
{
	(void)st;
	(void)fd;
	(void)revents;
	dispatch(arg);
}

static void
on_timer(struct stage *st, void *arg)
{
	struct acl_trigger *tr = arg;
	int t = 1000, t2;

	dispatch(tr);
	if ((t2 = store_watch_timeout_ms(tr->w)) > 0 && t2 < t)
		t = t2;
	tr->timer = stage_add_timer(st, t, on_timer, tr);
}

struct acl_trigger *
acl_trigger_start(struct acl *a, struct stage *st)
{
	struct acl_trigger *tr = xcalloc(1, sizeof(*tr));

	tr->a = a;
	tr->st = st;
	tr->prefix = key_acl_resync_prefix();
	tr->w = store_watch_new(stage_store(st), tr->prefix, 0, on_trigger, tr);
	if (tr->w == NULL) {
		log_kv(LOG_ERROR, "cannot watch the store", "prefix", tr->prefix, "error",
		    store_error(stage_store(st)), NULL);
		free(tr->prefix);
		free(tr);
		return NULL;
	}
	if ((tr->fd = store_watch_fd(tr->w)) >= 0)
		stage_add_fd(st, tr->fd, POLLIN, on_fd, tr);
	tr->timer = stage_add_timer(st, 1000, on_timer, tr);
	return tr;
}

void
acl_trigger_stop(struct acl_trigger *tr)
{
	if (tr == NULL)
		return;
	if (tr->timer > 0)
		stage_cancel_timer(tr->st, tr->timer);
	if (tr->fd >= 0)
		stage_del_fd(tr->st, tr->fd);
	store_watch_free(tr->w);
	free(tr->prefix);
	free(tr);
}
