/*
 * publish_configmap - the configmap target.  It owns a Kubernetes client on
 * the stage's loop, a cache of ConfigMaps (so deciding costs no API call),
 * and the ConfigMaps it published (content hash, bin blob, timestamp, the
 * owner CR's uid).  Decofile CRs are read by the front door alone: the uid
 * an owner reference names is the one on the store's mirror of the CR.  Writes are asynchronous server-side applies under field
 * manager decod-publisher with force (decod owns decofile-<name> whole); a
 * key someone else added is removed with a merge patch, since SSA alone
 * would keep it.  The journal records publish, inventory, drift and audit.
 * This file decides: the pure helpers, the cache of published objects, drift
 * found and the restore after start-up, and the stage's calls; a write once
 * decided (the job: strip, apply, record) is publish_configmap_write.c's.
 */
#include "config.h"

#include <brotli/decode.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/s3key.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/publish_configmap.h"
#include "daemons/publisher/publish_configmap_int.h"
#include "daemons/publisher/publish_record.h"
#include "daemons/publisher/publish_target.h"
#include "daemons/publisher/objtab.h"

#define REPAIR_DEBOUNCE_MS 20
#define MAX_JSON (256u << 20)

/* ---- pure helpers (unit-tested) ---- */

size_t
publish_configmap_size(size_t b64len, int64_t ts)
{
	char t[32];

	snprintf(t, sizeof(t), "%lld", (long long)ts);
	return strlen("decofile.bin") + b64len + strlen("timestamp.txt") + strlen(t);
}

char *
publish_configmap_body(const char *ns, const char *name, const char *owner_uid,
    const char *b64, size_t len, int64_t ts, size_t *outlen)
{
	struct buf b;
	struct jw w;
	char cm[300], t[32];

	configmap_name(name, cm, sizeof(cm));
	snprintf(t, sizeof(t), "%lld", (long long)ts);
	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, "v1", "ConfigMap", ns, cm);
	jw_key(&w, "labels");
	jw_obj(&w);
	jw_key(&w, "app.kubernetes.io/managed-by");
	jw_str(&w, "decod");
	jw_key(&w, "deco.sites/decofile");
	jw_str(&w, name);
	jw_end_obj(&w);
	if (owner_uid != NULL && *owner_uid != '\0') {
		jw_key(&w, "ownerReferences");
		jw_arr(&w);
		jw_obj(&w);
		jw_key(&w, "apiVersion");
		jw_str(&w, "deco.sites/v1alpha1");
		jw_key(&w, "kind");
		jw_str(&w, "Decofile");
		jw_key(&w, "name");
		jw_str(&w, name);
		jw_key(&w, "uid");
		jw_str(&w, owner_uid);
		jw_key(&w, "controller");
		jw_bool(&w, 1);
		jw_key(&w, "blockOwnerDeletion");
		jw_bool(&w, 1);
		jw_end_obj(&w);
		jw_end_arr(&w);
	}
	jw_end_obj(&w);
	jw_key(&w, "data");
	jw_obj(&w);
	jw_key(&w, "decofile.bin");
	jw_strn(&w, b64, len);
	jw_key(&w, "timestamp.txt");
	jw_str(&w, t);
	jw_end_obj(&w);
	jw_end_obj(&w);
	return buf_steal(&b, outlen);
}

int
publish_configmap_holds(yajl_val cm, const char *bin_sha, int64_t ts, int *extra)
{
	yajl_val data = json_get(cm, "data", NULL);
	int good = 0, others = 0;
	char t[32], h[65];

	snprintf(t, sizeof(t), "%lld", (long long)ts);
	if (data != NULL && YAJL_IS_OBJECT(data)) {
		for (size_t i = 0; i < data->u.object.len; i++) {
			const char *k = data->u.object.keys[i];
			yajl_val v = data->u.object.values[i];

			if (strcmp(k, "decofile.bin") == 0 && YAJL_IS_STRING(v)) {
				sha256_hex(v->u.string, strlen(v->u.string), h);
				good += strcmp(h, bin_sha) == 0;
			} else if (strcmp(k, "timestamp.txt") == 0 && YAJL_IS_STRING(v))
				good += strcmp(v->u.string, t) == 0;
			else
				others++;
		}
	}
	if (json_get(cm, "binaryData", NULL) != NULL) {
		yajl_val bd = json_get(cm, "binaryData", NULL);

		others += YAJL_IS_OBJECT(bd) ? (int)bd->u.object.len : 1;
	}
	if (extra != NULL)
		*extra = others;
	return good == 2 && others == 0;
}

int
publish_configmap_content(yajl_val cm, char *out)
{
	const char *v = json_get_str(cm, "data", "decofile.bin", NULL);
	BrotliDecoderState *d;
	struct sha256_ctx *h;
	unsigned char *raw, chunk[65536];
	size_t rawlen, avail_in, total = 0;
	const uint8_t *next_in;
	BrotliDecoderResult r;

	if (v == NULL || (raw = base64_decode(v, strlen(v), &rawlen)) == NULL)
		return -1;
	if ((d = BrotliDecoderCreateInstance(NULL, NULL, NULL)) == NULL)
		abort();
	h = sha256_new();
	next_in = raw;
	avail_in = rawlen;
	do {
		uint8_t *next_out = chunk;
		size_t avail_out = sizeof(chunk);

		r = BrotliDecoderDecompressStream(d, &avail_in, &next_in, &avail_out,
		    &next_out, NULL);
		sha256_update(h, chunk, sizeof(chunk) - avail_out);
		total += sizeof(chunk) - avail_out;
	} while (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT && total < MAX_JSON);
	sha256_final(h, out);
	BrotliDecoderDestroyInstance(d);
	free(raw);
	return r == BROTLI_DECODER_RESULT_SUCCESS && avail_in == 0 ? 0 : -1;
}

/* ---- objects ---- */

/* pcm_obj_find - the object of ns/name, or NULL */
struct cmobj *
pcm_obj_find(struct pcm *c, const char *ns, const char *name)
{
	return objtab_get(c->objs, ns, name);
}

/* pcm_obj_get - the object of ns/name, made (empty) and put in the table if new */
struct cmobj *
pcm_obj_get(struct pcm *c, const char *ns, const char *name)
{
	struct cmobj *o = pcm_obj_find(c, ns, name);

	if (o != NULL)
		return o;
	o = xcalloc(1, sizeof(*o));
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	objtab_put(c->objs, ns, name, o);
	return o;
}

static void
obj_free(struct pcm *c, struct cmobj *o)
{
	objtab_del(c->objs, o->ns, o->name);
	if (o->timer > 0)
		stage_cancel_timer(c->st, o->timer);
	free(o);
}

/* pcm_location - "configmap/<ns>/decofile-<name>", as inventory and status say */
void
pcm_location(const char *ns, const char *name, char *out, size_t len)
{
	snprintf(out, len, "configmap/%s/" DECOFILE_CM_PREFIX "%s", ns, name);
}

const char *
pcm_doc_owner(yajl_val doc)
{
	const char *u = resource_mirror_uid(doc);

	return u != NULL && strlen(u) < sizeof(((struct cmobj *)0)->owner) ? u : "";
}

/* cm_owner - the uid of a ConfigMap's first owner reference, or "" */
static const char *
cm_owner(yajl_val cm)
{
	yajl_val refs = json_get(cm, "metadata", "ownerReferences", NULL);
	const char *u;

	if (refs == NULL || !YAJL_IS_ARRAY(refs) || refs->u.array.len == 0)
		return "";
	u = json_get_str(refs->u.array.values[0], "uid", NULL);
	return u != NULL ? u : "";
}

/* ---- drift ---- */

static void
repair_cb(struct stage *st, void *arg)
{
	struct cmobj *o = arg;

	(void)st;
	o->timer = 0;
	o->again = 0;
	pcm_check_obj(NULL, o);
}

static struct pcm *the_pcm;	/* for repair_cb: one target per process */

/*
 * pcm_check_obj - make the ConfigMap hold what we published: compare the cache
 * with o and, if it differs (or the ConfigMap is gone), put it back.
 */
void
pcm_check_obj(struct pcm *c, struct cmobj *o)
{
	char cm[300], why[512];
	yajl_val cur;
	struct job *j;
	int extra = 0;
	const char *uid, *want;

	if (c == NULL)
		c = the_pcm;
	if (o->bin[0] == '\0')
		return;
	if (o->busy) {
		o->again = 1;
		return;
	}
	configmap_name(o->name, cm, sizeof(cm));
	cur = kube_informer_get(c->cms, o->ns, cm);
	want = o->detach ? "" : o->owner;
	uid = cur != NULL ? cm_owner(cur) : "";
	if (cur != NULL && publish_configmap_holds(cur, o->bin, o->ts, &extra)) {
		if (strcmp(uid, want) == 0)
			return;
		/* only the owner reference differs: a policy change, not drift */
		if ((j = pcm_job_new(c, JOB_POLICY, o->ns, o->name, o->hash, o->bin, o->ts,
		    o->detach, o->owner, why, sizeof(why))) != NULL)
			pcm_job_apply(j);
		return;
	}
	if ((j = pcm_job_new(c, JOB_REPAIR, o->ns, o->name, o->hash, o->bin, o->ts, o->detach,
	    o->owner, why, sizeof(why))) == NULL) {
		log_kv(LOG_ERROR, "cannot repair the ConfigMap", "ns", o->ns, "name", o->name,
		    "error", why, NULL);
		return;
	}
	snprintf(j->detail, sizeof(j->detail), "%s", cur == NULL ? "ConfigMap deleted" :
	    extra > 0 ? "keys added to the ConfigMap" : "ConfigMap data changed");
	pcm_job_apply(j);
}

static void
schedule_check(struct pcm *c, struct cmobj *o)
{
	if (o->timer == 0)
		o->timer = stage_add_timer(c->st, REPAIR_DEBOUNCE_MS, repair_cb, o);
}

/*
 * restore_one - after the first sync: a ConfigMap the journal says we
 * published is ours again.  Its bytes are taken from the ConfigMap itself
 * when it still holds that content (no render record needed), else from the
 * render record, and then checked: drift made while we were down is put back.
 */
static void
restore_one(void *arg, yajl_val cm)
{
	struct pcm *c = arg;
	struct journal *j = stage_journal(c->st);
	const char *n = kube_obj_name(cm), *ns = kube_obj_ns(cm), *b64;
	char hash[65], rhash[65], fmt[8], bin[65], held[65], want[600];
	struct published pb;
	int64_t ts;
	struct cmobj *o;
	yajl_val doc = NULL;
	char err[256];

	if ((n = configmap_decofile(n)) == NULL || pcm_obj_find(c, ns, n))
		return;
	/* the store's status says what is live (adoptions included) */
	publish_published(c->st, ns, n, &pb);
	pcm_location(ns, n, want, sizeof(want));
	if (pb.hash[0] != '\0' && strcmp(pb.location, want) == 0) {
		snprintf(hash, sizeof(hash), "%s", pb.hash);
		ts = pb.timestamp;
	} else if (journal_last_publish(j, ns, n, TARGET, hash, &ts) != 0)
		return;
	b64 = json_get_str(cm, "data", "decofile.bin", NULL);
	if (b64 != NULL && publish_configmap_content(cm, held) == 0 && strcmp(held, hash) == 0) {
		sha256_hex(b64, strlen(b64), bin);
		if (!spool_has(stage_spool(c->st), bin) &&
		    spool_put(stage_spool(c->st), b64, strlen(b64), bin) < 0)
			return;
	} else if (journal_last_render(j, ns, n, rhash, fmt, bin) != 0 || strcmp(rhash, hash) != 0 ||
	    !is_sha256_hex(bin))
		return;		/* nothing to put back from */
	if (resource_get(stage_store(c->st), "decofiles", ns, n, &doc, err, sizeof(err)) != 0)
		return;
	o = pcm_obj_get(c, ns, n);
	snprintf(o->hash, sizeof(o->hash), "%s", hash);
	snprintf(o->bin, sizeof(o->bin), "%s", bin);
	snprintf(o->source, sizeof(o->source), "%s", decofile_source(doc));
	o->ts = ts;
	o->detach = publish_doc_detach(doc);
	snprintf(o->owner, sizeof(o->owner), "%s", pcm_doc_owner(doc));
	yajl_tree_free(doc);
	pcm_check_obj(c, o);
}

/* restore - once both caches are listed: take back what we published before */
static void
restore(struct pcm *c)
{
	size_t n;
	char num[32];

	c->restored = 1;
	kube_informer_foreach(c->cms, restore_one, c);
	n = objtab_len(c->objs);
	snprintf(num, sizeof(num), "%zu", n);
	log_kv(LOG_INFO, "configmap target synced", "configmaps", num, NULL);
}

static void
on_cm(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct pcm *c = arg;
	const char *n;
	struct cmobj *o;

	(void)old;
	if (ev == KUBE_SYNCED) {
		if (!c->restored)
			restore(c);
		return;
	}
	if ((n = configmap_decofile(kube_obj_name(obj))) == NULL)
		return;
	if ((o = pcm_obj_find(c, kube_obj_ns(obj), n)) == NULL || o->busy)
		return;
	if (ev == KUBE_DELETED || !publish_configmap_holds(obj, o->bin, o->ts, NULL))
		schedule_check(c, o);
}

/* ---- the stage's calls ---- */

/*
 * cm_init - the target when decod works against a cluster (kubeconfig
 * set, or in a pod): a client on the stage's loop and a cache of ConfigMaps.  No cluster configured: no state (items are refused);
 * a broken configuration is fatal.
 */
static int
cm_init(struct stage *st, void **state)
{
	struct kube *k;
	struct pcm *c;
	char err[512];

	*state = NULL;
	if ((k = kube_from_conf(stage_conf(st), err, sizeof(err))) == NULL) {
		if (err[0] == '\0')
			return 0;
		log_kv(LOG_ERROR, "Kubernetes configuration", "error", err, NULL);
		return -1;
	}
	c = xcalloc(1, sizeof(*c));
	c->st = st;
	c->k = k;
	c->objs = objtab_new();
	log_kv(LOG_INFO, "configmap target on", "server", kube_server(c->k), NULL);
	kube_attach(c->k, st);
	the_pcm = c;
	c->cms = kube_informer_new(c->k, &kube_configmaps, NULL, NULL, on_cm, c);
	*state = c;
	return 0;
}

static void
cm_shutdown(struct stage *st, void *arg)
{
	struct pcm *c = arg;
	struct cmobj *o;
	size_t cur = 0;

	(void)st;
	if (c == NULL)
		return;
	while ((o = objtab_next(c->objs, &cur)) != NULL)
		obj_free(c, o);
	objtab_free(c->objs);
	kube_free(c->k);	/* informers and calls in flight with it */
	if (the_pcm == c)
		the_pcm = NULL;
	free(c);
}

/*
 * cm_item - publish item it (content hash it->hash, bin blob hash bin in the
 * spool) for Decofile doc.  STAGE_ASYNC: the item is settled later with
 * stage_finish; STAGE_DONE: nothing to write; otherwise why says what went
 * wrong (Ready is already set where it applies).
 */
static enum stage_result
cm_item(struct pcm *c, const struct journal_item *it, yajl_val doc, const char *bin,
    const char *commit, char *why, size_t whylen)
{
	struct store *s = stage_store(c->st);
	struct journal *jr = stage_journal(c->st);
	char cm[300], last[65], held[65], msg[600];
	struct cmobj *o;
	struct job *j;
	yajl_val cur;
	int64_t last_ts = 0, ts;
	size_t blen;
	char *data;

	if (!kube_informer_synced(c->cms)) {
		snprintf(why, whylen, "waiting for the first list of ConfigMaps");
		return STAGE_RETRY;
	}
	if (!is_sha256_hex(bin)) {
		snprintf(why, whylen, "the configmap target needs the bin form (format=bin bin=<sha256>)");
		return STAGE_FAIL;
	}
	o = pcm_obj_find(c, it->ns, it->name);
	if (o != NULL && o->busy) {
		snprintf(why, whylen, "a write of this ConfigMap is in flight");
		return STAGE_RETRY;
	}
	if ((data = spool_get(stage_spool(c->st), bin, &blen)) == NULL) {
		snprintf(why, whylen, "rendered document %s not in the spool: %s", bin,
		    strerror(errno));
		return STAGE_RETRY;
	}
	free(data);
	if (journal_last_publish(jr, it->ns, it->name, TARGET, last, &last_ts) < 0) {
		snprintf(why, whylen, "journal: %s", journal_error(jr));
		return STAGE_RETRY;
	}
	ts = wall_ms() / 1000;
	if (ts <= last_ts)
		ts = last_ts + 1;
	if (publish_configmap_size(blen, ts) > PUBLISH_CONFIGMAP_MAX) {
		snprintf(msg, sizeof(msg), "The compressed decofile takes %zu bytes, more than a"
		    " ConfigMap holds (1 MiB); use `target: s3` for a document this large",
		    publish_configmap_size(blen, ts));
		status_set_condition(s, jr, "decofiles", it->ns, it->name, STAGE, "Ready",
		    "False", "TooLarge", msg);
		snprintf(why, whylen, "%s", msg);
		return STAGE_FAIL;
	}
	configmap_name(it->name, cm, sizeof(cm));
	cur = kube_informer_get(c->cms, it->ns, cm);
	/* the same content already there (ours, or the Go operator's): no publish */
	if (cur != NULL && publish_configmap_content(cur, held) == 0 &&
	    strcmp(held, it->hash) == 0) {
		const char *tstxt = json_get_str(cur, "data", "timestamp.txt", NULL);
		const char *b64 = json_get_str(cur, "data", "decofile.bin", NULL);
		char bsha[65];

		if (o != NULL && strcmp(o->hash, it->hash) == 0 &&
		    publish_configmap_holds(cur, o->bin, o->ts, NULL)) {
			o->detach = publish_doc_detach(doc);
			snprintf(o->owner, sizeof(o->owner), "%s", pcm_doc_owner(doc));
			pcm_check_obj(c, o);	/* at most the owner reference */
			return STAGE_DONE;
		}
		/* adopt: keep the bytes and timestamp the replicas already read */
		sha256_hex(b64, strlen(b64), bsha);
		if (strcmp(bsha, bin) == 0 || spool_has(stage_spool(c->st), bsha) ||
		    spool_put(stage_spool(c->st), b64, strlen(b64), bsha) == 0) {
			j = xcalloc(1, sizeof(*j));
			j->c = c;
			j->kind = JOB_ADOPT;
			j->it = *it;
			snprintf(j->ns, sizeof(j->ns), "%s", it->ns);
			snprintf(j->name, sizeof(j->name), "%s", it->name);
			snprintf(j->hash, sizeof(j->hash), "%s", it->hash);
			snprintf(j->bin, sizeof(j->bin), "%s", bsha);
			snprintf(j->commit, sizeof(j->commit), "%s", commit);
			snprintf(j->source, sizeof(j->source), "%s", decofile_source(doc));
			j->ts = tstxt != NULL ? strtoll(tstxt, NULL, 10) : ts;
			j->detach = publish_doc_detach(doc);
			snprintf(j->owner, sizeof(j->owner), "%s", pcm_doc_owner(doc));
			j->body = publish_configmap_body(it->ns, it->name, j->detach ? NULL :
			    j->owner, b64, strlen(b64), j->ts, &j->len);
			if (publish_configmap_holds(cur, bsha, j->ts, NULL) &&
			    strcmp(cm_owner(cur), j->detach ? "" : j->owner) == 0) {
				/* nothing to write at all: record the adoption now */
				int rc = pcm_job_recorded(j);

				pcm_job_free(j);
				return rc == 0 ? STAGE_DONE : STAGE_RETRY;
			}
			pcm_job_apply(j);
			return STAGE_ASYNC;
		}
	}
	if ((j = pcm_job_new(c, JOB_PUBLISH, it->ns, it->name, it->hash, bin, ts, publish_doc_detach(doc),
	    pcm_doc_owner(doc), why, whylen)) == NULL)
		return STAGE_RETRY;
	j->it = *it;
	snprintf(j->commit, sizeof(j->commit), "%s", commit);
	snprintf(j->source, sizeof(j->source), "%s", decofile_source(doc));
	pcm_job_apply(j);
	return STAGE_ASYNC;
}

static enum stage_result
cm_publish(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd, yajl_val doc)
{
	char why[1024];
	enum stage_result r = cm_item(arg, it, doc, pd->bin, pd->commit, why, sizeof(why));

	return r == STAGE_DONE || r == STAGE_ASYNC ? r : publish_item_failed(st, it, r, why);
}

/*
 * cm_update - the Decofile was written: its deletion policy and its CR's uid
 * (a CR deleted and created again under the same name) decide the owner
 * reference
 */
static void
cm_update(struct stage *st, void *arg, const char *ns, const char *name, yajl_val doc)
{
	struct pcm *c = arg;
	struct cmobj *o = pcm_obj_find(c, ns, name);
	const char *owner = pcm_doc_owner(doc);
	int d;

	(void)st;
	if (o == NULL || ((d = publish_doc_detach(doc)) == o->detach &&
	    strcmp(owner, o->owner) == 0))
		return;
	o->detach = d;
	snprintf(o->owner, sizeof(o->owner), "%s", owner);
	o->newer = o->busy;	/* the write in flight must not put back its own */
	pcm_check_obj(c, o);	/* sets, changes or removes the owner reference */
}

/* cm_remove - the Decofile was deleted: its ConfigMap goes too, unless detached */
static void
cm_remove(struct stage *st, void *arg, const char *ns, const char *name)
{
	struct pcm *c = arg;
	struct cmobj *o = pcm_obj_find(c, ns, name);
	char cm[300], loc[600], *path;

	(void)st;
	if (o == NULL)
		return;
	configmap_name(name, cm, sizeof(cm));
	pcm_location(ns, name, loc, sizeof(loc));
	if (!o->detach) {
		path = kube_path(&kube_configmaps, ns, cm, NULL, NULL);
		kube_send(c->k, "DELETE", path, NULL, NULL, 0, 0, NULL, NULL);
		free(path);
	}
	log_kv(LOG_INFO, o->detach ? "Decofile deleted; ConfigMap detached (kept)" :
	    "Decofile deleted; ConfigMap removed", "ns", ns, "name", name, NULL);
	publish_record_removal(c->st, ns, name, loc, o->detach ? "detach" : "prune", loc, 1);
	obj_free(c, o);
}

/* cm_relist - the store watch lost history: objects whose Decofile is gone are removed */
static void
cm_relist(struct stage *st, void *arg)
{
	struct pcm *c = arg;
	struct cmobj *o;
	size_t cur = 0;

	while ((o = objtab_next(c->objs, &cur)) != NULL)
		if (publish_decofile_gone(st, o->ns, o->name))
			cm_remove(st, c, o->ns, o->name);
}

const struct publish_target publish_configmap_target = {
	.name = TARGET,
	.unavailable = "configmap needs a cluster",
	.init = cm_init,
	.publish = cm_publish,
	.swap = pcm_swap,
	.update = cm_update,
	.remove = cm_remove,
	.relist = cm_relist,
	.shutdown = cm_shutdown,
};
