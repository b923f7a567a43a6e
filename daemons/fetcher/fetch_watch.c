/*
 * fetch_watch - the Decofiles the fetcher schedules, kept level with the
 * store: a watch on the decofiles prefix (put: upsert the schedule, a spec
 * change fetches now, a hold is acted on by fetch_hold.c; delete: drop it) and one on the sync prefix
 * (`decoctl sync`: fetch now), with a full relist on a watch gap.  Runs on
 * the loop thread only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_lock.h"
#include "daemons/fetcher/fetcher.h"
#include "daemons/kube/kube_front.h"

static int64_t
period_of(struct fetcher *f, yajl_val doc, const char *source)
{
	const char *p;
	int64_t ms;

	if (strcmp(source, "inline") == 0)
		return 0;
	/* a full sha or a digest never moves: fetched once, not polled */
	p = json_get_str(doc, "spec", "github", "commit", NULL);
	if (strcmp(source, "github") == 0 && p != NULL && strlen(p) == 40 &&
	    strspn(p, "0123456789abcdefABCDEF") == 40)
		return 0;
	p = json_get_str(doc, "spec", "oci", "image", NULL);
	if (strcmp(source, "oci") == 0 && p != NULL && strstr(p, "@sha256:") != NULL)
		return 0;
	p = json_get_str(doc, "spec", source, "period", NULL);
	if (p != NULL && parse_duration_ms(p, &ms) == 0 && ms >= 1000)
		return ms;
	return f->poll_ms;
}

/* a Decofile was put (or listed) */
static void
upsert(struct stage *st, const char *ns, const char *name, const char *val, size_t len)
{
	struct fetcher *f = F(st);
	struct src *s = fetcher_src_find(f, ns, name);
	char h[65];
	yajl_val doc;
	struct buf b;
	int held, apply;

	if ((doc = json_parse(val, len, NULL)) == NULL) {
		log_kv(LOG_WARN, "Decofile is not JSON; ignored", "ns", ns, "name", name, NULL);
		return;
	}
	buf_init(&b);
	{
		struct jw w;

		jw_init(&w, &b);
		jw_value(&w, json_get(doc, "spec", NULL));
	}
	/* the owner's template apply request is a change too */
	apply = decofile_template_apply(doc);
	buf_printf(&b, "#%lld%s", (long long)decofile_generation(doc), apply ? "#apply" : "");
	sha256_hex(b.data, b.len, h);
	buf_free(&b);
	if (s == NULL) {
		s = fetcher_src_new(f, ns, name);
	} else if (strcmp(s->spec_hash, h) == 0 && decofile_rollback_to(doc) == NULL) {
		yajl_tree_free(doc);	/* metadata or status only: nothing to do */
		return;
	}
	s->gone = 0;
	memcpy(s->spec_hash, h, sizeof(h));
	free(s->doc);
	s->doc = xstrndup(val, len);
	snprintf(s->source, sizeof(s->source), "%s", decofile_source(doc));
	s->generation = decofile_generation(doc);
	s->period_ms = period_of(f, doc, s->source);
	s->failures = 0;
	if (!fetch_lock_want(f->locks, ns, name)) {
		s->suspended = decofile_suspended(doc);	/* the holder acts on it */
		yajl_tree_free(doc);
		s->again_force = 1;	/* fetch at once when the lock is ours */
		return;
	}
	held = fetch_hold_apply(st, s, doc);
	yajl_tree_free(doc);
	if (!held && apply)
		fetch_tpl_kick(st, s);
	if (!held)
		fetcher_schedule(st, s, 0, 1);
}

static void
drop(struct stage *st, const char *ns, const char *name)
{
	struct src *s = fetcher_src_find(F(st), ns, name);

	if (s == NULL)
		return;
	log_kv(LOG_INFO, "Decofile deleted; schedule dropped", "ns", ns, "name", name, NULL);
	fetch_lock_drop(F(st)->locks, ns, name);
	if (s->busy)
		s->gone = 1;
	else
		fetcher_src_free(st, s);
}

void
fetch_watch_load(struct stage *st, const struct store_list *lp)
{
	struct fetcher *f = F(st);
	const struct store_list l = *lp;
	char kind[254], ns[254], name[254];

	for (struct src *s = f->srcs; s != NULL; s = s->next)
		s->listed = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct src *s;

		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0)
			continue;
		stage_yield(st);	/* a supervisor gone, at start too */
		upsert(st, ns, name, l.kvs[i].value, l.kvs[i].vlen);
		if ((s = fetcher_src_find(f, ns, name)) != NULL)
			s->listed = 1;
	}
	/* sweep what is no longer listed */
	for (struct src *s = f->srcs, *next; s != NULL; s = next) {
		next = s->next;
		if (!s->listed)
			drop(st, s->ns, s->name);
	}
}

int
fetch_watch_relist(struct stage *st)
{
	struct fetcher *f = F(st);
	struct store_list l;

	if (store_list(stage_store(st), f->df_prefix, &l) < 0) {
		log_kv(LOG_ERROR, "cannot list Decofiles", "error", store_error(stage_store(st)),
		    NULL);
		return -1;
	}
	fetch_watch_load(st, &l);
	store_list_free(&l);
	return 0;
}

static void
on_df_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	char kind[254], ns[254], name[254];

	/* the store is no longer what the front door's mirrors' preload says */
	kube_front_mirrors_drop(F(st)->kube);
	if (ev->type == STORE_EV_RELIST) {
		fetch_watch_relist(st);
		return;
	}
	if (key_parse_resource(ev->key, kind, ns, name) < 0 || strcmp(kind, "decofiles") != 0)
		return;
	if (ev->type == STORE_EV_DELETE)
		drop(st, ns, name);
	else
		upsert(st, ns, name, ev->value, ev->vlen);
}

static void
on_sync_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	struct fetcher *f = F(st);
	char ns[254], name[254], nonce[32], *end;
	const char *rest;
	struct src *s;
	long long req;

	if (ev->type != STORE_EV_PUT || strncmp(ev->key, f->sync_prefix,
	    strlen(f->sync_prefix)) != 0)
		return;
	rest = ev->key + strlen(f->sync_prefix);
	if (sscanf(rest, "%253[^/]/%253[^/]", ns, name) != 2 ||
	    (s = fetcher_src_find(f, ns, name)) == NULL)
		return;
	log_kv(LOG_INFO, "sync requested", "ns", ns, "name", name, NULL);
	/* the nonce (wall ms) names the request in status.lastHandledSyncAt */
	if (ev->vlen > 0 && ev->vlen < sizeof(nonce)) {
		memcpy(nonce, ev->value, ev->vlen);
		nonce[ev->vlen] = '\0';
		req = strtoll(nonce, &end, 10);
		if (*end == '\0' && req > s->sync_req)
			s->sync_req = req;
	}
	s->failures = 0;
	fetcher_schedule(st, s, 0, 0);
}

int
fetch_watch_start(struct stage *st, struct store_list *first)
{
	struct fetcher *f = F(st);

	if ((f->watch = store_watch_open_list(st, f->df_prefix, on_df_event, st, 1000,
	    &f->watch_sw, first)) == NULL ||
	    (f->sync_watch = store_watch_open(st, f->sync_prefix, on_sync_event, st, 1000,
	    &f->sync_sw)) == NULL) {
		store_list_free(first);
		return -1;
	}
	return 0;
}
