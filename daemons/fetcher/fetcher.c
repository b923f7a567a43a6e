/*
 * fetcher - the first stage: level-triggered from the store, it keeps one
 * schedule per Decofile (git, github, oci: spec.<source>.period, jittered;
 * dir: poll_period; inline: on spec changes), fetches on a bounded pool of
 * fetch_concurrency workers, each fetch with its own fetch_timeout deadline
 * (so one hung remote holds one worker, never the loop or another
 * source), and, when the tree, commit or
 * generation differs from what it last handed on, records the fetch and
 * the renderer item in one transaction.  It owns the "fetcher" status
 * fragment: sourceType, githubCommit, observedGeneration and Syncing for
 * fetch errors.  The worker touches only git, the spool and its queues;
 * sqlite and the store stay on the loop's thread.  With several instances
 * on one store it works only the decofiles whose job lock it holds
 * (fetch_lock.c); the others are known but idle until their lock is ours.
 * This file holds the schedules' table, the finishing of jobs into the
 * journal, the job lock's callbacks and the stage's life; when and how a
 * job is started is fetch_schedule.c's.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/sync_group.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_dir.h"
#include "daemons/fetcher/fetch_git.h"
#include "daemons/fetcher/fetch_http.h"
#include "daemons/fetcher/fetch_inotify.h"
#include "daemons/fetcher/fetch_inline.h"
#include "daemons/kube/kube_front.h"
#include "daemons/fetcher/fetch_lock.h"
#include "daemons/fetcher/fetch_oci.h"
#include "daemons/fetcher/fetch_poll.h"
#include "daemons/fetcher/fetch_run.h"
#include "daemons/fetcher/fetch_secret.h"
#include "daemons/fetcher/fetcher.h"
#include "proto/proto.h"

#define MAX_FILE ((uint64_t)32 << 20)
#define HAND_BATCH 200		/* finished fetches recorded per journal transaction */

/* ---- journal (loop thread) ---- */

/*
 * handed_detail - the commit (96 bytes) and generation a renderer item's
 * detail names; one we cannot read counts as different (no commit,
 * generation -1): the fetch is handed on again
 */
static void
handed_detail(const char *detail, char *commit, int64_t *generation)
{
	struct proto_render_detail rd;
	char err[256];

	if (proto_render_detail_decode(detail, &rd, err, sizeof(err)) < 0) {
		rd.commit[0] = '\0';
		rd.generation = -1;
	}
	snprintf(commit, 96, "%.95s", rd.commit);
	*generation = rd.generation;
}

/*
 * last_handed - the newest renderer item for ns/name: its tree hash and
 * the commit and generation of its detail.  0 found, 1 none, -1 error.
 */
int
fetcher_last_handed(struct stage *st, const char *ns, const char *name, char *hash,
    char *commit, int64_t *generation)
{
	struct journal_item it;
	int rc;

	if ((rc = journal_last_item(stage_journal(st), "renderer", "decofile", ns, name,
	    &it)) != 0)
		return rc;
	snprintf(hash, 65, "%s", it.hash);
	handed_detail(it.detail, commit, generation);
	return 0;
}

/*
 * hand_on - record the fetch and push the renderer item for a good tree,
 * unless the renderer already has it, inside the batch transaction that
 * on_wake holds open.  A savepoint keeps each decofile's record and push
 * together: one that fails leaves nothing behind and the others stand.
 * 1 written, 0 nothing to do, -1 failed.
 */
static int
hand_on(struct stage *st, struct src *s, struct job *j)
{
	struct journal *jl = stage_journal(st);
	char hash[65], commit[96], detail[PROTO_MAX_DETAIL + 1];
	struct proto_render_detail rd;
	int64_t generation;
	int rc;

	rc = fetcher_last_handed(st, s->ns, s->name, hash, commit, &generation);
	if (rc < 0)
		log_kv(LOG_WARN, "journal: cannot read the last fetch", "error",
		    journal_error(jl), NULL);
	if (rc == 0 && strcmp(hash, j->res.tree_hash) == 0 &&
	    strcmp(commit, j->res.commit) == 0 && generation == j->generation) {
		log_kv(LOG_DEBUG, "unchanged", "ns", s->ns, "name", s->name, "tree",
		    j->res.tree_hash, NULL);
		return 0;
	}
	memset(&rd, 0, sizeof(rd));
	snprintf(rd.source, sizeof(rd.source), "%s", s->source);
	snprintf(rd.commit, sizeof(rd.commit), "%s", j->res.commit);
	rd.generation = j->generation;
	if (proto_render_detail_encode(&rd, detail, sizeof(detail)) < 0) {
		log_kv(LOG_ERROR, "cannot encode the renderer item", "ns", s->ns, "name",
		    s->name, "source", s->source, NULL);
		return -1;
	}
	if (journal_savepoint(jl, "hand_on") < 0)
		return -1;
	if (journal_record_fetch(jl, s->ns, s->name, s->source, j->res.commit,
	    j->res.tree_hash) < 0 ||
	    stage_push(st, "renderer", "decofile", s->ns, s->name, j->res.tree_hash,
	    detail) < 0) {
		log_kv(LOG_ERROR, "journal: cannot record the fetch", "ns", s->ns, "name",
		    s->name, "error", journal_error(jl), NULL);
		journal_savepoint_rollback(jl, "hand_on");
		return -1;
	}
	if (journal_savepoint_release(jl, "hand_on") < 0) {
		journal_savepoint_rollback(jl, "hand_on");
		return -1;
	}
	s->handed_known = 0;	/* the journal has a newer word than the start's read */
	return 1;
}

static unsigned
src_hash(const char *ns, const char *name)
{
	return fetch_obj_hash(ns, name) % NBUCKET;
}

struct src *
fetcher_src_find(struct fetcher *f, const char *ns, const char *name)
{
	for (struct src *s = f->htab[src_hash(ns, name)]; s != NULL; s = s->hnext)
		if (strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

struct src *
fetcher_src_new(struct fetcher *f, const char *ns, const char *name)
{
	struct src *s = xcalloc(1, sizeof(*s));

	snprintf(s->ns, sizeof(s->ns), "%s", ns);
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->failures_said = -1;
	s->next = f->srcs;
	f->srcs = s;
	s->hnext = f->htab[src_hash(ns, name)];
	f->htab[src_hash(ns, name)] = s;
	return s;
}

void
fetcher_src_free(struct stage *st, struct src *s)
{
	struct fetcher *f = F(st);

	for (struct src **pp = s->tpl ? &f->tpls : &f->srcs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	for (struct src **pp = &f->htab[src_hash(s->ns, s->name)]; !s->tpl && *pp != NULL;
	    pp = &(*pp)->hnext) {
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	}
	if (s->timer > 0)
		stage_cancel_timer(st, s->timer);
	fetch_inotify_forget(f->ino, s);
	fetch_status_unpend(f, s);
	free(s->frag);
	free(s->doc);
	fetch_secret_free(s->oci_auth);
	free(s);
}

/*
 * finish_first - the part of finishing a job that comes before the batch
 * commit: failures and lost locks end here (j->skip); a good tree is
 * recorded in the open transaction (j->handed).
 */
static void
finish_first(struct stage *st, struct job *j, int in_txn)
{
	struct fetcher *f = F(st);
	struct src *s = j->tpl ? fetch_tpl_find(f, j->ns, j->name) :
	    fetcher_src_find(f, j->ns, j->name);
	char n[32];

	j->skip = 1;
	if (s == NULL)
		return;
	s->busy = 0;
	if (s->gone) {
		fetcher_src_free(st, s);
		return;
	}
	if (s->suspended)
		return;		/* suspended meanwhile: nothing of it goes on */
	if (j->res.reason != NULL) {
		/* a rate limit's own wait replaces the backoff */
		int64_t wait = j->res.retry_after_ms > 0 ? j->res.retry_after_ms :
		    fetch_schedule_backoff(s->failures + 1);

		s->failures++;
		stage_observe(st, "retry", (double)j->took_ms / 1000.0);
		snprintf(n, sizeof(n), "%lld", (long long)wait);
		log_kv(LOG_WARN, "fetch failed", "ns", s->ns, "name", s->name, "source",
		    s->source, "reason", j->res.reason, "error", j->res.error, "retry_ms", n,
		    NULL);
		fetch_status_syncing(st, s, "False", j->res.reason, j->res.error);
		fetch_status_failures(st, s);
		fetch_status_synced(st, s, j->sync_req);
		if (s->again && j->res.retry_after_ms == 0)
			fetcher_schedule(st, s, 0, s->again_force);
		else
			fetcher_schedule(st, s, wait, 0);
		return;
	}
	s->failures = 0;
	if (!s->tpl && !fetch_lock_held(f->locks, s->ns, s->name)) {
		/* the lock went to another instance meanwhile: its fetch counts */
		log_kv(LOG_INFO, "fetch dropped: job lock no longer ours", "ns", s->ns,
		    "name", s->name, NULL);
		return;
	}
	j->skip = 0;
	j->handed = 0;
	if (!j->unchanged)
		j->handed = !in_txn ? -1 : s->tpl ? fetch_tpl_hand_on(st, s, j) :
		    hand_on(st, s, j);
}

/* finish_second - after the batch commit (committed: it went through) */
static void
finish_second(struct stage *st, struct job *j, int committed)
{
	struct fetcher *f = F(st);
	struct src *s;
	char ms[32], gen[32];

	if (j->skip || (s = j->tpl ? fetch_tpl_find(f, j->ns, j->name) :
	    fetcher_src_find(f, j->ns, j->name)) == NULL)
		return;
	if (j->handed == 1 && !committed)
		j->handed = -1;
	if (j->handed == -1) {
		s->last_id[0] = '\0';	/* so the next poll reads the tree again */
		s->failures++;
	} else if (j->handed == 1) {
		snprintf(gen, sizeof(gen), "%lld", (long long)j->generation);
		log_kv(LOG_INFO, "fetched", "ns", s->ns, "name", s->name, "source", s->source,
		    "commit", j->res.commit, "tree", j->res.tree_hash, "generation", gen, NULL);
	}
	snprintf(ms, sizeof(ms), "%lld", (long long)j->took_ms);
	/* a poll that found nothing new is work too, counted apart */
	stage_observe(st, j->handed == -1 ? "retry" : j->unchanged ? "unchanged" : "done",
	    (double)j->took_ms / 1000.0);
	if (j->handed >= 0 && j->etag[0] != '\0')
		snprintf(s->etag, sizeof(s->etag), "%s", j->etag);
	if (j->handed >= 0 && j->oci_auth != NULL) {
		fetch_secret_free(s->oci_auth);
		s->oci_auth = j->oci_auth;
		j->oci_auth = NULL;
	}
	if (!j->unchanged && j->handed >= 0) {
		if (j->remote_id[0] != '\0')
			snprintf(s->last_id, sizeof(s->last_id), "%s", j->remote_id);
		fetch_status_fields(st, s, j->res.commit, j->generation);
	}
	if (s->failures == 0) {
		fetch_status_syncing(st, s, "True", "Fetched", "Fetched from the source");
		fetch_status_failures(st, s);
		fetch_status_synced(st, s, j->sync_req);
		log_kv(LOG_DEBUG, "poll done", "ns", s->ns, "name", s->name, "took_ms", ms,
		    "unchanged", j->unchanged ? "1" : "0", "on",
		    j->st != NULL && j->unchanged ? "loop" : "worker", NULL);
	}
	if (strcmp(s->source, "dir") == 0) {
		int w = fetch_inotify_watch(f->ino, s, j->path);

		s->watched = w > 0;
		if (w == 2) {
			s->again = 1;	/* a new folder: what was written in it before its watch */
			s->again_force = 1;
		}
	} else if (s->watched) {
		fetch_inotify_forget(f->ino, s);	/* no longer a dir source */
		s->watched = 0;
	}
	if (s->again)
		fetcher_schedule(st, s, 0, s->again_force);
	else if (s->failures > 0)
		fetcher_schedule(st, s, fetch_schedule_backoff(s->failures), 1);
	else if (s->period_ms > 0)
		fetcher_schedule(st, s, fetch_schedule_jitter(s->watched ?
		    s->period_ms * FETCH_INOTIFY_PERIOD_FACTOR : s->period_ms), 0);
}

/*
 * sync_chunk - the files the workers left staged for a chunk of jobs
 * (fetch_limits.defer_sync: blobs and manifests written without fsync)
 * made durable under their hashes by one sync group: bytes synced, names
 * given, names synced (two syncfs), where each tree used to cost an fsync
 * per file.  When that fails every job that had files becomes a failed
 * fetch (retried with backoff), so nothing names a tree not on disk.
 */
static void
sync_chunk(struct job *chunk)
{
	struct job *j;
	int rc, saved, any = 0;

	sync_group_begin();
	for (j = chunk; j != NULL; j = j->next) {
		j->synced = j->res.nstaged > 0;
		any |= j->synced;
		(void)fetch_result_group(&j->res);	/* a bad one fails the flush */
	}
	rc = sync_group_flush();
	saved = errno;
	if (rc == 0 || !any)
		return;
	log_kv(LOG_ERROR, "cannot make the fetched trees durable", "error",
	    strerror(saved), NULL);
	for (j = chunk; j != NULL; j = j->next)
		if (j->synced && j->res.reason == NULL)
			fetch_result_error(&j->res, "FetchError",
			    "cannot sync the spool: %s", strerror(saved));
}

/*
 * on_wake - finish what the worker did, HAND_BATCH jobs per journal
 * transaction (one commit, one fsync, for many decofiles at start-up);
 * status writes and scheduling come after the commit.  The order is the
 * durability rule: a chunk's spool files are durable under their hashes
 * (sync_chunk) before its transaction opens, so a committed journal row
 * never names a blob a crash can take away.
 */
static void
on_wake(struct stage *st, void *arg)
{
	struct fetcher *f = F(st);
	struct job *list, *j, *chunk;

	(void)arg;
	pthread_mutex_lock(&f->mu);
	list = f->done;
	f->done = NULL;
	f->done_tail = &f->done;
	pthread_mutex_unlock(&f->mu);
	while ((chunk = list) != NULL) {
		struct job **tail = &list;
		int n = 0, in_txn, committed = 0, wrote = 0;

		while (*tail != NULL && n < HAND_BATCH) {
			tail = &(*tail)->next;
			n++;
		}
		list = *tail;
		*tail = NULL;
		sync_chunk(chunk);	/* before the commit that names the trees */
		stage_hold_doorbells(st);
		in_txn = stage_begin(st) == 0;
		for (j = chunk; j != NULL; j = j->next) {
			stage_yield(st);	/* a supervisor gone: noticed within one job */
			finish_first(st, j, in_txn);
			wrote |= !j->skip && j->handed == 1;
		}
		if (in_txn) {
			if (wrote)
				committed = stage_commit(st, NULL, NULL) == 0;
			else
				stage_rollback(st);
		}
		if (wrote && !committed)
			log_kv(LOG_ERROR, "journal: cannot record the fetches", "error",
			    journal_error(stage_journal(st)), NULL);
		while ((j = chunk) != NULL) {
			chunk = j->next;
			stage_yield(st);
			finish_second(st, j, committed);
			fetch_job_free(j);
		}
		/*
		 * what was handed on is in the store before a later stage can
		 * speak: the renderer is woken only now (else, on a busy machine,
		 * the publisher's word could land first and the CR be written
		 * once for it and again for this fetch)
		 */
		if (committed)
			fetch_status_now(st);
		stage_ring_doorbells(st);
	}
}

/* ---- job locks (fetch_lock.c calls these) ---- */

/*
 * handed_already - an inline Decofile whose generation the journal's
 * newest renderer item already carries: its tree is a function of its spec,
 * and the spec of that generation was fetched and handed on, so there is
 * nothing to fetch (a restart takes 10,000 locks at once, and fetching each
 * again cost a job, a worker's pass over the spool and a journal read
 * only to find it unchanged).  Its status fragment is settled as that
 * unchanged fetch would settle it (written only where it differs).
 * 1 settled, 0 a fetch is needed.
 */
static int
handed_already(struct stage *st, struct src *s)
{
	char hash[65], commit[96];
	int64_t generation;
	int known = s->handed_known;

	s->handed_known = 0;	/* once: a later look asks the journal */
	if (s->tpl || s->busy || s->sync_req > s->sync_done ||
	    strcmp(s->source, "inline") != 0)
		return 0;
	if (known) {
		if (s->handed_gen != s->generation || s->handed_commit)
			return 0;
	} else if (fetcher_last_handed(st, s->ns, s->name, hash, commit, &generation) != 0 ||
	    generation != s->generation || commit[0] != '\0')
		return 0;
	s->again = 0;
	s->again_force = 0;
	fetch_status_fetched(st, s, "", s->generation);
	return 1;
}

static void
handed_row(void *arg, const struct journal_item *it)
{
	struct src *s = fetcher_src_find(arg, it->ns, it->name);
	char commit[96];

	if (s == NULL)
		return;
	handed_detail(it->detail, commit, &s->handed_gen);
	s->handed_known = 1;
	s->handed_commit = commit[0] != '\0';
}

/*
 * handed_load - what fetcher_last_handed would say of every Decofile
 * known at start, in one read: a restart takes its 10,000 locks at once
 * and asked the journal once for each (13 % of its way to caught up)
 */
static void
handed_load(struct stage *st)
{
	if (journal_last_items(stage_journal(st), "renderer", "decofile", handed_row, F(st)) < 0)
		log_kv(LOG_WARN, "journal: cannot read the last fetches; asking for each",
		    "error", journal_error(stage_journal(st)), NULL);
}

static void
lock_gained(struct stage *st, const char *ns, const char *name)
{
	struct src *s = fetcher_src_find(F(st), ns, name);

	if (s == NULL || s->gone)
		return;
	/* debug: a restart takes thousands at once */
	log_kv(LOG_DEBUG, "job lock taken; working the decofile", "ns", ns, "name", name,
	    NULL);
	s->failures = 0;
	if (!fetch_hold_gained(st, s) && !handed_already(st, s))
		fetcher_schedule(st, s, 0, 1);
}

static void
lock_lost(struct stage *st, const char *ns, const char *name)
{
	struct src *s = fetcher_src_find(F(st), ns, name);

	if (s == NULL)
		return;
	if (s->timer > 0)
		stage_cancel_timer(st, s->timer);
	s->timer = 0;
	s->again = 0;
	/* whoever works it meanwhile writes the status: start afresh if it comes back */
	s->last_id[0] = '\0';
	s->last_status[0] = '\0';
	s->last_sync[0] = '\0';
	fetch_status_unpend(F(st), s);
	free(s->frag);
	s->frag = NULL;
	s->frag_state = FRAG_UNKNOWN;
}

/* lock_settled - nothing of ns/name in flight here: no fetch, no pending item */
static int
lock_settled(struct stage *st, const char *ns, const char *name)
{
	struct src *s = fetcher_src_find(F(st), ns, name);

	if (s != NULL && (s->busy || s->again))
		return 0;
	/* an error counts as busy: the lock is kept until the journal can say */
	return journal_pending_for(stage_journal(st), NULL, ns, name) == 0;
}

static const struct fetch_lock_ops lock_ops = {
	.gained = lock_gained,
	.lost = lock_lost,
	.settled = lock_settled,
};

/* ---- stage callbacks ---- */
static int
fetcher_init(struct stage *st)
{
	struct fetcher *f = xcalloc(1, sizeof(*f));
	struct conf *cf = stage_conf(st);
	uint64_t max_tree = conf_get_size(cf, "max_tree_size");
	struct store_list first;

	stage_set_data(st, f);
	f->st = st;
	f->sp = stage_spool(st);
	f->lim.max_tree = max_tree;
	f->lim.max_file = max_tree > 0 && max_tree < MAX_FILE ? max_tree : MAX_FILE;
	f->lim.defer_sync = 1;	/* on_wake syncs each chunk's trees at once (sync_chunk) */
	f->timeout_ms = conf_get_ms(cf, "fetch_timeout");
	f->poll_ms = conf_get_ms(cf, "poll_period");
	f->alim.max_entries = (uint64_t)conf_get_int(cf, "max_archive_entries");
	f->alim.max_ratio = (uint64_t)conf_get_int(cf, "max_archive_ratio");
	f->alim.max_bytes = max_tree;
	f->nthreads = (int)conf_get_int(cf, "fetch_concurrency");
	f->github_api = xstrdup(conf_get(cf, "github_api_url"));
	if (conf_get(cf, "github_token_file")[0] != '\0')
		f->github_token_file = xstrdup(conf_get(cf, "github_token_file"));
	if (getenv("GITHUB_TOKEN") != NULL && getenv("GITHUB_TOKEN")[0] != '\0')
		f->github_env_token = xstrdup(getenv("GITHUB_TOKEN"));
	f->oci_insecure = xstrdup(conf_get(cf, "oci_insecure_registries"));
	if (strncmp(f->github_api, "https://", 8) != 0 &&
	    strncmp(f->github_api, "http://", 7) != 0) {
		log_kv(LOG_ERROR, "github_api_url must be an http(s) URL", NULL);
		return -1;
	}
	snprintf(f->cache_root, sizeof(f->cache_root), "%s/git", conf_get(cf, "state_dir"));
	snprintf(f->secrets_dir, sizeof(f->secrets_dir), "%s", conf_get(cf, "secrets_dir"));
	if (realpath("/proc/self/exe", f->askpass) == NULL) {
		log_kv(LOG_ERROR, "cannot find my own program for GIT_ASKPASS", "error",
		    strerror(errno), NULL);
		return -1;
	}
	if (fetch_find_program("git") == NULL)
		log_kv(LOG_WARN, "git is not installed: git sources will fail", NULL);
	f->queue_tail = &f->queue;
	f->done_tail = &f->done;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	stage_set_wake_cb(st, on_wake, NULL);
	/* libcurl is loaded and initialised on its first call, by whichever
	 * thread (common/curl_lazy.c): an idle fetcher does not map it */
	if (conf_get_int(cf, "dir_watch_limit") > 0)
		f->ino = fetch_inotify_new(st, (size_t)conf_get_int(cf, "dir_watch_limit"));
	if ((f->poll = fetch_poll_new(st)) == NULL)
		log_kv(LOG_WARN, "cannot make a curl multi handle: github polls use the workers",
		    NULL);
	/* the workers start on demand (fetch_schedule.c, enqueue) */
	f->threads = xcalloc((size_t)f->nthreads, sizeof(*f->threads));

	/*
	 * The front door first: its lists of the CRs go out (the API server
	 * prepares their first pages while the store is read below, each step
	 * followed by kube_front_progress); its CRs are delivered by the loop.
	 */
	{
		char kerr[512];

		if ((f->kube = kube_front_new(st, kerr, sizeof(kerr))) == NULL && kerr[0] != '\0') {
			log_kv(LOG_ERROR, "Kubernetes configuration", "error", kerr, NULL);
			return -1;
		}
	}
	/* the watch and its opening's list: nothing put after is missed */
	f->df_prefix = key_resource_prefix("decofiles", NULL);
	f->sync_prefix = xasprintf("%s/sync/", keys_prefix());
	if (fetch_watch_start(st, &first) < 0)
		return -1;
	kube_front_progress(f->kube);
	if ((f->locks = fetch_lock_new(st, &lock_ops)) == NULL) {
		store_list_free(&first);
		return -1;
	}
	fetch_watch_load(st, &first);
	kube_front_progress(f->kube);
	if (fetch_tpl_start(st) < 0) {
		store_list_free(&first);
		return -1;
	}
	/* the front door's first mirror of each CR compares with these (takes first) */
	kube_front_mirrors(f->kube, &first);
	/* the front door's watch of the fragments read them at its opening */
	fetch_status_load(st);
	handed_load(st);
	fetch_lock_start(f->locks);
	kube_front_progress(f->kube);
	{
		char n[32];
		size_t k = 0;

		for (struct src *s = f->srcs; s != NULL; s = s->next)
			k++;
		snprintf(n, sizeof(n), "%zu", k);
		log_kv(LOG_INFO, "fetcher ready", "decofiles", n, NULL);
	}
	return 0;
}

static void
fetcher_shutdown(struct stage *st)
{
	struct fetcher *f = F(st);
	struct job *j;

	if (f == NULL)
		return;
	if (f->nstarted > 0) {
		fetch_run_abort();
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		for (int i = 0; i < f->nstarted; i++)
			pthread_join(f->threads[i], NULL);
	}
	/* polls still in flight: their callbacks will not run, their jobs go here */
	fetch_poll_free(f->poll);
	while ((j = f->polling) != NULL) {
		f->polling = j->next;
		fetch_job_free(j);
	}
	free(f->threads);
	free(f->github_api);
	free(f->github_token_file);
	fetch_secret_free(f->github_env_token);
	free(f->oci_insecure);
	while ((j = f->queue) != NULL) {
		f->queue = j->next;
		fetch_job_free(j);
	}
	while ((j = f->done) != NULL) {
		f->done = j->next;
		fetch_job_free(j);
	}
	if (f->flush_timer > 0)
		stage_cancel_timer(st, f->flush_timer);
	if (f->npend > 0 && fetch_status_flush(st, (int)(f->npend / FLUSH_BATCH) + 1) < 0)
		log_kv(LOG_WARN, "status changes lost at shutdown", NULL);
	kube_front_free(f->kube);
	fetch_tpl_stop(st);
	while (f->srcs != NULL)
		fetcher_src_free(st, f->srcs);
	fetch_inotify_free(f->ino);
	fetch_lock_free(f->locks);
	store_watch_close(f->watch, f->watch_sw);
	store_watch_close(f->sync_watch, f->sync_sw);
	free(f->df_prefix);
	free(f->sync_prefix);
	free(f);
	stage_set_data(st, NULL);
}

static const struct stage_ops ops = {
	.name = STAGE,
	.use_store = 1,
	.init = fetcher_init,
	.shutdown = fetcher_shutdown,
};

int
main(int argc, char **argv)
{
	/* git runs us as its askpass helper: answer and leave */
	if (getenv(FETCH_GIT_ASKPASS_ENV) != NULL)
		return fetch_git_askpass_main(argc > 1 ? argv[1] : NULL);
	return stage_main(argc, argv, &ops);
}
