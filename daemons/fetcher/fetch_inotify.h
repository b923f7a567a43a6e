/*
 * fetch_inotify - `dir` sources watched with inotify: an edit is read within
 * milliseconds instead of at the next poll, and an unchanged folder costs
 * nothing between the (long) safety re-reads.  Where inotify is missing or
 * the watch limit is reached, the source is polled as before.
 */
#ifndef DECOD_FETCH_INOTIFY_H
#define DECOD_FETCH_INOTIFY_H

#include <stddef.h>

struct stage;
struct src;
struct fetch_inotify;

/* a watched source is still re-read this many times its period apart */
#define FETCH_INOTIFY_PERIOD_FACTOR 20
/* events for one source within this many ms are one read */
#define FETCH_INOTIFY_SETTLE_MS 10

/*
 * fetch_inotify_new - an inotify instance on st's loop, at most max_watches
 * folders over all sources; NULL when inotify cannot be had (logged: the
 * sources are polled)
 */
struct fetch_inotify *fetch_inotify_new(struct stage *st, size_t max_watches);
void fetch_inotify_free(struct fetch_inotify *fi);

/*
 * fetch_inotify_watch - watch path (a source's folder) and every folder
 * under it for s, dropping what s watched before; 1 when all of it is
 * watched, 2 when so but a folder made since the last read was added (read
 * again: what was written in it before its watch raised no event), 0 when
 * not (missing folder, limit reached: poll it).  fi may be NULL (0).
 */
int fetch_inotify_watch(struct fetch_inotify *fi, struct src *s, const char *path);

/* fetch_inotify_forget - s no longer watches anything (it goes, or is no dir) */
void fetch_inotify_forget(struct fetch_inotify *fi, struct src *s);

/* fetch_inotify_count - folders watched now (for tests and logs) */
size_t fetch_inotify_count(const struct fetch_inotify *fi);

#endif
