/*
 * stage_watch_test - store_watch_attach on a real stage loop over a local
 * store: a put under the watched prefix reaches the callback with no other
 * help from the stage, and after store_watch_detach nothing more does.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/util.h"
#include "t/tap.h"

#define KEY1 "/wt/Café du Marché/d%C3%A9p 1"
#define KEY2 "/wt/Café du Marché/after detach"

static struct store_watch *w;
static struct stage_watch *sw;
static int seen, seen_after, got_value;

static int64_t
scaled(int64_t ms)
{
	const char *s = getenv("DECOD_TEST_TIME_SCALE");
	int k = s != NULL ? atoi(s) : 1;

	return ms * (k > 0 ? k : 1);
}

static void
on_event(void *arg, const struct store_event *ev)
{
	(void)arg;
	if (ev->type != STORE_EV_PUT)
		return;
	if (strcmp(ev->key, KEY1) == 0) {
		seen++;
		got_value = ev->vlen == 5 && memcmp(ev->value, "ünï", 5) == 0;
	} else if (strcmp(ev->key, KEY2) == 0)
		seen_after++;
}

static void
stop(struct stage *st, void *arg)
{
	(void)st;
	(void)arg;
	raise(SIGTERM);
}

static void
after_detach(struct stage *st, void *arg)
{
	(void)arg;
	/* a few ticks of 20 ms without the glue: the event must stay undelivered */
	stage_add_timer(st, scaled(300), stop, NULL);
}

static void
poll_seen(struct stage *st, void *arg)
{
	(void)arg;
	if (seen == 0) {
		stage_add_timer(st, 10, poll_seen, NULL);
		return;
	}
	store_watch_detach(sw);
	sw = NULL;
	ok(store_put(stage_store(st), KEY2, "x", 1) == 0, "put after detach");
	after_detach(st, NULL);
}

static void
put_first(struct stage *st, void *arg)
{
	(void)arg;
	ok(store_put(stage_store(st), KEY1, "ünï", 5) == 0, "put under the prefix");
	poll_seen(st, NULL);
}

static int
init(struct stage *st)
{
	/* the folder exists before the watch, as a stage's prefix does in use */
	ok(store_put(stage_store(st), "/wt/Café du Marché/seed", "s", 1) == 0, "seed put");
	w = store_watch_new(stage_store(st), "/wt/", 0, on_event, NULL);
	ok(w != NULL, "watch opened");
	if (w == NULL)
		return -1;
	sw = store_watch_attach(w, st, 20);
	stage_add_timer(st, 0, put_first, NULL);
	stage_add_timer(st, scaled(10000), stop, NULL);	/* never hang */
	return 0;
}

static void
shutdown_cb(struct stage *st)
{
	(void)st;
	store_watch_detach(sw);
	store_watch_free(w);
}

int
main(void)
{
	char dir[] = "/tmp/stage_watch_test.XXXXXX", conf[4200], cmd[4300];
	FILE *f;
	struct stage_ops ops = {
		.name = "publisher", .use_store = 1, .init = init, .shutdown = shutdown_cb,
	};
	char *argv[] = { "publisher", "-c", conf, NULL };

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(conf, sizeof(conf), "%s/decod.conf", dir);
	if ((f = fopen(conf, "w")) == NULL)
		return 1;
	fprintf(f, "state_dir = %s\nruntime_dir = %s\nstore = local:%s/store\n", dir, dir,
	    dir);
	fclose(f);
	stage_main(3, argv, &ops);
	is_int(seen, 1, "the put reached the callback through the attached glue alone");
	ok(got_value, "with its value");
	is_int(seen_after, 0, "after store_watch_detach nothing is dispatched");
	store_watch_detach(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	return done_testing();
}
