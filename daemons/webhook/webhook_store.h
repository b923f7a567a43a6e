/*
 * webhook_store - the webhook's side of the store: the in-memory index of
 * Decofiles and injected Services, kept level by a list and a watch, and
 * the records of injected Services, written by a thread of its own.
 */
#ifndef DECOD_WEBHOOK_STORE_H
#define DECOD_WEBHOOK_STORE_H

#include <stddef.h>

#include "common/stage.h"
#include "daemons/webhook/webhook_admit.h"
#include "daemons/webhook/webhook_index.h"

struct wh_store;

/*
 * wh_store_new - watch, then list, the Decofiles and the records of
 * injected Services of st's store into a new index (def_target: the
 * target of a Decofile that names none; copied), then open the writer's
 * own store handle and start its thread.  NULL (logged) on failure.
 * The watches are driven by st's loop.
 */
struct wh_store *wh_store_new(struct stage *st, const char *def_target);

/*
 * wh_store_free - stop the writer (records not yet written are logged and
 * dropped), the watches, and free the index.  wh_store_free(NULL) is a no-op.
 */
void wh_store_free(struct wh_store *ws);

/*
 * wh_store_index - the current index; a relist replaces it, so do not keep
 * it past the current callback.
 */
struct wh_index *wh_store_index(const struct wh_store *ws);

/*
 * wh_store_track - apply r->track to the index and, when that changed it,
 * queue the record's put or delete for the writer thread.
 */
void wh_store_track(struct wh_store *ws, const struct wh_result *r);

/* wh_store_counts - record writes queued and failed (for /metrics) */
void wh_store_counts(struct wh_store *ws, size_t *pending, unsigned long *errors);

#endif
