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

/* serve_thread - metrics_start's server: libmicrohttpd's own thread */
static int
serve_thread(void *arg, const char *addr, char *err, size_t errlen)
{
	return metrics_serve_addr(arg, addr, err, errlen);
}

int
decod_metrics_start(struct sup *s)
{
	struct metrics *m = metrics_proc();

	metrics_define(m, M_RESTARTS, METRIC_COUNTER,
	    "times the supervisor started a stage again after its first start");
	metrics_define(m, M_UP, METRIC_GAUGE,
	    "1 while the stage is running and ready, else 0 (starting, backing off, down)");
	/* the journal's size too, as the renderer reports it */
	metrics_journal_size(conf_get(s->cf, "state_dir"));
	return metrics_start(s->cf, "decod", serve_thread, m);
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
