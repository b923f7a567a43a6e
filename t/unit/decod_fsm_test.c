/*
 * decod_fsm_test - the supervisor's state x event table: every cell as
 * written down here, the invariants a reader relies on (a process is
 * spawned only on the way to STARTING, signals go only to states that
 * have a process, every exit leaves the process states), and the life
 * stories the integration tests tell, replayed on the table alone.
 */
#include "config.h"

#include "daemons/decod/decod.h"
#include "t/tap.h"

#define R(st, ev, nx, act) { CHILD_##st, CHILD_EV_##ev, CHILD_##nx, CHILD_ACT_##act }

static const struct {
	enum child_state st;
	enum child_ev ev;
	enum child_state next;
	enum child_action act;
} cells[] = {
	R(DOWN, START, STARTING, SPAWN), R(DOWN, READY, DOWN, NONE),
	R(DOWN, EXIT, DOWN, NONE), R(DOWN, EXIT_WANTED, DOWN, NONE),
	R(DOWN, EXIT_RESTART, DOWN, NONE), R(DOWN, STOP, DOWN, NONE),
	R(DOWN, RESTART, STARTING, SPAWN), R(DOWN, HUP, DOWN, NONE),
	R(DOWN, TIMEOUT, DOWN, NONE), R(DOWN, SPAWN_FAILED, DOWN, NONE),

	R(STARTING, START, STARTING, NONE), R(STARTING, READY, READY, READY),
	R(STARTING, EXIT, BACKOFF, BACKOFF), R(STARTING, EXIT_WANTED, DOWN, DOWN),
	R(STARTING, EXIT_RESTART, BACKOFF, BACKOFF_NOW), R(STARTING, STOP, STOPPING, TERM),
	R(STARTING, RESTART, STOPPING, TERM_RESTART), R(STARTING, HUP, STARTING, HUP),
	R(STARTING, TIMEOUT, STOPPING, KILL_UNREADY),
	R(STARTING, SPAWN_FAILED, BACKOFF, SPAWN_RETRY),

	R(READY, START, READY, NONE), R(READY, READY, READY, NONE),
	R(READY, EXIT, BACKOFF, BACKOFF), R(READY, EXIT_WANTED, DOWN, DOWN),
	R(READY, EXIT_RESTART, BACKOFF, BACKOFF_NOW), R(READY, STOP, STOPPING, TERM),
	R(READY, RESTART, STOPPING, TERM_RESTART), R(READY, HUP, READY, HUP),
	R(READY, TIMEOUT, READY, NONE), R(READY, SPAWN_FAILED, READY, NONE),

	R(STOPPING, START, STOPPING, NONE), R(STOPPING, READY, STOPPING, NONE),
	R(STOPPING, EXIT, BACKOFF, BACKOFF), R(STOPPING, EXIT_WANTED, DOWN, DOWN),
	R(STOPPING, EXIT_RESTART, BACKOFF, BACKOFF_NOW), R(STOPPING, STOP, STOPPING, NONE),
	R(STOPPING, RESTART, STOPPING, MARK_RESTART), R(STOPPING, HUP, STOPPING, NONE),
	R(STOPPING, TIMEOUT, STOPPING, KILL), R(STOPPING, SPAWN_FAILED, STOPPING, NONE),

	R(BACKOFF, START, STARTING, SPAWN), R(BACKOFF, READY, BACKOFF, NONE),
	R(BACKOFF, EXIT, BACKOFF, NONE), R(BACKOFF, EXIT_WANTED, BACKOFF, NONE),
	R(BACKOFF, EXIT_RESTART, BACKOFF, NONE), R(BACKOFF, STOP, DOWN, NONE),
	R(BACKOFF, RESTART, STARTING, SPAWN), R(BACKOFF, HUP, BACKOFF, NONE),
	R(BACKOFF, TIMEOUT, STARTING, SPAWN), R(BACKOFF, SPAWN_FAILED, BACKOFF, NONE),
};

static int
has_process(enum child_state st)
{
	return st == CHILD_STARTING || st == CHILD_READY || st == CHILD_STOPPING;
}

static int
is_signal(enum child_action a)
{
	return a == CHILD_ACT_TERM || a == CHILD_ACT_TERM_RESTART || a == CHILD_ACT_HUP ||
	    a == CHILD_ACT_KILL || a == CHILD_ACT_KILL_UNREADY;
}

/* story - replay events from DOWN; 1 if every step lands where expected */
static int
story(const enum child_ev *evs, const enum child_state *want, size_t n)
{
	enum child_state st = CHILD_DOWN;

	for (size_t i = 0; i < n; i++) {
		st = child_rule(st, evs[i])->next;
		if (st != want[i]) {
			diag("step %zu (%s): got %s, want %s", i, child_ev_name(evs[i]),
			    child_state_name(st), child_state_name(want[i]));
			return 0;
		}
	}
	return 1;
}

int
main(void)
{
	size_t n = sizeof(cells) / sizeof(cells[0]);

	is_int(n, CHILD_NSTATES * CHILD_NEVENTS, "every state x event cell is listed here");
	for (size_t i = 0; i < n; i++) {
		const struct child_rule *r = child_rule(cells[i].st, cells[i].ev);

		ok(r->next == cells[i].next && r->action == cells[i].act, "%s + %s -> %s",
		    child_state_name(cells[i].st), child_ev_name(cells[i].ev),
		    child_state_name(cells[i].next));
	}
	for (int st = 0; st < CHILD_NSTATES; st++) {
		int spawn_ok = 1, signal_ok = 1, exit_ok = 1;

		for (int ev = 0; ev < CHILD_NEVENTS; ev++) {
			const struct child_rule *r = child_rule(st, ev);

			if ((r->action == CHILD_ACT_SPAWN) != (r->next == CHILD_STARTING &&
			    st != CHILD_STARTING))
				spawn_ok = 0;
			if (is_signal(r->action) && !has_process(st))
				signal_ok = 0;
			if (has_process(st) && (ev == CHILD_EV_EXIT || ev == CHILD_EV_EXIT_WANTED ||
			    ev == CHILD_EV_EXIT_RESTART) && has_process(r->next))
				exit_ok = 0;
		}
		ok(spawn_ok, "%s: a process is spawned exactly on the way into STARTING",
		    child_state_name(st));
		ok(signal_ok, "%s: signals only where there is a process", child_state_name(st));
		ok(exit_ok, "%s: every exit leaves the process states", child_state_name(st));
	}
	ok(child_rule(CHILD_NSTATES, CHILD_EV_START)->action == CHILD_ACT_NONE &&
	    child_rule(CHILD_READY, CHILD_NEVENTS)->next == CHILD_READY,
	    "out-of-range input changes nothing");
	{
		static const enum child_ev evs[] = { CHILD_EV_START, CHILD_EV_READY,
			CHILD_EV_EXIT, CHILD_EV_TIMEOUT, CHILD_EV_READY };
		static const enum child_state want[] = { CHILD_STARTING, CHILD_READY,
			CHILD_BACKOFF, CHILD_STARTING, CHILD_READY };

		ok(story(evs, want, 5), "kill -9: READY, death, backoff, READY again");
	}
	{
		static const enum child_ev evs[] = { CHILD_EV_START, CHILD_EV_EXIT,
			CHILD_EV_TIMEOUT, CHILD_EV_EXIT, CHILD_EV_TIMEOUT };
		static const enum child_state want[] = { CHILD_STARTING, CHILD_BACKOFF,
			CHILD_STARTING, CHILD_BACKOFF, CHILD_STARTING };

		ok(story(evs, want, 5), "failing at start: STARTING and BACKOFF in turn");
	}
	{
		static const enum child_ev evs[] = { CHILD_EV_START, CHILD_EV_READY,
			CHILD_EV_RESTART, CHILD_EV_TIMEOUT, CHILD_EV_EXIT_RESTART,
			CHILD_EV_TIMEOUT, CHILD_EV_READY };
		static const enum child_state want[] = { CHILD_STARTING, CHILD_READY,
			CHILD_STOPPING, CHILD_STOPPING, CHILD_BACKOFF, CHILD_STARTING,
			CHILD_READY };

		ok(story(evs, want, 7), "restart of a stage slow to stop: TERM, KILL, start again");
	}
	{
		static const enum child_ev evs[] = { CHILD_EV_START, CHILD_EV_TIMEOUT,
			CHILD_EV_EXIT, CHILD_EV_STOP, CHILD_EV_TIMEOUT };
		static const enum child_state want[] = { CHILD_STARTING, CHILD_STOPPING,
			CHILD_BACKOFF, CHILD_DOWN, CHILD_DOWN };

		ok(story(evs, want, 5), "not ready in time: killed, backs off; stop keeps it down");
	}
	{
		static const enum child_ev evs[] = { CHILD_EV_START, CHILD_EV_READY,
			CHILD_EV_HUP, CHILD_EV_STOP, CHILD_EV_RESTART, CHILD_EV_EXIT_RESTART };
		static const enum child_state want[] = { CHILD_STARTING, CHILD_READY,
			CHILD_READY, CHILD_STOPPING, CHILD_STOPPING, CHILD_BACKOFF };

		ok(story(evs, want, 6), "SIGHUP keeps it READY; restart while stopping restarts");
	}
	return done_testing();
}
