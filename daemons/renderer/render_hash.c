/*
 * render_hash - see render_hash.h.  The writer publishes how far the
 * buffer is final (under the mutex, which also orders the bytes before
 * it) in steps of RENDER_HASH_STEP, so the thread wakes a few dozen times
 * for a 3 MB document, not once per block.  The thread hashes at most
 * RENDER_HASH_PIECE bytes at a time outside the lock.  At the end the
 * writer takes the sha256 context back as soon as the thread is between
 * two pieces and hashes the rest itself: it never waits for a thread the
 * scheduler has not run yet (a busy machine), and the thread, detached,
 * frees the shared state if it is the last to let go of it.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/renderer/render_hash.h"

/* what the writer lets pile up before it wakes the thread */
#define RENDER_HASH_STEP	(128 * 1024)
/* the most the writer may have to wait for when it takes the context back */
#define RENDER_HASH_PIECE	(32 * 1024)

struct render_hash {
	const char *base;
	struct sha256_ctx *sc;
	int threaded;
	size_t published;	/* the writer's last publish (writer only) */
	pthread_mutex_t mu;
	pthread_cond_t work;	/* the thread waits for bytes */
	pthread_cond_t idle;	/* the writer waits for the thread's piece */
	/* under mu when threaded: */
	size_t avail;		/* final bytes */
	size_t done;		/* bytes hashed */
	int closing;		/* the writer took the context back */
	int busy;		/* the thread is hashing a piece */
	int waiting;		/* the thread sleeps on work */
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

/* unref - drop one hold on h (mu held, released here); the last frees it */
static void
unref(struct render_hash *h)
{
	int last = --h->refs == 0;

	pthread_mutex_unlock(&h->mu);
	if (!last)
		return;
	pthread_cond_destroy(&h->work);
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* hash_follow - the thread: hash what is published until the writer takes over */
static void *
hash_follow(void *arg)
{
	struct render_hash *h = arg;

	pthread_mutex_lock(&h->mu);
	while (!h->closing) {
		size_t from = h->done, n = h->avail - h->done;

		if (n == 0) {
			h->waiting = 1;
			pthread_cond_wait(&h->work, &h->mu);
			h->waiting = 0;
			continue;
		}
		if (n > RENDER_HASH_PIECE)
			n = RENDER_HASH_PIECE;
		h->busy = 1;
		pthread_mutex_unlock(&h->mu);
		sha256_update(h->sc, h->base + from, n);
		pthread_mutex_lock(&h->mu);
		h->busy = 0;
		h->done = from + n;
		if (h->closing)
			pthread_cond_signal(&h->idle);
	}
	unref(h);
	return NULL;
}

struct render_hash *
render_hash_new(const char *base, size_t size)
{
	struct render_hash *h = xcalloc(1, sizeof(*h));
	pthread_t t;

	h->base = base;
	h->sc = sha256_new();
	if (hash_threads && size >= RENDER_HASH_THREAD_MIN && cpus() > 1) {
		pthread_mutex_init(&h->mu, NULL);
		pthread_cond_init(&h->work, NULL);
		pthread_cond_init(&h->idle, NULL);
		h->refs = 2;
		/* no thread (out of resources): hash here, nothing lost */
		if (pthread_create(&t, NULL, hash_follow, h) == 0) {
			pthread_detach(t);
			h->threaded = 1;
		} else {
			pthread_cond_destroy(&h->work);
			pthread_cond_destroy(&h->idle);
			pthread_mutex_destroy(&h->mu);
		}
	}
	return h;
}

void
render_hash_upto(struct render_hash *h, size_t len)
{
	if (!h->threaded) {
		sha256_update(h->sc, h->base + h->published, len - h->published);
		h->published = len;
	} else if (len - h->published >= RENDER_HASH_STEP) {
		pthread_mutex_lock(&h->mu);
		h->avail = len;
		if (h->waiting)
			pthread_cond_signal(&h->work);
		pthread_mutex_unlock(&h->mu);
		h->published = len;
	}
}

void
render_hash_final(struct render_hash *h, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	struct sha256_ctx *sc = h->sc;
	const char *base = h->base;
	char unused[SHA256_HEX_LEN + 1];
	size_t done = h->published;

	if (h->threaded) {
		/* take the context back between two pieces; the thread stops */
		pthread_mutex_lock(&h->mu);
		h->closing = 1;
		while (h->busy)
			pthread_cond_wait(&h->idle, &h->mu);
		done = h->done;
		if (h->waiting)
			pthread_cond_signal(&h->work);
		unref(h);	/* h may be gone from here on */
	} else
		free(h);
	if (hex == NULL) {
		sha256_final(sc, unused);	/* after an error: frees it */
		return;
	}
	sha256_update(sc, base + done, len - done);
	sha256_final(sc, hex);
}
