/*
 * stage_items - the skeleton's work (see stage.h): journal transactions
 * whose doorbells ring only once committed, the PUSH sockets they ring on
 * (dialled on first use) and the PULL socket they arrive on, the due items
 * handed to on_item, and what became of each (done, retried after a
 * growing delay, parked, or in flight until stage_finish).  The loop that
 * calls in here is stage.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/stage_impl.h"
#include "common/sync_group.h"
#include "common/util.h"
#include "proto/proto.h"

#define BATCH 64

void
stage_item_error(struct stage *st, const char *why)
{
	snprintf(st->cur_error, sizeof(st->cur_error), "%s", why ? why : "");
}

/* pusher_for - the PUSH socket dialled to stage `to`, made on first use */
static struct pusher *
pusher_for(struct stage *st, const char *to)
{
	struct pusher *p;
	int rv;

	for (int i = 0; i < st->npushers; i++)
		if (strcmp(st->pushers[i].to, to) == 0)
			return &st->pushers[i];
	if (st->npushers == MAX_PUSHERS)
		return NULL;
	p = &st->pushers[st->npushers];
	if ((rv = nng_push0_open(&p->sock)) != 0) {
		log_kv(LOG_ERROR, "cannot open push socket", "to", to, "error",
		    nng_strerror(rv), NULL);
		return NULL;
	}
	nng_socket_set_ms(p->sock, NNG_OPT_SENDTIMEO, 0);
	nng_socket_set_ms(p->sock, NNG_OPT_RECONNMINT, 50);
	nng_socket_set_ms(p->sock, NNG_OPT_RECONNMAXT, 1000);
	if ((rv = nng_dial(p->sock, stage_addr(st->cf, to), NULL, NNG_FLAG_NONBLOCK)) != 0) {
		log_kv(LOG_ERROR, "cannot dial", "to", to, "addr", stage_addr(st->cf, to),
		    "error", nng_strerror(rv), NULL);
		nng_close(p->sock);
		return NULL;
	}
	snprintf(p->to, sizeof(p->to), "%s", to);
	st->npushers++;
	return p;
}

/* ring - send a doorbell; a failure only costs latency (the peer rescans) */
static void
ring(struct stage *st, const char *to, const struct proto_msg *m)
{
	unsigned char buf[PROTO_MAX_LEN];
	struct pusher *p;
	int n, rv;

	if ((p = pusher_for(st, to)) == NULL)
		return;
	if ((n = proto_encode(m, buf, sizeof(buf))) < 0)
		return;
	if ((rv = nng_send(p->sock, buf, (size_t)n, NNG_FLAG_NONBLOCK)) != 0)
		log_kv(LOG_DEBUG, "doorbell not sent; the peer will rescan", "to", to,
		    "error", nng_strerror(rv), NULL);
}

void
stage_after_commit(struct stage *st, void (*fn)(struct stage *, void *), void *arg)
{
	if (!st->batching) {
		fn(st, arg);
		free(arg);
		return;
	}
	if (st->nafter == st->cap_after) {
		st->cap_after = st->cap_after ? st->cap_after * 2 : 16;
		st->after = xrealloc(st->after, st->cap_after * sizeof(*st->after));
	}
	st->after[st->nafter].fn = fn;
	st->after[st->nafter++].arg = arg;
}

void
stage_hold_doorbells(struct stage *st)
{
	if (!st->held && !st->batching) {
		st->held = 1;
		st->nrings = 0;
		st->ring_mark = 0;
	}
}

static void ring_all(struct stage *st);

void
stage_ring_doorbells(struct stage *st)
{
	if (!st->held)
		return;
	st->held = 0;
	ring_all(st);
}

/* ring_all - what waited for the commit, then the doorbells of what committed */
static void
ring_all(struct stage *st)
{
	for (size_t i = 0; i < st->nafter; i++) {
		st->after[i].fn(st, st->after[i].arg);
		free(st->after[i].arg);
	}
	st->nafter = 0;
	for (size_t i = 0; i < st->nrings; i++)
		ring(st, st->rings[i].to, &st->rings[i].m);
	st->nrings = 0;
	st->ring_mark = 0;
}

int
stage_begin(struct stage *st)
{
	if (journal_begin(st->j) < 0) {
		log_kv(LOG_ERROR, "journal begin failed", "error", journal_error(st->j), NULL);
		return -1;
	}
	st->in_txn = 1;
	if (!st->batching && !st->held)
		st->nrings = 0;
	st->ring_mark = st->nrings;
	return 0;
}

int64_t
stage_push(struct stage *st, const char *to, const char *kind, const char *ns,
    const char *name, const char *hash, const char *detail)
{
	int64_t id = journal_item_add(st->j, to, kind, ns, name, hash ? hash : "",
	    detail ? detail : "");
	struct proto_msg *m;

	if (id < 0) {
		log_kv(LOG_ERROR, "journal: cannot add item", "to", to, "error",
		    journal_error(st->j), NULL);
		return -1;
	}
	if (st->nrings == st->cap_rings) {
		st->cap_rings = st->cap_rings ? st->cap_rings * 2 : 64;
		st->rings = xrealloc(st->rings, st->cap_rings * sizeof(*st->rings));
	}
	m = &st->rings[st->nrings].m;
	memset(m, 0, sizeof(*m));
	m->type = PROTO_ITEM;
	m->item_id = (uint64_t)id;
	snprintf(m->kind, sizeof(m->kind), "%s", kind);
	snprintf(m->ns, sizeof(m->ns), "%s", ns);
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->hash, sizeof(m->hash), "%s", hash ? hash : "");
	snprintf(st->rings[st->nrings].to, sizeof(st->rings[0].to), "%s", to);
	st->nrings++;
	return id;
}

int
stage_commit(struct stage *st, const struct journal_item *it, const char *result)
{
	if (it != NULL && journal_item_done(st->j, it->id, result ? result : "done") < 0) {
		log_kv(LOG_ERROR, "journal: cannot mark item done", "error",
		    journal_error(st->j), NULL);
		stage_rollback(st);
		return -1;
	}
	if (journal_commit(st->j) < 0) {
		log_kv(LOG_ERROR, "journal commit failed", "error", journal_error(st->j), NULL);
		st->in_txn = 0;
		st->nrings = st->batching || st->held ? st->ring_mark : 0;
		return -1;
	}
	st->in_txn = 0;
	if (it != NULL && it->id == st->cur_id)
		st->cur_closed = 1;
	if (!st->batching && !st->held)
		ring_all(st);	/* in a batch: once the batch commits */
	return 0;
}

void
stage_rollback(struct stage *st)
{
	if (!st->in_txn)
		return;		/* already undone (a failed commit rolls back itself) */
	journal_rollback(st->j);
	st->in_txn = 0;
	st->nrings = st->batching || st->held ? st->ring_mark : 0;
}

int64_t
stage_enqueue(struct stage *st, const char *to, const char *kind, const char *ns,
    const char *name, const char *hash, const char *detail)
{
	int64_t id;

	if (stage_begin(st) < 0)
		return -1;
	if ((id = stage_push(st, to, kind, ns, name, hash, detail)) < 0) {
		stage_rollback(st);
		return -1;
	}
	if (stage_commit(st, NULL, NULL) < 0)
		return -1;
	return id;
}

static int
inflight_has(struct stage *st, int64_t id)
{
	for (size_t i = 0; i < st->ninflight; i++)
		if (st->inflight[i] == id)
			return 1;
	return 0;
}

/* inflight_del - forget an in-flight item; when it started (ms), or 0 */
static int64_t
inflight_del(struct stage *st, int64_t id)
{
	for (size_t i = 0; i < st->ninflight; i++) {
		if (st->inflight[i] == id) {
			int64_t t0 = st->inflight_t0[i];

			st->ninflight--;
			st->inflight[i] = st->inflight[st->ninflight];
			st->inflight_t0[i] = st->inflight_t0[st->ninflight];
			return t0;
		}
	}
	return 0;
}

void
stage_observe_item(struct stage *st, enum stage_result r, int64_t t0)
{
	stage_observe(st, r == STAGE_DONE ? "done" : r == STAGE_FAIL ? "failed" : "retry",
	    t0 > 0 ? (double)(now_ms() - t0) / 1000.0 : -1);
}

/* retry_delay - 1 s doubling per attempt, capped by retry_max */
static int64_t
retry_delay(struct stage *st, int attempts)
{
	int64_t d = 1000, max = conf_get_ms(st->cf, "retry_max");

	for (int i = 0; i < attempts && d < max; i++)
		d *= 2;
	return d < max ? d : max;
}

/* settle - record what became of an item */
static void
settle(struct stage *st, int64_t id, int attempts, enum stage_result r, const char *why)
{
	char ids[32];
	int rv = 0;

	snprintf(ids, sizeof(ids), "%lld", (long long)id);
	switch (r) {
	case STAGE_DONE:
		rv = journal_item_done(st->j, id, why ? why : "done");
		break;
	case STAGE_RETRY:
		rv = journal_item_retry(st->j, id, retry_delay(st, attempts), why);
		log_kv(LOG_WARN, "item will be retried", "item", ids, "error", why, NULL);
		break;
	case STAGE_FAIL:
		rv = journal_item_fail(st->j, id, why);
		log_kv(LOG_ERROR, "item failed for good", "item", ids, "error", why, NULL);
		break;
	case STAGE_ASYNC:
		break;
	}
	if (rv < 0)
		log_kv(LOG_ERROR, "journal: cannot record item result", "item", ids,
		    "error", journal_error(st->j), NULL);
}

void
stage_finish(struct stage *st, int64_t id, enum stage_result r, const char *why)
{
	struct journal_item it;

	int64_t t0;

	if (!inflight_has(st, id))
		return;
	t0 = inflight_del(st, id);
	if (r == STAGE_ASYNC)
		r = STAGE_RETRY;
	stage_observe_item(st, r, t0);
	if (journal_item_get(st->j, id, &it) != 0)
		return;
	if (it.state == ITEM_PENDING || it.state == ITEM_SUPERSEDED)
		settle(st, id, it.attempts, r, why);
	st->kick = 1;
}

/*
 * batch_open - with ops->batch, the items of one pass share one journal
 * transaction and one sync group: stage_begin/commit inside it are
 * savepoints, write_file_atomic defers its syncs.  0: open, -1: items go
 * one at a time this pass (the journal could not begin)
 */
static int
batch_open(struct stage *st)
{
	if (!st->ops->batch)
		return -1;
	if (journal_batch_begin(st->j) < 0) {
		log_kv(LOG_WARN, "journal: cannot begin a batch; items one at a time",
		    "error", journal_error(st->j), NULL);
		return -1;
	}
	st->batching = 1;
	st->nrings = 0;
	st->ring_mark = 0;
	sync_group_begin();
	return 0;
}

/*
 * batch_close - the batch's files durable under their names, then its one
 * commit, then its doorbells: truth first.  A flush or commit that fails
 * leaves this process's view of what is published ahead of the journal,
 * so the stage exits and starts again from the journal, where every item
 * of the batch is still pending (what the files say is redone, the same
 * bytes).
 */
static void
batch_close(struct stage *st, int nitems)
{
	char n[16], f[16];

	st->batching = 0;
	snprintf(n, sizeof(n), "%d", nitems);
	snprintf(f, sizeof(f), "%zu", sync_group_files());
	if (sync_group_flush() < 0) {
		log_kv(LOG_ERROR, "cannot make a batch's files durable; starting again from"
		    " the journal", "items", n, "files", f, "error", strerror(errno), NULL);
		journal_batch_rollback(st->j);
		exit(EX_IOERR);
	}
	if (journal_batch_commit(st->j) < 0) {
		log_kv(LOG_ERROR, "cannot commit a batch; starting again from the journal",
		    "items", n, "error", journal_error(st->j), NULL);
		journal_batch_rollback(st->j);
		exit(EX_IOERR);
	}
	if (nitems > 1)
		log_kv(LOG_DEBUG, "batch committed", "items", n, "files", f, NULL);
	ring_all(st);
}

/*
 * seen_before - an earlier item of this pass is about the same object: it
 * goes in the next batch, since a batch's files are renamed into place
 * only at its end and this item would read what is there now (an edit and
 * its revert in one batch would leave the first on disk)
 */
static int
seen_before(const struct journal_item *items, int i)
{
	for (int k = 0; k < i; k++)
		if (strcmp(items[k].ns, items[i].ns) == 0 &&
		    strcmp(items[k].name, items[i].name) == 0 &&
		    strcmp(items[k].kind, items[i].kind) == 0)
			return 1;
	return 0;
}

/* stage_process_due - hand every due item to on_item, oldest first */
void
stage_process_due(struct stage *st)
{
	struct journal_item *items;
	size_t max_async = st->ops->max_async > 0 ? (size_t)st->ops->max_async : 1;
	int n, rows, batch, handed = 0, full = 0;
	int64_t batch_max = 1;
	uint64_t batch_bytes = 0;
	size_t want, nitems, ninflight0;

	st->kick = 0;
	if (st->ops->on_item == NULL)
		return;		/* a stage nothing is addressed to (fetcher, webhook) */
	/*
	 * every slot in flight: nothing could be handed, and a finished one
	 * kicks again (stage_finish).  Reading the items now (a doorbell of
	 * the stage before) found only what is in flight, and a full page
	 * kicked at once: the publisher spun on its own backlog.
	 */
	if (st->ninflight >= max_async)
		return;
	if (st->ops->batch) {
		batch_max = conf_get_int(st->cf, "batch_max");
		batch_bytes = conf_get_size(st->cf, "batch_bytes");
	}
	/* the items in flight are left out in the query, not copied and skipped */
	want = (size_t)(batch_max > BATCH ? batch_max : BATCH);
	rows = journal_items_due_skip(st->j, st->ops->name, want, st->inflight, st->ninflight,
	    &items, &nitems, &st->next_due_wall);
	n = (int)nitems;
	ninflight0 = st->ninflight;
	if (rows < 0) {
		log_kv(LOG_ERROR, "journal: cannot read items", "error", journal_error(st->j),
		    NULL);
		return;
	}
	batch = n > 0 && batch_open(st) == 0;
	for (int i = 0; i < n && !stage_stopping(st); i++) {
		struct journal_item *it = &items[i];
		enum stage_result r;
		int64_t t0;

		if (i > 0)
			stage_yield(st);	/* a supervisor gone */
		if (stage_stopping(st))
			break;
		if (inflight_has(st, it->id))
			continue;
		if (st->ninflight >= max_async)
			break;
		if (batch && (handed >= batch_max || (batch_bytes > 0 &&
		    sync_group_bytes() >= batch_bytes) || seen_before(items, i))) {
			full = 1;	/* the rest in the next batch, at once */
			break;
		}
		handed++;
		st->cur_id = it->id;
		st->cur_closed = 0;
		st->cur_error[0] = '\0';
		t0 = now_ms();
		r = st->ops->on_item(st, it);
		if (st->in_txn) {
			log_kv(LOG_ERROR, "stage left a transaction open (a bug)", NULL);
			stage_rollback(st);
		}
		if (r == STAGE_ASYNC) {
			st->inflight = xrealloc(st->inflight,
			    (st->ninflight + 1) * sizeof(*st->inflight));
			st->inflight_t0 = xrealloc(st->inflight_t0,
			    (st->ninflight + 1) * sizeof(*st->inflight_t0));
			st->inflight_t0[st->ninflight] = t0;
			st->inflight[st->ninflight++] = it->id;
		} else {
			stage_observe_item(st, r, t0);
		}
		if (r != STAGE_ASYNC && !(r == STAGE_DONE && st->cur_closed)) {
			settle(st, it->id, it->attempts, r, r == STAGE_DONE ? "done" :
			    (st->cur_error[0] ? st->cur_error : "see log"));
		}
		st->cur_id = 0;
	}
	if (batch)
		batch_close(st, handed);
	if (full || rows == (int)(want + ninflight0) || (n > 0 && st->ninflight < max_async &&
	    n + (int)ninflight0 > (int)st->ninflight))
		st->kick = 1;
	free(items);
}

/* stage_recv_doorbells - drain the PULL socket; a good doorbell kicks the loop */
void
stage_recv_doorbells(struct stage *st)
{
	struct proto_msg m;
	char err[256];
	void *buf;
	size_t len;
	int rv;

	for (;;) {
		if ((rv = nng_recv(st->pull, &buf, &len, NNG_FLAG_NONBLOCK | NNG_FLAG_ALLOC)) != 0) {
			if (rv != NNG_EAGAIN)
				log_kv(LOG_WARN, "receive failed", "error", nng_strerror(rv), NULL);
			return;
		}
		if (proto_decode(buf, len, &m, err, sizeof(err)) < 0) {
			log_kv(LOG_WARN, "rejected a malformed message", "reason", err, NULL);
		} else {
			char ids[32];

			snprintf(ids, sizeof(ids), "%llu", (unsigned long long)m.item_id);
			log_kv(LOG_DEBUG, "doorbell", "item", ids, "ns", m.ns, "name", m.name,
			    NULL);
			st->kick = 1;
		}
		nng_free(buf, len);
	}
}

/* stage_open_pull - listen on the stage's own address (stage_addr) */
int
stage_open_pull(struct stage *st)
{
	const char *addr = stage_addr(st->cf, st->ops->name);
	int rv;

	if ((rv = nng_pull0_open(&st->pull)) != 0) {
		log_kv(LOG_ERROR, "cannot open pull socket", "error", nng_strerror(rv), NULL);
		return -1;
	}
	if ((rv = nng_listen(st->pull, addr, NULL, 0)) != 0) {
		log_kv(LOG_ERROR, "cannot listen", "addr", addr, "error", nng_strerror(rv), NULL);
		return -1;
	}
	if ((rv = nng_socket_get_int(st->pull, NNG_OPT_RECVFD, &st->pull_fd)) != 0) {
		log_kv(LOG_ERROR, "cannot get receive fd", "error", nng_strerror(rv), NULL);
		return -1;
	}
	return 0;
}

