/*
 * metrics - a small registry of Prometheus counters and gauges that any
 * stage can keep and serve in the text exposition format (version 0.0.4)
 * on its metrics port.  The registry is locked inside, so the HTTP thread
 * (libmicrohttpd) only ever reads a snapshot; the stage's loop updates it.
 */
#ifndef DECOD_METRICS_H
#define DECOD_METRICS_H

#include <stddef.h>

enum metric_type { METRIC_COUNTER, METRIC_GAUGE };

struct metrics;

/* metrics_new - an empty registry; metrics_free stops serving and frees (NULL: no-op) */
struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/*
 * metrics_define - declare a metric family (name, type, help) so it is
 * listed, with value 0 when it has no labels, before anything happened.
 * Defining it again is a no-op.  Names must be Prometheus names.
 */
void metrics_define(struct metrics *m, const char *name, enum metric_type type,
    const char *help);

/*
 * metrics_add / metrics_set - change one series.  labels is NULL for the
 * unlabelled series, else the inside of the braces, already escaped, e.g.
 * "operation=\"upsert\"".  A series of an undefined family aborts (a bug).
 */
void metrics_add(struct metrics *m, const char *name, const char *labels, double v);
void metrics_set(struct metrics *m, const char *name, const char *labels, double v);
/* metrics_value - the series' current value (0 if it has none yet) */
double metrics_value(struct metrics *m, const char *name, const char *labels);

/* metrics_render - the whole registry in text format; caller frees */
char *metrics_render(struct metrics *m, size_t *len);

/*
 * metrics_serve - answer GET /metrics on port (every address) from a
 * libmicrohttpd thread.  0, or -1 with the reason in err.  Port 0: no-op.
 */
int metrics_serve(struct metrics *m, int port, char *err, size_t errlen);

#endif
