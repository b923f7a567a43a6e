/*
 * decod_metrics - the supervisor's own series: each stage's restarts and
 * whether it is up (READY), refreshed from the children table on every turn
 * of the loop, and served on metrics_listen itself (the stages take the
 * ports after it).  The HTTP thread reads only the registry.
 */
#include "config.h"

#include "common/conf.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_series.h"
#include "common/util.h"
#include "daemons/decod/decod.h"

#define M_RESTARTS "decod_stage_restarts_total"
#define M_UP "decod_stage_up"

/* journal_size - the collect hook: the journal's bytes, read at scrape time */
static void
journal_size(struct metrics *m, void *arg)
{
	(void)m;
	metrics_journal_size(arg);
}

int
decod_metrics_start(struct sup *s)
{
	static char state_dir[4096];	/* the collect hook's, for the process's life */
	struct metrics *m = metrics_proc();
	char addr[300], err[512];
	const char *setting = metrics_addr(s->cf, "decod", addr, sizeof(addr));

	metrics_define(m, M_RESTARTS, METRIC_COUNTER,
	    "times the supervisor started a stage again after its first start");
	metrics_define(m, M_UP, METRIC_GAUGE,
	    "1 while the stage is running and ready, else 0 (starting, backing off, down)");
	/* the journal's size too, as the renderer reports it */
	snprintf(state_dir, sizeof(state_dir), "%s", conf_get(s->cf, "state_dir"));
	metrics_journal_size(state_dir);
	metrics_set_collect(m, journal_size, state_dir);
	if (setting == NULL) {
		log_kv(LOG_ERROR, "bad metrics setting", "error", addr, NULL);
		return -1;
	}
	if (addr[0] == '\0')
		return 0;
	if (metrics_serve_addr(m, addr, err, sizeof(err)) < 0) {
		log_kv(LOG_ERROR, "cannot serve metrics", "setting", setting, "addr", addr,
		    "error", err, NULL);
		return -1;
	}
	log_kv(LOG_INFO, "serving metrics", "addr", addr, "setting", setting, NULL);
	return 0;
}

void
decod_metrics_update(struct sup *s)
{
	struct metrics *m = metrics_proc();
	char labels[96];

	for (size_t i = 0; i < s->nchildren; i++) {
		struct child *c = &s->children[i];

		metrics_labels(labels, sizeof(labels), "stage", c->name, NULL);
		if (c->removed) {
			metrics_remove(m, M_RESTARTS, labels);
			metrics_remove(m, M_UP, labels);
			continue;
		}
		metrics_set(m, M_RESTARTS, labels, c->restarts);
		metrics_set(m, M_UP, labels, !s->standby && c->state == CHILD_READY);
	}
}
