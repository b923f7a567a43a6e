/*
 * publish_drift - keeping what the publisher put on the target: drift is
 * found by inotify and a periodic re-check and repaired from the spool
 * (journaled, Drifted=True).  With several instances on one store, the
 * store's status fragment says who published what: a newer publish by
 * another instance is handed over, not repaired back, and a content hash
 * another instance already put on the target is adopted, not published again.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/util.h"
#include "daemons/publisher/publish_file.h"
#include "daemons/publisher/publisher.h"

#define CHECK_DEBOUNCE_MS 20
#define MAX_DEFERS 5		/* checks put off while another instance publishes */
#define DEFER_MS 1000
#define FIRST_DEFER_MS 150	/* second look before a repair (see someone_else) */

/* ---- what other instances published (the store's status fragment) ---- */

/* publish_drift_published - read it; 0 (fields "" / 0 where absent) or -1 */
int
publish_drift_published(struct stage *st, const char *ns, const char *name, struct published *pb)
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

/* publish_drift_target_holds - nonzero when the file at path hashes to blob */
int
publish_drift_target_holds(const char *path, const char *blob)
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

	publisher_object_id(o, obj, sizeof(obj));
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
	publisher_obj_free(st, o);	/* target and status now belong to the other instance */
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

	if (publish_drift_published(st, o->ns, o->name, &pb) < 0)
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
 * publish_drift_check - make the target hold what we published.  full: hash the
 * files even when their fingerprints look untouched.
 */
void
publish_drift_check(struct stage *st, struct obj *o, int full)
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
	if (journal_pending_for(stage_journal(st), STAGE, o->ns, o->name) == 1)
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
	publisher_obj_watch(p, o);
	if (!res.wrote_doc && !res.wrote_ts && !res.removed)
		return;
	o->repairs++;
	p->repairs++;
	publisher_object_id(o, obj, sizeof(obj));
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
	publish_drift_check(st, o, 1);
}

static void
publish_drift_schedule(struct stage *st, struct obj *o)
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

void
publish_drift_on_inotify(struct stage *st, int fd, short revents, void *arg)
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
					publish_drift_schedule(st, o);
				continue;
			}
			for (struct obj *o = p->objs; o != NULL; o = o->next) {
				if (o->wd != ev->wd)
					continue;
				if (ev->mask & IN_IGNORED)
					o->wd = -1;
				publish_drift_schedule(st, o);
				break;
			}
		}
	}
}

/*
 * publish_drift_adopt - another instance already published this content hash and the
 * target holds its bytes: take the object over without a new publish (no
 * publish row, the timestamp replicas know is kept) and hand the change
 * on to the notifier, whose replicas may not all have confirmed it.
 */
enum stage_result
publish_drift_adopt(struct stage *st, const struct journal_item *it, struct obj *o, yajl_val doc,
    const char *format, const char *blob, const char *data, size_t len,
    const struct published *pb, const char *commit)
{
	struct pub *p = P(st);
	struct journal *j = stage_journal(st);
	struct publish_file_req rq;
	struct publish_file_res res;
	char err[512], detail[4800], why[1024];

	/* make timestamp.txt and the other format right (a crash may have cut them) */
	rq = (struct publish_file_req){ p->root, it->ns, it->name, format, data, len,
	    pb->timestamp, 0, 0 };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0)
		return publisher_finish_later(st, it, STAGE_RETRY, err);
	if (o == NULL) {
		o = publisher_obj_get(p, it->ns, it->name);
		o->detach = publisher_doc_detach(doc);
	}
	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s"
	    " (published by another instance; adopted)", it->hash, res.location,
	    (long long)res.timestamp, o->detach ? "detach" : "delete");
	if (stage_begin(st) < 0)
		return publisher_finish_later(st, it, STAGE_RETRY, "journal busy");
	if (((res.wrote_doc || res.wrote_ts || res.removed) &&
	    journal_record_drift(j, it->ns, it->name, res.location, res.detail) < 0) ||
	    publisher_record(st, it, o, &res, "adopt", detail, commit) < 0) {
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
		stage_rollback(st);
		return publisher_finish_later(st, it, STAGE_RETRY, why);
	}
	if (stage_commit(st, it, "already published by another instance") < 0)
		return publisher_finish_later(st, it, STAGE_RETRY, "journal commit failed");
	publisher_took(st, o, it, format, blob, &res);
	log_kv(LOG_INFO, "already published by another instance; adopted", "ns", o->ns,
	    "name", o->name, "location", res.location, "hash", it->hash, NULL);
	publisher_write_status(st, o);
	return STAGE_DONE;
}

