/*
 * notify_engine - calls every replica of a rollout (SPEC §4.4) on one curl
 * multi handle driven by the caller's loop: no thread per call, a
 * concurrency limit per rollout (into the thousands), per-attempt timeouts,
 * retries with backoff, a total deadline, and a re-resolve callback before
 * each try so a replica that went away is not a failure.
 *
 * Loop integration: the engine keeps its sockets in its own epoll set and
 * shows the caller ONE file descriptor.  Poll notify_engine_fd() for
 * reading, wake after notify_engine_timeout() at the latest, and call
 * notify_engine_dispatch(); it never blocks.  Everything (callbacks
 * included) happens on the caller's thread.
 */
#ifndef DECOD_NOTIFY_ENGINE_H
#define DECOD_NOTIFY_ENGINE_H

#include <stddef.h>
#include <stdint.h>

struct notify_engine;
struct notify_job;

enum notify_style { NOTIFY_PUSH = 0, NOTIFY_POLL };

enum notify_state {
	NOTIFY_PENDING = 0,	/* not finished yet */
	NOTIFY_CONFIRMED,	/* answered 2xx */
	NOTIFY_FAILED,		/* gave up: error says why */
	NOTIFY_GONE,		/* went away before a try: not a failure */
	NOTIFY_MISSING_TOKEN,	/* answered 401 and we had no token to send */
};

/* one replica; the strings are copied by notify_job_start */
struct notify_target {
	const char *id;		/* name used in results and messages */
	const char *url;	/* base URL, e.g. http://10.0.0.7:8000 */
	enum notify_style style;
	const char *ts_file;	/* poll: the replica's timestamp file (optional) */
	const char *token;	/* sent as "Authorization: Token <t>" (optional) */
};

struct notify_result {
	enum notify_state state;
	long http_status;	/* status of the last answer, 0 if none */
	int attempts;		/* tries made */
	int64_t ms;		/* first try to outcome */
	char error[256];	/* why it failed (empty when confirmed) */
};

struct notify_params {
	int concurrency;		/* calls in flight at once (30) */
	int attempts;			/* tries per replica (3), at most 16 */
	int64_t attempt_timeout_ms;	/* push: one try (30 s) */
	int64_t backoff_ms;		/* before the 2nd try (2 s), doubling */
	int64_t poll_timeout_ms;	/* poll: all tries of one replica (150 s) */
	int64_t deadline_ms;		/* the whole rollout (300 s) */
	int64_t connect_timeout_ms;	/* TCP+TLS connect of one try (10 s) */
};

/* notify_params_default - the defaults of SPEC §4.4 */
void notify_params_default(struct notify_params *p);

/*
 * notify_resolve_fn - called before each try of replica t.  Return 1 if it
 * is still there (the callback may point t's strings at newer values; they
 * are copied at once), 0 if it went away (the replica ends NOTIFY_GONE),
 * -1 if unknown (tried as it is).
 */
typedef int (*notify_resolve_fn)(void *arg, struct notify_target *t);
/* notify_done_fn - the job finished; it stays valid until notify_job_free */
typedef void (*notify_done_fn)(void *arg, struct notify_job *job);

/*
 * notify_engine_new - one multi handle; also raises the soft RLIMIT_NOFILE
 * to the hard limit so thousands of calls fit.  NULL (errno) on failure.
 */
struct notify_engine *notify_engine_new(void);
/* notify_engine_free - cancels every job still running; NULL is a no-op */
void notify_engine_free(struct notify_engine *e);

/* notify_engine_fd - poll it for POLLIN */
int notify_engine_fd(const struct notify_engine *e);
/* notify_engine_timeout - ms until dispatch is due (0: now, -1: idle) */
int64_t notify_engine_timeout(const struct notify_engine *e);
/* notify_engine_dispatch - do what is ready; calls done callbacks; never blocks */
void notify_engine_dispatch(struct notify_engine *e);
/* notify_engine_jobs - number of jobs not finished yet */
size_t notify_engine_jobs(const struct notify_engine *e);
/*
 * notify_engine_run - a standalone loop (poll on the fd) until every job
 * is done or max_ms passes (-1: no limit); for tools and tests.  0 when
 * idle, -1 on timeout or poll error.
 */
int notify_engine_run(struct notify_engine *e, int64_t max_ms);

/*
 * notify_job_start - call n replicas.  Push style sends body (body_len
 * bytes: the whole {"decofile":...} document; not copied, it must outlive
 * the job); poll style asks for timestamp.  p NULL: defaults.  resolve may
 * be NULL.  done is called once from notify_engine_dispatch (n == 0: from
 * the next dispatch).  Returns the job (the engine owns it until done; the
 * caller frees it with notify_job_free after done, or cancels it).
 */
struct notify_job *notify_job_start(struct notify_engine *e,
    const struct notify_target *targets, size_t n, const char *body,
    size_t body_len, int64_t timestamp, const struct notify_params *p,
    notify_resolve_fn resolve, notify_done_fn done, void *arg);

/* notify_job_cancel - stop it now (calls in flight are dropped); frees it; done is not called */
void notify_job_cancel(struct notify_job *job);
/* notify_job_free - free a finished job; NULL is a no-op */
void notify_job_free(struct notify_job *job);

size_t notify_job_count(const struct notify_job *job);
/* notify_job_target - replica i as last resolved (strings owned by the job) */
const struct notify_target *notify_job_target(const struct notify_job *job, size_t i);
/* notify_job_result - replica i's result (a copy, valid until four more calls) */
const struct notify_result *notify_job_result(const struct notify_job *job, size_t i);
/* notify_job_progress - finished so far (any state) */
size_t notify_job_progress(const struct notify_job *job);

struct notify_summary {
	size_t confirmed, failed, gone, missing_token, pending;
	int64_t ms;		/* start to last outcome */
};
void notify_job_summary(const struct notify_job *job, struct notify_summary *s);

/*
 * notify_job_failures - "a (HTTP 500), b (timed out ...)" naming up to max
 * replicas that failed or lacked a token, then "and N more"; caller frees.
 */
char *notify_job_failures(const struct notify_job *job, size_t max);

/* notify_state_name - "confirmed", "failed", "gone", "missing-token", "pending" */
const char *notify_state_name(enum notify_state s);

#endif
