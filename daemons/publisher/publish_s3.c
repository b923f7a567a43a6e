/*
 * publish_s3 - the `s3` target: PutObject of the rendered JSON at
 * s3key_build()'s key, Ready=True S3Uploaded with status.s3URL, one journal
 * transaction per publish (publish, inventory, audit, the notifier's item),
 * a HEAD + ETag drift check of every object on a spread-out timer (the
 * object is put back when changed or gone), and, when s3_gc is on, the
 * object deleted with its Decofile unless it says detach.  Owns the S3
 * client and one record per object; every request is asynchronous.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/s3key.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/objtab.h"
#include "daemons/publisher/publish_record.h"
#include "daemons/publisher/publish_s3.h"
#include "daemons/publisher/publish_target.h"
#include "daemons/publisher/s3.h"
#include "proto/proto.h"

static void rearm(struct s3t *t);
static void forget(struct s3t *t, struct s3obj *o);
static void pump(struct s3t *t);
/* ---- requests ---- */

static void on_done(void *arg, const struct s3_result *r);

static struct ctx *
ctx_new(struct s3t *t, struct s3obj *o, enum op op)
{
	struct ctx *x = xcalloc(1, sizeof(*x));

	x->t = t;
	x->o = o;
	x->op = op;
	x->gen = o->gen;
	return x;
}

/* start_put - upload the spooled bytes of hash for o; 0, or -1 with err */
static int
start_put(struct s3t *t, struct s3obj *o, struct ctx *x, const char *hash, char *err,
    size_t errlen)
{
	size_t len;
	char *data = spool_get(stage_spool(t->st), hash, &len);

	if (data == NULL) {
		snprintf(err, errlen, "rendered document %s not in the spool: %s", hash,
		    strerror(errno));
		return -1;
	}
	snprintf(x->hash, sizeof(x->hash), "%s", hash);
	s3t_md5_etag(data, len, x->md5_etag);
	x->len = len;
	if (s3_put(t->c, o->key, data, len, hash, on_done, x, err, errlen) < 0) {
		free(data);
		return -1;
	}
	free(data);
	o->nreq++;
	o->putting = 1;
	t->puts++;
	rearm(t);
	return 0;
}

static void
describe_failure(struct s3t *t, const struct s3obj *o, const char *what,
    const struct s3_result *r, char *out, size_t len)
{
	char loc[1500];

	s3t_location(t, o->key, loc, sizeof(loc));
	if (r->status > 0)
		snprintf(out, len, "%s %s failed: %s (HTTP %ld): %s", what, loc, r->code,
		    r->status, r->message);
	else
		snprintf(out, len, "%s %s failed: %s: %s", what, loc, r->code, r->message);
}

/* published_ok - the PUT of a publish item landed: record it, then say so */
static void
published_ok(struct s3t *t, struct ctx *x, const struct s3_result *r)
{
	struct stage *st = t->st;
	struct journal *j = stage_journal(st);
	struct s3obj *o = x->o;
	char last[65] = "", loc[1500], obj[600], detail[2000];
	char why[600], commit[200] = "", n[32];
	struct proto_publish_detail pd;
	struct published pb;
	int64_t last_ts = 0, ts;

	s3t_location(t, o->key, loc, sizeof(loc));
	if (proto_publish_detail_decode(x->it.detail, &pd, why, sizeof(why)) == 0)
		snprintf(commit, sizeof(commit), "%s", pd.commit);	/* checked by on_item */
	journal_last_publish(j, o->ns, o->name, TARGET, last, &last_ts);
	publish_published(st, o->ns, o->name, &pb);
	if (pb.timestamp > last_ts)
		last_ts = pb.timestamp;
	ts = wall_ms() / 1000;
	if (ts <= last_ts)
		ts = last_ts + 1;
	s3t_object_id(o, obj, sizeof(obj));
	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s"
	    " etag=%s", x->hash, loc, (long long)ts, o->detach ? "detach" : "delete",
	    r->etag[0] ? r->etag : "-");
	publish_notify_detail(why, sizeof(why), ts, commit);
	if (stage_begin(st) < 0 ||
	    journal_record_publish(j, o->ns, o->name, TARGET, loc, x->hash, ts) < 0 ||
	    journal_inventory_put(j, o->ns, o->name, TARGET, loc, x->hash) < 0 ||
	    (pb.location[0] && strncmp(pb.location, "s3://", 5) == 0 &&
	    strcmp(pb.location, loc) != 0 &&
	    journal_inventory_del(j, o->ns, o->name, pb.location) < 0) ||
	    journal_audit(j, STAGE, obj, "publish", detail) < 0 ||
	    stage_push(st, "notifier", "decofile", o->ns, o->name, x->hash, why) < 0) {
		snprintf(detail, sizeof(detail), "journal: %s", journal_error(j));
		stage_rollback(st);
		stage_finish(st, x->it.id, STAGE_RETRY, detail);
		return;
	}
	if (stage_commit(st, &x->it, "published") < 0) {
		stage_finish(st, x->it.id, STAGE_RETRY, "journal commit failed");
		return;
	}
	stage_finish(st, x->it.id, STAGE_DONE, "published");
	metrics_published_bytes(TARGET, x->len);
	memcpy(o->content_hash, x->hash, sizeof(o->content_hash));
	snprintf(o->put_etag, sizeof(o->put_etag), "%s", r->etag);
	memcpy(o->md5_etag, x->md5_etag, sizeof(o->md5_etag));
	o->timestamp = ts;
	o->complained = 0;
	s3t_check_at(t, o, now_ms() + t->check_ms);
	snprintf(n, sizeof(n), "%lld", (long long)r->ms);
	log_kv(LOG_INFO, "published", "ns", o->ns, "name", o->name, "location", loc,
	    "hash", x->hash, "ms", n, NULL);
	s3t_write_status(t, o);
	status_set_condition(stage_store(st), j, "decofiles", o->ns, o->name, STAGE,
	    "Drifted", "False", "InSync", "The target holds the published version");
}

static void
repaired(struct s3t *t, struct ctx *x, const struct s3_result *r)
{
	struct s3obj *o = x->o;
	char loc[1500];

	s3t_location(t, o->key, loc, sizeof(loc));
	snprintf(o->put_etag, sizeof(o->put_etag), "%s", r->etag);
	memcpy(o->md5_etag, x->md5_etag, sizeof(o->md5_etag));
	o->repairs++;
	t->repairs++;
	s3t_check_at(t, o, now_ms() + t->check_ms);
	publish_record_repair(t->st, o->ns, o->name, loc, x->detail, o->repairs);
}

/* hand_over - another instance published this Decofile since: it is theirs */
static int
hand_over(struct s3t *t, struct s3obj *o)
{
	char loc[1500], detail[600];
	struct published pb;

	publish_published(t->st, o->ns, o->name, &pb);
	if (pb.hash[0] == '\0' || pb.timestamp <= o->timestamp ||
	    strcmp(pb.hash, o->content_hash) == 0)
		return 0;
	s3t_location(t, o->key, loc, sizeof(loc));
	snprintf(detail, sizeof(detail), "hash=%s timestamp=%lld published by another"
	    " instance after ours (hash=%s timestamp=%lld)", pb.hash, (long long)pb.timestamp,
	    o->content_hash, (long long)o->timestamp);
	log_kv(LOG_INFO, "published object handed over to another instance", "ns", o->ns,
	    "name", o->name, "hash", pb.hash, NULL);
	publish_record_removal(t->st, o->ns, o->name, loc, "handed-over", detail, 0);
	s3t_obj_free(t, o);
	return 1;
}

/* checked - a HEAD came back: in sync, or put it back; 1 when o was handed over (freed) */
static int
checked(struct s3t *t, struct ctx *x, const struct s3_result *r)
{
	struct s3obj *o = x->o;
	struct ctx *y;
	char err[2048];

	s3t_check_at(t, o, now_ms() + t->check_ms);
	if (x->gen != o->gen || o->putting || o->content_hash[0] == '\0')
		return 0;	/* a publish started meanwhile: it decides */
	if (r->ok) {
		if ((o->put_etag[0] && strcmp(r->etag, o->put_etag) == 0) ||
		    (o->md5_etag[0] && strcmp(r->etag, o->md5_etag) == 0))
			goto in_sync;
		if (o->md5_etag[0] == '\0') {
			/* after a restart: the bytes tell which ETag is ours */
			size_t len;
			char *data = spool_get(stage_spool(t->st), o->content_hash, &len);

			if (data != NULL) {
				s3t_md5_etag(data, len, o->md5_etag);
				free(data);
				if (strcmp(r->etag, o->md5_etag) == 0)
					goto in_sync;
			}
		}
	} else if (r->status != 404) {
		describe_failure(t, o, "HeadObject", r, err, sizeof(err));
		if (!o->complained)
			log_kv(LOG_WARN, "drift check failed; will check again", "ns", o->ns,
			    "name", o->name, "error", err, NULL);
		o->complained = 1;
		return 0;
	}
	if (hand_over(t, o))
		return 1;
	y = ctx_new(t, o, OP_REPAIR);
	if (r->ok)
		snprintf(y->detail, sizeof(y->detail), "object changed: ETag %s, published %s",
		    r->etag[0] ? r->etag : "(none)", o->put_etag[0] ? o->put_etag : o->md5_etag);
	else
		snprintf(y->detail, sizeof(y->detail), "object gone (HEAD %ld)", r->status);
	if (start_put(t, o, y, o->content_hash, err, sizeof(err)) < 0) {
		if (!o->complained)
			log_kv(LOG_ERROR, "drift found but cannot repair", "ns", o->ns, "name",
			    o->name, "error", err, NULL);
		o->complained = 1;
		free(y);
	}
	return 0;
in_sync:
	o->complained = 0;
	if (o->status_dirty)
		s3t_write_status(t, o);
	return 0;
}

static void
on_done(void *arg, const struct s3_result *r)
{
	struct ctx *x = arg;
	struct s3t *t = x->t;
	struct s3obj *o = x->o;
	enum op op = x->op;
	char err[2048];

	if (r == NULL) {		/* the client is going away */
		free(x);
		return;
	}
	o->nreq--;
	if (r->op == S3_PUT)
		o->putting = 0;
	switch (op) {
	case OP_PUBLISH:
		if (r->ok) {
			published_ok(t, x, r);
		} else {
			describe_failure(t, o, "PutObject", r, err, sizeof(err));
			s3t_not_ready(t, o->ns, o->name, "S3UploadFailed", err);
			stage_finish(t->st, x->it.id, STAGE_RETRY, err);
		}
		break;
	case OP_REPAIR:
		if (r->ok) {
			repaired(t, x, r);
		} else {
			describe_failure(t, o, "PutObject (drift repair)", r, err, sizeof(err));
			log_kv(LOG_ERROR, "drift repair failed; will retry", "ns", o->ns, "name",
			    o->name, "error", err, NULL);
			status_set_condition(stage_store(t->st), stage_journal(t->st),
			    "decofiles", o->ns, o->name, STAGE, "Drifted", "True",
			    "RepairFailed", err);
		}
		break;
	case OP_CHECK:
		if (checked(t, x, r)) {
			free(x);
			pump(t);
			return;		/* handed over: o is gone */
		}
		break;
	case OP_DELETE:
		o->next_check = now_ms() + GONE_RETRY_MS;
		if (r->ok || r->status == 404) {
			o->detach = -1;		/* deleted: forget only records it now */
		} else {
			describe_failure(t, o, "DeleteObject", r, err, sizeof(err));
			log_kv(LOG_ERROR, "cannot delete the object; will retry", "ns", o->ns,
			    "name", o->name, "error", err, NULL);
		}
		break;
	}
	free(x);
	if (o->nreq == 0)
		s3t_check_at(t, o, o->next_check);	/* pump skipped it while busy */
	/* a Decofile deleted while a request flew is let go now (a failed delete: on a tick) */
	if (o->gone && o->nreq == 0 && (op != OP_DELETE || o->detach == -1))
		forget(t, o);
	if (op == OP_CHECK)
		pump(t);
}

/* ---- deletion ---- */

/*
 * forget - the Decofile is gone (or no longer targets s3): delete the
 * object when s3_gc is on and it is not detached, then drop it from the
 * inventory and the store's status.  Waits for requests in flight.
 */
static void
forget(struct s3t *t, struct s3obj *o)
{
	char loc[1500], detail[1800], err[512];
	struct ctx *x;
	const char *action;

	o->gone = 1;
	if (o->nreq > 0)
		return;
	s3t_location(t, o->key, loc, sizeof(loc));
	if (o->detach == -1) {
		action = "prune";
		snprintf(detail, sizeof(detail), "deleted %s", loc);
		log_kv(LOG_INFO, "Decofile deleted; S3 object deleted", "ns", o->ns, "name",
		    o->name, "location", loc, NULL);
	} else if (t->gc && !o->detach && t->c != NULL) {
		x = ctx_new(t, o, OP_DELETE);
		if (s3_delete(t->c, o->key, on_done, x, err, sizeof(err)) < 0) {
			log_kv(LOG_ERROR, "cannot delete the object; will retry", "ns", o->ns,
			    "name", o->name, "error", err, NULL);
			o->next_check = now_ms() + GONE_RETRY_MS;
			free(x);
			return;
		}
		o->nreq++;
		rearm(t);
		return;
	} else {
		action = "detach";
		snprintf(detail, sizeof(detail), "kept %s (%s)", loc, o->detach ?
		    PUBLISH_DELETION_ANNOTATION ": detach" : "s3_gc off");
		log_kv(LOG_INFO, "Decofile deleted; S3 object kept", "ns", o->ns, "name",
		    o->name, "location", loc, "why", o->detach ? "detach" : "s3_gc off", NULL);
	}
	publish_record_removal(t->st, o->ns, o->name, loc, action, detail, 1);
	s3t_obj_free(t, o);
}

/* ---- the loop ---- */

static void
dispatch(struct s3t *t)
{
	if (t->c != NULL)
		s3_client_dispatch(t->c);
}

static void
timer_cb(struct stage *st, void *arg)
{
	struct s3t *t = arg;

	t->timer = 0;
	dispatch(t);
	rearm(t);
}

/* rearm - one stage timer at curl's next deadline */
static void
rearm(struct s3t *t)
{
	int64_t ms;

	if (t->c == NULL)
		return;
	ms = s3_client_timeout(t->c);
	if (t->timer > 0)
		stage_cancel_timer(t->st, t->timer);
	t->timer = ms >= 0 ? stage_add_timer(t->st, ms, timer_cb, t) : 0;
}

static void
on_fd(struct stage *st, int fd, short revents, void *arg)
{
	struct s3t *t = arg;

	dispatch(t);
	rearm(t);
}

static void
start_check(struct s3t *t, struct s3obj *o)
{
	struct ctx *x = ctx_new(t, o, OP_CHECK);
	char err[512];

	if (s3_head(t->c, o->key, on_done, x, err, sizeof(err)) < 0) {
		if (!o->complained)
			log_kv(LOG_WARN, "cannot check object", "ns", o->ns, "name", o->name,
			    "error", err, NULL);
		o->complained = 1;
		s3t_check_at(t, o, now_ms() + t->check_ms);
		free(x);
		return;
	}
	o->nreq++;
	t->heads++;
}

/*
 * pump - start the checks that are due, up to s3_concurrency in flight;
 * called every tick and whenever a check ends, so the rate is bounded by
 * latency x concurrency, not by the tick.  The list is walked only when
 * something is due (t->next_due).
 */
static void
pump(struct s3t *t)
{
	int64_t now = now_ms(), next = INT64_MAX;
	struct s3obj *o;
	size_t cur = 0;
	int started = 0;

	if (now < t->next_due)
		return;
	while ((o = objtab_next(t->objs, &cur)) != NULL) {
		if (o->nreq > 0 || o->gone || o->content_hash[0] == '\0')
			continue;	/* a busy one reschedules itself when it ends */
		if (o->next_check > now) {
			if (o->next_check < next)
				next = o->next_check;
			continue;
		}
		if (s3_client_in_flight(t->c) >= (size_t)t->concurrency) {
			next = now;	/* still due: look again as checks end */
			break;
		}
		start_check(t, o);
		started++;
	}
	t->next_due = next;
	if (started > 0)
		rearm(t);
}

static void
s3_tick(struct stage *st, void *arg)
{
	struct s3t *t = arg;
	int64_t now = now_ms();
	struct s3obj *o;
	size_t cur = 0;

	if (t->c == NULL)
		return;
	while ((o = objtab_next(t->objs, &cur)) != NULL) {
		if (o->nreq > 0)
			continue;
		if (o->gone) {
			if (o->next_check <= now)
				forget(t, o);
			continue;
		}
		if (o->status_dirty)
			s3t_write_status(t, o);
	}
	pump(t);
}

/* ---- publishing ---- */

static enum stage_result
retry(struct stage *st, const char *why)
{
	stage_item_error(st, why);
	return STAGE_RETRY;
}

static enum stage_result
s3_publish(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd, yajl_val doc)
{
	struct s3t *t = arg;
	char key[1100], loc[1500], err[800];
	struct published pb;
	struct s3obj *o;
	struct ctx *x;

	if (t->c == NULL) {
		s3t_not_ready(t, it->ns, it->name, "S3NotConfigured", t->cfg_err);
		return retry(st, t->cfg_err);
	}
	if (s3_credentials_ok(t->c, err, sizeof(err)) < 0) {
		s3t_not_ready(t, it->ns, it->name, "S3NotConfigured", err);
		return retry(st, err);
	}
	if (s3key_build(t->prefix, it->ns, decofile_deployment_id(doc), key, sizeof(key)) < 0) {
		snprintf(err, sizeof(err), "cannot build the S3 key for deploymentId \"%s\"",
		    decofile_deployment_id(doc));
		s3t_not_ready(t, it->ns, it->name, "S3UploadFailed", err);
		stage_item_error(st, err);
		return STAGE_FAIL;
	}
	s3t_location(t, key, loc, sizeof(loc));
	o = s3t_obj_find(t, it->ns, it->name);
	if (o != NULL && o->gone && o->nreq > 0)
		return retry(st, "the previous object of this Decofile is being deleted");
	if (o != NULL) {
		o->gone = 0;
		s3t_set_policy(t, o, publish_doc_detach(doc));
		if (o->putting)
			return retry(st, "an upload of this Decofile is in flight");
	}

	/* skip when the status already says this content is there */
	(void)pd;	/* json only: the content hash is the blob */
	publish_published(st, it->ns, it->name, &pb);
	if (strcmp(pb.hash, it->hash) == 0 && strcmp(pb.location, loc) == 0) {
		struct journal *j = stage_journal(st);

		if (o == NULL) {
			o = s3t_obj_get(t, it->ns, it->name);
			o->detach = publish_doc_detach(doc);
			s3t_check_at(t, o, now_ms());	/* look at it soon */
		}
		if (strcmp(o->content_hash, it->hash) != 0) {
			o->put_etag[0] = '\0';	/* ETags of other bytes: worked out again */
			o->md5_etag[0] = '\0';
		}
		snprintf(o->key, sizeof(o->key), "%s", key);
		memcpy(o->content_hash, it->hash, sizeof(o->content_hash));
		o->timestamp = pb.timestamp;
		if (stage_begin(st) < 0)
			return retry(st, "journal busy");
		if (journal_inventory_put(j, it->ns, it->name, TARGET, loc, it->hash) < 0) {
			snprintf(err, sizeof(err), "journal: %s", journal_error(j));
			stage_rollback(st);
			return retry(st, err);
		}
		if (stage_commit(st, it, "already published") < 0)
			return retry(st, "journal commit failed");
		return STAGE_DONE;
	}

	if (o == NULL) {
		o = s3t_obj_get(t, it->ns, it->name);
		o->detach = publish_doc_detach(doc);
	}
	snprintf(o->key, sizeof(o->key), "%s", key);
	o->gen++;
	x = ctx_new(t, o, OP_PUBLISH);
	x->it = *it;
	if (start_put(t, o, x, it->hash, err, sizeof(err)) < 0) {
		free(x);
		if (o->content_hash[0] == '\0' && o->nreq == 0)
			s3t_obj_free(t, o);
		s3t_not_ready(t, it->ns, it->name, "S3UploadFailed", err);
		stage_item_error(st, err);
		return errno == ENOENT && it->attempts >= MAX_SPOOL_MISSES ? STAGE_FAIL :
		    STAGE_RETRY;
	}
	return STAGE_ASYNC;
}

/* ---- the Decofile changed ---- */

static void
s3_remove(struct stage *st, void *arg, const char *ns, const char *name)
{
	struct s3t *t = arg;
	struct s3obj *o = s3t_obj_find(t, ns, name);

	(void)st;
	if (o != NULL)
		forget(t, o);
}

static void
s3_update(struct stage *st, void *arg, const char *ns, const char *name, yajl_val doc)
{
	struct s3t *t = arg;
	struct s3obj *o = s3t_obj_find(t, ns, name);

	if (o == NULL)
		return;
	s3t_set_policy(t, o, publish_doc_detach(doc));
	if (strcmp(decofile_target(doc, conf_get(stage_conf(st), "default_target")),
	    TARGET) != 0) {
		log_kv(LOG_INFO, "Decofile no longer targets s3", "ns", ns, "name", name, NULL);
		forget(t, o);
		return;
	}
	o->gone = 0;
	s3t_check_at(t, o, o->next_check);
}

static void
s3_relist(struct stage *st, void *arg)
{
	struct s3t *t = arg;
	struct s3obj *o;
	size_t cur = 0;

	while ((o = objtab_next(t->objs, &cur)) != NULL)
		if (publish_decofile_gone(st, o->ns, o->name))
			forget(t, o);
}

/* ---- start ---- */

/*
 * load - the objects this host published before: the store's publisher
 * status fragments with an s3://<bucket>/ location whose content hash is
 * also this journal's last s3 publish.  Their Decofiles are looked up: a
 * deleted one is let go (its deletion policy is unknown now, so the object
 * is kept); the others get their first check spread over a few seconds.
 */
static void
load(struct s3t *t)
{
	struct store *s = stage_store(t->st);
	struct store_list l;
	char *prefix = xasprintf("%s/status/decofiles/", keys_prefix());
	char want[300], last[65], err[256];
	size_t plen = strlen(prefix), wlen;
	int64_t spread = t->check_ms < START_SPREAD_MS ? t->check_ms : START_SPREAD_MS;

	snprintf(want, sizeof(want), "s3://%s/", t->bucket);
	wlen = strlen(want);
	if (store_list(s, prefix, &l) < 0) {
		log_kv(LOG_WARN, "cannot list status; S3 objects are not re-checked until"
		    " their next publish", "error", store_error(s), NULL);
		free(prefix);
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		char ns[254], name[254], stg[64];
		const char *k = l.kvs[i].key + plen, *loc, *h;
		yajl_val f, doc = NULL;
		int64_t lts = 0;
		struct s3obj *o;
		int rv;

		if (strlen(l.kvs[i].key) < plen || sscanf(k, "%253[^/]/%253[^/]/%63s", ns, name,
		    stg) != 3 || strcmp(stg, STAGE) != 0)
			continue;
		if ((f = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL)) == NULL)
			continue;
		loc = json_get_str(f, "location", NULL);
		h = json_get_str(f, "contentHash", NULL);
		if (loc == NULL || h == NULL || strncmp(loc, want, wlen) != 0 ||
		    !is_sha256_hex(h) || journal_last_publish(stage_journal(t->st), ns, name,
		    TARGET, last, &lts) != 0 || strcmp(last, h) != 0) {
			yajl_tree_free(f);
			continue;
		}
		o = s3t_obj_get(t, ns, name);
		snprintf(o->key, sizeof(o->key), "%s", loc + wlen);
		snprintf(o->content_hash, sizeof(o->content_hash), "%s", h);
		o->timestamp = json_get_int(f, 0, "timestamp", NULL);
		yajl_tree_free(f);
		rv = resource_get(s, "decofiles", ns, name, &doc, err, sizeof(err));
		if (rv == 1) {
			o->detach = 1;	/* policy unknown: keeping is the safe side */
			forget(t, o);
			continue;
		}
		if (rv == 0)
			o->detach = publish_doc_detach(doc);
		yajl_tree_free(doc);
		s3t_check_at(t, o, now_ms() + (spread > 0 ? (int64_t)(random() % spread) : 0));
	}
	store_list_free(&l);
	free(prefix);
}

static int
s3_init(struct stage *st, void **state)
{
	struct conf *cf = stage_conf(st);
	struct s3t *t = xcalloc(1, sizeof(*t));
	struct s3_config sc;
	char n[32];

	*state = t;
	t->st = st;
	t->objs = objtab_new();
	snprintf(t->bucket, sizeof(t->bucket), "%s", conf_get(cf, "s3_bucket"));
	snprintf(t->prefix, sizeof(t->prefix), "%s", conf_get(cf, "s3_prefix"));
	if (conf_get(cf, "s3_public_host")[0] != '\0')
		snprintf(t->public_host, sizeof(t->public_host), "%s",
		    conf_get(cf, "s3_public_host"));
	else
		snprintf(t->public_host, sizeof(t->public_host), "%s.s3.%s.amazonaws.com",
		    t->bucket, conf_get(cf, "s3_region"));
	t->check_ms = conf_get_ms(cf, "s3_check_interval");
	t->concurrency = (int)conf_get_int(cf, "s3_concurrency");
	t->gc = conf_get_bool(cf, "s3_gc");
	srandom((unsigned)(now_ms() ^ getpid()));
	sc = (struct s3_config){ t->bucket, conf_get(cf, "s3_region"),
	    conf_get(cf, "s3_endpoint"), conf_get(cf, "s3_credentials_file"),
	    conf_get(cf, "s3_profile"), conf_get_ms(cf, "s3_timeout"), 10000, t->concurrency };
	if (t->bucket[0] == '\0') {
		snprintf(t->cfg_err, sizeof(t->cfg_err), "DECOFILE_S3_BUCKET (s3_bucket) is not"
		    " set: the s3 target has no bucket to upload to");
		return 0;
	}
	if ((t->c = s3_client_new(&sc, t->cfg_err, sizeof(t->cfg_err))) == NULL) {
		log_kv(LOG_ERROR, "s3 target not usable", "error", t->cfg_err, NULL);
		return 0;
	}
	stage_add_fd(st, s3_client_fd(t->c), POLLIN, on_fd, t);
	load(t);
	snprintf(n, sizeof(n), "%zu", objtab_len(t->objs));
	log_kv(LOG_INFO, "s3 target ready", "bucket", t->bucket, "endpoint",
	    sc.endpoint[0] ? sc.endpoint : "(AWS, virtual-host)", "objects", n, NULL);
	return 0;
}

static void
s3_shutdown(struct stage *st, void *arg)
{
	struct s3t *t = arg;
	char r[32], p[32], h[32];
	struct s3obj *o;
	size_t cur = 0;

	snprintf(r, sizeof(r), "%ld", t->repairs);
	snprintf(p, sizeof(p), "%ld", t->puts);
	snprintf(h, sizeof(h), "%ld", t->heads);
	if (t->c != NULL) {
		log_kv(LOG_INFO, "s3 target stopping", "puts", p, "heads", h, "drift_repairs",
		    r, NULL);
		stage_del_fd(st, s3_client_fd(t->c));
	}
	if (t->timer > 0)
		stage_cancel_timer(st, t->timer);
	s3_client_free(t->c);	/* each request's callback frees its context */
	while ((o = objtab_next(t->objs, &cur)) != NULL)
		s3t_obj_free(t, o);
	objtab_free(t->objs);
	free(t);
}

const struct publish_target publish_s3_target = {
	.name = TARGET,
	.init = s3_init,
	.publish = s3_publish,
	.update = s3_update,
	.remove = s3_remove,
	.relist = s3_relist,
	.tick = s3_tick,
	.shutdown = s3_shutdown,
};
