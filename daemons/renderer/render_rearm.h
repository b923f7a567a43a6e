/*
 * render_rearm - the update windows armed again after the renderer starts
 */
#ifndef DECOD_RENDER_REARM_H
#define DECOD_RENDER_REARM_H

struct stage;

/*
 * render_rearm_windows - a stage timer: window timers live in the
 * renderer's process, so after a start the decofiles the journal says
 * wait for a window are rendered once more, which arms their timers again
 * (or takes the change, if it opened).  The journal's rows are read first
 * and the renders enqueued after: a write begun inside the read fails at
 * once (SQLITE_BUSY_SNAPSHOT) when another process committed meanwhile.
 * One the journal refuses is tried again, doubling from 500 ms, 8 times.
 */
void render_rearm_windows(struct stage *st, void *arg);
/* render_rearm_stop - a retry still waiting is dropped (the stage stops) */
void render_rearm_stop(struct stage *st);

#endif
