/*
 * teststage - a stage built on the real skeleton, for proving the journal's
 * promises before (and besides) the real stages: its effect is one line
 * "<name>" appended to <state_dir>/effects.<stage>, done at most once per
 * name even across kill -9 (it checks the file before appending, as real
 * stages check the target's content hash), then it hands the item on to
 * the next stage in one journal transaction.
 *
 * The stage's name is its program name (symlink it as alpha, beta, ...).
 * Environment (NAME is the stage's name): TESTSTAGE_NEXT_NAME (stage to
 * push to), TESTSTAGE_DELAY_MS (work time per item), TESTSTAGE_FAIL_START_NAME
 * (fail in init), TESTSTAGE_LONG_ITEM and TESTSTAGE_LONG_MS (the item of
 * that name is one operation of that long, with no stage_yield in it, as
 * a journal commit or a store write is; only a stop cuts it short).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"

static char effects_path[4096];

static int
ts_init(struct stage *st)
{
	char var[128];

	snprintf(var, sizeof(var), "TESTSTAGE_FAIL_START_%s", stage_name(st));
	if (getenv(var) != NULL) {
		log_kv(LOG_ERROR, "failing at start as asked", NULL);
		return -1;
	}
	snprintf(effects_path, sizeof(effects_path), "%s/effects.%s",
	    conf_get(stage_conf(st), "state_dir"), stage_name(st));
	return 0;
}

/*
 * long_item - TESTSTAGE_LONG_MS of work if name is TESTSTAGE_LONG_ITEM:
 * 0, or -1 when a stop cut it short
 */
static int
long_item(struct stage *st, const char *name)
{
	const char *want = getenv("TESTSTAGE_LONG_ITEM"), *ms = getenv("TESTSTAGE_LONG_MS");
	int64_t end;

	if (want == NULL || ms == NULL || strcmp(want, name) != 0)
		return 0;
	log_kv(LOG_INFO, "long item started", "item", name, NULL);
	end = now_ms() + atoi(ms);
	while (now_ms() < end) {
		if (stage_stopping(st))
			return -1;
		(void)poll(NULL, 0, 50);
	}
	log_kv(LOG_INFO, "long item ended", "item", name, NULL);
	return 0;
}

/* already_done - the effect for name is in the file */
static int
already_done(const char *name)
{
	char *data = read_file(effects_path, NULL, 0), *p;
	size_t n = strlen(name);
	int found = 0;

	if (data == NULL)
		return 0;
	for (p = data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && (p[n] == '\n' || p[n] == '\0')) {
			found = 1;
			break;
		}
	}
	free(data);
	return found;
}

static enum stage_result
ts_on_item(struct stage *st, const struct journal_item *it)
{
	char var[128];
	const char *next;
	const char *delay = getenv("TESTSTAGE_DELAY_MS");
	char line[300];
	int fd;

	/* TESTSTAGE_HOLD_<name>: keep every item in flight, never finished (a
	 * stage waiting on a peer that never answers drains its whole stop_timeout) */
	snprintf(var, sizeof(var), "TESTSTAGE_HOLD_%s", stage_name(st));
	if (getenv(var) != NULL) {
		log_kv(LOG_INFO, "holding the item", "item", it->name, NULL);
		return STAGE_ASYNC;
	}
	snprintf(var, sizeof(var), "TESTSTAGE_NEXT_%s", stage_name(st));
	next = getenv(var);
	if (delay != NULL)
		poll(NULL, 0, atoi(delay));
	if (long_item(st, it->name) < 0)
		return STAGE_RETRY;
	if (!already_done(it->name)) {
		snprintf(line, sizeof(line), "%s\n", it->name);
		if ((fd = open(effects_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		    0600)) < 0)
			return STAGE_RETRY;
		if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) || fsync(fd) < 0) {
			close(fd);
			return STAGE_RETRY;
		}
		close(fd);
	}
	if (stage_begin(st) < 0)
		return STAGE_RETRY;
	if (next != NULL && *next != '\0' &&
	    stage_push(st, next, it->kind, it->ns, it->name, it->hash, it->detail) < 0) {
		stage_rollback(st);
		return STAGE_RETRY;
	}
	return stage_commit(st, it, "effect recorded") == 0 ? STAGE_DONE : STAGE_RETRY;
}

int
main(int argc, char **argv)
{
	static struct stage_ops ops = {
		.init = ts_init,
		.on_item = ts_on_item,
		.max_async = 4,
	};
	const char *slash = strrchr(argv[0], '/');

	ops.name = slash ? slash + 1 : argv[0];
	return stage_main(argc, argv, &ops);
}
