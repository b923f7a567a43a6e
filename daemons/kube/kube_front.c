/*
 * kube_front - the Kubernetes front door (a component of its own, run by the
 * fetcher: see doc/design.md, "Status").  It owns a client on the
 * fetcher's loop, informers of Decofile and DecofileTemplate CRs, and a
 * store watch of the status fragments.  CR changes become store puts and
 * deletes (marked with the CR's uid so a re-list can tell its own mirrors
 * from what decoctl applied); every stage's fragment of a CR, merged,
 * becomes one server-side apply of the CR's status under the one field
 * manager `decod` (kube_front_status.c), skipped when the CR already shows
 * it, so a restart writes nothing.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/kube/kube_front.h"
#include "daemons/kube/kube_front_int.h"

const struct kind_info kf_kinds[2] = {
	{ "decofiles", &kube_decofiles },
	{ "templates", &kube_decofiletemplates },	/* the store's plural */
};

/* ---- pure parts (unit-tested) ---- */

yajl_val
kube_front_mirror_doc(yajl_val obj)
{
	const char *name = kube_obj_name(obj), *ns = kube_obj_ns(obj), *uid = kube_obj_uid(obj);
	const char *kind = json_get_str(obj, "kind", NULL);
	yajl_val v, spec = json_get(obj, "spec", NULL);
	struct buf b;
	struct jw w;
	yajl_val doc;

	if (*name == '\0' || *ns == '\0' || kind == NULL || spec == NULL || !YAJL_IS_OBJECT(spec))
		return NULL;
	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, API_VERSION, kind, ns, name);
	if ((v = json_get(obj, "metadata", "labels", NULL)) != NULL && YAJL_IS_OBJECT(v)) {
		jw_key(&w, "labels");
		jw_value(&w, v);
	}
	jw_key(&w, "annotations");
	jw_obj(&w);
	if ((v = json_get(obj, "metadata", "annotations", NULL)) != NULL && YAJL_IS_OBJECT(v))
		for (size_t i = 0; i < v->u.object.len; i++) {
			/* kubectl's copy of the whole object is noise in the store */
			if (strcmp(v->u.object.keys[i], KUBE_FRONT_UID_ANNOTATION) == 0 ||
			    strcmp(v->u.object.keys[i],
			    "kubectl.kubernetes.io/last-applied-configuration") == 0)
				continue;
			jw_key(&w, v->u.object.keys[i]);
			jw_value(&w, v->u.object.values[i]);
		}
	jw_key(&w, KUBE_FRONT_UID_ANNOTATION);
	jw_str(&w, uid);
	jw_end_obj(&w);
	jw_end_obj(&w);
	jw_key(&w, "spec");
	jw_value(&w, spec);
	jw_end_obj(&w);
	doc = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	return doc;
}

int
kube_front_patch(struct kube_front *fk, const char *ns, const char *name,
    const char *body, void (*done)(void *arg, const struct kube_resp *r), void *arg)
{
	if (fk == NULL)
		return -1;
	(void)kube_merge_patch(fk->k, kf_kinds[0].kd, ns, name, NULL, body, strlen(body), done,
	    arg);
	return 0;
}

/* ---- CRs into the store ---- */

/*
 * mirror_known - the mirror of Decofile CR obj as the store held it at the
 * fetcher's start, the first time it is asked for (after that, and when it
 * is not there, the store is read)
 */
static const struct store_kv *
mirror_known(struct kube_front *fk, yajl_val obj)
{
	char *key;
	size_t i;

	if (!fk->mirrors_loaded)
		return NULL;
	key = key_resource(kf_kinds[0].plural, kube_obj_ns(obj), kube_obj_name(obj));
	i = store_list_seek(&fk->mirrors, key);
	if (i == fk->mirrors.n || strcmp(fk->mirrors.kvs[i].key, key) != 0 ||
	    fk->mirror_used[i]) {
		free(key);
		return NULL;
	}
	free(key);
	fk->mirror_used[i] = 1;
	fk->mirrors_used++;
	return &fk->mirrors.kvs[i];
}

static void
mirror(struct kube_front *fk, const struct kind_info *ki, enum kube_event ev, yajl_val obj)
{
	struct store *s = stage_store(fk->st);
	char plural[64], ns[254], name[254], err[512];
	yajl_val doc;
	int changed = 0;

	if (ev == KUBE_DELETED) {
		char *key = key_resource(ki->plural, kube_obj_ns(obj), kube_obj_name(obj));

		if (store_delete(s, key) < 0)
			log_kv(LOG_WARN, "cannot delete the mirror of a deleted CR", "key", key,
			    "error", store_error(s), NULL);
		else
			log_kv(LOG_INFO, "CR deleted: removed from the store", "kind", ki->plural,
			    "ns", kube_obj_ns(obj), "name", kube_obj_name(obj), NULL);
		free(key);
		return;
	}
	if ((doc = kube_front_mirror_doc(obj)) == NULL) {
		log_kv(LOG_WARN, "CR without name, namespace or spec: ignored", "kind", ki->plural,
		    "ns", kube_obj_ns(obj), "name", kube_obj_name(obj), NULL);
		return;
	}
	/* the CR's generation, so observedGeneration speaks of the CR's own */
	if (resource_put_gen_known(s, doc, json_get_int(obj, 0, "metadata", "generation",
	    NULL), ki == &kf_kinds[0] ? mirror_known(fk, obj) : NULL, &changed, plural, ns,
	    name, err, sizeof(err)) < 0)
		log_kv(LOG_WARN, "cannot mirror the CR into the store", "kind", ki->plural,
		    "ns", kube_obj_ns(obj), "name", kube_obj_name(obj), "error", err, NULL);
	else if (changed) {
		fk->mirrored++;
		log_kv(LOG_INFO, changed == 2 ? "CR mirrored into the store" :
		    "CR change mirrored into the store", "kind", ki->plural, "ns", ns,
		    "name", name, NULL);
	}
	yajl_tree_free(doc);
	if (ev == KUBE_ADDED)
		kf_push_all(fk, ki, kube_obj_ns(obj), kube_obj_name(obj));
	else
		kf_cr_seen(fk, ki, kube_obj_ns(obj), kube_obj_name(obj));
}

/* sweep_list - sweep's work on the mirrors of l */
static void
sweep_list(struct kube_front *fk, const struct kind_info *ki, struct kube_informer *inf,
    const struct store_list *pl)
{
	struct store *s = stage_store(fk->st);
	const struct store_list l = *pl;

	for (size_t i = 0; i < l.n; i++) {
		char kind[64], ns[254], name[254];
		yajl_val doc;

		/* its CR is there (every mirror after a restart): nothing to read */
		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0 ||
		    kube_informer_get(inf, ns, name) != NULL)
			continue;
		if ((doc = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL)) == NULL)
			continue;
		if (json_get_str(doc, "metadata", "annotations", KUBE_FRONT_UID_ANNOTATION,
		    NULL) != NULL) {
			log_kv(LOG_INFO, "CR gone while not watched: removed from the store",
			    "kind", ki->plural, "ns", ns, "name", name, NULL);
			store_delete(s, l.kvs[i].key);
		}
		yajl_tree_free(doc);
	}
}

/*
 * sweep - after a complete list: mirrors whose CR is gone are deleted (the
 * Decofiles' from the mirrors' preload while it holds: a mirror made since
 * has its CR, or was deleted with it)
 */
static void
sweep(struct kube_front *fk, const struct kind_info *ki, struct kube_informer *inf)
{
	struct store *s = stage_store(fk->st);
	char *prefix = key_resource_prefix(ki->plural, NULL);
	struct store_list l, *pl = &l;

	memset(&l, 0, sizeof(l));
	if (ki == &kf_kinds[0] && fk->mirrors_loaded)
		pl = &fk->mirrors;
	else if (store_list(s, prefix, &l) < 0) {
		free(prefix);
		return;
	}
	sweep_list(fk, ki, inf, pl);
	store_list_free(&l);
	free(prefix);
}

/* ---- the status fragments listed at start-up ---- */

void
kube_front_preload(struct kube_front *fk, struct store_list *l)
{
	if (fk == NULL) {
		store_list_free(l);
		return;
	}
	kf_preload_drop(fk);
	fk->preload = *l;
	fk->preloaded = 1;
	memset(l, 0, sizeof(*l));
}

int
kf_preload_merged(struct kube_front *fk, const char *plural, const char *ns,
    const char *name, struct buf *out)
{
	char *prefix;
	size_t lo, first, plen;

	if (!fk->preloaded || strcmp(plural, kf_kinds[0].plural) != 0)
		return -1;
	prefix = key_status_prefix(plural, ns, name);
	plen = strlen(prefix);
	first = lo = store_list_seek(&fk->preload, prefix);
	while (lo < fk->preload.n && strncmp(fk->preload.kvs[lo].key, prefix, plen) == 0)
		lo++;
	free(prefix);
	resource_status_merge_kvs(fk->preload.kvs + first, lo - first, out);
	fk->preload_used++;
	return 0;
}

void
kube_front_progress(struct kube_front *fk)
{
	if (fk != NULL)
		kube_progress(fk->k);
}

const struct store_list *
kube_front_preloaded(const struct kube_front *fk)
{
	return fk != NULL && fk->preloaded ? &fk->preload : NULL;
}

void
kube_front_mirrors(struct kube_front *fk, struct store_list *l)
{
	if (fk == NULL) {
		store_list_free(l);
		return;
	}
	kf_mirrors_drop(fk);
	fk->mirrors = *l;
	fk->mirror_used = xcalloc(l->n + 1, 1);
	fk->mirrors_loaded = 1;
	memset(l, 0, sizeof(*l));
}

void
kube_front_mirrors_drop(struct kube_front *fk)
{
	if (fk != NULL)
		kf_mirrors_drop(fk);
}

void
kf_mirrors_drop(struct kube_front *fk)
{
	if (!fk->mirrors_loaded)
		return;
	store_list_free(&fk->mirrors);
	free(fk->mirror_used);
	fk->mirror_used = NULL;
	fk->mirrors_loaded = 0;
}

void
kube_front_preload_drop(struct kube_front *fk)
{
	if (fk != NULL)
		kf_preload_drop(fk);
}

void
kf_preload_drop(struct kube_front *fk)
{
	if (!fk->preloaded)
		return;
	store_list_free(&fk->preload);
	memset(&fk->preload, 0, sizeof(fk->preload));
	fk->preloaded = 0;
}

/*
 * caught_up - logged once, when both kinds are listed, every CR mirrored
 * and compared with its fragments, and the status writes that asked for
 * have landed (after a restart with everything reconciled: none)
 */
void
kf_caught_up(struct kube_front *fk)
{
	char crs[32], mirrored[32], writes[32], pre[32], mpre[32];

	if (fk->caught_up || fk->inflight > 0 || fk->qhead != NULL || fk->dhead != NULL ||
	    !kube_informer_synced(fk->dfs) ||
	    !kube_informer_synced(fk->tpls))
		return;
	fk->caught_up = 1;
	kf_preload_drop(fk);	/* every CR compared: its fragments are watched now */
	kf_mirrors_drop(fk);
	snprintf(crs, sizeof(crs), "%zu", kube_informer_count(fk->dfs) +
	    kube_informer_count(fk->tpls));
	snprintf(mirrored, sizeof(mirrored), "%" PRIu64, fk->mirrored);
	snprintf(writes, sizeof(writes), "%" PRIu64, fk->status_writes);
	snprintf(pre, sizeof(pre), "%" PRIu64, fk->preload_used);
	snprintf(mpre, sizeof(mpre), "%" PRIu64, fk->mirrors_used);
	log_kv(LOG_INFO, "Kubernetes front door caught up", "crs", crs, "mirrored", mirrored,
	    "status_writes", writes, "compared_from_preload", pre, "mirrors_from_preload",
	    mpre, NULL);
}

static void
on_cr(void *arg, enum kube_event ev, yajl_val obj, yajl_val old, const struct kind_info *ki,
    struct kube_informer *inf)
{
	struct kube_front *fk = arg;

	(void)old;
	if (!kf_leading(fk))
		return;		/* a standby: the leader's pod does the work */
	if (ev == KUBE_SYNCED) {
		sweep(fk, ki, inf);
		kf_caught_up(fk);
	} else
		mirror(fk, ki, ev, obj);
}

/* catch_up_one - a new leader takes in every CR the cache holds */
static void
catch_up_df(void *arg, yajl_val obj)
{
	mirror(arg, &kf_kinds[0], KUBE_ADDED, obj);
}

static void
catch_up_tpl(void *arg, yajl_val obj)
{
	mirror(arg, &kf_kinds[1], KUBE_ADDED, obj);
}

static void
on_lease(void *arg, int now_leading)
{
	struct kube_front *fk = arg;

	if (!now_leading) {
		/* as controller-runtime: stop; the kubelet restarts us as a standby */
		log_kv(LOG_ERROR, "leader election lost: exiting", NULL);
		exit(1);
	}
	if (kube_informer_synced(fk->dfs)) {
		sweep(fk, &kf_kinds[0], fk->dfs);
		kube_informer_foreach(fk->dfs, catch_up_df, fk);
	}
	if (kube_informer_synced(fk->tpls)) {
		sweep(fk, &kf_kinds[1], fk->tpls);
		kube_informer_foreach(fk->tpls, catch_up_tpl, fk);
	}
}

static void
on_df(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct kube_front *fk = arg;

	on_cr(arg, ev, obj, old, &kf_kinds[0], fk->dfs);
}

static void
on_tpl(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct kube_front *fk = arg;

	on_cr(arg, ev, obj, old, &kf_kinds[1], fk->tpls);
}

/* ---- life ---- */

struct kube_front *
kube_front_new(struct stage *st, char *err, size_t errlen)
{
	struct conf *cf = stage_conf(st);
	struct kube *k;
	struct kube_front *fk;

	if ((k = kube_from_conf(cf, err, errlen)) == NULL)
		return NULL;
	fk = xcalloc(1, sizeof(*fk));
	fk->st = st;
	fk->k = k;
	kube_attach(fk->k, st);
	(void)kf_events_start(fk);
	/*
	 * the lists first, on their way (kube_front_progress) while the
	 * stage's start-up reads the store: their CRs are delivered by the loop
	 */
	fk->dfs = kube_informer_new(fk->k, &kube_decofiles, NULL, NULL, on_df, fk);
	fk->tpls = kube_informer_new(fk->k, &kube_decofiletemplates, NULL, NULL, on_tpl, fk);
	/* under the supervisor, the supervisor holds the Lease */
	if (!stage_supervised(st) && kube_lease_wanted(cf))
		fk->lease = kube_lease_from_conf(fk->k, cf, on_lease, fk);
	kube_progress(fk->k);
	if (kf_status_start(fk, err, errlen) < 0) {
		kube_front_free(fk);
		return NULL;
	}
	kube_progress(fk->k);
	log_kv(LOG_INFO, "Kubernetes front door on", "server", kube_server(fk->k), NULL);
	return fk;
}

void
kube_front_free(struct kube_front *fk)
{
	char applies[200];

	if (fk == NULL)
		return;
	kf_applies_text(fk, applies, sizeof(applies));
	log_kv(LOG_INFO, "Kubernetes front door stopping", "status_applies", applies, NULL);
	kube_lease_free(fk->lease);
	kube_free(fk->k);	/* cancels the writes in flight */
	kf_status_free(fk);	/* the store watch, the writes waiting, their records */
	kf_preload_drop(fk);
	kf_mirrors_drop(fk);
	kf_events_free(fk);
	free(fk);
}
