/*
 * publish_file_target - the `file` target: a rendered document under
 * file_root/<ns>/<name>/ (publish_file.c writes it), one journal
 * transaction per publish (publish, inventory, audit, the notifier's item),
 * Ready with the published fields.  It owns the published objects
 * afterwards: watched with inotify plus a periodic re-check, put back when
 * someone changes them (publish_file_drift.c), removed when their
 * Decofile is deleted unless it says `deco.sites/deletion: detach`.  With
 * several instances on one store, a content hash another instance already
 * put on the target is adopted, not published again.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/util.h"
#include "daemons/publisher/objtab.h"
#include "daemons/publisher/publish_file.h"
#include "daemons/publisher/publish_file_int.h"
#include "daemons/publisher/publish_record.h"
#include "daemons/publisher/publish_target.h"
#include "proto/proto.h"

#define MAX_SPOOL_MISSES 5

/* ---- objects ---- */

struct fobj *
pft_obj_get(struct ft *t, const char *ns, const char *name)
{
	struct fobj *o = objtab_get(t->objs, ns, name);

	if (o != NULL)
		return o;
	o = xcalloc(1, sizeof(*o));
	o->t = t;
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->wd = -1;
	objtab_put(t->objs, ns, name, o);
	return o;
}

static void
obj_unwatch(struct ft *t, struct fobj *o)
{
	if (o->wd >= 0) {
		inotify_rm_watch(t->ifd, o->wd);
		pft_wd_lost(t, o);
	}
}

void
pft_wd_lost(struct ft *t, struct fobj *o)
{
	char wd[32];

	snprintf(wd, sizeof(wd), "%d", o->wd);
	if (objtab_get(t->bywd, "", wd) == o)
		objtab_del(t->bywd, "", wd);
	o->wd = -1;
}

void
pft_obj_free(struct ft *t, struct fobj *o)
{
	objtab_del(t->objs, o->ns, o->name);
	obj_unwatch(t, o);
	if (o->check_timer > 0)
		stage_cancel_timer(t->st, o->check_timer);
	free(o);
}

void
pft_obj_watch(struct ft *t, struct fobj *o)
{
	int wd = inotify_add_watch(t->ifd, o->where.dir, IN_MODIFY | IN_ATTRIB |
	    IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
	    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW);
	char n[32];

	if (wd < 0) {
		log_kv(LOG_WARN, "cannot watch published folder; relying on re-checks",
		    "dir", o->where.dir, "error", strerror(errno), NULL);
		return;
	}
	if (o->wd >= 0 && o->wd != wd) {
		inotify_rm_watch(t->ifd, o->wd);
		pft_wd_lost(t, o);
	}
	o->wd = wd;
	snprintf(n, sizeof(n), "%d", wd);
	objtab_put(t->bywd, "", n, o);
}

/* ---- status ---- */

int
pft_write_status(struct ft *t, struct fobj *o, int insync)
{
	char msg[4400];
	struct status_cond conds[] = {
		{ "Ready", "True", "Published", msg },
		{ "Drifted", "False", "InSync", "The target holds the published version" },
	};
	struct publish_status ps = { .hash = o->content_hash, .timestamp = o->timestamp,
		.location = o->where.location, .format = o->format };

	snprintf(msg, sizeof(msg), "Decofile published to %s", o->where.location);
	o->status_dirty = publish_status_write(t->st, o->ns, o->name, &ps, conds,
	    insync ? 2 : 1) < 0;
	return o->status_dirty ? -1 : 0;
}

/* ---- deletion ---- */

/* forget - the Decofile is gone: remove (or detach) its published objects */
static void
forget(struct ft *t, struct fobj *o, const char *why)
{
	char detail[4600], err[512];

	obj_unwatch(t, o);
	if (o->detach) {
		log_kv(LOG_INFO, "Decofile deleted; published files detached (kept)", "ns",
		    o->ns, "name", o->name, "dir", o->where.dir, NULL);
		snprintf(detail, sizeof(detail), "kept %s (%s: detach) %s", o->where.dir,
		    PUBLISH_DELETION_ANNOTATION, why);
	} else {
		if (publish_file_remove(t->root, o->ns, o->name, err, sizeof(err)) < 0) {
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
	publish_record_removal(t->st, o->ns, o->name, o->where.location,
	    o->detach ? "detach" : "prune", detail, 1);
	pft_obj_free(t, o);
}

static void
set_policy(struct ft *t, struct fobj *o, int detach)
{
	char obj[600];

	if (o->detach == detach)
		return;
	o->detach = detach;
	journal_obj(obj, sizeof(obj), "decofile", o->ns, o->name);
	journal_inventory_set_deletion(stage_journal(t->st), o->ns, o->name,
	    detach ? "detach" : "delete");
	journal_audit(stage_journal(t->st), STAGE, obj, "deletion-policy",
	    detach ? "deletion=detach" : "deletion=delete");
}

static void
file_remove(struct stage *st, void *arg, const char *ns, const char *name)
{
	struct ft *t = arg;
	struct fobj *o = objtab_get(t->objs, ns, name);

	(void)st;
	if (o != NULL)
		forget(t, o, "");
}

static void
file_update(struct stage *st, void *arg, const char *ns, const char *name, yajl_val doc)
{
	struct ft *t = arg;
	struct fobj *o = objtab_get(t->objs, ns, name);

	(void)st;
	if (o == NULL)
		return;
	o->gone = 0;		/* back before its files could be removed */
	set_policy(t, o, publish_doc_detach(doc));
}

/* file_relist - history lost: check every object against the store */
static void
file_relist(struct stage *st, void *arg)
{
	struct ft *t = arg;
	struct fobj *o;
	size_t cur = 0;

	while ((o = objtab_next(t->objs, &cur)) != NULL)
		if (publish_decofile_gone(st, o->ns, o->name))
			forget(t, o, "(found missing on re-list)");
}

/* ---- publishing ---- */

int
pft_record(struct ft *t, const struct journal_item *it, const struct fobj *o,
    const struct publish_file_res *res, const char *action, const char *detail,
    const char *commit)
{
	struct journal *j = stage_journal(t->st);
	char obj[600], notify[PROTO_MAX_DETAIL + 1];

	journal_obj(obj, sizeof(obj), "decofile", o->ns, o->name);
	publish_notify_detail(notify, sizeof(notify), res->timestamp, commit);
	if (journal_inventory_put(j, it->ns, it->name, TARGET, res->location, it->hash) < 0 ||
	    journal_inventory_set_deletion(j, it->ns, it->name,
	    o->detach ? "detach" : "delete") < 0 ||
	    journal_audit(j, STAGE, obj, action, detail) < 0 ||
	    stage_push(t->st, "notifier", "decofile", it->ns, it->name, it->hash, notify) < 0)
		return -1;
	return 0;
}

void
pft_took(struct ft *t, struct fobj *o, const struct journal_item *it, const char *format,
    const char *blob, const struct publish_file_res *res)
{
	/* both hashes were checked by is_sha256_hex: 64 bytes and a NUL */
	snprintf(o->format, sizeof(o->format), "%s", strcmp(format, "bin") == 0 ? "bin" : "json");
	snprintf(o->content_hash, sizeof(o->content_hash), "%.64s", it->hash);
	snprintf(o->data_hash, sizeof(o->data_hash), "%.64s", blob);
	o->timestamp = res->timestamp;
	o->where = *res;
	o->complained = 0;
	o->defers = 0;
	pft_obj_watch(t, o);
}

/* republished - the same content again: at most a repair, no new publish, no notify */
static enum stage_result
republished(struct ft *t, const struct journal_item *it, struct fobj *o,
    const struct publish_file_res *res)
{
	struct journal *j = stage_journal(t->st);
	char obj[600];

	o->where = *res;
	pft_obj_watch(t, o);
	journal_obj(obj, sizeof(obj), "decofile", o->ns, o->name);
	if (res->wrote_doc || res->wrote_ts || res->removed) {
		journal_record_drift(j, o->ns, o->name, res->location, res->detail);
		journal_audit(j, STAGE, obj, "drift-repaired", res->detail);
	}
	if (stage_begin(t->st) < 0 || stage_commit(t->st, it, "already published") < 0)
		return publish_item_failed(t->st, it, STAGE_RETRY, journal_error(j));
	return STAGE_DONE;
}

/* a publish whose status waits for its batch's commit (stage_after_commit) */
struct published_note {
	struct ft *t;
	char ns[254], name[254];
};

/*
 * say_published - the publish is committed, and its file in place under
 * its name: now the status says so (a failed write is retried by the tick)
 */
static void
say_published(struct stage *st, void *arg)
{
	struct published_note *n = arg;
	struct fobj *o = objtab_get(n->t->objs, n->ns, n->name);

	if (o == NULL || o->gone || !o->status_dirty)
		return;
	/* one write of the fragment for both; the tick retries Ready alone */
	if (pft_write_status(n->t, o, 1) < 0)
		status_set_condition(stage_store(st), stage_journal(st), "decofiles", o->ns,
		    o->name, STAGE, "Drifted", "False", "InSync",
		    "The target holds the published version");
}

/* record - a new content hash is on the target at res: journal it, then say so */
static enum stage_result
record(struct ft *t, const struct journal_item *it, struct fobj *o,
    const struct publish_file_res *res, const char *format, const char *blob,
    const char *commit)
{
	struct stage *st = t->st;
	struct journal *j = stage_journal(st);
	struct published_note *n;
	char detail[4800], why[1024], old_location[4300] = "";

	if (o->where.location[0] != '\0' && strcmp(o->where.location, res->location) != 0)
		snprintf(old_location, sizeof(old_location), "%s", o->where.location);
	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s",
	    it->hash, res->location, (long long)res->timestamp, o->detach ? "detach" : "delete");
	if (stage_begin(st) < 0)
		return publish_item_failed(st, it, STAGE_RETRY, "journal busy");
	if (journal_record_publish(j, it->ns, it->name, TARGET, res->location, it->hash,
	    res->timestamp) < 0 ||
	    (old_location[0] && journal_inventory_del(j, it->ns, it->name, old_location) < 0) ||
	    pft_record(t, it, o, res, "publish", detail, commit) < 0) {
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
		stage_rollback(st);
		return publish_item_failed(st, it, STAGE_RETRY, why);
	}
	if (stage_commit(st, it, "published") < 0)
		return publish_item_failed(st, it, STAGE_RETRY, "journal commit failed");
	pft_took(t, o, it, format, blob, res);
	log_kv(LOG_INFO, "published", "ns", o->ns, "name", o->name, "location",
	    res->location, "hash", it->hash, "written", res->wrote_doc ? "yes" :
	    "no (already there)", NULL);
	o->status_dirty = 1;
	n = xcalloc(1, sizeof(*n));
	n->t = t;
	snprintf(n->ns, sizeof(n->ns), "%s", o->ns);
	snprintf(n->name, sizeof(n->name), "%s", o->name);
	stage_after_commit(st, say_published, n);
	return STAGE_DONE;
}

static enum stage_result
file_publish(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd, yajl_val doc)
{
	struct ft *t = arg;
	struct journal *j = stage_journal(st);
	char err[512], why[1024], last_hash[65] = "";
	struct publish_file_req rq;
	struct publish_file_res res;
	struct published pb;
	struct fobj *o = objtab_get(t->objs, it->ns, it->name);
	const char *blob = strcmp(pd->format, "bin") == 0 ? pd->bin : it->hash;
	int64_t last_ts = 0, ts;
	enum stage_result r;
	size_t len;
	char *data;
	int same;

	if (o != NULL) {
		o->gone = 0;
		set_policy(t, o, publish_doc_detach(doc));
	}
	if ((data = spool_get(stage_spool(st), blob, &len)) == NULL) {
		snprintf(why, sizeof(why), "rendered document %s not in the spool: %s", blob,
		    strerror(errno));
		return publish_item_failed(st, it, errno == ENOENT &&
		    it->attempts < MAX_SPOOL_MISSES ? STAGE_RETRY : STAGE_FAIL, why);
	}
	/* exactly one publish per content hash (and format) ... */
	if (journal_last_publish(j, it->ns, it->name, TARGET, last_hash, &last_ts) < 0) {
		free(data);
		return publish_item_failed(st, it, STAGE_RETRY, journal_error(j));
	}
	/* ... over every instance: the store's status says what is live */
	publish_published(st, it->ns, it->name, &pb);
	if (pb.timestamp > last_ts)
		last_ts = pb.timestamp;
	same = o != NULL && strcmp(last_hash, it->hash) == 0 &&
	    strcmp(o->format, pd->format) == 0 &&
	    (pb.hash[0] == '\0' || strcmp(pb.hash, it->hash) == 0);
	if (!same && strcmp(pb.hash, it->hash) == 0 && strcmp(pb.format, pd->format) == 0 &&
	    publish_file_paths(t->root, it->ns, it->name, pd->format, &res, err,
	    sizeof(err)) == 0 && strcmp(pb.location, res.location) == 0 &&
	    pft_target_holds(res.path, blob)) {
		r = pft_adopt(t, it, o, doc, pd->format, blob, data, len, &pb, pd->commit);
		free(data);
		return r;
	}
	ts = wall_ms() / 1000;
	if (ts <= last_ts)
		ts = last_ts + 1;
	rq = (struct publish_file_req){ t->root, it->ns, it->name, pd->format, data, len,
	    same ? last_ts : ts, same ? 0 : PUBLISH_FILE_KEEP_TS, last_ts };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0) {
		free(data);
		return publish_item_failed(st, it, STAGE_RETRY, err);
	}
	free(data);
	if (res.wrote_doc)
		metrics_published_bytes(TARGET, len);
	if (o == NULL) {
		o = pft_obj_get(t, it->ns, it->name);
		o->detach = publish_doc_detach(doc);
	}
	if (same)
		return republished(t, it, o, &res);
	return record(t, it, o, &res, pd->format, blob, pd->commit);
}

/* ---- start ---- */

/* inventory_row - one inventory row of this target into an in-memory object */
static void
inventory_row(void *arg, const struct journal_inventory_row *r)
{
	struct ft *t = arg;
	struct publish_file_res w;
	const char *ext;
	struct fobj *o;
	char err[512];
	size_t ll = strlen(r->location);

	ext = ll > 5 && strcmp(r->location + ll - 5, ".json") == 0 ? "json" :
	    ll > 4 && strcmp(r->location + ll - 4, ".bin") == 0 ? "bin" : NULL;
	if (ext == NULL || publish_file_paths(t->root, r->ns, r->name, ext, &w, err,
	    sizeof(err)) < 0 || strcmp(w.location, r->location) != 0) {
		log_kv(LOG_WARN, "inventory row outside file_root; left alone", "ns",
		    r->ns, "name", r->name, "location", r->location, NULL);
		return;
	}
	o = pft_obj_get(t, r->ns, r->name);
	o->where = w;
	snprintf(o->format, sizeof(o->format), "%s", ext);
	snprintf(o->content_hash, sizeof(o->content_hash), "%s", r->content_hash);
	if (strcmp(ext, "json") == 0)
		snprintf(o->data_hash, sizeof(o->data_hash), "%s", r->content_hash);
	else if (journal_render_bin(stage_journal(t->st), r->ns, r->name, r->content_hash,
	    o->data_hash) != 0 || !is_sha256_hex(o->data_hash))
		o->data_hash[0] = '\0';
}

/* reconcile_one - an object from the inventory against the store at start */
static void
reconcile_one(struct ft *t, struct fobj *x)
{
	struct journal *j = stage_journal(t->st);
	char err[512], last[65];
	yajl_val doc = NULL;
	int rv, pol;

	if (journal_last_publish(j, x->ns, x->name, TARGET, last, &x->timestamp) != 0 ||
	    strcmp(last, x->content_hash) != 0)
		x->timestamp = 0;
	pol = journal_inventory_deletion(j, x->ns, x->name);
	rv = resource_get(stage_store(t->st), "decofiles", x->ns, x->name, &doc, err,
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
		forget(t, x, "(found at start)");
		return;
	}
	if (rv < 0) {
		log_kv(LOG_WARN, "cannot read Decofile at start", "ns", x->ns, "name",
		    x->name, "error", err, NULL);
	} else {
		x->detach = pol == 1;
		set_policy(t, x, publish_doc_detach(doc));
		if (pol < 0)	/* not recorded yet: record it now */
			journal_inventory_set_deletion(j, x->ns, x->name,
			    x->detach ? "detach" : "delete");
		yajl_tree_free(doc);
	}
	if (x->timestamp == 0)
		x->data_hash[0] = '\0';	/* no publish record: nothing to put back */
	pft_obj_watch(t, x);
	pft_drift_check(t, x, 1);
}

/*
 * file_init - rebuild the in-memory objects from the journal's inventory
 * (target file), then check each one against the store: a Decofile that is
 * gone has its files removed (unless detached); one that is there has its
 * files checked and repaired.
 */
static int
file_init(struct stage *st, void **state)
{
	struct ft *t = xcalloc(1, sizeof(*t));
	const char *root = conf_get(stage_conf(st), "file_root");
	struct fobj *o;
	size_t cur = 0;

	*state = t;
	t->st = st;
	t->objs = objtab_new();
	t->bywd = objtab_new();
	t->ifd = -1;
	if (root[0] == '\0')
		snprintf(t->root, sizeof(t->root), "%s/published",
		    conf_get(stage_conf(st), "state_dir"));
	else
		snprintf(t->root, sizeof(t->root), "%s", root);
	if (t->root[0] != '/') {
		log_kv(LOG_ERROR, "file_root must be an absolute path", "file_root", t->root,
		    NULL);
		return -1;
	}
	if (mkdir_p(t->root, 0755) < 0) {
		log_kv(LOG_ERROR, "cannot create file_root", "file_root", t->root, "error",
		    strerror(errno), NULL);
		return -1;
	}
	if ((t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		log_kv(LOG_ERROR, "inotify", "error", strerror(errno), NULL);
		return -1;
	}
	stage_add_fd(st, t->ifd, POLLIN, pft_on_inotify, t);
	if (journal_inventory_each(stage_journal(st), TARGET, NULL, NULL, inventory_row,
	    t) < 0) {
		log_kv(LOG_ERROR, "journal: cannot read inventory", "error",
		    journal_error(stage_journal(st)), NULL);
		return -1;
	}
	while ((o = objtab_next(t->objs, &cur)) != NULL)
		reconcile_one(t, o);
	t->next_recheck = now_ms() + conf_get_ms(stage_conf(st), "drift_check_interval");
	log_kv(LOG_INFO, "file target ready", "file_root", t->root, NULL);
	return 0;
}

/* file_tick - removals and status writes to retry; the periodic re-check (fingerprints first) */
static void
file_tick(struct stage *st, void *arg)
{
	struct ft *t = arg;
	struct fobj *o;
	size_t cur = 0;

	while ((o = objtab_next(t->objs, &cur)) != NULL) {
		if (o->gone)
			forget(t, o, "(retried)");
		else if (o->status_dirty)
			pft_write_status(t, o, 0);
	}
	if (now_ms() < t->next_recheck)
		return;
	t->next_recheck = now_ms() + conf_get_ms(stage_conf(st), "drift_check_interval");
	cur = 0;
	while ((o = objtab_next(t->objs, &cur)) != NULL)
		pft_drift_check(t, o, 0);
}

static void
file_shutdown(struct stage *st, void *arg)
{
	struct ft *t = arg;
	struct fobj *o;
	size_t cur = 0;
	char n[32];

	if (t == NULL)
		return;
	snprintf(n, sizeof(n), "%ld", t->repairs);
	log_kv(LOG_INFO, "file target stopping", "drift_repairs", n, NULL);
	while ((o = objtab_next(t->objs, &cur)) != NULL)
		pft_obj_free(t, o);
	objtab_free(t->objs);
	objtab_free(t->bywd);
	if (t->ifd >= 0) {
		stage_del_fd(st, t->ifd);
		close(t->ifd);
	}
	free(t);
}

const struct publish_target publish_file_target = {
	.name = TARGET,
	.init = file_init,
	.publish = file_publish,
	.swap = pft_swap,
	.update = file_update,
	.remove = file_remove,
	.relist = file_relist,
	.tick = file_tick,
	.shutdown = file_shutdown,
};
