/*
 * publisher - the stage that puts rendered documents where sites read them
 * (the `file` target here; targets in their own files, such as s3, through
 * publish_target.h), records each publish, inventory row and the
 * notifier's item in one journal transaction, and sets Ready.  It owns the
 * published objects afterwards: it watches them (inotify, plus a periodic
 * re-check) and puts back the last published version when someone changes
 * them (Drifted), and removes them when their Decofile is deleted, unless
 * the Decofile said `deco.sites/deletion: detach`.  With several decod
 * instances on one store the store's status fragment is the record of who
 * published what: a content hash another instance already put on the
 * target is adopted, not published again, and an object another instance
 * has since published anew is handed over, not "repaired" back.  Drift,
 * adoption and hand-over are in publish_drift.c.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/publish_configmap.h"
#include "daemons/publisher/publish_file.h"
#include "daemons/publisher/publish_target.h"
#include "daemons/publisher/publisher.h"
#include "proto/proto.h"

#define DELETION_ANNOTATION "deco.sites/deletion"
#define MAX_SPOOL_MISSES 5

/* the targets in files of their own (publish_target.h); p->tstate[i] is targets[i]'s */
static const struct publish_target *const targets[] = { &publish_s3_target };
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

struct later {
	int64_t id;
	enum stage_result r;
	char why[512];
};

struct pub *
P(struct stage *st)
{
	return stage_data(st);
}

static struct obj *
publisher_obj_find(struct pub *p, const char *ns, const char *name)
{
	for (struct obj *o = p->objs; o != NULL; o = o->next)
		if (strcmp(o->ns, ns) == 0 && strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

struct obj *
publisher_obj_get(struct pub *p, const char *ns, const char *name)
{
	struct obj *o = publisher_obj_find(p, ns, name);

	if (o != NULL)
		return o;
	o = xcalloc(1, sizeof(*o));
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->wd = -1;
	o->next = p->objs;
	p->objs = o;
	return o;
}

static void
obj_unwatch(struct pub *p, struct obj *o)
{
	if (o->wd >= 0)
		inotify_rm_watch(p->ifd, o->wd);
	o->wd = -1;
}

void
publisher_obj_free(struct stage *st, struct obj *o)
{
	struct pub *p = P(st);

	for (struct obj **pp = &p->objs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
	obj_unwatch(p, o);
	if (o->check_timer > 0)
		stage_cancel_timer(st, o->check_timer);
	free(o);
}

void
publisher_obj_watch(struct pub *p, struct obj *o)
{
	int wd = inotify_add_watch(p->ifd, o->where.dir, IN_MODIFY | IN_ATTRIB |
	    IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
	    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW);

	if (wd < 0) {
		log_kv(LOG_WARN, "cannot watch published folder; relying on re-checks",
		    "dir", o->where.dir, "error", strerror(errno), NULL);
		return;
	}
	if (o->wd >= 0 && o->wd != wd)
		inotify_rm_watch(p->ifd, o->wd);
	o->wd = wd;
}

void
publisher_object_id(const struct obj *o, char *out, size_t len)
{
	journal_obj(out, len, "decofile", o->ns, o->name);
}

/* finish_cb - settle an item with a reason the journal keeps (see publisher_finish_later) */
static void
finish_cb(struct stage *st, void *arg)
{
	struct later *l = arg;

	stage_finish(st, l->id, l->r, l->why);
	free(l);
}

/*
 * publisher_finish_later - return STAGE_ASYNC from on_item and settle the item from
 * the loop right after, so the journal row gets our error text rather than
 * the skeleton's generic one (the skeleton logs the outcome).
 */
enum stage_result
publisher_finish_later(struct stage *st, const struct journal_item *it, enum stage_result r,
    const char *why)
{
	struct later *l = xcalloc(1, sizeof(*l));

	l->id = it->id;
	l->r = r;
	snprintf(l->why, sizeof(l->why), "%s", why);
	log_kv(LOG_INFO, "item not published", "ns", it->ns, "name", it->name,
	    "error", why, NULL);
	stage_add_timer(st, 0, finish_cb, l);
	return STAGE_ASYNC;
}

int
publisher_doc_detach(yajl_val doc)
{
	const char *v = json_get_str(doc, "metadata", "annotations", DELETION_ANNOTATION, NULL);

	return v != NULL && strcmp(v, "detach") == 0;
}

/* ---- status ---- */

int
publisher_write_status(struct stage *st, struct obj *o)
{
	struct store *s = stage_store(st);
	struct buf b;
	struct jw w;
	char msg[4400], when[40];
	struct status_cond ready = { "Ready", "True", "Published", msg };
	int rv = 0;

	snprintf(msg, sizeof(msg), "Decofile published to %s", o->where.location);
	rfc3339_from(o->timestamp, when, sizeof(when));
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "contentHash");
	jw_str(&w, o->content_hash);
	jw_key(&w, "timestamp");
	jw_int(&w, o->timestamp);
	jw_key(&w, "lastUpdated");
	jw_str(&w, when);
	jw_key(&w, "location");
	jw_str(&w, o->where.location);
	jw_key(&w, "format");
	jw_str(&w, o->format);
	jw_end_obj(&w);
	/* the condition and its fields in one write */
	if (status_set(s, stage_journal(st), "decofiles", o->ns, o->name, STAGE, b.data,
	    &ready, 1) < 0)
		rv = -1;
	buf_free(&b);
	o->status_dirty = rv < 0;
	if (rv < 0)
		log_kv(LOG_WARN, "cannot write status; will retry", "ns", o->ns, "name",
		    o->name, "error", store_error(s), NULL);
	return rv;
}

/* ---- deletion ---- */

/* forget - the Decofile is gone: remove (or detach) its published objects */
static void
forget(struct stage *st, struct obj *o, const char *why)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	char err[512], obj[600], detail[4600], *key;

	publisher_object_id(o, obj, sizeof(obj));
	obj_unwatch(p, o);
	if (o->detach) {
		log_kv(LOG_INFO, "Decofile deleted; published files detached (kept)", "ns",
		    o->ns, "name", o->name, "dir", o->where.dir, NULL);
		snprintf(detail, sizeof(detail), "kept %s (%s: detach) %s", o->where.dir,
		    DELETION_ANNOTATION, why);
	} else {
		if (publish_file_remove(p->root, o->ns, o->name, err, sizeof(err)) < 0) {
			if (!o->gone)
				log_kv(LOG_ERROR, "cannot remove published files; will retry",
				    "ns", o->ns, "name", o->name, "error", err, NULL);
			o->gone = 1;
			return;
		}
		log_kv(LOG_INFO, "Decofile deleted; published files removed", "ns", o->ns,
		    "name", o->name, "dir", o->where.dir, NULL);
		snprintf(detail, sizeof(detail), "removed %s %s", o->where.dir, why);
	}
	if (journal_begin(j) < 0 ||
	    journal_inventory_del(j, o->ns, o->name, o->where.location) < 0 ||
	    journal_audit(j, STAGE, obj, o->detach ? "detach" : "prune", detail) < 0 ||
	    journal_commit(j) < 0) {
		log_kv(LOG_ERROR, "journal: cannot record removal", "error",
		    journal_error(j), NULL);
		journal_rollback(j);
	}
	key = key_status("decofiles", o->ns, o->name, STAGE);
	if (store_delete(stage_store(st), key) < 0)
		log_kv(LOG_WARN, "cannot delete status fragment", "key", key, "error",
		    store_error(stage_store(st)), NULL);
	free(key);
	metrics_decofile_gone(o->ns, o->name);
	publisher_obj_free(st, o);
}

static void
set_policy(struct stage *st, struct obj *o, int detach)
{
	char obj[600];

	if (o->detach == detach)
		return;
	o->detach = detach;
	publisher_object_id(o, obj, sizeof(obj));
	journal_inventory_set_deletion(stage_journal(st), o->ns, o->name,
	    detach ? "detach" : "delete");
	journal_audit(stage_journal(st), STAGE, obj, "deletion-policy",
	    detach ? "deletion=detach" : "deletion=delete");
}

static void
on_store_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	struct pub *p = P(st);
	char kind[254], ns[254], name[254];
	struct obj *o;
	yajl_val doc;

	if (ev->type == STORE_EV_RELIST) {
		for (size_t i = 0; i < NTARGETS; i++)
			targets[i]->relist(st, p->tstate[i]);
		/* history lost: check every object against the store */
		for (struct obj *x = p->objs, *next; x != NULL; x = next) {
			next = x->next;
			char err[256];

			if (resource_get(stage_store(st), "decofiles", x->ns, x->name, &doc,
			    err, sizeof(err)) == 1)
				forget(st, x, "(found missing on re-list)");
			else if (doc != NULL)
				yajl_tree_free(doc);
			doc = NULL;
		}
		return;
	}
	if (key_parse_resource(ev->key, kind, ns, name) < 0 || strcmp(kind, "decofiles") != 0)
		return;
	doc = ev->type == STORE_EV_DELETE ? NULL : json_parse(ev->value, ev->vlen, NULL);
	if (ev->type == STORE_EV_DELETE || doc != NULL)
		for (size_t i = 0; i < NTARGETS; i++)
			targets[i]->decofile(st, p->tstate[i], ns, name, doc);
	yajl_tree_free(doc);
	if (p->cm != NULL) {
		doc = ev->type == STORE_EV_DELETE ? NULL : json_parse(ev->value, ev->vlen, NULL);
		if (ev->type == STORE_EV_DELETE || doc != NULL)
			publish_configmap_decofile(p->cm, ns, name, doc);
		yajl_tree_free(doc);
	}
	if ((o = publisher_obj_find(p, ns, name)) == NULL)
		return;
	if (ev->type == STORE_EV_DELETE) {
		forget(st, o, "");
		return;
	}
	o->gone = 0;		/* back before its files could be removed */
	if ((doc = json_parse(ev->value, ev->vlen, NULL)) != NULL) {
		set_policy(st, o, publisher_doc_detach(doc));
		yajl_tree_free(doc);
	}
}

/* ---- publishing ---- */

/* notify_detail - the notifier item's detail (proto.h) into out */
static void
notify_detail(char *out, size_t outlen, int64_t timestamp, const char *commit)
{
	struct proto_notify_detail nd;

	memset(&nd, 0, sizeof(nd));
	nd.timestamp = timestamp;
	/* a commit the detail cannot carry is left out, not the rollout */
	snprintf(nd.commit, sizeof(nd.commit), "%s", commit);
	if (proto_notify_detail_encode(&nd, out, outlen) < 0) {
		nd.commit[0] = '\0';
		(void)proto_notify_detail_encode(&nd, out, outlen);
	}
}

static enum stage_result
on_item(struct stage *st, const struct journal_item *it)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	struct store *s = stage_store(st);
	char format[16], bin[80], commit[200], err[512], why[1024], last_hash[65] = "";
	char obj[600], detail[4800], old_location[4300] = "";
	struct publish_file_req rq;
	struct publish_file_res res;
	const char *target, *blob;
	int64_t last_ts = 0, ts;
	struct published pb;
	struct proto_publish_detail pd;
	struct obj *o;
	yajl_val doc = NULL;
	size_t len;
	char *data;
	int rv, same;

	if (strcmp(it->kind, "decofile") != 0)
		return publisher_finish_later(st, it, STAGE_FAIL, "unknown item kind");
	if (!is_sha256_hex(it->hash))
		return publisher_finish_later(st, it, STAGE_FAIL, "item carries no content hash");
	if (proto_publish_detail_decode(it->detail, &pd, why, sizeof(why)) < 0)
		return publisher_finish_later(st, it, STAGE_FAIL, why);
	snprintf(format, sizeof(format), "%s", pd.format);
	snprintf(bin, sizeof(bin), "%s", pd.bin);
	snprintf(commit, sizeof(commit), "%s", pd.commit);
	if (!name_valid(it->ns) || !name_valid(it->name))
		return publisher_finish_later(st, it, STAGE_FAIL, "invalid namespace or name");

	rv = resource_get(s, "decofiles", it->ns, it->name, &doc, err, sizeof(err));
	if (rv < 0) {
		snprintf(why, sizeof(why), "reading the Decofile: %s", err);
		return publisher_finish_later(st, it, STAGE_RETRY, why);
	}
	if (rv == 1) {
		log_kv(LOG_INFO, "Decofile deleted before publishing; nothing to do", "ns",
		    it->ns, "name", it->name, NULL);
		return STAGE_DONE;
	}
	target = decofile_target(doc, conf_get(stage_conf(st), "default_target"));
	if (strcmp(target, "configmap") == 0 && p->cm != NULL) {
		enum stage_result r = publish_configmap_item(p->cm, it, doc, bin, commit, why,
		    sizeof(why));

		yajl_tree_free(doc);
		return r == STAGE_DONE || r == STAGE_ASYNC ? r :
		    publisher_finish_later(st, it, r, why);
	}
	for (size_t i = 0; i < NTARGETS; i++) {
		if (strcmp(target, targets[i]->name) == 0) {
			enum stage_result r = targets[i]->publish(st, p->tstate[i], it, doc);

			yajl_tree_free(doc);
			return r;
		}
	}
	if (strcmp(target, TARGET) != 0) {
		snprintf(why, sizeof(why), "target \"%s\" is not supported by this publisher"
		    " yet (supported: file, s3%s)", target,
		    p->cm != NULL ? ", configmap" : "; configmap needs a cluster");
		status_set_condition(s, j, "decofiles", it->ns, it->name, STAGE, "Ready",
		    "False", "UnsupportedTarget", why);
		yajl_tree_free(doc);
		return publisher_finish_later(st, it, STAGE_FAIL, why);
	}
	o = publisher_obj_find(p, it->ns, it->name);
	if (o != NULL) {
		o->gone = 0;
		set_policy(st, o, publisher_doc_detach(doc));
	}

	/* the bytes */
	blob = strcmp(format, "bin") == 0 ? bin : it->hash;
	if ((data = spool_get(stage_spool(st), blob, &len)) == NULL) {
		snprintf(why, sizeof(why), "rendered document %s not in the spool: %s", blob,
		    strerror(errno));
		yajl_tree_free(doc);
		return publisher_finish_later(st, it, errno == ENOENT && it->attempts < MAX_SPOOL_MISSES ?
		    STAGE_RETRY : STAGE_FAIL, why);
	}

	/* exactly one publish per content hash (and format) */
	if (journal_last_publish(j, it->ns, it->name, TARGET, last_hash, &last_ts) < 0) {
		free(data);
		yajl_tree_free(doc);
		return publisher_finish_later(st, it, STAGE_RETRY, journal_error(j));
	}
	/* ... over every instance: the store's status says what is live */
	publish_drift_published(st, it->ns, it->name, &pb);
	if (pb.timestamp > last_ts)
		last_ts = pb.timestamp;
	same = o != NULL && strcmp(last_hash, it->hash) == 0 &&
	    strcmp(o->format, format) == 0 &&
	    (pb.hash[0] == '\0' || strcmp(pb.hash, it->hash) == 0);
	if (!same && strcmp(pb.hash, it->hash) == 0 && strcmp(pb.format, format) == 0 &&
	    publish_file_paths(p->root, it->ns, it->name, format, &res, err,
	    sizeof(err)) == 0 && strcmp(pb.location, res.location) == 0 &&
	    publish_drift_target_holds(res.path, blob)) {
		enum stage_result r = publish_drift_adopt(st, it, o, doc, format, blob, data, len, &pb,
		    commit);

		free(data);
		yajl_tree_free(doc);
		return r;
	}
	ts = wall_ms() / 1000;
	if (ts <= last_ts)
		ts = last_ts + 1;
	rq = (struct publish_file_req){ p->root, it->ns, it->name, format, data, len,
	    same ? last_ts : ts, same ? 0 : PUBLISH_FILE_KEEP_TS, last_ts };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0) {
		free(data);
		yajl_tree_free(doc);
		return publisher_finish_later(st, it, STAGE_RETRY, err);
	}
	if (res.wrote_doc)
		metrics_published_bytes(TARGET, len);
	free(data);

	if (o == NULL) {
		o = publisher_obj_get(p, it->ns, it->name);
		o->detach = publisher_doc_detach(doc);
	}
	yajl_tree_free(doc);
	publisher_object_id(o, obj, sizeof(obj));
	if (same) {
		/* already published: at most a repair, no new publish, no notify */
		o->where = res;
		publisher_obj_watch(p, o);
		if (res.wrote_doc || res.wrote_ts || res.removed) {
			journal_record_drift(j, o->ns, o->name, res.location, res.detail);
			journal_audit(j, STAGE, obj, "drift-repaired", res.detail);
		}
		if (stage_begin(st) < 0 || stage_commit(st, it, "already published") < 0)
			return publisher_finish_later(st, it, STAGE_RETRY, journal_error(j));
		return STAGE_DONE;
	}
	if (o->where.location[0] != '\0' && strcmp(o->where.location, res.location) != 0)
		snprintf(old_location, sizeof(old_location), "%s", o->where.location);

	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s",
	    it->hash, res.location, (long long)res.timestamp, o->detach ? "detach" : "delete");
	if (stage_begin(st) < 0)
		return publisher_finish_later(st, it, STAGE_RETRY, "journal busy");
	if (journal_record_publish(j, it->ns, it->name, TARGET, res.location, it->hash,
	    res.timestamp) < 0 ||
	    (old_location[0] && journal_inventory_del(j, it->ns, it->name, old_location) < 0) ||
	    publisher_record(st, it, o, &res, "publish", detail, commit) < 0) {
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
		stage_rollback(st);
		return publisher_finish_later(st, it, STAGE_RETRY, why);
	}
	if (stage_commit(st, it, "published") < 0)
		return publisher_finish_later(st, it, STAGE_RETRY, "journal commit failed");
	publisher_took(st, o, it, format, blob, &res);
	log_kv(LOG_INFO, "published", "ns", o->ns, "name", o->name, "location",
	    res.location, "hash", it->hash, "written", res.wrote_doc ? "yes" :
	    "no (already there)", NULL);
	publisher_write_status(st, o);
	status_set_condition(s, j, "decofiles", o->ns, o->name, STAGE, "Drifted", "False",
	    "InSync", "The target holds the published version");
	return STAGE_DONE;
}

int
publisher_record(struct stage *st, const struct journal_item *it, const struct obj *o,
    const struct publish_file_res *res, const char *action, const char *detail,
    const char *commit)
{
	struct journal *j = stage_journal(st);
	char obj[600], notify[PROTO_MAX_DETAIL + 1];

	publisher_object_id(o, obj, sizeof(obj));
	notify_detail(notify, sizeof(notify), res->timestamp, commit);
	if (journal_inventory_put(j, it->ns, it->name, TARGET, res->location, it->hash) < 0 ||
	    journal_inventory_set_deletion(j, it->ns, it->name,
	    o->detach ? "detach" : "delete") < 0 ||
	    journal_audit(j, STAGE, obj, action, detail) < 0 ||
	    stage_push(st, "notifier", "decofile", it->ns, it->name, it->hash, notify) < 0)
		return -1;
	return 0;
}

void
publisher_took(struct stage *st, struct obj *o, const struct journal_item *it,
    const char *format, const char *blob, const struct publish_file_res *res)
{
	/* both hashes were checked by is_sha256_hex: 64 bytes and a NUL */
	snprintf(o->format, sizeof(o->format), "%s", strcmp(format, "bin") == 0 ? "bin" : "json");
	snprintf(o->content_hash, sizeof(o->content_hash), "%.64s", it->hash);
	snprintf(o->data_hash, sizeof(o->data_hash), "%.64s", blob);
	o->timestamp = res->timestamp;
	o->where = *res;
	o->complained = 0;
	o->defers = 0;
	publisher_obj_watch(P(st), o);
}

/* ---- start-up reconciliation ---- */

/*
 * load_inventory - rebuild the in-memory objects from the journal's
 * inventory (target file), then check each one against the store: a
 * Decofile that is gone has its files removed (unless detached); one that is
 * there has its files checked and repaired.
 */
/* inventory_row - one inventory row of this target into an in-memory object */
static void
inventory_row(void *arg, const struct journal_inventory_row *r)
{
	struct stage *st = arg;
	struct pub *p = P(st);
	struct publish_file_res w;
	const char *ext;
	struct obj *o;
	char err[512];
	size_t ll = strlen(r->location);

	ext = ll > 5 && strcmp(r->location + ll - 5, ".json") == 0 ? "json" :
	    ll > 4 && strcmp(r->location + ll - 4, ".bin") == 0 ? "bin" : NULL;
	if (ext == NULL || publish_file_paths(p->root, r->ns, r->name, ext, &w, err,
	    sizeof(err)) < 0 || strcmp(w.location, r->location) != 0) {
		log_kv(LOG_WARN, "inventory row outside file_root; left alone", "ns",
		    r->ns, "name", r->name, "location", r->location, NULL);
		return;
	}
	o = publisher_obj_get(p, r->ns, r->name);
	o->where = w;
	snprintf(o->format, sizeof(o->format), "%s", ext);
	snprintf(o->content_hash, sizeof(o->content_hash), "%s", r->content_hash);
	if (strcmp(ext, "json") == 0)
		snprintf(o->data_hash, sizeof(o->data_hash), "%s", r->content_hash);
	else if (journal_render_bin(stage_journal(st), r->ns, r->name, r->content_hash,
	    o->data_hash) != 0 || !is_sha256_hex(o->data_hash))
		o->data_hash[0] = '\0';
}

static int
load_inventory(struct stage *st)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	char err[512];
	yajl_val doc;
	int rv, pol;

	if (journal_inventory_each(j, TARGET, NULL, NULL, inventory_row, st) < 0) {
		log_kv(LOG_ERROR, "journal: cannot read inventory", "error", journal_error(j),
		    NULL);
		return -1;
	}

	for (struct obj *x = p->objs, *next; x != NULL; x = next) {
		next = x->next;
		char last[65];

		if (journal_last_publish(j, x->ns, x->name, TARGET, last, &x->timestamp) != 0 ||
		    strcmp(last, x->content_hash) != 0)
			x->timestamp = 0;
		pol = journal_inventory_deletion(j, x->ns, x->name);
		doc = NULL;
		rv = resource_get(stage_store(st), "decofiles", x->ns, x->name, &doc, err,
		    sizeof(err));
		if (rv == 1) {
			if (pol < 0) {
				/* policy never recorded: keeping is the safe side */
				log_kv(LOG_WARN, "Decofile gone and its deletion policy unknown;"
				    " keeping its files", "ns", x->ns, "name", x->name, NULL);
				x->detach = 1;
			} else {
				x->detach = pol;
			}
			forget(st, x, "(found at start)");
			continue;
		}
		if (rv < 0) {
			log_kv(LOG_WARN, "cannot read Decofile at start", "ns", x->ns, "name",
			    x->name, "error", err, NULL);
		} else {
			x->detach = pol == 1;
			set_policy(st, x, publisher_doc_detach(doc));
			if (pol < 0)	/* not recorded yet: record it now */
				journal_inventory_set_deletion(j, x->ns, x->name,
				    x->detach ? "detach" : "delete");
			yajl_tree_free(doc);
		}
		if (x->timestamp == 0)
			x->data_hash[0] = '\0';	/* no publish record: nothing to put back */
		publisher_obj_watch(p, x);
		publish_drift_check(st, x, 1);
	}
	return 0;
}

static int
pub_init(struct stage *st)
{
	struct pub *p = xcalloc(1, sizeof(*p));
	const char *root = conf_get(stage_conf(st), "file_root");
	char *prefix, err[512];

	p->tstate = xcalloc(NTARGETS, sizeof(*p->tstate));
	stage_set_data(st, p);
	if (root[0] == '\0')
		snprintf(p->root, sizeof(p->root), "%s/published",
		    conf_get(stage_conf(st), "state_dir"));
	else
		snprintf(p->root, sizeof(p->root), "%s", root);
	if (p->root[0] != '/') {
		log_kv(LOG_ERROR, "file_root must be an absolute path", "file_root", p->root,
		    NULL);
		return -1;
	}
	if (mkdir_p(p->root, 0755) < 0) {
		log_kv(LOG_ERROR, "cannot create file_root", "file_root", p->root, "error",
		    strerror(errno), NULL);
		return -1;
	}
	if ((p->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		log_kv(LOG_ERROR, "inotify", "error", strerror(errno), NULL);
		return -1;
	}
	stage_add_fd(st, p->ifd, POLLIN, publish_drift_on_inotify, NULL);

	/* watch first, then list: nothing deleted in between is missed */
	prefix = key_resource_prefix("decofiles", NULL);
	p->watch = store_watch_new(stage_store(st), prefix, 0, on_store_event, st);
	free(prefix);
	if (p->watch == NULL) {
		log_kv(LOG_ERROR, "cannot watch Decofiles", "error",
		    store_error(stage_store(st)), NULL);
		return -1;
	}
	p->watch_sw = store_watch_attach(p->watch, st, 1000);

	if (load_inventory(st) < 0)
		return -1;
	for (size_t i = 0; i < NTARGETS; i++)
		if ((p->tstate[i] = targets[i]->init(st)) == NULL)
			return -1;
	if ((p->cm = publish_configmap_new(st, err, sizeof(err))) == NULL && err[0] != '\0') {
		log_kv(LOG_ERROR, "Kubernetes configuration", "error", err, NULL);
		return -1;
	}
	p->next_recheck = now_ms() + conf_get_ms(stage_conf(st), "drift_check_interval");
	log_kv(LOG_INFO, "publisher ready", "file_root", p->root, NULL);
	return 0;
}

/* on_timer - the periodic re-check (cheap: fingerprints first) and status retries */
static void
pub_timer(struct stage *st)
{
	struct pub *p = P(st);

	for (size_t i = 0; i < NTARGETS; i++)
		targets[i]->tick(st, p->tstate[i]);
	for (struct obj *o = p->objs, *next; o != NULL; o = next) {
		next = o->next;
		if (o->gone)
			forget(st, o, "(retried)");
		else if (o->status_dirty)
			publisher_write_status(st, o);
	}
	if (now_ms() < p->next_recheck)
		return;
	p->next_recheck = now_ms() + conf_get_ms(stage_conf(st), "drift_check_interval");
	for (struct obj *o = p->objs, *next; o != NULL; o = next) {
		next = o->next;
		publish_drift_check(st, o, 0);
	}
}

static void
pub_shutdown(struct stage *st)
{
	struct pub *p = P(st);
	char n[32];

	snprintf(n, sizeof(n), "%ld", p->repairs);
	log_kv(LOG_INFO, "publisher stopping", "drift_repairs", n, NULL);
	for (size_t i = 0; i < NTARGETS; i++)
		targets[i]->shutdown(st, p->tstate[i]);
	while (p->objs != NULL)
		publisher_obj_free(st, p->objs);
	publish_configmap_free(p->cm);
	store_watch_detach(p->watch_sw);
	store_watch_free(p->watch);
	if (p->ifd >= 0)
		close(p->ifd);
	free(p->tstate);
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
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
