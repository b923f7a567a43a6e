/*
 * decod.h - the supervisor's own parts: children (decod_child.c), the
 * control socket (decod_ctl.c) and systemd notification (decod_notify.c).
 * Only daemons/decod/ includes this.
 */
#ifndef DECOD_DECOD_H
#define DECOD_DECOD_H

#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

struct conf;
struct journal;
struct buf;

enum child_state {
	CHILD_DOWN, CHILD_STARTING, CHILD_READY, CHILD_STOPPING, CHILD_BACKOFF,
	CHILD_NSTATES
};

/* what happens to a stage; the caller decides which exit it was */
enum child_ev {
	CHILD_EV_START,		/* wanted up: first start, `decoctl start`, added */
	CHILD_EV_READY,		/* it wrote READY on its status socket */
	CHILD_EV_EXIT,		/* reaped, nobody asked it to go: a death */
	CHILD_EV_EXIT_WANTED,	/* reaped after a stop that keeps it down */
	CHILD_EV_EXIT_RESTART,	/* reaped after a stop that restarts it */
	CHILD_EV_STOP,		/* wanted down: `decoctl stop`, removed, shutdown */
	CHILD_EV_RESTART,	/* `decoctl restart`, or settings it reads changed */
	CHILD_EV_HUP,		/* live settings it reads changed */
	CHILD_EV_TIMEOUT,	/* the state's deadline passed (backoff, ready, kill) */
	CHILD_EV_SPAWN_FAILED,	/* socketpair or fork failed */
	CHILD_NEVENTS
};

/* the one thing the supervisor does on a transition (decod_child.c) */
enum child_action {
	CHILD_ACT_NONE,
	CHILD_ACT_SPAWN,	/* fork and exec; SPAWN_FAILED if that fails */
	CHILD_ACT_READY,	/* note the time, log and audit */
	CHILD_ACT_BACKOFF,	/* count a failure, start again after a growing delay */
	CHILD_ACT_BACKOFF_NOW,	/* asked restart: start again at once, forgiven */
	CHILD_ACT_DOWN,		/* log that it stopped */
	CHILD_ACT_TERM,		/* SIGTERM, SIGKILL after the grace */
	CHILD_ACT_TERM_RESTART,	/* the same, and start it again once it exits */
	CHILD_ACT_MARK_RESTART,	/* already stopping: start it again once it exits */
	CHILD_ACT_HUP,		/* SIGHUP: re-read live settings */
	CHILD_ACT_KILL,		/* did not stop in time: SIGKILL */
	CHILD_ACT_KILL_UNREADY,	/* not ready in time: SIGKILL, a failure */
	CHILD_ACT_SPAWN_RETRY,	/* try to spawn again in a second */
};

struct child_rule {
	enum child_state next;
	enum child_action action;
};

struct child {
	char name[32];
	char path[1024];
	pid_t pid;
	enum child_state state;
	int status_fd;		/* our end of the status socket, -1 if none */
	int admin_down;		/* stopped by `decoctl stop` */
	int restart_now;	/* `decoctl restart`: no backoff after this exit */
	int removed;		/* dropped from `stages` on reload */
	unsigned restarts;	/* times started after the first */
	unsigned failures;	/* consecutive quick deaths: the backoff exponent */
	int64_t started;	/* monotonic ms */
	int64_t ready_at;
	int64_t next_start;	/* BACKOFF: when to start again */
	int64_t kill_at;	/* STOPPING: when to SIGKILL */
	int64_t grace_ms;	/* CHILD_ACT_TERM: how long it may drain */
	char exit_detail[64];	/* how it last exited, for the log */
	char *digest;		/* settings it reads that need a restart to change */
	char *live_digest;	/* settings it reads and applies on SIGHUP */
};

struct sup {
	struct conf *cf;
	struct journal *j;
	int argc;
	char **argv;		/* flags passed on to every stage */
	struct child *children;
	size_t nchildren;
	int stopping;
	int sd_ready_sent;
	struct decod_lease *lease;	/* NULL: no leader election */
	int standby;			/* another instance holds the Lease */
};

/* decod_fsm.c */
/*
 * child_rule - the transition table's cell for (st, ev): next state and
 * action.  Never NULL; out-of-range input keeps the state and does nothing.
 */
const struct child_rule *child_rule(enum child_state st, enum child_ev ev);
/* child_state_name, child_ev_name - "READY", "EXIT"; static strings */
const char *child_state_name(enum child_state st);
const char *child_ev_name(enum child_ev ev);

/* decod_child.c */
/*
 * child_event - the one way a child changes state: look up (state, ev) in
 * the table, move to the next state, perform the action.
 */
void child_event(struct sup *s, struct child *c, enum child_ev ev);
/* child_stop - CHILD_EV_STOP with grace_ms to drain before SIGKILL */
void child_stop(struct sup *s, struct child *c, int64_t grace_ms);
/* child_reaped - pid exited with status: the matching exit event */
void child_reaped(struct sup *s, pid_t pid, int status);
/* child_status_readable - read its status socket (READY, or EOF) */
void child_status_readable(struct sup *s, struct child *c);
/* children_tick - CHILD_EV_TIMEOUT for every child whose deadline passed */
void children_tick(struct sup *s);
/* children_next_event - monotonic ms of the next deadline (<= 1 s away) */
int64_t children_next_event(struct sup *s);
/* child_digest - settings stage name reads, live or not; caller frees */
char *child_digest(struct conf *cf, const char *name, int live);
/* children_all_ready - 1 if every wanted child is READY */
int children_all_ready(struct sup *s);

/* decod_ctl.c */
int ctl_open(struct sup *s);
int ctl_fd(void);
void ctl_handle(struct sup *s);
void ctl_close(void);

/* decod_check.c */
/*
 * decod_check - the configuration errors start-up would meet (store URL,
 * stage names and programs, libexec_dir), one line each on errs; their count
 */
#define DECOD_EXIT_CONFIG 78	/* EX_CONFIG: systemd's RestartPreventExitStatus */
int decod_check(const struct conf *cf, FILE *errs);

/* decod_metrics.c */
/* decod_metrics_start - define the supervisor's series, serve them; 0 or -1, logged */
int decod_metrics_start(struct sup *s);
/* decod_metrics_update - restarts and up per stage, from the children table */
void decod_metrics_update(struct sup *s);

/* decod_notify.c */
void sd_notify_send(const char *msg);
int64_t sd_watchdog_interval_ms(void);

#endif
