/*
 * metrics_series - the names, help and labels of decod's domain series,
 * each family defined on first use in the process registry.  Only cheap,
 * lock-briefly calls: these run on a stage's loop (and the store's and
 * kube client's callers), never blocking on the scrape.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/metrics.h"
#include "common/metrics_series.h"
#include "common/util.h"

#define L(buf, ...) metrics_labels(buf, sizeof(buf), __VA_ARGS__, NULL)

void
metrics_publish(const char *ns, const char *name, int64_t ts)
{
	struct metrics *m = metrics_proc();
	char l[600];

	metrics_define(m, "decod_publishes_total", METRIC_COUNTER,
	    "documents the publisher put on a target");
	metrics_define(m, "decod_decofile_last_publish_timestamp_seconds", METRIC_GAUGE,
	    "unix time of the decofile's last publish");
	metrics_add(m, "decod_publishes_total", NULL, 1);
	if (L(l, "namespace", ns, "name", name) != NULL)
		metrics_set(m, "decod_decofile_last_publish_timestamp_seconds", l, (double)ts);
}

void
metrics_published_bytes(const char *target, size_t bytes)
{
	struct metrics *m = metrics_proc();
	char l[64];

	metrics_define(m, "decod_published_bytes_total", METRIC_COUNTER,
	    "bytes of documents the publisher put on a target, by target kind");
	metrics_add(m, "decod_published_bytes_total", L(l, "target", target), (double)bytes);
}

void
metrics_drift_repaired(void)
{
	struct metrics *m = metrics_proc();

	metrics_define(m, "decod_drift_repairs_total", METRIC_COUNTER,
	    "targets found changed by someone else and put back");
	metrics_add(m, "decod_drift_repairs_total", NULL, 1);
}

void
metrics_decofile_ready(const char *ns, const char *name, const char *status)
{
	struct metrics *m = metrics_proc();
	char l[600];

	metrics_define(m, "decod_decofile_ready", METRIC_GAUGE,
	    "1 when the decofile's Ready condition is True, else 0");
	if (L(l, "namespace", ns, "name", name) != NULL)
		metrics_set(m, "decod_decofile_ready", l, strcmp(status, "True") == 0);
}

void
metrics_decofile_gone(const char *ns, const char *name)
{
	struct metrics *m = metrics_proc();
	char l[600];

	if (L(l, "namespace", ns, "name", name) == NULL)
		return;
	metrics_remove(m, "decod_decofile_ready", l);
	metrics_remove(m, "decod_decofile_last_publish_timestamp_seconds", l);
}

void
metrics_replicas(int ok, unsigned n)
{
	struct metrics *m = metrics_proc();

	metrics_define(m, "decod_replicas_notified_total", METRIC_COUNTER,
	    "replicas that confirmed they serve a new version");
	metrics_define(m, "decod_replicas_failed_total", METRIC_COUNTER,
	    "replicas the notifier gave up on (no answer, or a refusal, after its attempts)");
	metrics_add(m, ok ? "decod_replicas_notified_total" : "decod_replicas_failed_total",
	    NULL, n);
}

void
metrics_store_call(const char *op, int failed, double seconds)
{
	static const double b[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
		0.25, 0.5, 1, 2.5, 5, 10 };
	struct metrics *m = metrics_proc();
	char l[64];

	metrics_define_histogram(m, "decod_store_request_duration_seconds",
	    "how long a store call took, by operation", b, sizeof(b) / sizeof(b[0]));
	metrics_define(m, "decod_store_errors_total", METRIC_COUNTER,
	    "store calls that failed, by operation (not found is no error)");
	L(l, "op", op);
	metrics_observe(m, "decod_store_request_duration_seconds", l, seconds);
	if (failed)
		metrics_add(m, "decod_store_errors_total", l, 1);
}

void
metrics_kube_request(const char *verb, long code)
{
	struct metrics *m = metrics_proc();
	char l[64], c[16];

	metrics_define(m, "decod_kube_requests_total", METRIC_COUNTER,
	    "Kubernetes API server requests by verb and HTTP code (0: no answer)");
	snprintf(c, sizeof(c), "%ld", code);
	metrics_add(m, "decod_kube_requests_total", L(l, "verb", verb, "code", c), 1);
}

void
metrics_watch_reconnect(const char *source)
{
	struct metrics *m = metrics_proc();
	char l[64];

	metrics_define(m, "decod_watch_reconnects_total", METRIC_COUNTER,
	    "watch streams opened again after they ended or broke, by source");
	metrics_add(m, "decod_watch_reconnects_total", L(l, "source", source), 1);
}

void
metrics_watch_relist(const char *source)
{
	struct metrics *m = metrics_proc();
	char l[64];

	metrics_define(m, "decod_watch_relists_total", METRIC_COUNTER,
	    "full lists a watch had to read again (its revision was gone), by source");
	metrics_add(m, "decod_watch_relists_total", L(l, "source", source), 1);
}

/* journal_size - the collect hook: the journal's bytes, read at scrape time */
static void
journal_size(struct metrics *m, void *arg)
{
	char path[4096];
	struct stat sb;
	double total = 0;

	metrics_define(m, "decod_journal_size_bytes", METRIC_GAUGE,
	    "bytes of the journal on disk: the database and its write-ahead log");
	for (const char *const *suf = (const char *const[]){ "", "-wal", NULL }; *suf; suf++) {
		snprintf(path, sizeof(path), "%s/journal.db%s", (const char *)arg, *suf);
		if (stat(path, &sb) == 0)
			total += (double)sb.st_size;
	}
	metrics_set(m, "decod_journal_size_bytes", NULL, total);
}

void
metrics_journal_size(const char *state_dir)
{
	static char dir[4096];	/* the collect hook's, for the process's life */

	snprintf(dir, sizeof(dir), "%s", state_dir);
	journal_size(metrics_proc(), dir);
	metrics_set_collect(metrics_proc(), journal_size, dir);
}
