/*
 * publish_configmap_write - the configmap target's writes.  A job carries
 * one decided write (publish, adopt, drift repair, deletion policy): keys
 * someone else added are stripped with a merge patch, the ConfigMap is
 * written by server-side apply, and the answer is recorded (journal,
 * notifier item, status with Ready and Drifted) or settles the item for a
 * retry.  What to write and when is publish_configmap.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/s3key.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/util.h"
#include "daemons/publisher/publish_configmap.h"
#include "daemons/publisher/publish_configmap_int.h"

/* ---- status ---- */

/*
 * set_ready - Ready, the published fields and Drifted=InSync in one status
 * write (one store put, one status apply on the CR)
 */
static void
set_ready(struct pcm *c, const struct cmobj *o)
{
	char msg[600], loc[600], cm[300];
	struct status_cond conds[2] = {
		{ "Ready", "True", "ConfigMapCreated", msg },
		{ "Drifted", "False", "InSync", "The ConfigMap holds the published version" },
	};
	struct publish_status ps = { .configmap = cm, .source = o->source, .hash = o->hash,
		.timestamp = o->ts, .location = loc, .format = "bin" };

	configmap_name(o->name, cm, sizeof(cm));
	snprintf(msg, sizeof(msg), "ConfigMap %s created successfully from %s source", cm,
	    o->source);
	pcm_location(o->ns, o->name, loc, sizeof(loc));
	publish_status_write(c->st, o->ns, o->name, &ps, conds, 2);
}

/* ---- writes ---- */

void
pcm_job_free(struct job *j)
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

/* pcm_job_recorded - the write landed: journal, status, notifier; 0 or -1 (journal) */
int
pcm_job_recorded(struct job *j)
{
	struct pcm *c = j->c;
	struct stage *st = c->st;
	struct journal *jr = stage_journal(st);
	struct cmobj *o = pcm_obj_get(c, j->ns, j->name);
	char loc[600], obj[600], detail[1024], why[300];
	int ok = 1;

	pcm_location(j->ns, j->name, loc, sizeof(loc));
	journal_obj(obj, sizeof(obj), "decofile", j->ns, j->name);
	o->busy = 0;
	if (j->kind == JOB_PUBLISH || j->kind == JOB_ADOPT) {
		snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s%s",
		    j->hash, loc, (long long)j->ts, j->detach ? "detach" : "delete",
		    j->kind == JOB_ADOPT ? " (already held the content; adopted)" : "");
		publish_notify_detail(why, sizeof(why), j->ts, j->commit);
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
		if (!o->newer) {
			o->detach = j->detach;
			snprintf(o->owner, sizeof(o->owner), "%s", j->owner);
		}
		log_kv(LOG_INFO, j->kind == JOB_ADOPT ? "ConfigMap adopted" : "published",
		    "ns", j->ns, "name", j->name, "location", loc, "hash", j->hash, NULL);
		set_ready(c, o);
		job_settle(j, STAGE_DONE, j->kind == JOB_ADOPT ? "adopted" : "published");
		/* the ConfigMap's bytes sent; an adopted one was already there */
		if (j->kind == JOB_PUBLISH)
			metrics_published_bytes(TARGET, j->len);
	} else if (j->kind == JOB_SWAP) {
		/* the same content in a smaller .bin: no publish, no notifier item */
		snprintf(detail, sizeof(detail), "hash=%s bin=%s location=%s", j->hash, j->bin,
		    loc);
		if (stage_begin(st) < 0 || journal_audit(jr, STAGE, obj, "recompress", detail) < 0 ||
		    stage_commit(st, j->it.id > 0 ? &j->it : NULL, "swapped") < 0) {
			stage_rollback(st);
			snprintf(why, sizeof(why), "journal: %s", journal_error(jr));
			job_settle(j, STAGE_RETRY, why);
			return -1;
		}
		snprintf(o->bin, sizeof(o->bin), "%s", j->bin);
		log_kv(LOG_INFO, "recompressed .bin swapped in; no reload", "ns", j->ns, "name",
		    j->name, "location", loc, "hash", j->hash, "bin", j->bin, NULL);
		job_settle(j, STAGE_DONE, "swapped");
	} else if (j->kind == JOB_REPAIR) {
		o->repairs++;
		c->repairs++;
		publish_record_repair(st, j->ns, j->name, loc, j->detail, o->repairs);
	} else {
		if (!o->newer) {
			o->detach = j->detach;
			snprintf(o->owner, sizeof(o->owner), "%s", j->owner);
		}
		journal_audit(jr, STAGE, obj, "deletion-policy",
		    j->detach ? "deletion=detach (owner reference removed)" :
		    "deletion=delete (owner reference set)");
	}
	o->newer = 0;
	if (o->again) {
		o->again = 0;
		pcm_check_obj(c, o);
	}
	return 0;
}

static void
on_applied(void *arg, const struct kube_resp *r)
{
	struct job *j = arg;
	struct cmobj *o = pcm_obj_find(j->c, j->ns, j->name);

	if (kube_ok(r)) {
		int extra = 0;

		/* SSA keeps keys other managers set: the data map must be ours alone */
		publish_configmap_holds(r->json, j->bin, j->ts, &extra);
		if (extra > 0) {
			pcm_job_apply(j);	/* strips them first, then applies again */
			return;
		}
		pcm_job_recorded(j);
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
	pcm_job_free(j);
}

static void
on_stripped(void *arg, const struct kube_resp *r)
{
	struct job *j = arg;
	struct kube *k = j->c->k;
	char cm[300];

	if (!kube_ok(r) && r->status != 404) {
		struct cmobj *o = pcm_obj_find(j->c, j->ns, j->name);

		if (o != NULL)
			o->busy = 0;
		job_settle(j, STAGE_RETRY, r->err);
		pcm_job_free(j);
		return;
	}
	configmap_name(j->name, cm, sizeof(cm));
	kube_apply(k, &kube_configmaps, j->ns, cm, NULL, PUBLISH_CONFIGMAP_MANAGER, 1,
	    j->body, j->len, on_applied, j);
}

/*
 * pcm_job_apply - write j's ConfigMap: keys other than ours (in the cache) are
 * removed first by a merge patch, then the server-side apply.
 */
void
pcm_job_apply(struct job *j)
{
	struct pcm *c = j->c;
	char cm[300];
	yajl_val cur, data;
	struct buf b;
	struct jw w;
	int extra = 0;

	configmap_name(j->name, cm, sizeof(cm));
	pcm_obj_get(c, j->ns, j->name)->busy = 1;
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

/* pcm_job_new - a write of o's (or the item's) document; reads the bin from the spool */
struct job *
pcm_job_new(struct pcm *c, enum job_kind kind, const char *ns, const char *name,
    const char *hash, const char *bin, int64_t ts, int detach, const char *owner, char *why,
    size_t whylen)
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
	snprintf(j->owner, sizeof(j->owner), "%s", owner);
	j->body = publish_configmap_body(ns, name, detach ? NULL : j->owner, data, len, ts,
	    &j->len);
	free(data);
	return j;
}
