/*
 * publisher - the stage that puts rendered documents where sites read them.
 * It reads each item and its Decofile, picks the target by spec.target
 * and hands the item over: every target (file, configmap, s3) sits behind
 * publish_target.h in files of its own and owns its objects from there
 * (the write, Ready, inventory, drift, deletion).  This file is the
 * dispatcher: the item checks every target shares, the store watch on
 * Decofiles that tells each target about changes and deletions, and the
 * targets' start, tick and stop.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/publish_record.h"
#include "daemons/publisher/publish_target.h"
#include "proto/proto.h"

#define STAGE PUBLISH_STAGE

/* the targets; p->tstate[i] is targets[i]'s state (NULL: not usable on this host) */
static const struct publish_target *const targets[] = {
	&publish_file_target, &publish_s3_target, &publish_configmap_target,
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

struct pub {
	void *tstate[NTARGETS];
	struct store_watch *watch;	/* Decofiles */
	struct stage_watch *watch_sw;
};

/* unsupported - no target of that name works here: Ready=False, the item parked */
static enum stage_result
unsupported(struct stage *st, const struct journal_item *it, const char *target)
{
	struct pub *p = stage_data(st);
	char why[1024], names[256] = "", unusable[256] = "";

	for (size_t i = 0; i < NTARGETS; i++) {
		char *to = p->tstate[i] != NULL ? names : unusable;
		const char *what = p->tstate[i] != NULL ? targets[i]->name :
		    targets[i]->unavailable;

		snprintf(to + strlen(to), sizeof(names) - strlen(to), "%s%s", to[0] ? ", " : "",
		    what);
	}
	snprintf(why, sizeof(why), "target \"%s\" is not supported by this publisher yet"
	    " (supported: %s%s%s)", target, names, unusable[0] ? "; " : "", unusable);
	status_set_condition(stage_store(st), stage_journal(st), "decofiles", it->ns, it->name,
	    STAGE, "Ready", "False", "UnsupportedTarget", why);
	return publish_item_failed(st, it, STAGE_FAIL, why);
}

/* on_item - check the item, read its Decofile, hand both to its target */
static enum stage_result
on_item(struct stage *st, const struct journal_item *it)
{
	struct pub *p = stage_data(st);
	struct proto_publish_detail pd;
	char err[512], why[1024];
	enum stage_result r;
	yajl_val doc = NULL;
	const char *target;
	size_t i;
	int rv;

	if (strcmp(it->kind, "decofile") != 0 && strcmp(it->kind, "recompress") != 0)
		return publish_item_failed(st, it, STAGE_FAIL, "unknown item kind");
	if (!is_sha256_hex(it->hash))
		return publish_item_failed(st, it, STAGE_FAIL, "item carries no content hash");
	if (proto_publish_detail_decode(it->detail, &pd, why, sizeof(why)) < 0)
		return publish_item_failed(st, it, STAGE_FAIL, why);
	if (!name_valid(it->ns) || !name_valid(it->name))
		return publish_item_failed(st, it, STAGE_FAIL, "invalid namespace or name");
	if ((rv = resource_get(stage_store(st), "decofiles", it->ns, it->name, &doc, err,
	    sizeof(err))) < 0) {
		snprintf(why, sizeof(why), "reading the Decofile: %s", err);
		return publish_item_failed(st, it, STAGE_RETRY, why);
	}
	if (rv == 1) {
		log_kv(LOG_INFO, "Decofile deleted before publishing; nothing to do", "ns",
		    it->ns, "name", it->name, NULL);
		return STAGE_DONE;
	}
	target = decofile_target(doc, conf_get(stage_conf(st), "default_target"));
	for (i = 0; i < NTARGETS; i++)
		if (p->tstate[i] != NULL && strcmp(target, targets[i]->name) == 0)
			break;
	if (strcmp(it->kind, "recompress") == 0)	/* a smaller .bin, same content */
		r = i < NTARGETS && targets[i]->swap != NULL ?
		    targets[i]->swap(st, p->tstate[i], it, &pd) : STAGE_DONE;
	else
		r = i < NTARGETS ? targets[i]->publish(st, p->tstate[i], it, &pd, doc) :
		    unsupported(st, it, target);
	yajl_tree_free(doc);
	return r;
}

/* on_store_event - a Decofile written or deleted, or history lost: tell every target */
static void
on_store_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	struct pub *p = stage_data(st);
	char kind[254], ns[254], name[254];
	yajl_val doc = NULL;

	if (ev->type == STORE_EV_RELIST) {
		for (size_t i = 0; i < NTARGETS; i++)
			if (p->tstate[i] != NULL)
				targets[i]->relist(st, p->tstate[i]);
		return;
	}
	if (key_parse_resource(ev->key, kind, ns, name) < 0 || strcmp(kind, "decofiles") != 0)
		return;
	if (ev->type != STORE_EV_DELETE &&
	    (doc = json_parse(ev->value, ev->vlen, NULL)) == NULL)
		return;
	for (size_t i = 0; i < NTARGETS; i++) {
		if (p->tstate[i] == NULL)
			continue;
		if (doc == NULL)
			targets[i]->remove(st, p->tstate[i], ns, name);
		else
			targets[i]->update(st, p->tstate[i], ns, name, doc);
	}
	yajl_tree_free(doc);
}

static int
pub_init(struct stage *st)
{
	struct pub *p = xcalloc(1, sizeof(*p));
	char *prefix;

	stage_set_data(st, p);
	/* watch first, then list: nothing deleted in between is missed */
	prefix = key_resource_prefix("decofiles", NULL);
	p->watch = store_watch_open(st, prefix, on_store_event, st, 1000, &p->watch_sw);
	free(prefix);
	if (p->watch == NULL)
		return -1;
	for (size_t i = 0; i < NTARGETS; i++)
		if (targets[i]->init(st, &p->tstate[i]) < 0)
			return -1;
	log_kv(LOG_INFO, "publisher ready", NULL);
	return 0;
}

/* pub_timer - each target's tick: drift checks, retries */
static void
pub_timer(struct stage *st)
{
	struct pub *p = stage_data(st);

	for (size_t i = 0; i < NTARGETS; i++)
		if (p->tstate[i] != NULL && targets[i]->tick != NULL)
			targets[i]->tick(st, p->tstate[i]);
}

static void
pub_shutdown(struct stage *st)
{
	struct pub *p = stage_data(st);

	log_kv(LOG_INFO, "publisher stopping", NULL);
	for (size_t i = 0; i < NTARGETS; i++)
		if (p->tstate[i] != NULL)
			targets[i]->shutdown(st, p->tstate[i]);
	store_watch_close(p->watch, p->watch_sw);
	free(p);
	stage_set_data(st, NULL);
}

static const struct stage_ops ops = {
	.name = STAGE,
	.use_store = 1,
	.init = pub_init,
	.on_item = on_item,
	.on_timer = pub_timer,
	.timer_ms = 1000,
	.shutdown = pub_shutdown,
	.max_async = 64,	/* uploads and ConfigMap writes in flight at once */
	.batch = 1,		/* one commit and one group of syncs per batch of items */
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
