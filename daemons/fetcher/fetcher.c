/*
 * fetcher - the first stage: level-triggered from the store, it keeps one
 * schedule per Decofile (git: spec.git.period, jittered; dir: poll_period;
 * inline: on spec changes), fetches on one worker thread (git calls block
 * for up to fetch_timeout, never the loop), and, when the tree, commit or
 * generation differs from what it last handed on, records the fetch and
 * the renderer item in one transaction.  It owns the "fetcher" status
 * fragment: sourceType, githubCommit, observedGeneration and Syncing for
 * fetch errors.  The worker touches only git, the spool and its queues;
 * sqlite and the store stay on the loop's thread.  With several instances
 * on one store it works only the decofiles whose job lock it holds
 * (fetch_lock.c); the others are known but idle until their lock is ours.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
#include "daemons/fetcher/fetch_dir.h"
#include "daemons/fetcher/fetch_git.h"
#include "daemons/fetcher/fetch_inline.h"
#include "daemons/fetcher/fetch_kube.h"
#include "daemons/fetcher/fetch_lock.h"
#include "daemons/fetcher/fetch_run.h"
#include "proto/proto.h"

#define STAGE "fetcher"
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS (5 * 60 * 1000)
#define MAX_FILE ((uint64_t)32 << 20)
#define NBUCKET 16384		/* sources hash: 10,000 decofiles at start-up */
#define HAND_BATCH 200		/* finished fetches recorded per journal transaction */
#define FLUSH_BATCH 127		/* status fragments per store_put_many call (one etcd txn) */
#define FLUSH_MS 100		/* a status change waits at most this long for its batch */
#define FLUSH_ROUNDS 4		/* batches per timer callback: the loop stays responsive */

/* one fetch for the worker: everything copied, nothing shared */
struct job {
	char ns[254], name[254];
	char source[16];
	int64_t generation;
	int force;		/* read the tree even if the remote id did not move */
	char last_id[41];	/* git: remote id of the last good fetch */
	char *url, *ref, *dir, *secret_file, *path, *inline_json;
	/* results */
	struct fetch_result res;
	char remote_id[41];
	int unchanged;		/* git: same remote id, tree not read */
	int64_t took_ms;
	/* finishing (loop thread) */
	int skip;		/* finished in the first phase */
	int handed;		/* 1: record + item written in the open transaction, -1 failed */
	struct job *next;
};

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
	char last_id[41];
	char last_status[512];
	char last_sync[640];	/* the Syncing condition we wrote last */
	/*
	 * our status fragment: frag is its text (NULL: none) in the state
	 * FRAG_*; pend is a newer text waiting for the next flush
	 */
	char *frag, *pend;
	int frag_state;
	int listed;		/* seen by the current relist */
	struct src *next, *hnext;
};

struct fetcher {
	struct fetch_kube *kube;	/* Decofile CRs as a front door; NULL: no cluster */
	struct src *srcs;
	struct src *htab[NBUCKET];
	struct store_watch *watch, *sync_watch;
	int64_t watch_timer;
	char *df_prefix, *sync_prefix;
	char askpass[PATH_MAX];
	char cache_root[PATH_MAX];
	char secrets_dir[PATH_MAX];
	struct fetch_limits lim;
	int64_t timeout_ms, poll_ms;
	/* worker */
	pthread_t thread;
	int thread_up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *todo, *done, **todo_tail, **done_tail;
	int stop;
	struct spool *sp;
	struct stage *st;
	struct fetch_lock *locks;
	/* status fragments waiting for a batch write */
	size_t npend;
	int64_t flush_timer;
};

#define F(st) ((struct fetcher *)stage_data(st))

/* what a src's cached status fragment is worth */
enum {
	FRAG_UNKNOWN,	/* not read: read it before building on it */
	FRAG_LISTED,	/* read at start-up, before the lock was ours: build on it, write anyway */
	FRAG_OURS,	/* written (or read) by us while holding the lock: equal means no write */
};

static void schedule(struct stage *st, struct src *s, int64_t after_ms, int force);
static int64_t jitter(int64_t ms);

/* ---- the worker thread ---- */

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	free(j->url);
	free(j->ref);
	free(j->dir);
	free(j->secret_file);
	free(j->path);
	free(j->inline_json);
	free(j);
}

static void
run_job(struct fetcher *f, struct job *j)
{
	int64_t t0 = now_ms();

	if (strcmp(j->source, "inline") == 0) {
		yajl_val v = j->inline_json ? json_parse(j->inline_json,
		    strlen(j->inline_json), NULL) : NULL;

		fetch_inline(f->sp, &f->lim, v, &j->res);
		yajl_tree_free(v);
	} else if (strcmp(j->source, "dir") == 0) {
		fetch_dir(f->sp, &f->lim, j->path, &j->res);
	} else if (strcmp(j->source, "git") == 0) {
		struct fetch_git_req req;

		memset(&req, 0, sizeof(req));
		req.url = j->url;
		req.ref = j->ref;
		req.dir = j->dir;
		req.cache_root = f->cache_root;
		req.secret_file = j->secret_file;
		req.askpass = f->askpass;
		req.timeout_ms = f->timeout_ms;
		req.lim = f->lim;
		if (fetch_git_resolve(&req, j->remote_id, &j->res) == 0) {
			if (!j->force && strcmp(j->remote_id, j->last_id) == 0)
				j->unchanged = 1;
			else
				fetch_git_tree(f->sp, &req, j->remote_id, &j->res);
		}
	}
	j->took_ms = now_ms() - t0;
}

static void *
worker(void *arg)
{
	struct fetcher *f = arg;
	struct job *j;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->stop && f->todo == NULL)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop)
			break;
		j = f->todo;
		f->todo = j->next;
		if (f->todo == NULL)
			f->todo_tail = &f->todo;
		j->next = NULL;
		pthread_mutex_unlock(&f->mu);
		run_job(f, j);
		pthread_mutex_lock(&f->mu);
		*f->done_tail = j;
		f->done_tail = &j->next;
		stage_wake(f->st);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* ---- status and journal (loop thread) ---- */

/*
 * Status writes: every change is built on the cached fragment
 * (status_fragment_build) and waits in s->pend; flush() writes the waiting
 * ones FLUSH_BATCH per store_put_many (one etcd txn) at most FLUSH_MS later,
 * so the first pass over 10,000 decofiles costs ~80 round trips, not
 * 20,000 gets and 20,000 puts.
 */
static void flush_cb(struct stage *st, void *arg);
static struct src *src_find(struct fetcher *f, const char *ns, const char *name);

/* flush - write up to rounds batches of waiting fragments; 0, or -1 (kept for a retry) */
static int
flush(struct stage *st, int rounds)
{
	struct fetcher *f = F(st);
	struct src *batch[FLUSH_BATCH];
	char *keys[FLUSH_BATCH];
	const char *vals[FLUSH_BATCH];
	size_t lens[FLUSH_BATCH];
	struct src *s = f->srcs;

	while (f->npend > 0 && rounds-- > 0) {
		size_t n = 0;
		int rc;

		for (; s != NULL && n < FLUSH_BATCH; s = s->next) {
			if (s->pend == NULL)
				continue;
			batch[n] = s;
			keys[n] = key_status("decofiles", s->ns, s->name, STAGE);
			vals[n] = s->pend;
			lens[n] = strlen(s->pend);
			n++;
		}
		if (n == 0) {
			log_kv(LOG_ERROR, "status: waiting count out of step (a bug)", NULL);
			f->npend = 0;
			break;
		}
		rc = store_put_many(stage_store(st), (const char *const *)keys, vals, lens, n);
		for (size_t i = 0; i < n; i++)
			free(keys[i]);
		if (rc < 0) {
			log_kv(LOG_WARN, "cannot write status; retrying", "error",
			    store_error(stage_store(st)), NULL);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			free(batch[i]->frag);
			batch[i]->frag = batch[i]->pend;
			batch[i]->pend = NULL;
			batch[i]->frag_state = FRAG_OURS;
		}
		f->npend -= n;
	}
	return 0;
}

static void
flush_cb(struct stage *st, void *arg)
{
	struct fetcher *f = F(st);
	int rc;

	(void)arg;
	f->flush_timer = 0;
	rc = flush(st, FLUSH_ROUNDS);
	if (f->npend > 0)
		f->flush_timer = stage_add_timer(st, rc < 0 ? 1000 : 0, flush_cb, NULL);
}

/* unpend - forget s's waiting fragment (the src goes, or the lock did) */
static void
unpend(struct fetcher *f, struct src *s)
{
	if (s->pend == NULL)
		return;
	free(s->pend);
	s->pend = NULL;
	f->npend--;
}

/*
 * status_update - fields (JSON object, or NULL) and, with status non-NULL,
 * the Syncing condition, into s's fragment; the write waits for a batch.
 * 1 queued, 0 nothing changed, -1 error (logged).
 */
static int
status_update(struct stage *st, struct src *s, const char *fields, const char *status,
    const char *reason, const char *msg)
{
	struct fetcher *f = F(st);
	const char *base;
	char *text;
	int changed, moved;

	if (s->frag_state == FRAG_UNKNOWN && s->pend == NULL) {
		char *key = key_status("decofiles", s->ns, s->name, STAGE), *v = NULL;
		size_t len;
		int rc = store_get(stage_store(st), key, &v, &len);

		free(key);
		if (rc < 0) {
			log_kv(LOG_WARN, "cannot read status", "ns", s->ns, "name", s->name,
			    "error", store_error(stage_store(st)), NULL);
			return -1;
		}
		free(s->frag);
		s->frag = rc == 0 ? v : NULL;
		s->frag_state = FRAG_OURS;
	}
	base = s->pend != NULL ? s->pend : s->frag;
	text = status_fragment_build(base, base != NULL ? strlen(base) : 0, fields,
	    status != NULL ? "Syncing" : NULL, status, reason, msg, &changed, &moved);
	if (text == NULL)
		return -1;
	if (!changed && (s->pend != NULL || s->frag_state == FRAG_OURS)) {
		free(text);
		return 0;
	}
	if (moved && journal_record_condition(stage_journal(st), "decofiles", s->ns, s->name,
	    "Syncing", status, reason, msg) < 0)
		log_kv(LOG_WARN, "journal: cannot record condition", "error",
		    journal_error(stage_journal(st)), NULL);
	if (s->pend == NULL)
		f->npend++;
	free(s->pend);
	s->pend = text;
	if (f->npend >= FLUSH_BATCH) {
		if (f->flush_timer > 0)
			stage_cancel_timer(st, f->flush_timer);
		f->flush_timer = 0;
		flush_cb(st, NULL);
	} else if (f->flush_timer == 0) {
		f->flush_timer = stage_add_timer(st, FLUSH_MS, flush_cb, NULL);
	}
	return 1;
}

/*
 * status_load - every "fetcher" fragment under the status prefix with one
 * list, so the first pass builds on what is there without a get each
 */
static void
status_load(struct stage *st)
{
	struct fetcher *f = F(st);
	char *prefix = xasprintf("%s/status/decofiles/", keys_prefix());
	char ns[254], name[254], stage[64];
	struct store_list l;
	size_t n = 0;
	char c[32];

	if (store_list(stage_store(st), prefix, &l) < 0) {
		log_kv(LOG_WARN, "cannot list status; reading it one by one", "error",
		    store_error(stage_store(st)), NULL);
		free(prefix);
		return;
	}
	for (struct src *s = f->srcs; s != NULL; s = s->next) {
		if (s->frag_state == FRAG_UNKNOWN && s->pend == NULL)
			s->frag_state = FRAG_LISTED;	/* none: known absent */
	}
	for (size_t i = 0; i < l.n; i++) {
		struct src *s;

		if (sscanf(l.kvs[i].key + strlen(prefix), "%253[^/]/%253[^/]/%63s", ns, name,
		    stage) != 3 || strcmp(stage, STAGE) != 0 ||
		    (s = src_find(f, ns, name)) == NULL || s->frag_state != FRAG_LISTED)
			continue;
		free(s->frag);
		s->frag = xstrndup(l.kvs[i].value, l.kvs[i].vlen);
		n++;
	}
	snprintf(c, sizeof(c), "%zu", n);
	log_kv(LOG_INFO, "status fragments read", "fetcher", c, NULL);
	store_list_free(&l);
	free(prefix);
}

/* set_syncing - the Syncing condition; nothing at all when it is what we set last */
static void
set_syncing(struct stage *st, struct src *s, const char *status, const char *reason,
    const char *msg)
{
	char cur[sizeof(s->last_sync)];

	snprintf(cur, sizeof(cur), "%s|%s|%s", status, reason, msg);
	if (strcmp(cur, s->last_sync) == 0)
		return;
	if (status_update(st, s, NULL, status, reason, msg) >= 0)
		memcpy(s->last_sync, cur, sizeof(cur));
}

static void
set_fields(struct stage *st, struct src *s, const char *commit, int64_t generation)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "sourceType");
	jw_str(&w, s->source);
	if (commit != NULL && commit[0] != '\0') {
		jw_key(&w, "githubCommit");
		jw_str(&w, commit);
	}
	jw_key(&w, "observedGeneration");
	jw_int(&w, generation);
	jw_end_obj(&w);
	if (strcmp(b.data, s->last_status) != 0 &&
	    status_update(st, s, b.data, NULL, NULL, NULL) >= 0)
		snprintf(s->last_status, sizeof(s->last_status), "%s", b.data);
	buf_free(&b);
}

/*
 * last_handed - the newest renderer item for ns/name: its tree hash and
 * the commit and generation of its detail.  0 found, 1 none, -1 error.
 */
static int
last_handed(struct stage *st, const char *ns, const char *name, char *hash,
    char *commit, int64_t *generation)
{
	sqlite3 *db = journal_db(stage_journal(st));
	sqlite3_stmt *q;
	struct proto_render_detail rd;
	char err[256];
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT hash, detail FROM items WHERE stage='renderer'"
	    " AND kind='decofile' AND ns=? AND name=? ORDER BY id DESC LIMIT 1", -1, &q,
	    NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(q, 1, ns, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(q, 0);
		const char *d = (const char *)sqlite3_column_text(q, 1);

		snprintf(hash, 65, "%s", h ? h : "");
		/* one we cannot read counts as different: the fetch is handed on again */
		if (d == NULL || proto_render_detail_decode(d, &rd, err, sizeof(err)) < 0) {
			rd.commit[0] = '\0';
			rd.generation = -1;
		}
		snprintf(commit, 65, "%.64s", rd.commit);
		*generation = rd.generation;
		rc = 0;
	} else {
		rc = rc == SQLITE_DONE ? 1 : -1;
	}
	sqlite3_finalize(q);
	return rc;
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
	sqlite3 *db = journal_db(stage_journal(st));
	char hash[65], commit[65], detail[PROTO_MAX_DETAIL + 1];
	struct proto_render_detail rd;
	int64_t generation;
	int rc;

	rc = last_handed(st, s->ns, s->name, hash, commit, &generation);
	if (rc < 0)
		log_kv(LOG_WARN, "journal: cannot read the last fetch", "error",
		    sqlite3_errmsg(db), NULL);
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
	if (sqlite3_exec(db, "SAVEPOINT hand_on", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	if (journal_record_fetch(stage_journal(st), s->ns, s->name, s->source,
	    j->res.commit, j->res.tree_hash) < 0 ||
	    stage_push(st, "renderer", "decofile", s->ns, s->name, j->res.tree_hash,
	    detail) < 0) {
		log_kv(LOG_ERROR, "journal: cannot record the fetch", "ns", s->ns, "name",
		    s->name, "error", journal_error(stage_journal(st)), NULL);
		sqlite3_exec(db, "ROLLBACK TO hand_on", NULL, NULL, NULL);
		sqlite3_exec(db, "RELEASE hand_on", NULL, NULL, NULL);
		return -1;
	}
	sqlite3_exec(db, "RELEASE hand_on", NULL, NULL, NULL);
	return 1;
}

static int64_t
backoff_ms(int failures)
{
	int64_t d = BACKOFF_MIN_MS;

	for (int i = 1; i < failures && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS;
}

static unsigned
src_hash(const char *ns, const char *name)
{
	return fetch_obj_hash(ns, name) % NBUCKET;
}

static struct src *
src_find(struct fetcher *f, const char *ns, const char *name)
{
	for (struct src *s = f->htab[src_hash(ns, name)]; s != NULL; s = s->hnext)
		if (strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static void
src_free(struct stage *st, struct src *s)
{
	struct fetcher *f = F(st);

	for (struct src **pp = &f->srcs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	for (struct src **pp = &f->htab[src_hash(s->ns, s->name)]; *pp != NULL;
	    pp = &(*pp)->hnext) {
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	}
	if (s->timer > 0)
		stage_cancel_timer(st, s->timer);
	unpend(f, s);
	free(s->frag);
	free(s->doc);
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
	struct src *s = src_find(f, j->ns, j->name);
	char n[32];

	j->skip = 1;
	if (s == NULL)
		return;
	s->busy = 0;
	if (s->gone) {
		src_free(st, s);
		return;
	}
	if (j->res.reason != NULL) {
		s->failures++;
		snprintf(n, sizeof(n), "%lld", (long long)backoff_ms(s->failures));
		log_kv(LOG_WARN, "fetch failed", "ns", s->ns, "name", s->name, "source",
		    s->source, "reason", j->res.reason, "error", j->res.error, "retry_ms", n,
		    NULL);
		set_syncing(st, s, "False", j->res.reason, j->res.error);
		if (s->again)
			schedule(st, s, 0, s->again_force);
		else
			schedule(st, s, backoff_ms(s->failures), 0);
		return;
	}
	s->failures = 0;
	if (!fetch_lock_held(f->locks, s->ns, s->name)) {
		/* the lock went to another instance meanwhile: its fetch counts */
		log_kv(LOG_INFO, "fetch dropped: job lock no longer ours", "ns", s->ns,
		    "name", s->name, NULL);
		return;
	}
	j->skip = 0;
	j->handed = 0;
	if (!j->unchanged)
		j->handed = in_txn ? hand_on(st, s, j) : -1;
}

/* finish_second - after the batch commit (committed: it went through) */
static void
finish_second(struct stage *st, struct job *j, int committed)
{
	struct fetcher *f = F(st);
	struct src *s;
	char ms[32], gen[32];

	if (j->skip || (s = src_find(f, j->ns, j->name)) == NULL)
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
	if (!j->unchanged && j->handed >= 0) {
		if (j->remote_id[0] != '\0')
			snprintf(s->last_id, sizeof(s->last_id), "%s", j->remote_id);
		set_fields(st, s, j->res.commit, j->generation);
	}
	if (s->failures == 0) {
		set_syncing(st, s, "True", "Fetched", "Fetched from the source");
		log_kv(LOG_DEBUG, "poll done", "ns", s->ns, "name", s->name, "took_ms", ms,
		    "unchanged", j->unchanged ? "1" : "0", NULL);
	}
	if (s->again)
		schedule(st, s, 0, s->again_force);
	else if (s->failures > 0)
		schedule(st, s, backoff_ms(s->failures), 1);
	else if (s->period_ms > 0)
		schedule(st, s, jitter(s->period_ms), 0);
}

/*
 * on_wake - finish what the worker did, HAND_BATCH jobs per journal
 * transaction (one commit, one fsync, for many decofiles at start-up);
 * status writes and scheduling come after the commit.
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
		in_txn = stage_begin(st) == 0;
		for (j = chunk; j != NULL; j = j->next) {
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
			finish_second(st, j, committed);
			job_free(j);
		}
	}
}

/* ---- scheduling ---- */

/* a job for s from its resource text; NULL with the error on s's status */
static struct job *
make_job(struct stage *st, struct src *s, int force)
{
	struct fetcher *f = F(st);
	struct job *j;
	yajl_val doc;
	const char *secret;
	char msg[512];

	if ((doc = json_parse(s->doc, strlen(s->doc), NULL)) == NULL)
		return NULL;
	j = xcalloc(1, sizeof(*j));
	snprintf(j->ns, sizeof(j->ns), "%s", s->ns);
	snprintf(j->name, sizeof(j->name), "%s", s->name);
	snprintf(j->source, sizeof(j->source), "%s", s->source);
	snprintf(j->last_id, sizeof(j->last_id), "%s", s->last_id);
	j->generation = s->generation;
	j->force = force;
	msg[0] = '\0';
	if (strcmp(s->source, "inline") == 0) {
		struct buf b;
		struct jw w;
		yajl_val v = json_get(doc, "spec", "inline", "value", NULL);

		if (v != NULL) {
			buf_init(&b);
			jw_init(&w, &b);
			jw_value(&w, v);
			j->inline_json = buf_steal(&b, NULL);
		}
	} else if (strcmp(s->source, "dir") == 0) {
		const char *p = json_get_str(doc, "spec", "dir", "path", NULL);

		j->path = p ? xstrdup(p) : NULL;
	} else if (strcmp(s->source, "git") == 0) {
		const char *u = json_get_str(doc, "spec", "git", "url", NULL);
		const char *r = json_get_str(doc, "spec", "git", "ref", NULL);
		const char *d = json_get_str(doc, "spec", "git", "dir", NULL);

		j->url = u ? xstrdup(u) : NULL;
		j->ref = r ? xstrdup(r) : NULL;
		j->dir = d ? xstrdup(d) : NULL;
		secret = json_get_str(doc, "spec", "git", "secret", NULL);
		if (secret != NULL && *secret != '\0') {
			if (strchr(secret, '/') != NULL || secret[0] == '.')
				snprintf(msg, sizeof(msg),
				    "spec.git.secret '%s' must be a file name in secrets_dir", secret);
			else if (access((j->secret_file = xasprintf("%s/%s", f->secrets_dir,
			    secret)), R_OK) < 0)
				snprintf(msg, sizeof(msg),
				    "secret '%s' not found in secrets_dir (%s)", secret,
				    strerror(errno));
		}
	} else if (strcmp(s->source, "github") == 0 || strcmp(s->source, "oci") == 0) {
		snprintf(msg, sizeof(msg), "source %s is not supported by this build yet",
		    s->source);
	} else {
		snprintf(msg, sizeof(msg), "unknown source '%s' (inline, git, dir, github, oci)",
		    s->source);
	}
	yajl_tree_free(doc);
	if (msg[0] != '\0') {
		log_kv(LOG_WARN, "cannot fetch", "ns", s->ns, "name", s->name, "error", msg, NULL);
		set_syncing(st, s, "False", "FetchError", msg);
		job_free(j);
		return NULL;
	}
	return j;
}

static void
poll_cb(struct stage *st, void *arg)
{
	struct fetcher *f = F(st);
	struct src *s = arg;
	struct job *j;
	int force = s->again_force;

	s->timer = 0;
	if (!fetch_lock_held(f->locks, s->ns, s->name))
		return;		/* another instance works it; fetch_lock calls us back */
	if (s->busy) {
		s->again = 1;
		return;
	}
	s->again = 0;
	s->again_force = 0;
	if ((j = make_job(st, s, force)) == NULL) {
		/* a bad spec waits for an edit; a missing secret may appear */
		if (s->period_ms > 0)
			schedule(st, s, backoff_ms(++s->failures), force);
		return;
	}
	s->busy = 1;
	pthread_mutex_lock(&f->mu);
	*f->todo_tail = j;
	f->todo_tail = &j->next;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* schedule - poll s after after_ms (jitter is the caller's); force reads the tree */
static void
schedule(struct stage *st, struct src *s, int64_t after_ms, int force)
{
	if (force)
		s->again_force = 1;
	if (s->busy) {
		if (after_ms == 0)
			s->again = 1;
		return;
	}
	if (s->timer > 0)
		stage_cancel_timer(st, s->timer);
	s->timer = stage_add_timer(st, after_ms, poll_cb, s);
}

static int64_t
jitter(int64_t ms)
{
	unsigned r = 0;

	random_bytes(&r, sizeof(r));
	return ms - ms / 10 + (int64_t)(r % (unsigned)(ms / 5 + 1));
}

/* the poll period of doc's source; 0: only on spec changes */
static int64_t
period_of(struct fetcher *f, yajl_val doc, const char *source)
{
	const char *p;
	int64_t ms;

	if (strcmp(source, "inline") == 0)
		return 0;
	p = json_get_str(doc, "spec", source, "period", NULL);
	if (p != NULL && parse_duration_ms(p, &ms) == 0 && ms >= 1000)
		return ms;
	return f->poll_ms;
}

/* a Decofile was put (or listed) */
static void
upsert(struct stage *st, const char *ns, const char *name, const char *val, size_t len)
{
	struct fetcher *f = F(st);
	struct src *s = src_find(f, ns, name);
	char h[65];
	yajl_val doc;
	struct buf b;

	if ((doc = json_parse(val, len, NULL)) == NULL) {
		log_kv(LOG_WARN, "Decofile is not JSON; ignored", "ns", ns, "name", name, NULL);
		return;
	}
	buf_init(&b);
	{
		struct jw w;

		jw_init(&w, &b);
		jw_value(&w, json_get(doc, "spec", NULL));
	}
	buf_printf(&b, "#%lld", (long long)decofile_generation(doc));
	sha256_hex(b.data, b.len, h);
	buf_free(&b);
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		snprintf(s->ns, sizeof(s->ns), "%s", ns);
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->next = f->srcs;
		f->srcs = s;
		s->hnext = f->htab[src_hash(ns, name)];
		f->htab[src_hash(ns, name)] = s;
	} else if (strcmp(s->spec_hash, h) == 0) {
		yajl_tree_free(doc);	/* metadata or status only: nothing to do */
		return;
	}
	s->gone = 0;
	memcpy(s->spec_hash, h, sizeof(h));
	free(s->doc);
	s->doc = xstrndup(val, len);
	snprintf(s->source, sizeof(s->source), "%s", decofile_source(doc));
	s->generation = decofile_generation(doc);
	s->period_ms = period_of(f, doc, s->source);
	s->failures = 0;
	yajl_tree_free(doc);
	if (fetch_lock_want(f->locks, ns, name))
		schedule(st, s, 0, 1);
	else
		s->again_force = 1;	/* fetch at once when the lock is ours */
}

static void
drop(struct stage *st, const char *ns, const char *name)
{
	struct src *s = src_find(F(st), ns, name);

	if (s == NULL)
		return;
	log_kv(LOG_INFO, "Decofile deleted; schedule dropped", "ns", ns, "name", name, NULL);
	fetch_lock_drop(F(st)->locks, ns, name);
	if (s->busy)
		s->gone = 1;
	else
		src_free(st, s);
}

static int
relist(struct stage *st)
{
	struct fetcher *f = F(st);
	struct store_list l;
	char kind[254], ns[254], name[254];

	if (store_list(stage_store(st), f->df_prefix, &l) < 0) {
		log_kv(LOG_ERROR, "cannot list Decofiles", "error", store_error(stage_store(st)),
		    NULL);
		return -1;
	}
	for (struct src *s = f->srcs; s != NULL; s = s->next)
		s->listed = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct src *s;

		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0)
			continue;
		upsert(st, ns, name, l.kvs[i].value, l.kvs[i].vlen);
		if ((s = src_find(f, ns, name)) != NULL)
			s->listed = 1;
	}
	/* sweep what is no longer listed */
	for (struct src *s = f->srcs, *next; s != NULL; s = next) {
		next = s->next;
		if (!s->listed)
			drop(st, s->ns, s->name);
	}
	store_list_free(&l);
	return 0;
}

static void
on_df_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	char kind[254], ns[254], name[254];

	if (ev->type == STORE_EV_RELIST) {
		relist(st);
		return;
	}
	if (key_parse_resource(ev->key, kind, ns, name) < 0 || strcmp(kind, "decofiles") != 0)
		return;
	if (ev->type == STORE_EV_DELETE)
		drop(st, ns, name);
	else
		upsert(st, ns, name, ev->value, ev->vlen);
}

static void
on_sync_event(void *arg, const struct store_event *ev)
{
	struct stage *st = arg;
	struct fetcher *f = F(st);
	char ns[254], name[254];
	const char *rest;
	struct src *s;

	if (ev->type != STORE_EV_PUT || strncmp(ev->key, f->sync_prefix,
	    strlen(f->sync_prefix)) != 0)
		return;
	rest = ev->key + strlen(f->sync_prefix);
	if (sscanf(rest, "%253[^/]/%253[^/]", ns, name) != 2 ||
	    (s = src_find(f, ns, name)) == NULL)
		return;
	log_kv(LOG_INFO, "sync requested", "ns", ns, "name", name, NULL);
	s->failures = 0;
	schedule(st, s, 0, 0);
}

static void
dispatch(struct stage *st)
{
	struct fetcher *f = F(st);

	if (f->watch != NULL && store_watch_dispatch(f->watch) < 0)
		log_kv(LOG_WARN, "store watch error", "error", store_error(stage_store(st)), NULL);
	if (f->sync_watch != NULL && store_watch_dispatch(f->sync_watch) < 0)
		log_kv(LOG_WARN, "store watch error", "error", store_error(stage_store(st)), NULL);
}

static void
on_watch_fd(struct stage *st, int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	(void)arg;
	dispatch(st);
}

static void
watch_timer_cb(struct stage *st, void *arg)
{
	struct fetcher *f = F(st);
	int t = 1000, t2;

	(void)arg;
	dispatch(st);
	if (f->watch != NULL && (t2 = store_watch_timeout_ms(f->watch)) > 0 && t2 < t)
		t = t2;
	if (f->sync_watch != NULL && (t2 = store_watch_timeout_ms(f->sync_watch)) > 0 &&
	    t2 < t)
		t = t2;
	f->watch_timer = stage_add_timer(st, t, watch_timer_cb, NULL);
}

/* ---- job locks (fetch_lock.c calls these) ---- */

static void
lock_gained(struct stage *st, const char *ns, const char *name)
{
	struct src *s = src_find(F(st), ns, name);

	if (s == NULL || s->gone)
		return;
	log_kv(LOG_INFO, "job lock taken; working the decofile", "ns", ns, "name", name,
	    NULL);
	s->failures = 0;
	schedule(st, s, 0, 1);
}

static void
lock_lost(struct stage *st, const char *ns, const char *name)
{
	struct src *s = src_find(F(st), ns, name);

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
	unpend(F(st), s);
	free(s->frag);
	s->frag = NULL;
	s->frag_state = FRAG_UNKNOWN;
}

/* lock_settled - nothing of ns/name in flight here: no fetch, no pending item */
static int
lock_settled(struct stage *st, const char *ns, const char *name)
{
	struct src *s = src_find(F(st), ns, name);
	sqlite3 *db = journal_db(stage_journal(st));
	sqlite3_stmt *q;
	int busy;

	if (s != NULL && (s->busy || s->again))
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM items WHERE state='pending' AND ns=? AND"
	    " name=? LIMIT 1", -1, &q, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(q, 1, ns, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_TRANSIENT);
	busy = sqlite3_step(q) != SQLITE_DONE;
	sqlite3_finalize(q);
	return !busy;
}

static const struct fetch_lock_ops lock_ops = {
	.gained = lock_gained,
	.lost = lock_lost,
	.settled = lock_settled,
};

/* ---- stage callbacks ---- */

static struct store_watch *
watch(struct stage *st, const char *prefix, store_watch_cb cb)
{
	struct store_watch *w = store_watch_new(stage_store(st), prefix, 0, cb, st);
	int fd;

	if (w == NULL) {
		log_kv(LOG_ERROR, "cannot watch the store", "prefix", prefix, "error",
		    store_error(stage_store(st)), NULL);
		return NULL;
	}
	if ((fd = store_watch_fd(w)) >= 0)
		stage_add_fd(st, fd, POLLIN, on_watch_fd, NULL);
	return w;
}

static int
fetcher_init(struct stage *st)
{
	struct fetcher *f = xcalloc(1, sizeof(*f));
	struct conf *cf = stage_conf(st);
	uint64_t max_tree = conf_get_size(cf, "max_tree_size");

	stage_set_data(st, f);
	f->st = st;
	f->sp = stage_spool(st);
	f->lim.max_tree = max_tree;
	f->lim.max_file = max_tree > 0 && max_tree < MAX_FILE ? max_tree : MAX_FILE;
	f->timeout_ms = conf_get_ms(cf, "fetch_timeout");
	f->poll_ms = conf_get_ms(cf, "poll_period");
	snprintf(f->cache_root, sizeof(f->cache_root), "%s/git", conf_get(cf, "state_dir"));
	snprintf(f->secrets_dir, sizeof(f->secrets_dir), "%s", conf_get(cf, "secrets_dir"));
	if (realpath("/proc/self/exe", f->askpass) == NULL) {
		log_kv(LOG_ERROR, "cannot find my own program for GIT_ASKPASS", "error",
		    strerror(errno), NULL);
		return -1;
	}
	if (fetch_find_program("git") == NULL)
		log_kv(LOG_WARN, "git is not installed: git sources will fail", NULL);
	f->todo_tail = &f->todo;
	f->done_tail = &f->done;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	stage_set_wake_cb(st, on_wake, NULL);
	if (pthread_create(&f->thread, NULL, worker, f) != 0) {
		log_kv(LOG_ERROR, "cannot start the fetch worker", NULL);
		return -1;
	}
	f->thread_up = 1;

	/* watch first, then list: nothing put in between is missed */
	f->df_prefix = key_resource_prefix("decofiles", NULL);
	f->sync_prefix = xasprintf("%s/sync/", keys_prefix());
	if ((f->watch = watch(st, f->df_prefix, on_df_event)) == NULL ||
	    (f->sync_watch = watch(st, f->sync_prefix, on_sync_event)) == NULL)
		return -1;
	f->watch_timer = stage_add_timer(st, 1000, watch_timer_cb, NULL);
	if ((f->locks = fetch_lock_new(st, &lock_ops)) == NULL)
		return -1;
	if (relist(st) < 0)
		return -1;
	status_load(st);
	{
		char kerr[512];

		if ((f->kube = fetch_kube_new(st, kerr, sizeof(kerr))) == NULL && kerr[0] != '\0') {
			log_kv(LOG_ERROR, "Kubernetes configuration", "error", kerr, NULL);
			return -1;
		}
	}
	fetch_lock_start(f->locks);
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
	if (f->thread_up) {
		fetch_run_abort();
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->thread, NULL);
	}
	while ((j = f->todo) != NULL) {
		f->todo = j->next;
		job_free(j);
	}
	while ((j = f->done) != NULL) {
		f->done = j->next;
		job_free(j);
	}
	if (f->flush_timer > 0)
		stage_cancel_timer(st, f->flush_timer);
	if (f->npend > 0 && flush(st, (int)(f->npend / FLUSH_BATCH) + 1) < 0)
		log_kv(LOG_WARN, "status changes lost at shutdown", NULL);
	fetch_kube_free(f->kube);
	while (f->srcs != NULL)
		src_free(st, f->srcs);
	fetch_lock_free(f->locks);
	store_watch_free(f->watch);
	store_watch_free(f->sync_watch);
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
