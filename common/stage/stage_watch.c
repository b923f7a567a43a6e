/*
 * stage_watch - the fd and timer glue between a store watch and a stage's
 * loop, written once for every stage that watches the store.  Owns the
 * loop registration only; the watch itself belongs to the caller.
 */
#include "config.h"

#include <poll.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/util.h"

struct stage_watch {
	struct store_watch *w;
	struct stage *st;
	int fd;
	int tick_ms;
	int64_t timer;
};

static void
dispatch(struct stage_watch *sw)
{
	if (store_watch_dispatch(sw->w) < 0)
		log_kv(LOG_WARN, "store watch error", "error", store_error(stage_store(sw->st)),
		    NULL);
}

static void
on_fd(struct stage *st, int fd, short revents, void *arg)
{
	(void)st;
	(void)fd;
	(void)revents;
	dispatch(arg);
}

/* next - the sooner of the tick and the watch's own deadline */
static int
next(const struct stage_watch *sw)
{
	int t = sw->tick_ms, t2;

	if ((t2 = store_watch_timeout_ms(sw->w)) > 0 && t2 < t)
		t = t2;
	return t;
}

static void
on_timer(struct stage *st, void *arg)
{
	struct stage_watch *sw = arg;

	sw->timer = 0;
	dispatch(sw);
	sw->timer = stage_add_timer(st, next(sw), on_timer, sw);
}

struct stage_watch *
store_watch_attach(struct store_watch *w, struct stage *st, int tick_ms)
{
	struct stage_watch *sw = xcalloc(1, sizeof(*sw));

	sw->w = w;
	sw->st = st;
	sw->tick_ms = tick_ms > 0 ? tick_ms : 1000;
	if ((sw->fd = store_watch_fd(w)) >= 0 &&
	    stage_add_fd(st, sw->fd, POLLIN, on_fd, sw) < 0)
		fatal("store watch: cannot add its fd to the loop");
	sw->timer = stage_add_timer(st, next(sw), on_timer, sw);
	return sw;
}

void
store_watch_detach(struct stage_watch *sw)
{
	if (sw == NULL)
		return;
	if (sw->timer > 0)
		stage_cancel_timer(sw->st, sw->timer);
	if (sw->fd >= 0)
		stage_del_fd(sw->st, sw->fd);
	free(sw);
}

/* watch_open - store_watch_open, and the opening's list into out when it is not NULL */
static struct store_watch *
watch_open(struct stage *st, const char *prefix, store_watch_cb cb, void *arg, int tick_ms,
    struct stage_watch **sw, struct store_list *out)
{
	struct store_watch *w = out != NULL ?
	    store_watch_new_list(stage_store(st), prefix, cb, arg, out) :
	    store_watch_new(stage_store(st), prefix, 0, cb, arg);

	*sw = NULL;
	if (w == NULL) {
		log_kv(LOG_ERROR, "cannot watch the store", "prefix", prefix, "error",
		    store_error(stage_store(st)), NULL);
		return NULL;
	}
	*sw = store_watch_attach(w, st, tick_ms);
	return w;
}

struct store_watch *
store_watch_open(struct stage *st, const char *prefix, store_watch_cb cb, void *arg,
    int tick_ms, struct stage_watch **sw)
{
	return watch_open(st, prefix, cb, arg, tick_ms, sw, NULL);
}

struct store_watch *
store_watch_open_list(struct stage *st, const char *prefix, store_watch_cb cb, void *arg,
    int tick_ms, struct stage_watch **sw, struct store_list *out)
{
	return watch_open(st, prefix, cb, arg, tick_ms, sw, out);
}

void
store_watch_close(struct store_watch *w, struct stage_watch *sw)
{
	store_watch_detach(sw);
	store_watch_free(w);
}
