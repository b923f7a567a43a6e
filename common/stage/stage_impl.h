/*
 * stage_impl - the skeleton's state, shared by its two files: stage.c
 * (start-up, signals, the supervisor link, fds, timers and the loop) and
 * stage_items.c (the work: journal transactions, doorbells out and in, due
 * items and their results).  Only those include this header.
 */
#ifndef DECOD_STAGE_IMPL_H
#define DECOD_STAGE_IMPL_H

#include <stdint.h>

#include <nng/nng.h>

#include "common/stage.h"
#include "proto/proto.h"

#define MAX_PUSHERS 8

struct fdent;

struct pusher {
	char to[32];
	nng_socket sock;
};

/* a doorbell waiting for its transaction to commit */
struct ring {
	char to[32];
	struct proto_msg m;
};

/* one stage_after_commit call waiting for its batch to commit */
struct after {
	void (*fn)(struct stage *, void *);
	void *arg;
};

struct stage {
	const struct stage_ops *ops;
	struct conf *cf;
	int argc;
	char **argv;
	struct journal *j;
	struct spool *sp;
	struct store *store;
	nng_socket pull;
	int pull_fd;
	struct pusher pushers[MAX_PUSHERS];
	int npushers;
	int status_fd;
	struct stage_ctl *ctl;	/* own control socket, when unsupervised */
	struct fdent *fds;
	size_t nfds;
	struct timer *timers;	/* a heap by due time (stage_timer.c) */
	size_t ntimers, cap_timers;
	int64_t timer_seq;
	struct tslot *tab;	/* timer id -> heap slot */
	size_t tab_cap;
	int64_t *inflight;
	int64_t *inflight_t0;	/* monotonic ms each in-flight item started */
	size_t ninflight;
	struct ring *rings;	/* doorbells rung once the transaction commits */
	size_t nrings, cap_rings;
	size_t ring_mark;	/* nrings at stage_begin: a rollback drops the rest */
	struct after *after;	/* stage_after_commit's, run once the batch commits */
	size_t nafter, cap_after;
	int in_txn;
	int batching;		/* on_item runs inside a batch (ops->batch) */
	int held;		/* stage_hold_doorbells: commits queue their rings */
	int64_t cur_id;		/* item being handled by on_item, 0 if none */
	int cur_closed;		/* on_item committed it itself */
	char cur_error[512];	/* stage_item_error() for the current item */
	int kick;
	int64_t next_rescan;
	int64_t next_ops_timer;
	int64_t next_due_wall;
	void *data;
	void (*wake_cb)(struct stage *, void *);
	void *wake_arg;
	int64_t hk_timer;	/* housekeeping's next run (timer id), 0: none */
	int64_t hk_interval;	/* ... and the interval it was scheduled with */
	char alive_path[4096];	/* heartbeat file, "" until ready */
	struct mhttp *mhttp;	/* /metrics served by its thread (stage_metrics_http.c), or NULL */
	int64_t yielded;	/* now_ms() of the last stage_yield that looked */
};

/*
 * stage_check_supervisor - between items, notice at once that the
 * supervisor is gone (EOF on the status socket); stage_stopping() is true
 * from then on.  stage.c.
 */
void stage_check_supervisor(struct stage *st);

/* stage_open_pull - listen on the stage's own address; 0 or -1, logged */
int stage_open_pull(struct stage *st);
/* stage_process_due - hand every due item to on_item, oldest first */
void stage_process_due(struct stage *st);

struct timer {
	int64_t id;
	int64_t at;		/* monotonic ms */
	stage_timer_cb cb;
	void *arg;
};

/* the timers' id table: open addressing, linear probing; id 0 marks a free slot */
struct tslot {
	int64_t id;
	size_t pos;		/* the timer's index in the heap */
};

/* stage_timers_next - the sooner of the next timer's due time (monotonic ms) and none */
int64_t stage_timers_next(struct stage *st, int64_t none);
/* stage_timers_run - run the due timers (not those they make) for slice_ms at most */
void stage_timers_run(struct stage *st, int64_t slice_ms);
/* stage_timers_free - every timer dropped, their memory freed */
void stage_timers_free(struct stage *st);
/* stage_recv_doorbells - drain the PULL socket; a good doorbell kicks the loop */
void stage_recv_doorbells(struct stage *st);

/* stage_metrics_start - define the skeleton's series, serve them; 0 or -1, logged */
int stage_metrics_start(struct stage *st);
/*
 * stage_metrics_serve - bind addr for GET /metrics (stage_metrics_http.c):
 * 0, or -1 with the reason in err.  Nothing is answered before
 * stage_metrics_run; a scrape waits in the socket's backlog until then.
 */
struct metrics;
int stage_metrics_serve(struct stage *st, struct metrics *m, const char *addr, char *err,
    size_t errlen);
/*
 * stage_metrics_run - answer scrapes from a thread of its own from now on
 * (after the stage's init; no-op when nothing is served); a thread that
 * cannot be started is fatal
 */
void stage_metrics_run(struct stage *st);
/* stage_metrics_stop - stop that thread (joined), close and free it all */
void stage_metrics_stop(struct stage *st);
/* stage_observe_item - stage_observe for an item's result, timed from t0 (ms) */
void stage_observe_item(struct stage *st, enum stage_result r, int64_t t0);

#endif
