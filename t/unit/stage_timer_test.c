/*
 * stage_timer_test - the loop's timer heap against a plain list: timers
 * made in a random order with random delays, a third of them cancelled,
 * run in due order (ties in the order they were made), each once, none
 * cancelled; a timer made by a callback waits for the next pass.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stage.h"
#include "common/stage_impl.h"
#include "common/util.h"
#include "t/tap.h"

#define N 5000

static int64_t ids[N], at[N];
static int cancelled[N], ran[N], order[N], nran, bad_order;
static int64_t last_at = -1, last_id;

static void
cb(struct stage *st, void *arg)
{
	int i = (int)(intptr_t)arg;

	(void)st;
	ran[i]++;
	if (at[i] < last_at || (at[i] == last_at && ids[i] < last_id))
		bad_order++;
	last_at = at[i];
	last_id = ids[i];
	order[nran++] = i;
}

static int made_by_cb, chained;

static void
chain(struct stage *st, void *arg)
{
	(void)arg;
	chained++;
	if (!made_by_cb) {
		made_by_cb = 1;
		stage_add_timer(st, 0, chain, NULL);	/* due at once: the next pass */
	}
}

int
main(void)
{
	struct stage *st = xcalloc(1, sizeof(*st));
	int64_t base = now_ms(), armed = 0;
	int ncancel = 0, wrong = 0;

	srand(7);
	for (int i = 0; i < N; i++) {
		int64_t d = rand() % 50;

		ids[i] = stage_add_timer(st, d, cb, (void *)(intptr_t)i);
		for (size_t k = 0; k < st->ntimers; k++)	/* its due time, as recorded */
			if (st->timers[k].id == ids[i])
				at[i] = st->timers[k].at;
		armed += at[i] >= base + d;
	}
	is_int(armed, N, "each timer is due its delay from when it was made");
	for (int i = 0; i < N; i += 3) {
		stage_cancel_timer(st, ids[i]);
		cancelled[i] = 1;
		ncancel++;
	}
	stage_cancel_timer(st, ids[0]);		/* twice: nothing */
	stage_cancel_timer(st, 0);		/* no such timer: nothing */
	is_int((long long)st->ntimers, N - ncancel, "cancelled timers are gone");
	ok(stage_timers_next(st, base + 1000000) <= base + 50, "the next due is the soonest");
	while (st->ntimers > 0)
		stage_timers_run(st, 1000000);
	for (int i = 0; i < N; i++)
		wrong += cancelled[i] ? ran[i] != 0 : ran[i] != 1;
	is_int(wrong, 0, "every armed timer ran once, no cancelled one ran");
	is_int(nran, N - ncancel, "... %d of them", N - ncancel);
	is_int(bad_order, 0, "in due order, ties in the order they were made");
	is_int((long long)stage_timers_next(st, 42), 42, "none left: the caller's default");

	stage_add_timer(st, 0, chain, NULL);
	stage_timers_run(st, 1000000);
	is_int(chained, 1, "a timer made by a callback does not run in the same pass");
	stage_timers_run(st, 1000000);
	is_int(chained, 2, "... it runs in the next");
	stage_timers_free(st);
	free(st);
	return done_testing();
}
