/*
 * stage - the one skeleton every stage daemon runs on.  stage_main() owns
 * options, config, logging, the journal, the spool, the store, nng sockets,
 * readiness, signals and a single-threaded poll() loop; a stage hands it a
 * struct of callbacks.  Library threads (curl, nng aio, watch readers) may
 * only call stage_wake(); everything else happens on the loop's thread.
 *
 * Work: items addressed to this stage are read from the journal (at start,
 * when a doorbell arrives, and on a rescan timer) and passed to on_item one
 * at a time, oldest first.  on_item returns:
 *   STAGE_DONE   finished; the skeleton marks it done unless the stage did
 *                (stage_commit);
 *   STAGE_RETRY  failed for now; tried again after a growing delay;
 *   STAGE_FAIL   bad for good; parked with the error;
 *   STAGE_ASYNC  the stage keeps working on it and calls stage_finish()
 *                later; the skeleton will not hand it out again meanwhile.
 */
#ifndef DECOD_STAGE_H
#define DECOD_STAGE_H

#include <stdint.h>

#include "common/journal.h"

struct conf;
struct spool;
struct store;
struct stage;

enum stage_result { STAGE_DONE = 0, STAGE_RETRY, STAGE_FAIL, STAGE_ASYNC };

struct stage_ops {
	const char *name;	/* "fetcher"; the journal's stage column */
	int use_store;		/* open the store from config */
	int (*init)(struct stage *st);		/* -1: fatal */
	/* items addressed to this stage; NULL: the stage takes none */
	enum stage_result (*on_item)(struct stage *st, const struct journal_item *it);
	void (*on_timer)(struct stage *st);	/* every timer_ms, if set */
	int timer_ms;
	int (*reload)(struct stage *st);	/* SIGHUP, after config re-read */
	void (*shutdown)(struct stage *st);	/* before exit */
	/* max items in STAGE_ASYNC at once (0: 1, i.e. strictly one at a time) */
	int max_async;
	/*
	 * batch: the due items of one pass (at most batch_max of them, and
	 * batch_bytes of files written) share one journal transaction and one
	 * sync group (sync_group.h): stage_begin/stage_commit in on_item are
	 * savepoints of the batch's transaction (an item that fails undoes
	 * only its own work), write_file_atomic and spool_put defer their
	 * syncs, and the batch's files are made durable, then the
	 * transaction commits, then the doorbells ring.  What on_item writes
	 * elsewhere (the store) is seen before the batch commits, unless it
	 * goes through stage_after_commit.
	 */
	int batch;
	/*
	 * housekeeping: this stage prunes the journal (journal_retention) and
	 * garbage-collects the spool once an hour.  One stage per host does it
	 * (the renderer), so it happens with or without the supervisor.
	 */
	int housekeeping;
};

/* stage_main - run the stage; returns the process exit status */
int stage_main(int argc, char **argv, const struct stage_ops *ops);

struct conf *stage_conf(struct stage *st);
struct journal *stage_journal(struct stage *st);
struct spool *stage_spool(struct stage *st);
struct store *stage_store(struct stage *st);	/* NULL unless use_store */
const char *stage_name(struct stage *st);
void *stage_data(struct stage *st);
void stage_set_data(struct stage *st, void *data);
int stage_stopping(struct stage *st);	/* nonzero once asked to stop */
/* stage_supervised - nonzero when started by the decod supervisor (not alone) */
int stage_supervised(struct stage *st);

/*
 * Closing an item atomically: stage_begin(), then the stage's own
 * journal_record_*() calls and stage_push() for the next stage, then
 * stage_commit(), which marks it done, commits, and only then rings the
 * doorbells.  On any error call stage_rollback().  0 or -1.
 */
int stage_begin(struct stage *st);
int64_t stage_push(struct stage *st, const char *to, const char *kind,
    const char *ns, const char *name, const char *hash, const char *detail);
int stage_commit(struct stage *st, const struct journal_item *it, const char *result);
void stage_rollback(struct stage *st);

/*
 * stage_after_commit - fn(st, arg), then free(arg), once what on_item
 * committed is committed for good: at once outside a batch, after the
 * batch's commit (and before its doorbells) inside one.  For writes
 * outside the journal that state what the item did (its status in the
 * store), so no reader sees them before the journal and the files agree.
 * Call it after stage_commit; a batch that cannot commit exits the stage.
 */
void stage_after_commit(struct stage *st, void (*fn)(struct stage *, void *), void *arg);

/*
 * stage_hold_doorbells - outside a batch, the commits from here on ring
 * nobody until stage_ring_doorbells, which rings them all: for a stage
 * that states what its commits did outside the journal (its status in the
 * store) after them, so the next stage, woken, never speaks first.  What
 * a rollback or failed commit undid is not rung.
 */
void stage_hold_doorbells(struct stage *st);
void stage_ring_doorbells(struct stage *st);

/* stage_enqueue - one item for stage `to` in its own transaction, rung; id or -1 */
int64_t stage_enqueue(struct stage *st, const char *to, const char *kind,
    const char *ns, const char *name, const char *hash, const char *detail);

/* stage_finish - end a STAGE_ASYNC item (result as on_item would return) */
void stage_finish(struct stage *st, int64_t id, enum stage_result r, const char *why);

/*
 * stage_item_error - the reason to record when the item on_item is handling
 * ends in STAGE_RETRY or STAGE_FAIL (copied; the last call wins).
 */
void stage_item_error(struct stage *st, const char *why);

/*
 * stage_observe - count one piece of work in decod_items_total{stage,result}
 * and, for the fetcher, renderer, publisher and notifier, its duration in
 * decod_<step>_duration_seconds{result}.  The skeleton does it for items
 * handed to on_item; a stage that works outside items (the fetcher's
 * polls) calls it itself.  result: "done", "retry" or "failed"; seconds
 * < 0: count only.
 */
void stage_observe(struct stage *st, const char *result, double seconds);

/*
 * stage_yield - between the items of a long pass (thousands of decofiles
 * at start-up, a batch of finished fetches), notice a supervisor gone
 * (stage_stopping() is then true), so a busy stage leaves within one
 * item's time.  Cheap: it looks at most once a millisecond.  It runs no
 * stage callback and touches neither the journal nor the store, so it may
 * come inside a transaction.  The skeleton calls it between on_item calls.
 * (A /metrics scrape does not need it: its own thread answers it.)
 */
void stage_yield(struct stage *st);

/* stage_kick - process due items soon (e.g. after a store watch event) */
void stage_kick(struct stage *st);

/* extra file descriptors in the loop */
typedef void (*stage_fd_cb)(struct stage *st, int fd, short revents, void *arg);
int stage_add_fd(struct stage *st, int fd, short events, stage_fd_cb cb, void *arg);
void stage_mod_fd(struct stage *st, int fd, short events);
void stage_del_fd(struct stage *st, int fd);

/* one-shot timers; ids > 0 */
typedef void (*stage_timer_cb)(struct stage *st, void *arg);
int64_t stage_add_timer(struct stage *st, int64_t after_ms, stage_timer_cb cb, void *arg);
void stage_cancel_timer(struct stage *st, int64_t id);

/* stage_wake - thread-safe: make the loop run once (self-pipe) */
void stage_wake(struct stage *st);
/* stage_on_wake - callback the loop runs after a stage_wake() */
void stage_set_wake_cb(struct stage *st, void (*cb)(struct stage *st, void *arg), void *arg);

/* stage_addr - the nng address stage `name` listens on (static buffer) */
const char *stage_addr(struct conf *cf, const char *name);

#endif
