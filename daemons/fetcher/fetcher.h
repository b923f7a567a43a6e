/*
 * fetcher.h - the fetcher stage's own state, shared by fetcher.c (the
 * stage: schedules, journal), fetch_schedule.c (timers, jobs, loop polls),
 * fetch_worker.c (the pool),
 * fetch_watch.c (Decofiles from the store) and fetch_status.c (its status
 * fragment, written in batches).  Only daemons/fetcher/ includes this.
 */
#ifndef DECOD_FETCHER_H
#define DECOD_FETCHER_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "daemons/fetcher/fetch_archive.h"
#include "daemons/fetcher/fetch_tree.h"

#define STAGE "fetcher"
#define NBUCKET 16384		/* sources hash: 10,000 decofiles at start-up */
#define FLUSH_BATCH 127		/* status fragments per store_put_many call (one etcd txn) */

struct stage;
struct store_list;
struct store_watch;
struct stage_watch;
struct fetch_lock;
struct kube_front;
struct spool;
struct fetch_poll;
struct fetch_inotify;

/* one Decofile's schedule */
struct src {
	char ns[254], name[254];
	char source[16];
	int64_t generation;
	char spec_hash[65];	/* sha256 of the spec: a change means fetch now */
	char *doc;		/* resource text */
	int64_t period_ms;
	int64_t timer;
	int busy, again, again_force, gone, failures;
	int suspended;		/* spec.suspend (or a rollback being held): no fetch */
	int watched;		/* dir: its folders are watched (fetch_inotify): poll seldom */
	char last_id[96];	/* remote id of the last good fetch (oci: "sha256:...") */
	char etag[256];		/* github: ETag that goes with last_id */
	char *oci_auth;		/* oci: the registry's bearer token, kept between polls */
	char last_status[512];
	char last_sync[640];	/* the Syncing condition we wrote last */
	int failures_said;	/* status.fetchFailures written last (-1: not known) */
	/*
	 * `decoctl sync` requests (their nonce, wall ms): the newest seen, and
	 * the newest recorded as handled in status.lastHandledSyncAt
	 */
	int64_t sync_req, sync_done;
	/*
	 * our status fragment: frag is its text (NULL: none) in the state
	 * FRAG_*; pend is a newer text waiting for the next flush
	 */
	char *frag, *pend;
	int frag_state;
	int listed;		/* seen by the current relist */
	/*
	 * the journal's newest renderer item of it as read once at start
	 * (fetcher_handed_load): its generation, and whether it named a
	 * commit; handed_known is cleared at its first use and by a hand-on
	 */
	int handed_known, handed_commit;
	int64_t handed_gen;
	int tpl;		/* a DecofileTemplate (in fetcher.tpls), not a Decofile */
	struct src *next, *hnext;
};

struct fetcher {
	struct kube_front *kube;	/* Decofile CRs as a front door; NULL: no cluster */
	struct src *srcs;
	struct src *tpls;	/* DecofileTemplates: few, a list (fetch_tpl.c) */
	struct src *htab[NBUCKET];
	struct store_watch *watch, *sync_watch;
	struct stage_watch *watch_sw, *sync_sw;
	char *df_prefix, *sync_prefix, *tpl_prefix;
	struct store_watch *tpl_watch;
	struct stage_watch *tpl_sw;
	char askpass[PATH_MAX];
	char cache_root[PATH_MAX];
	char secrets_dir[PATH_MAX];
	struct fetch_limits lim;
	struct fetch_archive_limits alim;
	int64_t timeout_ms, poll_ms;
	char *github_api, *github_token_file, *github_env_token, *oci_insecure;
	/* the worker pool */
	pthread_t *threads;
	int nthreads;		/* fetch_concurrency: the most it may have */
	int nstarted;		/* started so far (on demand: an idle fetcher has none) */
	int idle;		/* waiting for a job */
	int remote_busy;	/* workers on a remote fetch (at most nthreads - 1) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *queue, *done, **queue_tail, **done_tail;
	int stop;
	struct spool *sp;
	struct stage *st;
	struct fetch_lock *locks;
	struct fetch_poll *poll;	/* conditional polls on the loop (github) */
	struct job *polling;		/* their jobs, linked by next */
	struct fetch_inotify *ino;	/* dir sources' folders; NULL: polled */
	/* status fragments waiting for a batch write */
	size_t npend;
	int64_t flush_timer;
};

/* one fetch for a worker: everything copied, nothing shared */
struct job {
	char ns[254], name[254];
	char source[16];
	int64_t generation;
	int tpl;		/* of a DecofileTemplate */
	int force;		/* read the tree even if the remote id did not move */
	char last_id[96];	/* git, github, oci: remote id of the last good fetch */
	char *url, *ref, *dir, *secret_file, *path, *inline_json;
	char *org, *repo, *image;	/* github, oci */
	char etag[256];		/* github: ETag of last_id's answer; out: the new one */
	char known_sha[41];	/* github: the sha the loop's poll saw move */
	char *oci_auth;		/* oci: Authorization line in, the one that worked out */
	struct stage *st;	/* set while a poll on the loop is in flight */
	int64_t t0;
	int64_t sync_req;	/* the newest sync request when the job was made */
	/* results */
	struct fetch_result res;
	char remote_id[96];
	int unchanged;		/* same remote id, tree not read */
	int64_t took_ms;
	/* finishing (loop thread) */
	int skip;		/* finished in the first phase */
	int handed;		/* 1: record + item written in the open transaction, -1 failed */
	int synced;		/* 1: its staged files went into its chunk's sync group */
	struct job *next;
};

#define F(st) ((struct fetcher *)stage_data(st))

/* what a src's cached status fragment is worth */
enum {
	FRAG_UNKNOWN,	/* not read: read it before building on it */
	FRAG_LISTED,	/* read at start-up, before the lock was ours: build on it, write anyway */
	FRAG_OURS,	/* written (or read) by us while holding the lock: equal means no write */
};

/* fetcher_src_find - the schedule of ns/name, or NULL (fetcher.c) */
struct src *fetcher_src_find(struct fetcher *f, const char *ns, const char *name);

/* fetcher_src_new - a new empty schedule for ns/name, linked in (fetcher.c) */
struct src *fetcher_src_new(struct fetcher *f, const char *ns, const char *name);
/* fetcher_src_free - unlink s, cancel its timer, free it (fetcher.c) */
void fetcher_src_free(struct stage *st, struct src *s);

/* ---- fetch_schedule.c ---- */

/*
 * fetcher_schedule - fetch s after after_ms (jitter is the caller's);
 * force reads the tree even if the remote id did not move
 */
void fetcher_schedule(struct stage *st, struct src *s, int64_t after_ms, int force);
/* fetch_schedule_backoff - the wait after failures failed fetches in a row */
int64_t fetch_schedule_backoff(int failures);
/* fetch_schedule_jitter - ms, give or take a tenth at random (a period's spread) */
int64_t fetch_schedule_jitter(int64_t ms);

/* ---- fetch_worker.c ---- */

/* fetch_job_free - j and everything it holds (secrets wiped); NULL is fine */
void fetch_job_free(struct job *j);
/*
 * fetch_github_token - j's GitHub token (its secret, github_token_file or
 * GITHUB_TOKEN), or NULL; free it with fetch_secret_free
 */
char *fetch_github_token(struct fetcher *f, const struct job *j);
/* fetch_worker - a pool thread's body: arg is the struct fetcher */
void *fetch_worker(void *arg);

/* ---- fetch_watch.c ---- */

/*
 * fetch_watch_start - watch the decofiles and sync prefixes, the Decofiles
 * the watch saw at its opening in *first (for fetch_watch_load: one read
 * of each, where a watch and a relist read them twice); 0 or -1
 */
int fetch_watch_start(struct stage *st, struct store_list *first);
/* fetch_watch_load - upsert every Decofile of l, drop the rest (l stays the caller's) */
void fetch_watch_load(struct stage *st, const struct store_list *l);
/* fetch_watch_relist - list every Decofile and fetch_watch_load them; 0 or -1 */
int fetch_watch_relist(struct stage *st);

/*
 * fetcher_last_handed - the newest renderer item for Decofile ns/name: its
 * tree hash (65), commit (96) and generation.  0 found, 1 none, -1 error.
 */
int fetcher_last_handed(struct stage *st, const char *ns, const char *name, char *hash,
    char *commit, int64_t *generation);

/* ---- fetch_tpl.c ---- */

/* fetch_tpl_find - the schedule of DecofileTemplate ns/name, or NULL */
struct src *fetch_tpl_find(struct fetcher *f, const char *ns, const char *name);
/* fetch_tpl_start - watch and list the DecofileTemplates; 0 or -1 */
int fetch_tpl_start(struct stage *st);
/* fetch_tpl_stop - drop every template schedule and the watch */
void fetch_tpl_stop(struct stage *st);
/*
 * fetch_tpl_hand_on - record a template's fetched tree as its generation
 * (in the open transaction) and push a renderer item for each Decofile
 * whose last render used the template, or that lists it and was never
 * rendered.  1 written, 0 nothing new, -1 failed.
 */
int fetch_tpl_hand_on(struct stage *st, struct src *s, struct job *j);
/*
 * fetch_tpl_kick - a renderer item for Decofile s (its newest fetched
 * tree) in its own transaction: the owner asked to apply template updates
 */
void fetch_tpl_kick(struct stage *st, struct src *s);

/* ---- fetch_hold.c ---- */

/*
 * fetch_hold_apply - act on doc's hold (s's document; the job lock is
 * ours): a rollback annotation, spec.suspend turned on or off.  Returns
 * 1 when s is suspended now (nothing is to be scheduled), else 0.
 */
int fetch_hold_apply(struct stage *st, struct src *s, yajl_val doc);
/*
 * fetch_hold_gained - the job lock of s became ours: act on the hold its
 * document holds, afresh.  1 when s is suspended (nothing to schedule).
 */
int fetch_hold_gained(struct stage *st, struct src *s);

/* ---- fetch_status.c ---- */

/*
 * fetch_status_update - fields (JSON object, or NULL) and, with status
 * non-NULL, the Syncing condition, into s's fragment; the write waits for a
 * batch (a full batch is written at once).  A Syncing transition is also
 * recorded in the journal.  1 queued, 0 nothing changed, -1 error (logged).
 */
int fetch_status_update(struct stage *st, struct src *s, const char *fields,
    const char *status, const char *reason, const char *msg);
/*
 * fetch_status_flush - write up to rounds batches of waiting fragments;
 * 0, or -1 with the rest kept for a retry (logged).
 */
int fetch_status_flush(struct stage *st, int rounds);
/*
 * fetch_status_now - the waiting fragments written now (the rest, if many,
 * on the next loop turn) instead of at the batch timer: after a hand-on,
 * so the fetcher's word on a change is in the store before any later
 * stage's can be (the CR front door waits for the change to pass every
 * stage, and must not see the renderer's or publisher's word first)
 */
void fetch_status_now(struct stage *st);
/* fetch_status_unpend - forget s's waiting fragment (the src goes, or the lock did) */
void fetch_status_unpend(struct fetcher *f, struct src *s);
/*
 * fetch_status_load - every "fetcher" fragment under the status prefix at
 * once, so the first pass builds on what is there without a get each: from
 * the front door's preload when there is one (after kube_front_new), else
 * with one list
 */
void fetch_status_load(struct stage *st);
/* fetch_status_syncing - the Syncing condition; nothing when it is what we set last */
void fetch_status_syncing(struct stage *st, struct src *s, const char *status,
    const char *reason, const char *msg);
/*
 * fetch_status_failures - status.fetchFailures: the failed fetches in a row
 * (each one a new observation of the same failure, so its Event's series
 * counts it); removed again after a good fetch
 */
void fetch_status_failures(struct stage *st, struct src *s);
/*
 * fetch_status_synced - status.lastHandledSyncAt: the sync request req (its
 * nonce) has been handled, whatever the poll found (a new tree, nothing
 * new, or a failure on Syncing), so `decoctl wait --for synced` can tell a
 * no-op sync from one not yet done.  Nothing for req 0 or one recorded.
 */
void fetch_status_synced(struct stage *st, struct src *s, int64_t req);
/* fetch_status_fields - sourceType, githubCommit and observedGeneration, if changed */
void fetch_status_fields(struct stage *st, struct src *s, const char *commit,
    int64_t generation);
/*
 * fetch_status_fetched - a good fetch: fetch_status_fields, Syncing True
 * Fetched and fetch_status_failures in one fragment write (at most)
 */
void fetch_status_fetched(struct stage *st, struct src *s, const char *commit,
    int64_t generation);

#endif
