/*
 * backoff - doubling, capped, jittered retry pauses (backoff.h), for every
 * retry loop that has no schedule of its own.
 */
#include "config.h"

#include "common/backoff.h"
#include "common/hash.h"

int64_t
backoff_jitter(int64_t ms)
{
	unsigned r = 0;

	if (ms <= 0)
		return 0;
	random_bytes(&r, sizeof(r));
	return ms * 8 / 10 + (int64_t)(r % (unsigned)(ms * 4 / 10 + 1));
}

void
backoff_init(struct backoff *b, int64_t min_ms, int64_t max_ms)
{
	b->min_ms = min_ms > 0 ? min_ms : 1;
	b->max_ms = max_ms > b->min_ms ? max_ms : b->min_ms;
	b->cur_ms = b->min_ms;
}

int64_t
backoff_next(struct backoff *b)
{
	int64_t now = b->cur_ms;

	b->cur_ms = now > b->max_ms / 2 ? b->max_ms : now * 2;
	return backoff_jitter(now);
}

int64_t
backoff_peek(const struct backoff *b)
{
	return b->cur_ms;
}

void
backoff_reset(struct backoff *b)
{
	b->cur_ms = b->min_ms;
}
