/*
 * stage_timer - the loop's timers (stage.h): a binary min-heap by due
 * time (then id, so timers due together run in the order they were made),
 * and a table from id to heap slot, so that adding, cancelling and taking
 * the next due timer cost log n however many are armed.  A front door
 * holding 10,000 CRs keeps 10,000 timers armed; a loop turn used to scan
 * them all twice (its timeout, the due ones) and every cancel once.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/stage.h"
#include "common/stage_impl.h"
#include "common/util.h"

static size_t
slot_of(int64_t id, size_t cap)
{
	return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static struct tslot *
tab_find(struct stage *st, int64_t id)
{
	if (st->tab_cap == 0)
		return NULL;
	for (size_t i = slot_of(id, st->tab_cap);; i = (i + 1) & (st->tab_cap - 1)) {
		if (st->tab[i].id == id)
			return &st->tab[i];
		if (st->tab[i].id == 0)
			return NULL;
	}
}

static void
tab_put(struct stage *st, int64_t id, size_t pos)
{
	size_t i;

	if ((st->ntimers + 1) * 2 > st->tab_cap) {
		struct tslot *old = st->tab;
		size_t oldcap = st->tab_cap;

		st->tab_cap = oldcap ? oldcap * 2 : 64;
		st->tab = xcalloc(st->tab_cap, sizeof(*st->tab));
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].id != 0) {
				for (i = slot_of(old[k].id, st->tab_cap); st->tab[i].id != 0;
				    i = (i + 1) & (st->tab_cap - 1))
					;
				st->tab[i] = old[k];
			}
		free(old);
	}
	for (i = slot_of(id, st->tab_cap); st->tab[i].id != 0 && st->tab[i].id != id;
	    i = (i + 1) & (st->tab_cap - 1))
		;
	st->tab[i].id = id;
	st->tab[i].pos = pos;
}

/* tab_del - free id's slot, moving back the entries its probe run passed over */
static void
tab_del(struct stage *st, struct tslot *s)
{
	size_t mask = st->tab_cap - 1, i = (size_t)(s - st->tab), j = i, home;

	st->tab[i].id = 0;
	for (;;) {
		j = (j + 1) & mask;
		if (st->tab[j].id == 0)
			return;
		home = slot_of(st->tab[j].id, st->tab_cap);
		/* j stays unless its home lies cyclically outside (i, j] */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		st->tab[i] = st->tab[j];
		st->tab[j].id = 0;
		i = j;
	}
}

static int
before(const struct timer *a, const struct timer *b)
{
	return a->at != b->at ? a->at < b->at : a->id < b->id;
}

/* place - timer t into heap slot i, its table entry following */
static void
place(struct stage *st, size_t i, const struct timer *t)
{
	st->timers[i] = *t;
	tab_find(st, t->id)->pos = i;
}

static void
sift_up(struct stage *st, size_t i)
{
	struct timer t = st->timers[i];

	while (i > 0 && before(&t, &st->timers[(i - 1) / 2])) {
		place(st, i, &st->timers[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(st, i, &t);
}

static void
sift_down(struct stage *st, size_t i)
{
	struct timer t = st->timers[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= st->ntimers)
			break;
		if (c + 1 < st->ntimers && before(&st->timers[c + 1], &st->timers[c]))
			c++;
		if (!before(&st->timers[c], &t))
			break;
		place(st, i, &st->timers[c]);
		i = c;
	}
	place(st, i, &t);
}

/* remove_at - take heap slot i out (its id's table entry goes too) */
static void
remove_at(struct stage *st, size_t i)
{
	tab_del(st, tab_find(st, st->timers[i].id));
	if (i == --st->ntimers)
		return;
	st->timers[i] = st->timers[st->ntimers];
	tab_find(st, st->timers[i].id)->pos = i;
	if (i > 0 && before(&st->timers[i], &st->timers[(i - 1) / 2]))
		sift_up(st, i);
	else
		sift_down(st, i);
}

int64_t
stage_add_timer(struct stage *st, int64_t after_ms, stage_timer_cb cb, void *arg)
{
	struct timer t = { ++st->timer_seq, now_ms() + (after_ms > 0 ? after_ms : 0), cb, arg };

	if (st->ntimers == st->cap_timers) {
		st->cap_timers = st->cap_timers ? st->cap_timers * 2 : 64;
		st->timers = xrealloc(st->timers, st->cap_timers * sizeof(*st->timers));
	}
	tab_put(st, t.id, st->ntimers);
	st->timers[st->ntimers++] = t;
	sift_up(st, st->ntimers - 1);
	return t.id;
}

void
stage_cancel_timer(struct stage *st, int64_t id)
{
	struct tslot *s = id > 0 ? tab_find(st, id) : NULL;

	if (s != NULL)
		remove_at(st, s->pos);
}

int64_t
stage_timers_next(struct stage *st, int64_t none)
{
	return st->ntimers > 0 && st->timers[0].at < none ? st->timers[0].at : none;
}

void
stage_timers_run(struct stage *st, int64_t slice_ms)
{
	int64_t start = now_ms(), now = start, last = st->timer_seq;

	/* one made by a callback of this pass waits for the next turn */
	while (st->ntimers > 0 && st->timers[0].at <= now && st->timers[0].id <= last) {
		struct timer t = st->timers[0];

		remove_at(st, 0);
		t.cb(st, t.arg);
		now = now_ms();
		if (now - start >= slice_ms)
			break;
	}
}

void
stage_timers_free(struct stage *st)
{
	free(st->timers);
	free(st->tab);
	st->timers = NULL;
	st->tab = NULL;
	st->ntimers = st->cap_timers = st->tab_cap = 0;
}
