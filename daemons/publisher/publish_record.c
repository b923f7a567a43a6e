/*
 * publish_record - the records every target writes alike (publish_record.h):
 * one removal transaction, one shape of status fragment, one reading of it
 * back, one notifier detail.  Before, each target wrote its own copy of each
 * and they drifted apart in small ways (which fields, how many store writes).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/publish_record.h"
#include "proto/proto.h"

int
publish_doc_detach(yajl_val doc)
{
	const char *v = json_get_str(doc, "metadata", "annotations",
	    PUBLISH_DELETION_ANNOTATION, NULL);

	return v != NULL && strcmp(v, "detach") == 0;
}

int
publish_decofile_gone(struct stage *st, const char *ns, const char *name)
{
	yajl_val doc = NULL;
	char err[256];
	int rv = resource_get(stage_store(st), "decofiles", ns, name, &doc, err, sizeof(err));

	yajl_tree_free(doc);
	return rv == 1;
}

int
publish_record_removal(struct stage *st, const char *ns, const char *name,
    const char *location, const char *action, const char *detail, int drop_status)
{
	struct journal *j = stage_journal(st);
	char obj[600], *key;
	int rv = 0;

	journal_obj(obj, sizeof(obj), "decofile", ns, name);
	if (journal_begin(j) < 0 || journal_inventory_del(j, ns, name, location) < 0 ||
	    journal_audit(j, PUBLISH_STAGE, obj, action, detail) < 0 ||
	    journal_commit(j) < 0) {
		log_kv(LOG_ERROR, "journal: cannot record removal", "action", action,
		    "error", journal_error(j), NULL);
		journal_rollback(j);
		rv = -1;
	}
	metrics_decofile_gone(ns, name);	/* its series go with it: a bounded set */
	if (!drop_status)
		return rv;
	key = key_status("decofiles", ns, name, PUBLISH_STAGE);
	if (store_delete(stage_store(st), key) < 0) {
		log_kv(LOG_WARN, "cannot delete status fragment", "key", key, "error",
		    store_error(stage_store(st)), NULL);
		rv = -1;
	}
	free(key);
	return rv;
}

void
publish_record_repair(struct stage *st, const char *ns, const char *name,
    const char *location, const char *detail, long repairs)
{
	struct journal *j = stage_journal(st);
	char obj[600], msg[800], n[32];

	journal_obj(obj, sizeof(obj), "decofile", ns, name);
	snprintf(n, sizeof(n), "%ld", repairs);
	log_kv(LOG_WARN, "drift repaired", "ns", ns, "name", name, "location", location,
	    "detail", detail, "repairs", n, NULL);
	if (journal_record_drift(j, ns, name, location, detail) < 0 ||
	    journal_audit(j, PUBLISH_STAGE, obj, "drift-repaired", detail) < 0)
		log_kv(LOG_ERROR, "journal: cannot record drift", "error", journal_error(j),
		    NULL);
	snprintf(msg, sizeof(msg), "Put back the published version (%s); %ld repair%s"
	    " since start", detail, repairs, repairs == 1 ? "" : "s");
	status_set_condition(stage_store(st), j, "decofiles", ns, name, PUBLISH_STAGE,
	    "Drifted", "True", "Repaired", msg);
}

int
publish_status_write(struct stage *st, const char *ns, const char *name,
    const struct publish_status *ps, const struct status_cond *conds, size_t n)
{
	struct store *s = stage_store(st);
	char when[40];
	struct buf b;
	struct jw w;
	int rv;

	rfc3339_from(ps->timestamp, when, sizeof(when));
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	if (ps->configmap != NULL) {
		jw_key(&w, "configMapName");
		jw_str(&w, ps->configmap);
	}
	if (ps->source != NULL) {
		jw_key(&w, "sourceType");
		jw_str(&w, ps->source);
	}
	jw_key(&w, "contentHash");
	jw_str(&w, ps->hash);
	jw_key(&w, "timestamp");
	jw_int(&w, ps->timestamp);
	jw_key(&w, "lastUpdated");
	jw_str(&w, when);
	jw_key(&w, "location");
	jw_str(&w, ps->location);
	if (ps->s3_url != NULL) {
		jw_key(&w, "s3URL");
		jw_str(&w, ps->s3_url);
	}
	jw_key(&w, "format");
	jw_str(&w, ps->format);
	jw_end_obj(&w);
	rv = status_set(s, stage_journal(st), "decofiles", ns, name, PUBLISH_STAGE, b.data,
	    conds, n) < 0 ? -1 : 0;
	buf_free(&b);
	if (rv < 0)
		log_kv(LOG_WARN, "cannot write status; will retry", "ns", ns, "name", name,
		    "error", store_error(s), NULL);
	return rv;
}

void
publish_published(struct stage *st, const char *ns, const char *name, struct published *pb)
{
	yajl_val f = status_get_fragment(stage_store(st), "decofiles", ns, name, PUBLISH_STAGE);
	const char *v;

	memset(pb, 0, sizeof(*pb));
	if (f == NULL)
		return;
	if ((v = json_get_str(f, "contentHash", NULL)) != NULL && is_sha256_hex(v))
		snprintf(pb->hash, sizeof(pb->hash), "%s", v);
	if ((v = json_get_str(f, "format", NULL)) != NULL)
		snprintf(pb->format, sizeof(pb->format), "%s", v);
	if ((v = json_get_str(f, "location", NULL)) != NULL)
		snprintf(pb->location, sizeof(pb->location), "%s", v);
	pb->timestamp = json_get_int(f, 0, "timestamp", NULL);
	yajl_tree_free(f);
}

void
publish_notify_detail(char *out, size_t outlen, int64_t timestamp, const char *commit)
{
	struct proto_notify_detail nd;

	memset(&nd, 0, sizeof(nd));
	nd.timestamp = timestamp;
	/* one too long is left out whole: a cut commit id would name another commit */
	if (strcmp(commit, "-") != 0 && strlen(commit) < sizeof(nd.commit))
		memcpy(nd.commit, commit, strlen(commit) + 1);
	if (proto_notify_detail_encode(&nd, out, outlen) < 0) {
		nd.commit[0] = '\0';
		(void)proto_notify_detail_encode(&nd, out, outlen);
	}
}

enum stage_result
publish_item_failed(struct stage *st, const struct journal_item *it, enum stage_result r,
    const char *why)
{
	log_kv(LOG_INFO, "item not published", "ns", it->ns, "name", it->name, "error", why,
	    NULL);
	stage_item_error(st, why);
	return r;
}
