/*
 * publish_file_drift - keeping what the file target put there: drift is
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
#include "daemons/publisher/objtab.h"
#include "daemons/publisher/publish_file_int.h"
#include "daemons/publisher/publish_record.h"

#define CHECK_DEBOUNCE_MS 20
#define MAX_DEFERS 5		/* checks put off while another instance publishes */
#define DEFER_MS 1000
#define FIRST_DEFER_MS 150	/* second look before a repair (see someone_else) */

/* ---- what other instances published (the store's status fragment) ---- */

/* pft_target_holds - nonzero when the file at path hashes to blob */
int
pft_target_holds(const char *path, const char *blob)
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

static void schedule_check_in(struct ft *t, struct fobj *o, int64_t ms);

/*
 * hand_over - another instance has published o anew since we did: it
 * owns the object now.  Drop it from our inventory without touching the
 * target or the status.
 */
static void
hand_over(struct ft *t, struct fobj *o, const struct published *pb)
{
	char detail[600];

	snprintf(detail, sizeof(detail), "hash=%s timestamp=%lld published by another"
	    " instance after ours (hash=%s timestamp=%lld)", pb->hash,
	    (long long)pb->timestamp, o->content_hash, (long long)o->timestamp);
	log_kv(LOG_INFO, "published object handed over to another instance", "ns", o->ns,
	    "name", o->name, "hash", pb->hash, NULL);
	/* target and status now belong to the other instance */
	publish_record_removal(t->st, o->ns, o->name, o->where.location, "handed-over",
	    detail, 0);
	pft_obj_free(t, o);
}

/*
 * someone_else - decide before a repair whether the change on the target
 * is another instance's newer publish: 1 handed over (o is freed), 2 put
 * off (another check is scheduled), 0 repair it.
 */
static int
someone_else(struct ft *t, struct fobj *o)
{
	struct published pb;

	publish_published(t->st, o->ns, o->name, &pb);
	if (pb.hash[0] != '\0' && pb.timestamp > o->timestamp &&
	    (strcmp(pb.hash, o->content_hash) != 0 || strcmp(pb.location,
	    o->where.location) != 0)) {
		hand_over(t, o, &pb);
		return 1;
	}
	/*
	 * Another instance writes its document first and timestamp.txt last:
	 * a changed document with the old timestamp may be that write half
	 * done.  Look once more a moment later before calling it drift.
	 */
	if (o->defers == 0) {
		o->defers++;
		schedule_check_in(t, o, FIRST_DEFER_MS);
		return 2;
	}
	/* its timestamp.txt lands before its status: wait for the status */
	if (target_ts(o->where.dir) > o->timestamp && o->defers < MAX_DEFERS) {
		o->defers++;
		schedule_check_in(t, o, DEFER_MS);
		return 2;
	}
	o->defers = 0;
	return 0;
}

/* ---- drift ---- */

/*
 * pft_drift_check - make the target hold what we published.  full: hash the
 * files even when their fingerprints look untouched.
 */
void
pft_drift_check(struct ft *t, struct fobj *o, int full)
{
	struct stage *st = t->st;
	struct publish_file_req rq;
	struct publish_file_res res;
	struct publish_file_sig s1, s2;
	char other[4400], err[512], tspath[4400];
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
	if (someone_else(t, o) != 0)
		return;
	if ((data = spool_get(stage_spool(st), o->data_hash, &len)) == NULL) {
		if (!o->complained)
			log_kv(LOG_ERROR, "published bytes are no longer in the spool; cannot"
			    " check or repair until the next publish", "ns", o->ns, "name",
			    o->name, "blob", o->data_hash, NULL);
		o->complained = 1;
		return;
	}
	rq = (struct publish_file_req){ t->root, o->ns, o->name, o->format, data, len,
	    o->timestamp, 0, 0 };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0) {
		log_kv(LOG_ERROR, "drift repair failed", "ns", o->ns, "name", o->name,
		    "error", err, NULL);
		free(data);
		return;
	}
	free(data);
	o->where = res;
	pft_obj_watch(t, o);
	if (!res.wrote_doc && !res.wrote_ts && !res.removed)
		return;
	o->repairs++;
	t->repairs++;
	publish_record_repair(st, o->ns, o->name, res.location, res.detail, o->repairs);
}

static void
check_timer_cb(struct stage *st, void *arg)
{
	struct fobj *o = arg;

	(void)st;
	o->check_timer = 0;
	pft_drift_check(o->t, o, 1);
}

/* schedule - a full check soon (debounced: one pending at a time) */
static void
schedule(struct ft *t, struct fobj *o)
{
	if (o->check_timer == 0)
		o->check_timer = stage_add_timer(t->st, CHECK_DEBOUNCE_MS, check_timer_cb, o);
}

/* schedule_check_in - a full check after ms (replaces a pending one) */
static void
schedule_check_in(struct ft *t, struct fobj *o, int64_t ms)
{
	if (o->check_timer > 0)
		stage_cancel_timer(t->st, o->check_timer);
	o->check_timer = stage_add_timer(t->st, ms, check_timer_cb, o);
}

void
pft_on_inotify(struct stage *st, int fd, short revents, void *arg)
{
	struct ft *t = arg;
	char b[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct fobj *o;
	char wd[32];
	size_t cur;
	ssize_t n;

	(void)st;
	(void)revents;
	for (;;) {
		n = read(fd, b, sizeof(b));
		if (n <= 0)
			break;
		for (char *q = b; q < b + n;) {
			struct inotify_event *ev = (struct inotify_event *)q;

			q += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				cur = 0;
				while ((o = objtab_next(t->objs, &cur)) != NULL)
					schedule(t, o);
				continue;
			}
			snprintf(wd, sizeof(wd), "%d", ev->wd);
			if ((o = objtab_get(t->bywd, "", wd)) == NULL)
				continue;
			if (ev->mask & IN_IGNORED)
				pft_wd_lost(t, o);
			schedule(t, o);
		}
	}
}

/*
 * pft_adopt - another instance already published this content hash and the
 * target holds its bytes: take the object over without a new publish (no
 * publish row, the timestamp replicas know is kept) and hand the change
 * on to the notifier, whose replicas may not all have confirmed it.
 */
enum stage_result
pft_adopt(struct ft *t, const struct journal_item *it, struct fobj *o, yajl_val doc,
    const char *format, const char *blob, const char *data, size_t len,
    const struct published *pb, const char *commit)
{
	struct stage *st = t->st;
	struct journal *j = stage_journal(st);
	struct publish_file_req rq;
	struct publish_file_res res;
	char err[512], detail[4800], why[1024];

	/* make timestamp.txt and the other format right (a crash may have cut them) */
	rq = (struct publish_file_req){ t->root, it->ns, it->name, format, data, len,
	    pb->timestamp, 0, 0 };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0)
		return publish_item_failed(st, it, STAGE_RETRY, err);
	if (o == NULL) {
		o = pft_obj_get(t, it->ns, it->name);
		o->detach = publish_doc_detach(doc);
	}
	snprintf(detail, sizeof(detail), "hash=%s location=%s timestamp=%lld deletion=%s"
	    " (published by another instance; adopted)", it->hash, res.location,
	    (long long)res.timestamp, o->detach ? "detach" : "delete");
	if (stage_begin(st) < 0)
		return publish_item_failed(st, it, STAGE_RETRY, "journal busy");
	if (((res.wrote_doc || res.wrote_ts || res.removed) &&
	    journal_record_drift(j, it->ns, it->name, res.location, res.detail) < 0) ||
	    pft_record(t, it, o, &res, "adopt", detail, commit) < 0) {
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
		stage_rollback(st);
		return publish_item_failed(st, it, STAGE_RETRY, why);
	}
	if (stage_commit(st, it, "already published by another instance") < 0)
		return publish_item_failed(st, it, STAGE_RETRY, "journal commit failed");
	pft_took(t, o, it, format, blob, &res);
	log_kv(LOG_INFO, "already published by another instance; adopted", "ns", o->ns,
	    "name", o->name, "location", res.location, "hash", it->hash, NULL);
	pft_write_status(t, o, 0);
	return STAGE_DONE;
}

