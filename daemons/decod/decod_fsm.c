/*
 * decod_fsm - the life of one stage process as a table, s6-style: for each
 * state and event, the next state and the one action the supervisor takes.
 * It is pure data and one lookup, so the whole table is tested without
 * forking anything (t/unit/decod_fsm_test.c); decod_child.c performs the
 * actions.  A cell that cannot happen (an exit while DOWN) keeps the state.
 */
#include "config.h"

#include <stddef.h>

#include "daemons/decod/decod.h"

#define S(st, act) { CHILD_##st, CHILD_ACT_##act }

/*
 * Rows are states, columns events in enum child_ev order:
 * START READY EXIT EXIT_WANTED EXIT_RESTART STOP RESTART HUP TIMEOUT SPAWN_FAILED
 */
static const struct child_rule rules[CHILD_NSTATES][CHILD_NEVENTS] = {
	[CHILD_DOWN] = {
		S(STARTING, SPAWN), S(DOWN, NONE), S(DOWN, NONE), S(DOWN, NONE),
		S(DOWN, NONE), S(DOWN, NONE), S(STARTING, SPAWN), S(DOWN, NONE),
		S(DOWN, NONE), S(DOWN, NONE),
	},
	[CHILD_STARTING] = {
		S(STARTING, NONE), S(READY, READY), S(BACKOFF, BACKOFF),
		S(DOWN, DOWN), S(BACKOFF, BACKOFF_NOW), S(STOPPING, TERM),
		S(STOPPING, TERM_RESTART), S(STARTING, HUP), S(STOPPING, KILL_UNREADY),
		S(BACKOFF, SPAWN_RETRY),
	},
	[CHILD_READY] = {
		S(READY, NONE), S(READY, NONE), S(BACKOFF, BACKOFF),
		S(DOWN, DOWN), S(BACKOFF, BACKOFF_NOW), S(STOPPING, TERM),
		S(STOPPING, TERM_RESTART), S(READY, HUP), S(READY, NONE),
		S(READY, NONE),
	},
	[CHILD_STOPPING] = {
		S(STOPPING, NONE), S(STOPPING, NONE), S(BACKOFF, BACKOFF),
		S(DOWN, DOWN), S(BACKOFF, BACKOFF_NOW), S(STOPPING, NONE),
		S(STOPPING, MARK_RESTART), S(STOPPING, NONE), S(STOPPING, KILL),
		S(STOPPING, NONE),
	},
	[CHILD_BACKOFF] = {
		S(STARTING, SPAWN), S(BACKOFF, NONE), S(BACKOFF, NONE),
		S(BACKOFF, NONE), S(BACKOFF, NONE), S(DOWN, NONE),
		S(STARTING, SPAWN), S(BACKOFF, NONE), S(STARTING, SPAWN),
		S(BACKOFF, NONE),
	},
};

const struct child_rule *
child_rule(enum child_state st, enum child_ev ev)
{
	static const struct child_rule stay[CHILD_NSTATES] = {
		S(DOWN, NONE), S(STARTING, NONE), S(READY, NONE), S(STOPPING, NONE),
		S(BACKOFF, NONE),
	};

	if ((unsigned)st >= CHILD_NSTATES)
		return &stay[CHILD_DOWN];
	if ((unsigned)ev >= CHILD_NEVENTS)
		return &stay[st];
	return &rules[st][ev];
}

const char *
child_state_name(enum child_state st)
{
	static const char *const names[] = { "DOWN", "STARTING", "READY", "STOPPING", "BACKOFF" };

	return (unsigned)st < CHILD_NSTATES ? names[st] : "?";
}

const char *
child_ev_name(enum child_ev ev)
{
	static const char *const names[] = { "START", "READY", "EXIT", "EXIT_WANTED",
		"EXIT_RESTART", "STOP", "RESTART", "HUP", "TIMEOUT", "SPAWN_FAILED" };

	return (unsigned)ev < CHILD_NEVENTS ? names[ev] : "?";
}
