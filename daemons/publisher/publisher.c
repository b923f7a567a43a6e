/*
 * publisher - the stage that puts rendered documents where sites read them
 * (today the `file` target), records each publish, inventory row and the
 * notifier's item in one journal transaction, and sets Ready.  It owns the
 * published objects afterwards: it watches them (inotify, plus a periodic
 * re-check) and puts back the last published version when someone changes
 * them (Drifted), and removes them when their Decofile is deleted, unless
 * the Decofile said `deco.sites/deletion: detach`.  With several decod
 * instances on one store the store's status fragment is the record of who
 * published what: a content hash another instance already put on the
 * target is adopted, not published again, and an object another instance
 * has since published anew is handed over, not "repaired" back.
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

#include <sqlite3.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/publish_configmap.h"
#include "daemons/publisher/publish_file.h"
#include "proto/proto.h"

#define STAGE "publisher"
#define TARGET "file"
#define DELETION_ANNOTATION "deco.sites/deletion"
#define CHECK_DEBOUNCE_MS 20
#define MAX_SPOOL_MISSES 5
#define MAX_DEFERS 5		/* checks put off while another instance publishes */
#define DEFER_MS 1000
#define FIRST_DEFER_MS 150	/* second look before a repair (see someone_else) */

/* one published object: what we put there, so we can tell when it changed */
struct obj {
	char ns[254];
	char name[254];
	char format[8];			/* "json" | "bin" */
	char content_hash[65];
	char data_hash[65];		/* sha256 of the published bytes; "" unknown */
	int64_t timestamp;
	struct publish_file_res where;	/* dir, path, location, last sigs */
	int wd;				/* inotify watch on where.dir, -1 none */
	int detach;			/* last known deletion policy */
	int64_t check_timer;		/* a debounced check is scheduled */
	long repairs;
	int status_dirty;		/* Ready/fields not yet written to the store */
	int complained;			/* logged that the bytes cannot be put back */
	int gone;			/* Decofile deleted; removal to be retried */
	int defers;			/* repairs put off: a newer timestamp.txt */
	struct obj *next;
};

struct pub {
	char root[4096];
	struct obj *objs;
	int ifd;			/* inotify */
	struct store_watch *watch;
	int64_t watch_timer;
	int64_t next_recheck;
	long repairs;			/* drift repairs since start */
	struct pcm *cm;			/* the configmap target; NULL: no cluster */
};

struct later {
	int64_t id;
	enum stage_result r;
	char why[512];
};

static struct pub *
P(struct stage *st)
{
	return stage_data(st);
}

static struct obj *
obj_find(struct pub *p, const char *ns, const char *name)
{
	for (struct obj *o = p->objs; o != NULL; o = o->next)
		if (strcmp(o->ns, ns) == 0 && strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static struct obj *
obj_get(struct pub *p, const char *ns, const char *name)
{
	struct obj *o = obj_find(p, ns, name);

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

static void
obj_free(struct stage *st, struct obj *o)
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

static void
obj_watch(struct pub *p, struct obj *o)
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

static void
object_id(const struct obj *o, char *out, size_t len)
{
	snprintf(out, len, "decofile/%s/%s", o->ns, o->name);
}

/* finish_cb - settle an item with a reason the journal keeps (see finish_later) */
static void
finish_cb(struct stage *st, void *arg)
{
	struct later *l = arg;

	stage_finish(st, l->id, l->r, l->why);
	free(l);
}

/*
 * finish_later - return STAGE_ASYNC from on_item and settle the item from
 * the loop right after, so the journal row gets our error text rather than
 * the skeleton's generic one (the skeleton logs the outcome).
 */
static enum stage_result
finish_later(struct stage *st, const struct journal_item *it, enum stage_result r,
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

/* ---- journal look-ups the header has no function for (read-only) ---- */

/* bin_hash_of - the bin blob hash rendered for content hash h; 0 or -1 */
static int
bin_hash_of(struct journal *j, const char *ns, const char *name, const char *h, char *out)
{
	sqlite3_stmt *q;
	int rv = -1;

	if (sqlite3_prepare_v2(journal_db(j), "SELECT bin_hash FROM renders WHERE ns=? AND"
	    " name=? AND content_hash=? AND bin_hash<>'' ORDER BY id DESC LIMIT 1", -1, &q,
	    NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(q, 1, ns, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 3, h, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0) != NULL) {
		snprintf(out, 65, "%s", (const char *)sqlite3_column_text(q, 0));
		rv = is_sha256_hex(out) ? 0 : -1;
	}
	sqlite3_finalize(q);
	return rv;
}

/*
 * deletion_policy - the last deletion policy the publisher wrote to the
 * audit log for the object: 1 detach, 0 delete, -1 unknown.
 */
static int
deletion_policy(struct journal *j, const char *object)
{
	sqlite3_stmt *q;
	char v[16];
	int rv = -1;

	if (sqlite3_prepare_v2(journal_db(j), "SELECT detail FROM audit WHERE stage=? AND"
	    " object=? AND action IN ('publish','deletion-policy') ORDER BY id DESC LIMIT 1",
	    -1, &q, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(q, 1, STAGE, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, object, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0) != NULL &&
	    journal_detail_get((const char *)sqlite3_column_text(q, 0), "deletion", v,
	    sizeof(v)) == 0)
		rv = strcmp(v, "detach") == 0;
	sqlite3_finalize(q);
	return rv;
}

/*
 * publish_pending - nonzero when a publisher item for the object is still
 * pending: the target may hold its (newer) document, written by a run that
 * died before its commit, and that item -- not drift repair -- decides.
 */
static int
publish_pending(struct journal *j, const char *ns, const char *name)
{
	sqlite3_stmt *q;
	int rv = 0;

	if (sqlite3_prepare_v2(journal_db(j), "SELECT 1 FROM items WHERE stage=? AND"
	    " state='pending' AND ns=? AND name=? LIMIT 1", -1, &q, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(q, 1, STAGE, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, ns, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 3, name, -1, SQLITE_TRANSIENT);
	rv = sqlite3_step(q) == SQLITE_ROW;
	sqlite3_finalize(q);
	return rv;
}

static int
doc_detach(yajl_val doc)
{
	const char *v = json_get_str(doc, "metadata", "annotations", DELETION_ANNOTATION, NULL);

	return v != NULL && strcmp(v, "detach") == 0;
}

/* ---- status ---- */

static int
write_status(struct stage *st, struct obj *o)
{
	struct store *s = stage_store(st);
	struct buf b;
	struct jw w;
	char msg[4400], when[40];
	int rv = 0;

	snprintf(msg, sizeof(msg), "Decofile published to %s", o->where.location);
	if (status_set_condition(s, stage_journal(st), "decofiles", o->ns, o->name, STAGE,
	    "Ready", "True", "Published", msg) < 0)
		rv = -1;
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
	if (status_set_fields(s, "decofiles", o->ns, o->name, STAGE, b.data) < 0)
		rv = -1;
	buf_free(&b);
	o->status_dirty = rv < 0;
	if (rv < 0)
		log_kv(LOG_WARN, "cannot write status; will retry", "ns", o->ns, "name",
		    o->name, "error", store_error(s), NULL);
	return rv;
}

/* ---- what other instances published (the store's status fragment) ---- */

/* what the publisher fragment in the store says was published last */
struct published {
	char hash[65];
	char format[8];
	char location[4300];
	int64_t timestamp;
};

/* store_published - read it; 0 (fields "" / 0 where absent) or -1 */
static int
store_published(struct stage *st, const char *ns, const char *name, struct published *pb)
{
	yajl_val f = status_get_fragment(stage_store(st), "decofiles", ns, name, STAGE);
	const char *v;

	memset(pb, 0, sizeof(*pb));
	if (f == NULL)
		return 0;
	if ((v = json_get_str(f, "contentHash", NULL)) != NULL && is_sha256_hex(v))
		snprintf(pb->hash, sizeof(pb->hash), "%s", v);
	if ((v = json_get_str(f, "format", NULL)) != NULL)
		snprintf(pb->format, sizeof(pb->format), "%s", v);
	if ((v = json_get_str(f, "location", NULL)) != NULL)
		snprintf(pb->location, sizeof(pb->location), "%s", v);
	pb->timestamp = json_get_int(f, 0, "timestamp", NULL);
	yajl_tree_free(f);
	return 0;
}

/* target_holds - nonzero when the file at path hashes to blob */
static int
target_holds(const char *path, const char *blob)
{
	char h[65];
	size_t len;
	char *data = read_file(path, &len, (size_t)1 << 31);

	if (data == NULL)
		return 0;
	sha256_hex(data, len, h);
	free(data);
	return strcmp(h, blob) == 0;
}

/* target_ts - the unix seconds in dir/timestamp.txt, 0 if none */
static int64_t
target_ts(const char *dir)
{
	char path[4400], *data;
	int64_t ts;
	size_t len;

	snprintf(path, sizeof(path), "%s/timestamp.txt", dir);
	if ((data = read_file(path, &len, 64)) == NULL)
		return 0;
	ts = strtoll(data, NULL, 10);
	free(data);
	return ts;
}

static void schedule_check_in(struct stage *st, struct obj *o, int64_t ms);

/*
 * hand_over - another instance has published o anew since we did: it
 * owns the object now.  Drop it from our inventory without touching the
 * target or the status.
 */
static void
hand_over(struct stage *st, struct obj *o, const struct published *pb)
{
	struct journal *j = stage_journal(st);
	char obj[600], detail[600];

	object_id(o, obj, sizeof(obj));
	snprintf(detail, sizeof(detail), "hash=%s timestamp=%lld published by another"
	    " instance after ours (hash=%s timestamp=%lld)", pb->hash,
	    (long long)pb->timestamp, o->content_hash, (long long)o->timestamp);
	log_kv(LOG_INFO, "published object handed over to another instance", "ns", o->ns,
	    "name", o->name, "hash", pb->hash, NULL);
	if (journal_begin(j) < 0 ||
	    journal_inventory_del(j, o->ns, o->name, o->where.location) < 0 ||
	    journal_audit(j, STAGE, obj, "handed-over", detail) < 0 ||
	    journal_commit(j) < 0) {
		log_kv(LOG_ERROR, "journal: cannot record the hand-over", "error",
		    journal_error(j), NULL);
		journal_rollback(j);
	}
	obj_free(st, o);	/* target and status now belong to the other instance */
}

/*
 * someone_else - decide before a repair whether the change on the target
 * is another instance's newer publish: 1 handed over (o is freed), 2 put
 * off (another check is scheduled), 0 repair it.
 */
static int
someone_else(struct stage *st, struct obj *o)
{
	struct published pb;

	if (store_published(st, o->ns, o->name, &pb) < 0)
		return 0;
	if (pb.hash[0] != '\0' && pb.timestamp > o->timestamp &&
	    (strcmp(pb.hash, o->content_hash) != 0 || strcmp(pb.location,
	    o->where.location) != 0)) {
		hand_over(st, o, &pb);
		return 1;
	}
	/*
	 * Another instance writes its document first and timestamp.txt last:
	 * a changed document with the old timestamp may be that write half
	 * done.  Look once more a moment later before calling it drift.
	 */
	if (o->defers == 0) {
		o->defers++;
		schedule_check_in(st, o, FIRST_DEFER_MS);
		return 2;
	}
	/* its timestamp.txt lands before its status: wait for the status */
	if (target_ts(o->where.dir) > o->timestamp && o->defers < MAX_DEFERS) {
		o->defers++;
		schedule_check_in(st, o, DEFER_MS);
		return 2;
	}
	o->defers = 0;
	return 0;
}

/* ---- drift ---- */

/*
 * check_obj - make the target hold what we published.  full: hash the
 * files even when their fingerprints look untouched.
 */
static void
check_obj(struct stage *st, struct obj *o, int full)
{
	struct pub *p = P(st);
	struct publish_file_req rq;
	struct publish_file_res res;
	struct publish_file_sig s1, s2;
	char other[4400], err[512], obj[600], msg[600], n[32], tspath[4400];
	struct stat sb;
	size_t len;
	char *data;

	if (o->data_hash[0] == '\0' || o->gone)
		return;
	if (!full) {
		snprintf(other, sizeof(other), "%s/decofile.%s", o->where.dir,
		    strcmp(o->format, "json") == 0 ? "bin" : "json");
		snprintf(tspath, sizeof(tspath), "%s/timestamp.txt", o->where.dir);
		if (publish_file_sig(o->where.path, &s1) == 0 &&
		    publish_file_sig_eq(&s1, &o->where.doc_sig) &&
		    publish_file_sig(tspath, &s2) == 0 &&
		    publish_file_sig_eq(&s2, &o->where.ts_sig) && lstat(other, &sb) < 0)
			return;
	}
	if (publish_pending(stage_journal(st), o->ns, o->name))
		return;
	if (someone_else(st, o) != 0)
		return;
	if ((data = spool_get(stage_spool(st), o->data_hash, &len)) == NULL) {
		if (!o->complained)
			log_kv(LOG_ERROR, "published bytes are no longer in the spool; cannot"
			    " check or repair until the next publish", "ns", o->ns, "name",
			    o->name, "blob", o->data_hash, NULL);
		o->complained = 1;
		return;
	}
	rq = (struct publish_file_req){ p->root, o->ns, o->name, o->format, data, len,
	    o->timestamp, 0, 0 };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0) {
		log_kv(LOG_ERROR, "drift repair failed", "ns", o->ns, "name", o->name,
		    "error", err, NULL);
		free(data);
		return;
	}
	free(data);
	o->where = res;
	obj_watch(p, o);
	if (!res.wrote_doc && !res.wrote_ts && !res.removed)
		return;
	o->repairs++;
	p->repairs++;
	object_id(o, obj, sizeof(obj));
	snprintf(n, sizeof(n), "%ld", o->repairs);
	log_kv(LOG_WARN, "drift repaired", "ns", o->ns, "name", o->name, "location",
	    res.location, "detail", res.detail, "repairs", n, NULL);
	if (journal_record_drift(stage_journal(st), o->ns, o->name, res.location,
	    res.detail) < 0 || journal_audit(stage_journal(st), STAGE, obj, "drift-repaired",
	    res.detail) < 0)
		log_kv(LOG_ERROR, "journal: cannot record drift", "error",
		    journal_error(stage_journal(st)), NULL);
	snprintf(msg, sizeof(msg), "Put back the published version (%s); %ld repair%s"
	    " since start", res.detail, o->repairs, o->repairs == 1 ? "" : "s");
	status_set_condition(stage_store(st), stage_journal(st), "decofiles", o->ns,
	    o->name, STAGE, "Drifted", "True", "Repaired", msg);
}

static void
check_timer_cb(struct stage *st, void *arg)
{
	struct obj *o = arg;

	o->check_timer = 0;
	check_obj(st, o, 1);
}

static void
schedule_check(struct stage *st, struct obj *o)
{
	if (o->check_timer == 0)
		o->check_timer = stage_add_timer(st, CHECK_DEBOUNCE_MS, check_timer_cb, o);
}

/* schedule_check_in - a full check after ms (replaces a pending one) */
static void
schedule_check_in(struct stage *st, struct obj *o, int64_t ms)
{
	if (o->check_timer > 0)
		stage_cancel_timer(st, o->check_timer);
	o->check_timer = stage_add_timer(st, ms, check_timer_cb, o);
}

static void
on_inotify(struct stage *st, int fd, short revents, void *arg)
{
	struct pub *p = P(st);
	char b[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	for (;;) {
		n = read(fd, b, sizeof(b));
		if (n <= 0)
			break;
		for (char *q = b; q < b + n;) {
			struct inotify_event *ev = (struct inotify_event *)q;

			q += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				for (struct obj *o = p->objs; o != NULL; o = o->next)
					schedule_check(st, o);
				continue;
			}
			for (struct obj *o = p->objs; o != NULL; o = o->next) {
				if (o->wd != ev->wd)
					continue;
				if (ev->mask & IN_IGNORED)
					o->wd = -1;
				schedule_check(st, o);
				break;
			}
		}
	}
}

/* ---- deletion ---- */

/* forget - the Decofile is gone: remove (or detach) its published objects */
static void
forget(struct stage *st, struct obj *o, const char *why)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	char err[512], obj[600], detail[4600], *key;

	object_id(o, obj, sizeof(obj));
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
	obj_free(st, o);
}

static void
set_policy(struct stage *st, struct obj *o, int detach)
{
	char obj[600];

	if (o->detach == detach)
		return;
	o->detach = detach;
	object_id(o, obj, sizeof(obj));
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
	if (p->cm != NULL) {
		doc = ev->type == STORE_EV_DELETE ? NULL : json_parse(ev->value, ev->vlen, NULL);
		if (ev->type == STORE_EV_DELETE || doc != NULL)
			publish_configmap_decofile(p->cm, ns, name, doc);
		yajl_tree_free(doc);
	}
	if ((o = obj_find(p, ns, name)) == NULL)
		return;
	if (ev->type == STORE_EV_DELETE) {
		forget(st, o, "");
		return;
	}
	o->gone = 0;		/* back before its files could be removed */
	if ((doc = json_parse(ev->value, ev->vlen, NULL)) != NULL) {
		set_policy(st, o, doc_detach(doc));
		yajl_tree_free(doc);
	}
}

static void
dispatch_watch(struct stage *st)
{
	struct pub *p = P(st);

	if (p->watch != NULL && store_watch_dispatch(p->watch) < 0)
		log_kv(LOG_WARN, "store watch error", "error", store_error(stage_store(st)),
		    NULL);
}

static void
on_watch_fd(struct stage *st, int fd, short revents, void *arg)
{
	dispatch_watch(st);
}

static void
watch_timer_cb(struct stage *st, void *arg)
{
	struct pub *p = P(st);
	int t;

	p->watch_timer = 0;
	dispatch_watch(st);
	t = p->watch != NULL ? store_watch_timeout_ms(p->watch) : 1000;
	p->watch_timer = stage_add_timer(st, t > 0 && t < 1000 ? t : 1000, watch_timer_cb,
	    NULL);
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

/*
 * adopt - another instance already published this content hash and the
 * target holds its bytes: take the object over without a new publish (no
 * publish row, the timestamp replicas know is kept) and hand the change
 * on to the notifier, whose replicas may not all have confirmed it.
 */
static enum stage_result
adopt(struct stage *st, const struct journal_item *it, struct obj *o, yajl_val doc,
    const char *format, const char *blob, const char *data, size_t len,
    const struct published *pb, const char *commit)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	struct publish_file_req rq;
	struct publish_file_res res;
	char err[512], obj[600], detail[4800], why[1024];

	/* make timestamp.txt and the other format right (a crash may have cut them) */
	rq = (struct publish_file_req){ p->root, it->ns, it->name, format, data, len,
	    pb->timestamp, 0, 0 };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0)
		return finish_later(st, it, STAGE_RETRY, err);
	if (o == NULL) {
		o = obj_get(p, it->ns, it->name);
		o->detach = doc_detach(doc);
	}
	object_id(o, obj, sizeof(obj));
	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s"
	    " (published by another instance; adopted)", it->hash, res.location,
	    (long long)res.timestamp, o->detach ? "detach" : "delete");
	notify_detail(why, sizeof(why), res.timestamp, commit);
	if (stage_begin(st) < 0)
		return finish_later(st, it, STAGE_RETRY, "journal busy");
	if (journal_inventory_put(j, it->ns, it->name, TARGET, res.location, it->hash) < 0 ||
	    journal_audit(j, STAGE, obj, "adopt", detail) < 0 ||
	    ((res.wrote_doc || res.wrote_ts || res.removed) &&
	    journal_record_drift(j, it->ns, it->name, res.location, res.detail) < 0) ||
	    stage_push(st, "notifier", "decofile", it->ns, it->name, it->hash, why) < 0) {
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
		stage_rollback(st);
		return finish_later(st, it, STAGE_RETRY, why);
	}
	if (stage_commit(st, it, "already published by another instance") < 0)
		return finish_later(st, it, STAGE_RETRY, "journal commit failed");
	snprintf(o->format, sizeof(o->format), "%s", strcmp(format, "bin") == 0 ? "bin" : "json");
	memcpy(o->content_hash, it->hash, sizeof(o->content_hash));
	snprintf(o->data_hash, sizeof(o->data_hash), "%.64s", blob);
	o->timestamp = res.timestamp;
	o->where = res;
	o->complained = 0;
	o->defers = 0;
	obj_watch(p, o);
	log_kv(LOG_INFO, "already published by another instance; adopted", "ns", o->ns,
	    "name", o->name, "location", res.location, "hash", it->hash, NULL);
	write_status(st, o);
	return STAGE_DONE;
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
		return finish_later(st, it, STAGE_FAIL, "unknown item kind");
	if (!is_sha256_hex(it->hash))
		return finish_later(st, it, STAGE_FAIL, "item carries no content hash");
	if (proto_publish_detail_decode(it->detail, &pd, why, sizeof(why)) < 0)
		return finish_later(st, it, STAGE_FAIL, why);
	snprintf(format, sizeof(format), "%s", pd.format);
	snprintf(bin, sizeof(bin), "%s", pd.bin);
	snprintf(commit, sizeof(commit), "%s", pd.commit);
	if (!name_valid(it->ns) || !name_valid(it->name))
		return finish_later(st, it, STAGE_FAIL, "invalid namespace or name");

	rv = resource_get(s, "decofiles", it->ns, it->name, &doc, err, sizeof(err));
	if (rv < 0) {
		snprintf(why, sizeof(why), "reading the Decofile: %s", err);
		return finish_later(st, it, STAGE_RETRY, why);
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
		return r == STAGE_DONE || r == STAGE_ASYNC ? r : finish_later(st, it, r, why);
	}
	if (strcmp(target, TARGET) != 0) {
		snprintf(why, sizeof(why), "target \"%s\" is not supported by this publisher"
		    " yet (supported: file)", target);
		status_set_condition(s, j, "decofiles", it->ns, it->name, STAGE, "Ready",
		    "False", "UnsupportedTarget", why);
		yajl_tree_free(doc);
		return finish_later(st, it, STAGE_FAIL, why);
	}
	o = obj_find(p, it->ns, it->name);
	if (o != NULL) {
		o->gone = 0;
		set_policy(st, o, doc_detach(doc));
	}

	/* the bytes */
	blob = strcmp(format, "bin") == 0 ? bin : it->hash;
	if ((data = spool_get(stage_spool(st), blob, &len)) == NULL) {
		snprintf(why, sizeof(why), "rendered document %s not in the spool: %s", blob,
		    strerror(errno));
		yajl_tree_free(doc);
		return finish_later(st, it, errno == ENOENT && it->attempts < MAX_SPOOL_MISSES ?
		    STAGE_RETRY : STAGE_FAIL, why);
	}

	/* exactly one publish per content hash (and format) */
	if (journal_last_publish(j, it->ns, it->name, TARGET, last_hash, &last_ts) < 0) {
		free(data);
		yajl_tree_free(doc);
		return finish_later(st, it, STAGE_RETRY, journal_error(j));
	}
	/* ... over every instance: the store's status says what is live */
	store_published(st, it->ns, it->name, &pb);
	if (pb.timestamp > last_ts)
		last_ts = pb.timestamp;
	same = o != NULL && strcmp(last_hash, it->hash) == 0 &&
	    strcmp(o->format, format) == 0 &&
	    (pb.hash[0] == '\0' || strcmp(pb.hash, it->hash) == 0);
	if (!same && strcmp(pb.hash, it->hash) == 0 && strcmp(pb.format, format) == 0 &&
	    publish_file_paths(p->root, it->ns, it->name, format, &res, err,
	    sizeof(err)) == 0 && strcmp(pb.location, res.location) == 0 &&
	    target_holds(res.path, blob)) {
		enum stage_result r = adopt(st, it, o, doc, format, blob, data, len, &pb,
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
		return finish_later(st, it, STAGE_RETRY, err);
	}
	free(data);

	if (o == NULL) {
		o = obj_get(p, it->ns, it->name);
		o->detach = doc_detach(doc);
	}
	yajl_tree_free(doc);
	object_id(o, obj, sizeof(obj));
	if (same) {
		/* already published: at most a repair, no new publish, no notify */
		o->where = res;
		obj_watch(p, o);
		if (res.wrote_doc || res.wrote_ts || res.removed) {
			journal_record_drift(j, o->ns, o->name, res.location, res.detail);
			journal_audit(j, STAGE, obj, "drift-repaired", res.detail);
		}
		if (stage_begin(st) < 0 || stage_commit(st, it, "already published") < 0)
			return finish_later(st, it, STAGE_RETRY, journal_error(j));
		return STAGE_DONE;
	}
	if (o->where.location[0] != '\0' && strcmp(o->where.location, res.location) != 0)
		snprintf(old_location, sizeof(old_location), "%s", o->where.location);

	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s",
	    it->hash, res.location, (long long)res.timestamp, o->detach ? "detach" : "delete");
	notify_detail(why, sizeof(why), res.timestamp, commit);
	if (stage_begin(st) < 0)
		return finish_later(st, it, STAGE_RETRY, "journal busy");
	if (journal_record_publish(j, it->ns, it->name, TARGET, res.location, it->hash,
	    res.timestamp) < 0 ||
	    journal_inventory_put(j, it->ns, it->name, TARGET, res.location, it->hash) < 0 ||
	    (old_location[0] && journal_inventory_del(j, it->ns, it->name, old_location) < 0) ||
	    journal_audit(j, STAGE, obj, "publish", detail) < 0 ||
	    stage_push(st, "notifier", "decofile", it->ns, it->name, it->hash, why) < 0) {
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
		stage_rollback(st);
		return finish_later(st, it, STAGE_RETRY, why);
	}
	if (stage_commit(st, it, "published") < 0)
		return finish_later(st, it, STAGE_RETRY, "journal commit failed");

	/* both hashes were checked by is_sha256_hex: 64 bytes and a NUL */
	snprintf(o->format, sizeof(o->format), "%s", strcmp(format, "bin") == 0 ? "bin" : "json");
	memcpy(o->content_hash, it->hash, sizeof(o->content_hash));
	memcpy(o->data_hash, blob, sizeof(o->data_hash));
	o->timestamp = res.timestamp;
	o->where = res;
	o->complained = 0;
	obj_watch(p, o);
	log_kv(LOG_INFO, "published", "ns", o->ns, "name", o->name, "location",
	    res.location, "hash", it->hash, "written", res.wrote_doc ? "yes" :
	    "no (already there)", NULL);
	write_status(st, o);
	status_set_condition(s, j, "decofiles", o->ns, o->name, STAGE, "Drifted", "False",
	    "InSync", "The target holds the published version");
	return STAGE_DONE;
}

/* ---- start-up reconciliation ---- */

/*
 * load_inventory - rebuild the in-memory objects from the journal's
 * inventory (target file), then check each one against the store: a
 * Decofile that is gone has its files removed (unless detached); one that is
 * there has its files checked and repaired.
 */
static int
load_inventory(struct stage *st)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	sqlite3_stmt *q;
	struct obj *o;
	char err[512], objid[600];
	yajl_val doc;
	int rv, pol;

	if (sqlite3_prepare_v2(journal_db(j), "SELECT ns, name, location, content_hash FROM"
	    " inventory WHERE target='" TARGET "' ORDER BY ns, name", -1, &q, NULL) !=
	    SQLITE_OK) {
		log_kv(LOG_ERROR, "journal: cannot read inventory", "error",
		    sqlite3_errmsg(journal_db(j)), NULL);
		return -1;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *ns = (const char *)sqlite3_column_text(q, 0);
		const char *name = (const char *)sqlite3_column_text(q, 1);
		const char *loc = (const char *)sqlite3_column_text(q, 2);
		const char *h = (const char *)sqlite3_column_text(q, 3);
		struct publish_file_res w;
		const char *ext;
		size_t ll;

		if (ns == NULL || name == NULL || loc == NULL || h == NULL)
			continue;
		ll = strlen(loc);
		ext = ll > 5 && strcmp(loc + ll - 5, ".json") == 0 ? "json" :
		    ll > 4 && strcmp(loc + ll - 4, ".bin") == 0 ? "bin" : NULL;
		if (ext == NULL || publish_file_paths(p->root, ns, name, ext, &w, err,
		    sizeof(err)) < 0 || strcmp(w.location, loc) != 0) {
			log_kv(LOG_WARN, "inventory row outside file_root; left alone", "ns",
			    ns, "name", name, "location", loc, NULL);
			continue;
		}
		o = obj_get(p, ns, name);
		o->where = w;
		snprintf(o->format, sizeof(o->format), "%s", ext);
		snprintf(o->content_hash, sizeof(o->content_hash), "%s", h);
		if (strcmp(ext, "json") == 0)
			snprintf(o->data_hash, sizeof(o->data_hash), "%s", h);
		else if (bin_hash_of(j, ns, name, h, o->data_hash) < 0)
			o->data_hash[0] = '\0';
	}
	sqlite3_finalize(q);

	for (struct obj *x = p->objs, *next; x != NULL; x = next) {
		next = x->next;
		char last[65];

		if (journal_last_publish(j, x->ns, x->name, TARGET, last, &x->timestamp) != 0 ||
		    strcmp(last, x->content_hash) != 0)
			x->timestamp = 0;
		object_id(x, objid, sizeof(objid));
		pol = deletion_policy(j, objid);
		doc = NULL;
		rv = resource_get(stage_store(st), "decofiles", x->ns, x->name, &doc, err,
		    sizeof(err));
		if (rv == 1) {
			if (pol < 0) {
				/* policy unknown (history pruned): keeping is the safe side */
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
			set_policy(st, x, doc_detach(doc));
			yajl_tree_free(doc);
		}
		if (x->timestamp == 0)
			x->data_hash[0] = '\0';	/* no publish record: nothing to put back */
		obj_watch(p, x);
		check_obj(st, x, 1);
	}
	return 0;
}

static int
pub_init(struct stage *st)
{
	struct pub *p = xcalloc(1, sizeof(*p));
	const char *root = conf_get(stage_conf(st), "file_root");
	char *prefix, err[512];
	int fd;

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
	stage_add_fd(st, p->ifd, POLLIN, on_inotify, NULL);

	/* watch first, then list: nothing deleted in between is missed */
	prefix = key_resource_prefix("decofiles", NULL);
	p->watch = store_watch_new(stage_store(st), prefix, 0, on_store_event, st);
	free(prefix);
	if (p->watch == NULL) {
		log_kv(LOG_ERROR, "cannot watch Decofiles", "error",
		    store_error(stage_store(st)), NULL);
		return -1;
	}
	if ((fd = store_watch_fd(p->watch)) >= 0)
		stage_add_fd(st, fd, POLLIN, on_watch_fd, NULL);
	p->watch_timer = stage_add_timer(st, 1000, watch_timer_cb, NULL);

	if (load_inventory(st) < 0)
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

	for (struct obj *o = p->objs, *next; o != NULL; o = next) {
		next = o->next;
		if (o->gone)
			forget(st, o, "(retried)");
		else if (o->status_dirty)
			write_status(st, o);
	}
	if (now_ms() < p->next_recheck)
		return;
	p->next_recheck = now_ms() + conf_get_ms(stage_conf(st), "drift_check_interval");
	for (struct obj *o = p->objs, *next; o != NULL; o = next) {
		next = o->next;
		check_obj(st, o, 0);
	}
}

static void
pub_shutdown(struct stage *st)
{
	struct pub *p = P(st);
	char n[32];

	snprintf(n, sizeof(n), "%ld", p->repairs);
	log_kv(LOG_INFO, "publisher stopping", "drift_repairs", n, NULL);
	while (p->objs != NULL)
		obj_free(st, p->objs);
	publish_configmap_free(p->cm);
	store_watch_free(p->watch);
	if (p->ifd >= 0)
		close(p->ifd);
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
	.max_async = 32,	/* ConfigMap writes in flight at once */
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
