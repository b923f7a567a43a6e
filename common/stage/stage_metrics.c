/*
 * stage_metrics - what the skeleton records for every stage: work items by
 * stage and result, the stage's step duration (fetch, render, publish,
 * notify), and the process registry served on the stage's metrics address
 * (metrics_addr), bound here and answered from a thread of its own once
 * the stage's init is done (stage_metrics_http.c).  A port that cannot be
 * had is a broken start: the stage exits with EX_CONFIG, naming the setting.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/conf.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_series.h"
#include "common/stage.h"
#include "common/stage_impl.h"
#include "common/util.h"

#define M_ITEMS "decod_items_total"

/* step_family - "decod_fetch_duration_seconds" for the fetcher, else "" */
static void
step_family(const char *stage, char *out, size_t len)
{
	const char *step = metrics_step_name(stage);

	if (step != NULL)
		snprintf(out, len, "decod_%s_duration_seconds", step);
	else
		out[0] = '\0';
}

/* serve_here - metrics_start's server: the stage's metrics thread */
static int
serve_here(void *arg, const char *addr, char *err, size_t errlen)
{
	return stage_metrics_serve(arg, metrics_proc(), addr, err, errlen);
}

int
stage_metrics_start(struct stage *st)
{
	struct metrics *m = metrics_proc();
	char fam[64], help[128], labels[128];

	metrics_define(m, M_ITEMS, METRIC_COUNTER,
	    "work items a stage finished, by stage and result (done, retry, failed)");
	for (const char *const *r = (const char *const[]){ "done", "retry", "failed", NULL };
	    *r != NULL; r++)
		metrics_add(m, M_ITEMS, metrics_labels(labels, sizeof(labels), "stage",
		    st->ops->name, "result", *r, NULL), 0);
	step_family(st->ops->name, fam, sizeof(fam));
	if (fam[0] != '\0') {
		snprintf(help, sizeof(help), "how long one %s took, by result",
		    metrics_step_name(st->ops->name));
		metrics_define(m, fam, METRIC_HISTOGRAM, help);
	}
	/* the stage that prunes the journal reports its size (the supervisor too) */
	if (st->ops->housekeeping)
		metrics_journal_size(conf_get(st->cf, "state_dir"));
	return metrics_start(st->cf, st->ops->name, serve_here, st);
}

void
stage_observe(struct stage *st, const char *result, double seconds)
{
	struct metrics *m = metrics_proc();
	char fam[64], labels[128];

	metrics_add(m, M_ITEMS, metrics_labels(labels, sizeof(labels), "stage",
	    st->ops->name, "result", result, NULL), 1);
	step_family(st->ops->name, fam, sizeof(fam));
	if (fam[0] != '\0' && seconds >= 0)
		metrics_observe(m, fam, metrics_labels(labels, sizeof(labels), "result",
		    result, NULL), seconds);
}
