/*
 * stage_watch - a store watch driven by a stage's loop, as kube_attach does
 * for a Kubernetes client: the watch's fd (when its backend has one) is
 * polled by the loop, and a timer dispatches it at least every tick_ms (or
 * sooner when the watch asks), so a backend without an fd still delivers.
 */
#ifndef DECOD_STAGE_WATCH_H
#define DECOD_STAGE_WATCH_H

struct stage;
struct store_watch;
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

#endif
