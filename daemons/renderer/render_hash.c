/*
 * render_hash - see render_hash.h.  The writer publishes how far the
 * buffer is final (under the mutex, which also orders the bytes before
 * it) in steps of RENDER_HASH_STEP, so the thread wakes a few dozen times
 * for a 3 MB document, not once per block.  The thread hashes pieces of
 * at most RENDER_HASH_PIECE bytes outside the lock into its own context,
 * and after each piece leaves a copy of it (the state after `done` bytes)
 * where the writer can take it.  At the end the writer takes that copy
 * and hashes the rest itself, so a thread that was never run (a busy
 * machine) costs nothing; the worst case is one piece hashed twice.  Only
 * then does it wait, if the thread is still reading a piece, since the
 * caller may free the buffer once render_hash_final returns.  The thread
 * is detached; whichever of the two lets go of the shared state last
 * frees it.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/renderer/render_hash.h"

/* what the writer lets pile up before it wakes the thread */
#define RENDER_HASH_STEP	(128 * 1024)
/* the most the writer may hash again when it takes over */
#define RENDER_HASH_PIECE	(32 * 1024)

struct render_hash {
	const char *base;
	int threaded;
	size_t published;	/* the writer's last publish (writer only) */
	struct sha256_ctx *own;	/* no thread: the writer's context */
	struct sha256_ctx *work, *spare;	/* the thread's */
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* the thread waits for bytes */
	pthread_cond_t idle;	/* the writer waits for the thread out of base */
	/* under mu when threaded: */
	struct sha256_ctx *committed;	/* the state after done bytes */
	size_t avail;		/* final bytes */
	size_t done;
	int closing;		/* the writer took committed: stop */
	int busy;		/* the thread reads base (a piece) */
	int waiting;		/* the thread sleeps on cv */
	int refs;		/* writer and thread: the last one frees */
};

static int hash_threads = 1;

void
render_hash_threads(int on)
{
	hash_threads = on;
}

/* cpus - how many CPUs this process may run on */
static int
cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	return CPU_COUNT(&set);
}

/* drop - a context the hash is not taken from: free it */
static void
drop(struct sha256_ctx *c)
{
	char unused[SHA256_HEX_LEN + 1];

	if (c != NULL)
		sha256_final(c, unused);
}

/* unref - let go of h (mu held, released here); the last one out frees it */
static void
unref(struct render_hash *h)
{
	int last = --h->refs == 0;

	pthread_mutex_unlock(&h->mu);
	if (!last)
		return;
	drop(h->committed);
	pthread_cond_destroy(&h->cv);
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* hash_follow - the thread: hash what is published until the writer takes over */
static void *
hash_follow(void *arg)
{
	struct render_hash *h = arg;
	struct sha256_ctx *work = h->work, *spare = h->spare, *t;

	pthread_mutex_lock(&h->mu);
	while (!h->closing) {
		size_t from = h->done, n = h->avail - h->done;

		if (n == 0) {
			h->waiting = 1;
			pthread_cond_wait(&h->cv, &h->mu);
			h->waiting = 0;
			continue;
		}
		if (n > RENDER_HASH_PIECE)
			n = RENDER_HASH_PIECE;
		h->busy = 1;
		pthread_mutex_unlock(&h->mu);
		sha256_update(work, h->base + from, n);
		sha256_copy(spare, work);
		pthread_mutex_lock(&h->mu);
		h->busy = 0;
		if (h->closing) {
			/* too late: the writer has the state before this piece */
			pthread_cond_signal(&h->idle);
			break;
		}
		t = h->committed;
		h->committed = spare;
		spare = t;
		h->done = from + n;
	}
	unref(h);
	drop(work);
	drop(spare);
	return NULL;
}

struct render_hash *
render_hash_new(const char *base, size_t size)
{
	struct render_hash *h = xcalloc(1, sizeof(*h));
	sigset_t all, old;
	pthread_t t;
	int rv;

	h->base = base;
	if (hash_threads && size >= RENDER_HASH_THREAD_MIN && cpus() > 1) {
		pthread_mutex_init(&h->mu, NULL);
		pthread_cond_init(&h->cv, NULL);
		pthread_cond_init(&h->idle, NULL);
		h->committed = sha256_new();
		h->work = sha256_new();
		h->spare = sha256_new();
		h->refs = 2;
		/* the thread takes no signal: the loop's handlers and EINTRs stay the loop's */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rv = pthread_create(&t, NULL, hash_follow, h);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rv == 0) {
			pthread_detach(t);
			h->threaded = 1;
			return h;
		}
		/* no thread (out of resources): hash here, nothing lost */
		drop(h->work);
		drop(h->spare);
		h->own = h->committed;
		h->committed = NULL;
		pthread_cond_destroy(&h->cv);
		pthread_cond_destroy(&h->idle);
		pthread_mutex_destroy(&h->mu);
	} else
		h->own = sha256_new();
	return h;
}

void
render_hash_upto(struct render_hash *h, size_t len)
{
	if (!h->threaded) {
		sha256_update(h->own, h->base + h->published, len - h->published);
		h->published = len;
	} else if (len - h->published >= RENDER_HASH_STEP) {
		pthread_mutex_lock(&h->mu);
		h->avail = len;
		if (h->waiting)
			pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		h->published = len;
	}
}

void
render_hash_final(struct render_hash *h, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	struct sha256_ctx *sc;
	size_t done;

	if (!h->threaded) {
		if (hex != NULL) {
			render_hash_upto(h, len);
			sha256_final(h->own, hex);
		} else
			drop(h->own);	/* after an error */
		free(h);
		return;
	}
	/* take the last state the thread left; it stops at its next look */
	pthread_mutex_lock(&h->mu);
	h->closing = 1;
	sc = h->committed;
	h->committed = NULL;
	done = h->done;
	if (h->waiting)
		pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (hex != NULL) {
		sha256_update(sc, h->base + done, len - done);
		sha256_final(sc, hex);
	} else
		drop(sc);
	/* the caller may reuse base once this returns: the thread out of it */
	pthread_mutex_lock(&h->mu);
	while (h->busy)
		pthread_cond_wait(&h->idle, &h->mu);
	unref(h);
}
