/*
 * acl_trigger - the resync triggers decoctl writes under
 * key_acl_resync_prefix(), watched by the stage itself whatever the tenant
 * source: "_all" resyncs every tenant, "<ns>/<name>" the tenant (ns, name).
 * The Kubernetes source keys a namespace's tenant (ns, ns), so decoctl
 * writes "<ns>/<ns>" against a cluster (cli_acl) and nothing here needs to
 * know which source is in use.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/acl/acl.h"
#include "daemons/acl/acl_impl.h"

struct acl_trigger {
	struct acl *a;
	struct store_watch *w;
	struct stage_watch *sw;
	char *prefix;
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

struct acl_trigger *
acl_trigger_start(struct acl *a, struct stage *st)
{
	struct acl_trigger *tr = xcalloc(1, sizeof(*tr));

	tr->a = a;
	tr->prefix = key_acl_resync_prefix();
	if ((tr->w = store_watch_open(st, tr->prefix, on_trigger, tr, 1000, &tr->sw)) == NULL) {
		free(tr->prefix);
		free(tr);
		return NULL;
	}
	return tr;
}

void
acl_trigger_stop(struct acl_trigger *tr)
{
	if (tr == NULL)
		return;
	store_watch_close(tr->w, tr->sw);
	free(tr->prefix);
	free(tr);
}
