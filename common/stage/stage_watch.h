/*
 * stage_watch - a store watch driven by a stage's loop, as kube_attach does
 * for a Kubernetes client: the watch's fd (when its backend has one) is
 * polled by the loop, and a timer dispatches it at least every tick_ms (or
 * sooner when the watch asks), so a backend without an fd still delivers.
 */
#ifndef DECOD_STAGE_WATCH_H
#define DECOD_STAGE_WATCH_H

#include "common/store.h"

struct stage;
struct stage_watch;

/*
 * store_watch_attach - dispatch w from st's loop until store_watch_detach;
 * dispatch errors are logged (the watch relists on its own).  tick_ms <= 0:
 * 1000.  The handle is owned by the caller; w stays the caller's too and
 * must outlive the handle.
 */
struct stage_watch *store_watch_attach(struct store_watch *w, struct stage *st, int tick_ms);
/* store_watch_detach - take w's fd and timer off the loop; NULL: no-op */
void store_watch_detach(struct stage_watch *sw);

/*
 * store_watch_open - what every stage that watches the store does: a watch
 * of prefix in st's store (cb(arg, event) from st's loop), attached as
 * store_watch_attach does.  Returns the watch and sets *sw; NULL, logged
 * with the prefix and the store's error, when the store refuses it.  Undo
 * with store_watch_close.
 */
struct store_watch *store_watch_open(struct stage *st, const char *prefix,
    store_watch_cb cb, void *arg, int tick_ms, struct stage_watch **sw);
/*
 * store_watch_open_list - store_watch_open, with every key under prefix
 * in *out as the watch saw it at its opening (store_watch_new_list: one
 * read of each value where a watch and then a list took two).  The list
 * is the caller's (store_list_free); NULL with *out empty on failure.
 */
struct store_watch *store_watch_open_list(struct stage *st, const char *prefix,
    store_watch_cb cb, void *arg, int tick_ms, struct stage_watch **sw,
    struct store_list *out);
/* store_watch_close - store_watch_detach(sw), then store_watch_free(w); NULLs: no-op */
void store_watch_close(struct store_watch *w, struct stage_watch *sw);

#endif
