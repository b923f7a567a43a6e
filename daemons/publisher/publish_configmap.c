/*
 * publish_configmap - the configmap target.  It owns a Kubernetes client on
 * the stage's loop, caches of ConfigMaps and Decofile CRs (so deciding costs
 * no API call), and the ConfigMaps it published (content hash, bin blob,
 * timestamp).  Writes are asynchronous server-side applies under field
 * manager decod-publisher with force (decod owns decofile-<name> whole); a
 * key someone else added is removed with a merge patch, since SSA alone
 * would keep it.  The journal records publish, inventory, drift and audit.
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
#include "proto/proto.h"

#define STAGE "publisher"
#define TARGET "configmap"
#define DELETION_ANNOTATION "deco.sites/deletion"
#define REPAIR_DEBOUNCE_MS 20
#define MAX_JSON (256u << 20)

struct cmobj {
	char ns[254];
	char name[254];
	char hash[65];		/* content hash published */
	char bin[65];		/* spool blob: the base64 text */
	char source[32];
	int64_t ts;
	int detach;
	int busy;		/* a write in flight */
	int again;		/* check again once it lands */
	int64_t timer;
	long repairs;
	struct cmobj *next;
};

struct pcm {
	struct stage *st;
	struct kube *k;
	struct kube_informer *cms, *dfs;
	struct cmobj *objs;
	int restored;		/* objects rebuilt from the journal after sync */
	long repairs;
};

enum job_kind { JOB_PUBLISH, JOB_ADOPT, JOB_REPAIR, JOB_POLICY };

struct job {
	struct pcm *c;
	enum job_kind kind;
	struct journal_item it;	/* JOB_PUBLISH/ADOPT: the item (id 0: none) */
	char ns[254], name[254];
	char hash[65], bin[65], commit[200], source[32];
	int64_t ts;
	int detach;
	char *body;		/* the apply body */
	size_t len;
	char detail[256];	/* drift: what was wrong */
};

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

	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", name);
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

static struct cmobj *
obj_find(struct pcm *c, const char *ns, const char *name)
{
	for (struct cmobj *o = c->objs; o != NULL; o = o->next)
		if (strcmp(o->ns, ns) == 0 && strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static struct cmobj *
obj_get(struct pcm *c, const char *ns, const char *name)
{
	struct cmobj *o = obj_find(c, ns, name);

	if (o != NULL)
		return o;
	o = xcalloc(1, sizeof(*o));
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->next = c->objs;
	c->objs = o;
	return o;
}

static void
obj_free(struct pcm *c, struct cmobj *o)
{
	for (struct cmobj **pp = &c->objs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	if (o->timer > 0)
		stage_cancel_timer(c->st, o->timer);
	free(o);
}

static void
location(const char *ns, const char *name, char *out, size_t len)
{
	snprintf(out, len, "configmap/%s/" DECOFILE_CM_PREFIX "%s", ns, name);
}

static const char *
owner_uid(struct pcm *c, const char *ns, const char *name)
{
	yajl_val df = kube_informer_get(c->dfs, ns, name);

	return df != NULL ? kube_obj_uid(df) : "";
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

static int
doc_detach(yajl_val doc)
{
	const char *v = json_get_str(doc, "metadata", "annotations", DELETION_ANNOTATION, NULL);

	return v != NULL && strcmp(v, "detach") == 0;
}

/* ---- status ---- */

/*
 * set_ready - Ready, the published fields and Drifted=InSync in one status
 * write (one store put, one status apply on the CR)
 */
static void
set_ready(struct pcm *c, const struct cmobj *o)
{
	struct store *s = stage_store(c->st);
	char msg[600], when[40], loc[600], cm[300];
	struct status_cond conds[2] = {
		{ "Ready", "True", "ConfigMapCreated", msg },
		{ "Drifted", "False", "InSync", "The ConfigMap holds the published version" },
	};
	struct buf b;
	struct jw w;

	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", o->name);
	snprintf(msg, sizeof(msg), "ConfigMap %s created successfully from %s source", cm,
	    o->source);
	rfc3339_from(o->ts, when, sizeof(when));
	location(o->ns, o->name, loc, sizeof(loc));
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "configMapName");
	jw_str(&w, cm);
	jw_key(&w, "sourceType");
	jw_str(&w, o->source);
	jw_key(&w, "contentHash");
	jw_str(&w, o->hash);
	jw_key(&w, "timestamp");
	jw_int(&w, o->ts);
	jw_key(&w, "lastUpdated");
	jw_str(&w, when);
	jw_key(&w, "location");
	jw_str(&w, loc);
	jw_key(&w, "format");
	jw_str(&w, "bin");
	jw_end_obj(&w);
	if (status_set(s, stage_journal(c->st), "decofiles", o->ns, o->name, STAGE, b.data,
	    conds, 2) < 0)
		log_kv(LOG_WARN, "cannot write status", "ns", o->ns, "name", o->name,
		    "error", store_error(s), NULL);
	buf_free(&b);
}

/* ---- writes ---- */

static void job_apply(struct job *j);
static void check_obj(struct pcm *c, struct cmobj *o);

static void
job_free(struct job *j)
{
	free(j->body);
	free(j);
}

/* job_settle - the item (if any) ends with r and why */
static void
job_settle(struct job *j, enum stage_result r, const char *why)
{
	if (j->it.id > 0)
		stage_finish(j->c->st, j->it.id, r, why);
}

/* job_recorded - the write landed: journal, status, notifier; 0 or -1 (journal) */
static int
job_recorded(struct job *j)
{
	struct pcm *c = j->c;
	struct stage *st = c->st;
	struct journal *jr = stage_journal(st);
	struct cmobj *o = obj_get(c, j->ns, j->name);
	char loc[600], obj[600], detail[1024], why[300];
	int ok = 1;

	location(j->ns, j->name, loc, sizeof(loc));
	journal_obj(obj, sizeof(obj), "decofile", j->ns, j->name);
	o->busy = 0;
	if (j->kind == JOB_PUBLISH || j->kind == JOB_ADOPT) {
		snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s%s",
		    j->hash, loc, (long long)j->ts, j->detach ? "detach" : "delete",
		    j->kind == JOB_ADOPT ? " (already held the content; adopted)" : "");
		{
			/* the notifier's item detail (proto.h); a commit it cannot carry is left out */
			struct proto_notify_detail nd;

			memset(&nd, 0, sizeof(nd));
			nd.timestamp = j->ts;
			if (strcmp(j->commit, "-") != 0 && strlen(j->commit) < sizeof(nd.commit))
				memcpy(nd.commit, j->commit, strlen(j->commit) + 1);
			if (proto_notify_detail_encode(&nd, why, sizeof(why)) < 0) {
				nd.commit[0] = '\0';
				(void)proto_notify_detail_encode(&nd, why, sizeof(why));
			}
		}
		if (stage_begin(st) < 0)
			ok = 0;
		else if ((j->kind == JOB_PUBLISH && journal_record_publish(jr, j->ns, j->name,
		    TARGET, loc, j->hash, j->ts) < 0) ||
		    journal_inventory_put(jr, j->ns, j->name, TARGET, loc, j->hash) < 0 ||
		    journal_audit(jr, STAGE, obj, j->kind == JOB_ADOPT ? "adopt" : "publish",
		    detail) < 0 ||
		    (j->kind == JOB_PUBLISH && stage_push(st, "notifier", "decofile", j->ns,
		    j->name, j->hash, why) < 0)) {
			stage_rollback(st);
			ok = 0;
		} else if (stage_commit(st, j->it.id > 0 ? &j->it : NULL,
		    j->kind == JOB_ADOPT ? "adopted" : "published") < 0)
			ok = 0;
		if (!ok) {
			snprintf(why, sizeof(why), "journal: %s", journal_error(jr));
			job_settle(j, STAGE_RETRY, why);
			return -1;
		}
		snprintf(o->hash, sizeof(o->hash), "%s", j->hash);
		snprintf(o->bin, sizeof(o->bin), "%s", j->bin);
		snprintf(o->source, sizeof(o->source), "%s", j->source);
		o->ts = j->ts;
		o->detach = j->detach;
		log_kv(LOG_INFO, j->kind == JOB_ADOPT ? "ConfigMap adopted" : "published",
		    "ns", j->ns, "name", j->name, "location", loc, "hash", j->hash, NULL);
		set_ready(c, o);
		job_settle(j, STAGE_DONE, j->kind == JOB_ADOPT ? "adopted" : "published");
	} else if (j->kind == JOB_REPAIR) {
		char n[32], msg[600];

		o->repairs++;
		c->repairs++;
		snprintf(n, sizeof(n), "%ld", o->repairs);
		log_kv(LOG_WARN, "drift repaired", "ns", j->ns, "name", j->name, "location",
		    loc, "detail", j->detail, "repairs", n, NULL);
		if (journal_record_drift(jr, j->ns, j->name, loc, j->detail) < 0 ||
		    journal_audit(jr, STAGE, obj, "drift-repaired", j->detail) < 0)
			log_kv(LOG_ERROR, "journal: cannot record drift", "error",
			    journal_error(jr), NULL);
		snprintf(msg, sizeof(msg), "Put back the published version (%s); %ld repair%s"
		    " since start", j->detail, o->repairs, o->repairs == 1 ? "" : "s");
		status_set_condition(stage_store(st), jr, "decofiles", j->ns, j->name, STAGE,
		    "Drifted", "True", "Repaired", msg);
	} else {
		o->detach = j->detach;
		journal_audit(jr, STAGE, obj, "deletion-policy",
		    j->detach ? "deletion=detach (owner reference removed)" :
		    "deletion=delete (owner reference set)");
	}
	if (o->again) {
		o->again = 0;
		check_obj(c, o);
	}
	return 0;
}

static void
on_applied(void *arg, const struct kube_resp *r)
{
	struct job *j = arg;
	struct cmobj *o = obj_find(j->c, j->ns, j->name);

	if (kube_ok(r)) {
		int extra = 0;

		/* SSA keeps keys other managers set: the data map must be ours alone */
		publish_configmap_holds(r->json, j->bin, j->ts, &extra);
		if (extra > 0) {
			job_apply(j);	/* strips them first, then applies again */
			return;
		}
		job_recorded(j);
	} else {
		enum stage_result res = r->status == 0 || r->status == 409 || r->status == 429 ||
		    r->status >= 500 || r->status == 401 || r->status == 403 ||
		    r->status == 404 ? STAGE_RETRY : STAGE_FAIL;

		if (o != NULL)
			o->busy = 0;
		log_kv(LOG_WARN, "ConfigMap write failed", "ns", j->ns, "name", j->name,
		    "error", r->err, NULL);
		if (j->kind == JOB_PUBLISH) {
			/* the status says why the new version is not out (the old one stays) */
			char msg[1100];

			snprintf(msg, sizeof(msg), "Cannot write ConfigMap " DECOFILE_CM_PREFIX "%s: %s",
			    j->name, r->err);
			status_set_condition(stage_store(j->c->st), stage_journal(j->c->st),
			    "decofiles", j->ns, j->name, STAGE, "Ready", "False",
			    "ConfigMapFailed", msg);
		}
		if (j->kind != JOB_PUBLISH && j->kind != JOB_ADOPT && o != NULL)
			o->again = 0;
		job_settle(j, res, r->err);
	}
	job_free(j);
}

static void
on_stripped(void *arg, const struct kube_resp *r)
{
	struct job *j = arg;
	struct kube *k = j->c->k;
	char cm[300];

	if (!kube_ok(r) && r->status != 404) {
		struct cmobj *o = obj_find(j->c, j->ns, j->name);

		if (o != NULL)
			o->busy = 0;
		job_settle(j, STAGE_RETRY, r->err);
		job_free(j);
		return;
	}
	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", j->name);
	kube_apply(k, &kube_configmaps, j->ns, cm, NULL, PUBLISH_CONFIGMAP_MANAGER, 1,
	    j->body, j->len, on_applied, j);
}

/*
 * job_apply - write j's ConfigMap: keys other than ours (in the cache) are
 * removed first by a merge patch, then the server-side apply.
 */
static void
job_apply(struct job *j)
{
	struct pcm *c = j->c;
	char cm[300];
	yajl_val cur, data;
	struct buf b;
	struct jw w;
	int extra = 0;

	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", j->name);
	obj_get(c, j->ns, j->name)->busy = 1;
	cur = kube_informer_get(c->cms, j->ns, cm);
	data = cur != NULL ? json_get(cur, "data", NULL) : NULL;
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "data");
	jw_obj(&w);
	if (data != NULL && YAJL_IS_OBJECT(data))
		for (size_t i = 0; i < data->u.object.len; i++) {
			const char *key = data->u.object.keys[i];

			if (strcmp(key, "decofile.bin") != 0 && strcmp(key, "timestamp.txt") != 0) {
				jw_key(&w, key);
				jw_null(&w);
				extra++;
			}
		}
	jw_end_obj(&w);
	if (cur != NULL && json_get(cur, "binaryData", NULL) != NULL) {
		jw_key(&w, "binaryData");
		jw_null(&w);
		extra++;
	}
	jw_end_obj(&w);
	if (extra > 0)
		kube_merge_patch(c->k, &kube_configmaps, j->ns, cm, PUBLISH_CONFIGMAP_MANAGER,
		    b.data, b.len, on_stripped, j);
	else
		kube_apply(c->k, &kube_configmaps, j->ns, cm, NULL, PUBLISH_CONFIGMAP_MANAGER, 1,
		    j->body, j->len, on_applied, j);
	buf_free(&b);
}

/* job_new - a write of o's (or the item's) document; reads the bin from the spool */
static struct job *
job_new(struct pcm *c, enum job_kind kind, const char *ns, const char *name,
    const char *hash, const char *bin, int64_t ts, int detach, char *why, size_t whylen)
{
	struct job *j;
	size_t len;
	char *data = spool_get(stage_spool(c->st), bin, &len);

	if (data == NULL) {
		snprintf(why, whylen, "rendered document %s not in the spool: %s", bin,
		    strerror(errno));
		return NULL;
	}
	j = xcalloc(1, sizeof(*j));
	j->c = c;
	j->kind = kind;
	snprintf(j->ns, sizeof(j->ns), "%s", ns);
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->hash, sizeof(j->hash), "%s", hash);
	snprintf(j->bin, sizeof(j->bin), "%s", bin);
	j->ts = ts;
	j->detach = detach;
	j->body = publish_configmap_body(ns, name, detach ? NULL : owner_uid(c, ns, name),
	    data, len, ts, &j->len);
	free(data);
	return j;
}

/* ---- drift ---- */

static void
repair_cb(struct stage *st, void *arg)
{
	struct cmobj *o = arg;

	(void)st;
	o->timer = 0;
	o->again = 0;
	check_obj(NULL, o);
}

static struct pcm *the_pcm;	/* for repair_cb: one target per process */

/*
 * check_obj - make the ConfigMap hold what we published: compare the cache
 * with o and, if it differs (or the ConfigMap is gone), put it back.
 */
static void
check_obj(struct pcm *c, struct cmobj *o)
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
	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", o->name);
	cur = kube_informer_get(c->cms, o->ns, cm);
	want = o->detach ? "" : owner_uid(c, o->ns, o->name);
	uid = cur != NULL ? cm_owner(cur) : "";
	if (cur != NULL && publish_configmap_holds(cur, o->bin, o->ts, &extra)) {
		if (strcmp(uid, want) == 0)
			return;
		/* only the owner reference differs: a policy change, not drift */
		if ((j = job_new(c, JOB_POLICY, o->ns, o->name, o->hash, o->bin, o->ts,
		    o->detach, why, sizeof(why))) != NULL)
			job_apply(j);
		return;
	}
	if ((j = job_new(c, JOB_REPAIR, o->ns, o->name, o->hash, o->bin, o->ts, o->detach,
	    why, sizeof(why))) == NULL) {
		log_kv(LOG_ERROR, "cannot repair the ConfigMap", "ns", o->ns, "name", o->name,
		    "error", why, NULL);
		return;
	}
	snprintf(j->detail, sizeof(j->detail), "%s", cur == NULL ? "ConfigMap deleted" :
	    extra > 0 ? "keys added to the ConfigMap" : "ConfigMap data changed");
	job_apply(j);
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
	char hash[65], rhash[65], fmt[8], bin[65], held[65];
	int64_t ts;
	struct cmobj *o;
	yajl_val doc = NULL;
	char err[256];

	if (strncmp(n, DECOFILE_CM_PREFIX, strlen(DECOFILE_CM_PREFIX)) != 0 || obj_find(c, ns, n + strlen(DECOFILE_CM_PREFIX)))
		return;
	n += strlen(DECOFILE_CM_PREFIX);
	{
		/* the store's status says what is live (adoptions included) */
		yajl_val f = status_get_fragment(stage_store(c->st), "decofiles", ns, n, STAGE);
		const char *h = json_get_str(f, "contentHash", NULL);
		const char *loc = json_get_str(f, "location", NULL);
		char want[600];

		location(ns, n, want, sizeof(want));
		if (h != NULL && is_sha256_hex(h) && loc != NULL && strcmp(loc, want) == 0) {
			snprintf(hash, sizeof(hash), "%s", h);
			ts = json_get_int(f, 0, "timestamp", NULL);
			yajl_tree_free(f);
		} else {
			yajl_tree_free(f);
			if (journal_last_publish(j, ns, n, TARGET, hash, &ts) != 0)
				return;
		}
	}
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
	o = obj_get(c, ns, n);
	snprintf(o->hash, sizeof(o->hash), "%s", hash);
	snprintf(o->bin, sizeof(o->bin), "%s", bin);
	snprintf(o->source, sizeof(o->source), "%s", decofile_source(doc));
	o->ts = ts;
	o->detach = doc_detach(doc);
	yajl_tree_free(doc);
	check_obj(c, o);
}

/* restore - once both caches are listed: take back what we published before */
static void
restore(struct pcm *c)
{
	size_t n = 0;
	char num[32];

	c->restored = 1;
	kube_informer_foreach(c->cms, restore_one, c);
	for (struct cmobj *o = c->objs; o != NULL; o = o->next)
		n++;
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
		if (!c->restored && kube_informer_synced(c->dfs))
			restore(c);
		return;
	}
	n = kube_obj_name(obj);
	if (strncmp(n, DECOFILE_CM_PREFIX, strlen(DECOFILE_CM_PREFIX)) != 0)
		return;
	if ((o = obj_find(c, kube_obj_ns(obj), n + strlen(DECOFILE_CM_PREFIX))) == NULL || o->busy)
		return;
	if (ev == KUBE_DELETED || !publish_configmap_holds(obj, o->bin, o->ts, NULL))
		schedule_check(c, o);
}

static void
on_df(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct pcm *c = arg;

	(void)old;
	(void)obj;
	if (ev == KUBE_SYNCED && !c->restored && kube_informer_synced(c->cms))
		restore(c);
	/* a new CR uid (re-created Decofile): its ConfigMap must point at it */
	if (ev == KUBE_ADDED && c->restored) {
		struct cmobj *o = obj_find(c, kube_obj_ns(obj), kube_obj_name(obj));

		if (o != NULL)
			schedule_check(c, o);
	}
}

/* ---- the stage's calls ---- */

struct pcm *
publish_configmap_new(struct stage *st, char *err, size_t errlen)
{
	struct kube *k;
	struct pcm *c;

	if ((k = kube_from_conf(stage_conf(st), err, errlen)) == NULL)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	c->st = st;
	c->k = k;
	log_kv(LOG_INFO, "configmap target on", "server", kube_server(c->k), NULL);
	kube_attach(c->k, st);
	the_pcm = c;
	/* their uids only (owner references): metadata, not 10,000 specs and statuses */
	c->dfs = kube_informer_new_meta(c->k, &kube_decofiles, NULL, NULL, on_df, c);
	c->cms = kube_informer_new(c->k, &kube_configmaps, NULL, NULL, on_cm, c);
	return c;
}

void
publish_configmap_free(struct pcm *c)
{
	if (c == NULL)
		return;
	while (c->objs != NULL)
		obj_free(c, c->objs);
	kube_free(c->k);	/* informers and calls in flight with it */
	if (the_pcm == c)
		the_pcm = NULL;
	free(c);
}

enum stage_result
publish_configmap_item(struct pcm *c, const struct journal_item *it, yajl_val doc,
    const char *bin, const char *commit, char *why, size_t whylen)
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

	if (!kube_informer_synced(c->cms) || !kube_informer_synced(c->dfs)) {
		snprintf(why, whylen, "waiting for the first list of ConfigMaps and Decofiles");
		return STAGE_RETRY;
	}
	if (!is_sha256_hex(bin)) {
		snprintf(why, whylen, "the configmap target needs the bin form (format=bin bin=<sha256>)");
		return STAGE_FAIL;
	}
	o = obj_find(c, it->ns, it->name);
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
	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", it->name);
	cur = kube_informer_get(c->cms, it->ns, cm);
	/* the same content already there (ours, or the Go operator's): no publish */
	if (cur != NULL && publish_configmap_content(cur, held) == 0 &&
	    strcmp(held, it->hash) == 0) {
		const char *tstxt = json_get_str(cur, "data", "timestamp.txt", NULL);
		const char *b64 = json_get_str(cur, "data", "decofile.bin", NULL);
		char bsha[65];

		if (o != NULL && strcmp(o->hash, it->hash) == 0 &&
		    publish_configmap_holds(cur, o->bin, o->ts, NULL)) {
			o->detach = doc_detach(doc);
			check_obj(c, o);	/* at most the owner reference */
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
			j->detach = doc_detach(doc);
			j->body = publish_configmap_body(it->ns, it->name, j->detach ? NULL :
			    owner_uid(c, it->ns, it->name), b64, strlen(b64), j->ts, &j->len);
			if (publish_configmap_holds(cur, bsha, j->ts, NULL) &&
			    strcmp(cm_owner(cur), j->detach ? "" : owner_uid(c, it->ns, it->name)) == 0) {
				/* nothing to write at all: record the adoption now */
				int rc = job_recorded(j);

				job_free(j);
				return rc == 0 ? STAGE_DONE : STAGE_RETRY;
			}
			job_apply(j);
			return STAGE_ASYNC;
		}
	}
	if ((j = job_new(c, JOB_PUBLISH, it->ns, it->name, it->hash, bin, ts, doc_detach(doc),
	    why, whylen)) == NULL)
		return STAGE_RETRY;
	j->it = *it;
	snprintf(j->commit, sizeof(j->commit), "%s", commit);
	snprintf(j->source, sizeof(j->source), "%s", decofile_source(doc));
	job_apply(j);
	return STAGE_ASYNC;
}

void
publish_configmap_decofile(struct pcm *c, const char *ns, const char *name, yajl_val doc)
{
	struct journal *jr = stage_journal(c->st);
	struct cmobj *o = obj_find(c, ns, name);
	char cm[300], loc[600], obj[600], *path;

	if (o == NULL)
		return;
	if (doc != NULL) {
		int d = doc_detach(doc);

		if (d != o->detach) {
			o->detach = d;
			check_obj(c, o);	/* sets or removes the owner reference */
		}
		return;
	}
	snprintf(cm, sizeof(cm), DECOFILE_CM_PREFIX "%s", name);
	location(ns, name, loc, sizeof(loc));
	journal_obj(obj, sizeof(obj), "decofile", ns, name);
	if (!o->detach) {
		path = kube_path(&kube_configmaps, ns, cm, NULL, NULL);
		kube_send(c->k, "DELETE", path, NULL, NULL, 0, 0, NULL, NULL);
		free(path);
	}
	log_kv(LOG_INFO, o->detach ? "Decofile deleted; ConfigMap detached (kept)" :
	    "Decofile deleted; ConfigMap removed", "ns", ns, "name", name, NULL);
	if (journal_begin(jr) < 0 || journal_inventory_del(jr, ns, name, loc) < 0 ||
	    journal_audit(jr, STAGE, obj, o->detach ? "detach" : "prune", loc) < 0 ||
	    journal_commit(jr) < 0) {
		log_kv(LOG_ERROR, "journal: cannot record removal", "error", journal_error(jr),
		    NULL);
		journal_rollback(jr);
	}
	path = key_status("decofiles", ns, name, STAGE);
	if (store_delete(stage_store(c->st), path) < 0)
		log_kv(LOG_WARN, "cannot delete status fragment", "key", path, NULL);
	free(path);
	obj_free(c, o);
}
