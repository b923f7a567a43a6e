/*
 * metrics_series - decod's own series, named and described in one place
 * (doc/metrics.md lists the same), recorded into the process registry
 * (metrics_proc) from wherever the thing happens: the journal (publishes,
 * drift repairs), the status writer (Ready), the store, the Kubernetes
 * client and the watches.  Each family is defined on first use, so a
 * program shows only what it does.  Labels are bounded: kinds, verbs,
 * codes, operations, and namespace/name of a decofile (never a replica).
 */
#ifndef DECOD_METRICS_SERIES_H
#define DECOD_METRICS_SERIES_H

#include <stddef.h>
#include <stdint.h>

/* a publish recorded for decofile ns/name at unix time ts, of bytes (0: unknown) */
void metrics_publish(const char *ns, const char *name, int64_t ts);
void metrics_published_bytes(const char *target, size_t bytes);
/* a drift on the target repaired */
void metrics_drift_repaired(void);
/* a decofile's Ready condition written (status "True" or not); gone: forget it */
void metrics_decofile_ready(const char *ns, const char *name, const char *status);
void metrics_decofile_gone(const char *ns, const char *name);
/* replicas the notifier confirmed (ok) or gave up on */
void metrics_replicas(int ok, unsigned n);
/* a store call: op ("get", "put", ...), failed or not, how long */
void metrics_store_call(const char *op, int failed, double seconds);
/* a Kubernetes API request: verb (GET, PUT, ...), HTTP code (0: no answer) */
void metrics_kube_request(const char *verb, long code);
/* a watch (source "etcd", "kube", "local") reconnected or relisted */
void metrics_watch_reconnect(const char *source);
void metrics_watch_relist(const char *source);
/* the journal's size (database and its WAL) under state_dir as a gauge, read at every scrape */
void metrics_journal_size(const char *state_dir);

#endif
