/*
 * render_recompress - the slow, small brotli pass after the fast publish.
 * The loop owns the job list, the journal and the spool; one worker
 * thread, at nice 19, only runs the encoder on a job's copy of the
 * document (and base64), checks the job's cancel flag between input
 * chunks, and writes a byte to a pipe when it is done.  The loop then
 * checks that the render is still the site's newest, puts the blob in the
 * spool, and in one transaction records it (journal_record_recompress)
 * and pushes the publisher's "recompress" item, which swaps the .bin on
 * the target without a new timestamp or a notifier item.  A job waits
 * delay_ms after its render, so a burst of edits costs one pass.
 *
 * Crash safety: the journal's newest render names the blob the target
 * should hold; until the publisher's item is done the target holds the
 * fast blob, valid all along (every target replaces its .bin atomically).
 * A render not recompressed (the renderer died mid-way) is found again by
 * journal_recompress_pending at start.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <brotli/encode.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/journal_brotli.h"
#include "common/log.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/renderer/render_recompress.h"
#include "proto/proto.h"

#define CHUNK (256 * 1024)	/* input fed between looks at the cancel flag */

/*
 * WAITING: its delay runs (a timer); READY: the delay is over, its turn
 * comes when the worker is free (the ready queue, oldest first); QUEUED,
 * RUNNING: the worker's (one at a time); DONE: back to the loop.
 */
enum job_state { JOB_WAITING, JOB_READY, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct job {
	char ns[254], name[254], hash[65], tree[65], commit[PROTO_MAX_COMMIT + 1];
	char *json;
	size_t len, binlen;
	int quality, window;
	enum job_state state;
	atomic_int cancel;
	int failed;
	int64_t timer, queued_ms, started_ms, ms;
	char *b64;		/* the result (DONE, not failed) */
	size_t b64len;
	struct render_recompress *rr;
	struct job *next, *prev;	/* rr->jobs */
	struct job *hnext;		/* rr->site's bucket */
	struct job *rnext, *rprev;	/* the ready queue (the loop's) */
};

#define NSITE 4096	/* buckets of the jobs by site */

struct render_recompress {
	struct stage *st;
	int quality, window, nice;
	int64_t delay_ms;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started, stop;
	int pipe[2];
	/*
	 * every job, in every state, guarded by mu: a list (newest first) and
	 * by site, so a render's cancel and the worker's hand-back cost a
	 * step, not a walk of a cold start's 10,000 waiting jobs
	 */
	struct job *jobs;
	struct job *site[NSITE];
	struct job *current;	/* the one QUEUED, RUNNING or DONE and not yet taken back */
	struct job *ready, *ready_tail;	/* READY jobs, oldest first: the loop's */
	int busy;		/* a job QUEUED or RUNNING (the loop's) */
};

static void pump(struct render_recompress *rr);

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	free(j->json);
	free(j->b64);
	free(j);
}

static unsigned
site_of(const char *ns, const char *name)
{
	return (unsigned)((str_hash(name) ^ (str_hash(ns) * 31)) % NSITE);
}

/* jobs_link - j into rr's list and its site's bucket; mu held */
static void
jobs_link(struct render_recompress *rr, struct job *j)
{
	unsigned b = site_of(j->ns, j->name);

	j->prev = NULL;
	if ((j->next = rr->jobs) != NULL)
		j->next->prev = j;
	rr->jobs = j;
	j->hnext = rr->site[b];
	rr->site[b] = j;
}

/* jobs_unlink - j out of them; mu held */
static void
jobs_unlink(struct render_recompress *rr, struct job *j)
{
	struct job **pp;

	if (j->prev != NULL)
		j->prev->next = j->next;
	else
		rr->jobs = j->next;
	if (j->next != NULL)
		j->next->prev = j->prev;
	j->next = j->prev = NULL;
	for (pp = &rr->site[site_of(j->ns, j->name)]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == j) {
			*pp = j->hnext;
			break;
		}
	if (rr->current == j)
		rr->current = NULL;
}

/* compress - brotli of j->json at j's quality into out; -1 error or cancelled */
static int
compress(struct job *j, struct buf *out)
{
	BrotliEncoderState *s = BrotliEncoderCreateInstance(NULL, NULL, NULL);
	const uint8_t *next_in = (const uint8_t *)j->json;
	size_t left = j->len, avail_in = 0;
	int rv = 0;

	if (s == NULL)
		return -1;
	BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, (uint32_t)j->quality);
	BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN, (uint32_t)j->window);
	BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT,
	    j->len > (1u << 30) ? (1u << 30) : (uint32_t)j->len);
	for (;;) {
		BrotliEncoderOperation op;
		size_t avail_out, feed;
		uint8_t *next_out;

		if (atomic_load(&j->cancel)) {
			rv = -1;
			break;
		}
		if (avail_in == 0 && left > 0) {
			feed = left < CHUNK ? left : CHUNK;
			avail_in = feed;
			left -= feed;
		}
		op = left == 0 ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
		buf_grow(out, 65536);
		avail_out = out->cap - out->len - 1;
		next_out = (uint8_t *)out->data + out->len;
		if (!BrotliEncoderCompressStream(s, op, &avail_in, &next_in, &avail_out,
		    &next_out, NULL)) {
			rv = -1;
			break;
		}
		out->len = (size_t)((char *)next_out - out->data);
		out->data[out->len] = '\0';
		if (op == BROTLI_OPERATION_FINISH && BrotliEncoderIsFinished(s))
			break;
	}
	BrotliEncoderDestroyInstance(s);
	return rv;
}

/* worker - the thread: take the oldest queued job, compress it, hand it back */
static void *
worker(void *arg)
{
	struct render_recompress *rr = arg;
	char one = 1;

	/* this thread only: Linux applies a tid's nice to that thread alone */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), rr->nice) < 0)
		log_kv(LOG_WARN, "cannot lower the recompression thread's priority", "error",
		    strerror(errno), NULL);
	pthread_mutex_lock(&rr->mu);
	while (!rr->stop) {
		struct job *j, *pick = NULL;
		struct buf out;

		if ((j = rr->current) != NULL && j->state == JOB_QUEUED)
			pick = j;	/* one at a time: the loop's pump hands it over */
		if (pick == NULL) {
			pthread_cond_wait(&rr->cv, &rr->mu);
			continue;
		}
		pick->state = JOB_RUNNING;
		pthread_mutex_unlock(&rr->mu);

		pick->started_ms = now_ms();
		buf_init(&out);
		pick->failed = compress(pick, &out) < 0;
		if (!pick->failed) {
			pick->b64 = base64_encode(out.data, out.len, 0);
			pick->b64len = strlen(pick->b64);
		}
		buf_free(&out);
		pick->ms = now_ms() - pick->started_ms;

		pthread_mutex_lock(&rr->mu);
		pick->state = JOB_DONE;
		if (write(rr->pipe[1], &one, 1) < 0 && errno != EAGAIN)
			log_kv(LOG_WARN, "recompression: cannot wake the loop", "error",
			    strerror(errno), NULL);
	}
	pthread_mutex_unlock(&rr->mu);
	return NULL;
}

/* finish - the loop's half of a done job: record it and ask for the swap */
static void
finish(struct render_recompress *rr, struct job *j)
{
	struct stage *st = rr->st;
	struct journal *jr = stage_journal(st);
	struct proto_publish_detail pd;
	char last[65], fmt[8], lastbin[65], bin[65], detail[PROTO_MAX_DETAIL + 1];
	char q[8], before[32], after[32], ms[32];
	int quality;

	if (atomic_load(&j->cancel))
		return;		/* said when it was cancelled */
	if (j->failed) {
		log_kv(LOG_WARN, "recompression failed; the fast blob stays", "ns", j->ns, "name",
		    j->name, NULL);
		return;
	}
	/* still the newest render, and not already this good (another instance)? */
	if (journal_last_render(jr, j->ns, j->name, last, fmt, lastbin) != 0 ||
	    strcmp(last, j->hash) != 0 || strcmp(fmt, "bin") != 0 ||
	    journal_render_quality(jr, j->ns, j->name, j->hash, &quality) != 0 ||
	    quality >= j->quality) {
		log_kv(LOG_INFO, "recompression superseded; dropped", "ns", j->ns, "name",
		    j->name, "hash", j->hash, NULL);
		return;
	}
	if (j->binlen > 0 && j->b64len >= j->binlen)
		snprintf(bin, sizeof(bin), "%s", lastbin);	/* no smaller: keep it */
	else if (spool_put(stage_spool(st), j->b64, j->b64len, bin) < 0) {
		log_kv(LOG_WARN, "recompression: cannot write the spool", "error",
		    strerror(errno), NULL);
		return;
	}
	memset(&pd, 0, sizeof(pd));
	snprintf(pd.format, sizeof(pd.format), "bin");
	snprintf(pd.bin, sizeof(pd.bin), "%s", bin);
	snprintf(pd.commit, sizeof(pd.commit), "%s", j->commit);
	if (proto_publish_detail_encode(&pd, detail, sizeof(detail)) < 0)
		return;
	if (stage_begin(st) < 0)
		return;
	if (journal_record_recompress(jr, j->ns, j->name, j->hash,
	    strcmp(bin, lastbin) == 0 ? j->binlen : j->b64len, j->tree, bin, j->quality) < 0 ||
	    (strcmp(bin, lastbin) != 0 && stage_push(st, "publisher", "recompress", j->ns,
	    j->name, j->hash, detail) < 0) ||
	    stage_commit(st, NULL, NULL) < 0) {
		stage_rollback(st);
		log_kv(LOG_WARN, "cannot record the recompression", "error", journal_error(jr),
		    NULL);
		return;
	}
	snprintf(q, sizeof(q), "%d", j->quality);
	snprintf(before, sizeof(before), "%zu", j->binlen);
	snprintf(after, sizeof(after), "%zu", j->b64len);
	snprintf(ms, sizeof(ms), "%lld", (long long)j->ms);
	log_kv(LOG_INFO, "recompressed", "ns", j->ns, "name", j->name, "hash", j->hash,
	    "quality", q, "bytes_before", before, "bytes_after", after, "ms", ms,
	    "swap", strcmp(bin, lastbin) == 0 ? "no (not smaller)" : "asked", NULL);
}

/* on_pipe - the worker finished something: take the done jobs out and finish them */
static void
on_pipe(struct stage *st, int fd, short revents, void *arg)
{
	struct render_recompress *rr = arg;
	struct job *done = NULL, *j;
	char b[64];

	(void)st;
	(void)revents;
	while (read(fd, b, sizeof(b)) > 0)
		;
	pthread_mutex_lock(&rr->mu);
	if ((j = rr->current) != NULL && j->state == JOB_DONE) {
		jobs_unlink(rr, j);
		done = j;
		rr->busy = 0;
	}
	pthread_mutex_unlock(&rr->mu);
	if (done != NULL) {
		finish(rr, done);
		job_free(done);
	}
	pump(rr);
}

static int
start(struct render_recompress *rr)
{
	int rv;

	if (rr->started)
		return 0;
	if (pipe2(rr->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
		log_kv(LOG_WARN, "recompression off: pipe", "error", strerror(errno), NULL);
		return -1;
	}
	if ((rv = pthread_create(&rr->thread, NULL, worker, rr)) != 0) {
		log_kv(LOG_WARN, "recompression off: no thread", "error", strerror(rv), NULL);
		close(rr->pipe[0]);
		close(rr->pipe[1]);
		return -1;
	}
	stage_add_fd(rr->st, rr->pipe[0], POLLIN, on_pipe, rr);
	rr->started = 1;
	return 0;
}

static void render_recompress_resume_cb(struct stage *st, void *arg);

struct render_recompress *
render_recompress_new(struct stage *st)
{
	struct render_recompress *rr = xcalloc(1, sizeof(*rr));

	rr->st = st;
	rr->nice = 19;
	pthread_mutex_init(&rr->mu, NULL);
	pthread_cond_init(&rr->cv, NULL);
	/* once the stage is up: what a restart cut short */
	stage_add_timer(st, 0, render_recompress_resume_cb, rr);
	return rr;
}

/* ready_unlink - take j out of the ready queue */
static void
ready_unlink(struct render_recompress *rr, struct job *j)
{
	if (j->rprev != NULL)
		j->rprev->rnext = j->rnext;
	else
		rr->ready = j->rnext;
	if (j->rnext != NULL)
		j->rnext->rprev = j->rprev;
	else
		rr->ready_tail = j->rprev;
	j->rnext = j->rprev = NULL;
}

/*
 * pump - while the worker is free, hand it the oldest ready job (one
 * document in memory at a time: ready jobs hold only names).  Called when
 * a delay ends and when the worker hands a job back, so a queue of 10,000
 * costs one step per job, not a timer per job per second.
 */
static void
pump(struct render_recompress *rr)
{
	struct job *j;
	char *json;
	size_t len;

	while (!rr->busy && (j = rr->ready) != NULL) {
		ready_unlink(rr, j);
		if ((json = spool_get(stage_spool(rr->st), j->hash, &len)) == NULL) {
			log_kv(LOG_WARN, "recompression dropped: document not in the spool", "ns",
			    j->ns, "name", j->name, "hash", j->hash, NULL);
			/* j itself, not "the site's job" by name, and no "a newer render" line */
			pthread_mutex_lock(&rr->mu);
			jobs_unlink(rr, j);
			pthread_mutex_unlock(&rr->mu);
			job_free(j);
			continue;
		}
		pthread_mutex_lock(&rr->mu);
		j->json = json;
		j->len = len;
		j->state = JOB_QUEUED;
		rr->current = j;
		rr->busy = 1;
		pthread_cond_signal(&rr->cv);
		pthread_mutex_unlock(&rr->mu);
	}
}

/* fire - a job's delay is over: its turn in the ready queue */
static void
fire(struct stage *st, void *arg)
{
	struct job *j = arg;
	struct render_recompress *rr = j->rr;

	(void)st;
	pthread_mutex_lock(&rr->mu);
	j->timer = 0;
	j->state = JOB_READY;
	pthread_mutex_unlock(&rr->mu);
	j->rnext = NULL;
	if ((j->rprev = rr->ready_tail) != NULL)
		j->rprev->rnext = j;
	else
		rr->ready = j;
	rr->ready_tail = j;
	pump(rr);
}

void
render_recompress_settings(struct render_recompress *rr, int quality, int window,
    int64_t delay_ms, int nice)
{
	char q[16], d[32];

	if (quality != rr->quality || delay_ms != rr->delay_ms) {
		snprintf(q, sizeof(q), "%d", quality);
		snprintf(d, sizeof(d), "%lld", (long long)delay_ms);
		log_kv(LOG_INFO, "background recompression settings", "quality", q,
		    "delay_ms", d, NULL);
	}
	rr->quality = quality;
	rr->window = window;
	rr->nice = nice;
	if (delay_ms != rr->delay_ms) {
		/* jobs waiting under the old delay start by the new one */
		rr->delay_ms = delay_ms;
		pthread_mutex_lock(&rr->mu);
		for (struct job *j = rr->jobs; j != NULL; j = j->next)
			if (j->state == JOB_WAITING) {
				stage_cancel_timer(rr->st, j->timer);
				j->timer = stage_add_timer(rr->st, delay_ms, fire, j);
			}
		pthread_mutex_unlock(&rr->mu);
	}
}

void
render_recompress_cancel(struct render_recompress *rr, const char *ns, const char *name)
{
	struct job *j;
	int freed = 0;

	if (!rr->started)
		return;
	pthread_mutex_lock(&rr->mu);
	for (j = rr->site[site_of(ns, name)]; j != NULL; j = j->hnext) {
		if (strcmp(j->ns, ns) != 0 || strcmp(j->name, name) != 0 ||
		    atomic_load(&j->cancel))
			continue;
		log_kv(LOG_INFO, "recompression cancelled: a newer render", "ns", ns, "name",
		    name, "hash", j->hash, "state", j->state == JOB_RUNNING ? "running" :
		    "pending", NULL);
		atomic_store(&j->cancel, 1);
		if (j->state == JOB_WAITING || j->state == JOB_READY || j->state == JOB_QUEUED) {
			if (j->state == JOB_WAITING)
				stage_cancel_timer(rr->st, j->timer);
			else if (j->state == JOB_READY)
				ready_unlink(rr, j);
			else {	/* the worker had not taken it */
				rr->busy = 0;
				freed = 1;
			}
			jobs_unlink(rr, j);
			job_free(j);
		}
		break;		/* one job per site */
	}
	pthread_mutex_unlock(&rr->mu);
	if (freed)
		pump(rr);	/* the worker is free for the next */
}

void
render_recompress_queue(struct render_recompress *rr, const char *ns, const char *name,
    const char *hash, const char *tree, const char *commit, const void *json, size_t len,
    size_t binlen)
{
	struct job *j;

	render_recompress_cancel(rr, ns, name);
	if (rr->quality <= 0 || start(rr) < 0)
		return;
	j = xcalloc(1, sizeof(*j));
	snprintf(j->ns, sizeof(j->ns), "%s", ns);
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->hash, sizeof(j->hash), "%s", hash);
	snprintf(j->tree, sizeof(j->tree), "%s", tree);
	snprintf(j->commit, sizeof(j->commit), "%s", commit);
	(void)json;	/* read back from the spool when its turn comes */
	j->len = len;
	j->binlen = binlen;
	j->quality = rr->quality;
	j->window = rr->window;
	j->rr = rr;
	j->queued_ms = now_ms();
	pthread_mutex_lock(&rr->mu);
	j->state = JOB_WAITING;
	jobs_link(rr, j);
	j->timer = stage_add_timer(rr->st, rr->delay_ms, fire, j);
	pthread_mutex_unlock(&rr->mu);
}

/* resume_one - a render the journal says is still at the fast quality */
static void
resume_one(void *arg, const char *ns, const char *name, const char *hash, const char *tree)
{
	struct render_recompress *rr = arg;
	struct spool *sp = stage_spool(rr->st);
	char last[65], fmt[8], bin[65];
	char *b;
	size_t blen = 0;

	if (!spool_has(sp, hash))
		return;		/* gone from the spool: the fast blob stays */
	if (journal_last_render(stage_journal(rr->st), ns, name, last, fmt, bin) == 0 &&
	    (b = spool_get(sp, bin, &blen)) != NULL)
		free(b);
	log_kv(LOG_INFO, "recompression resumed", "ns", ns, "name", name, "hash", hash, NULL);
	render_recompress_queue(rr, ns, name, hash, tree, "", NULL, 0, blen);
}

void
render_recompress_resume(struct render_recompress *rr)
{
	if (rr->quality <= 0)
		return;
	if (journal_recompress_pending(stage_journal(rr->st), rr->quality, resume_one, rr) < 0)
		log_kv(LOG_WARN, "cannot read the renders to recompress", "error",
		    journal_error(stage_journal(rr->st)), NULL);
}

static void
render_recompress_resume_cb(struct stage *st, void *arg)
{
	(void)st;
	render_recompress_resume(arg);
}

void
render_recompress_free(struct render_recompress *rr)
{
	struct job *j;

	if (rr == NULL)
		return;
	if (rr->started) {
		pthread_mutex_lock(&rr->mu);
		rr->stop = 1;
		for (j = rr->jobs; j != NULL; j = j->next)
			atomic_store(&j->cancel, 1);
		pthread_cond_signal(&rr->cv);
		pthread_mutex_unlock(&rr->mu);
		pthread_join(rr->thread, NULL);
		stage_del_fd(rr->st, rr->pipe[0]);
		close(rr->pipe[0]);
		close(rr->pipe[1]);
	}
	while ((j = rr->jobs) != NULL) {
		rr->jobs = j->next;
		if (j->state == JOB_WAITING)
			stage_cancel_timer(rr->st, j->timer);
		job_free(j);
	}
	pthread_cond_destroy(&rr->cv);
	pthread_mutex_destroy(&rr->mu);
	free(rr);
}
