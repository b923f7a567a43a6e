/*
 * backoff - the pause before a retry: it doubles from a floor to a cap
 * after each failure, goes back to the floor after a success, and every
 * pause is scattered by +-20% so peers that failed together do not retry
 * together.  Pure arithmetic on openssl's random bytes; no timers here.
 */
#ifndef DECOD_BACKOFF_H
#define DECOD_BACKOFF_H

#include <stdint.h>

struct backoff {
	int64_t min_ms;		/* the first pause */
	int64_t max_ms;		/* no pause is (before jitter) longer */
	int64_t cur_ms;		/* the pause backoff_next hands out next */
};

/* backoff_jitter - ms scattered by +-20% (0 stays 0) */
int64_t backoff_jitter(int64_t ms);

/* backoff_init - floor min_ms, cap max_ms (max_ms < min_ms: min_ms) */
void backoff_init(struct backoff *b, int64_t min_ms, int64_t max_ms);

/*
 * backoff_next - a failure: the pause to wait now (jittered), and the next
 * one doubled, up to the cap
 */
int64_t backoff_next(struct backoff *b);

/* backoff_peek - the pause backoff_next would base its answer on (no jitter) */
int64_t backoff_peek(const struct backoff *b);

/* backoff_reset - a success: the next failure waits min_ms again */
void backoff_reset(struct backoff *b);

#endif
