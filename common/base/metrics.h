/*
 * metrics - the one Prometheus registry every decod program keeps: counters,
 * gauges and histograms with labels, rendered in the text exposition format
 * (version 0.0.4, HELP and TYPE for each family).  The supervisor serves it
 * from libmicrohttpd's own thread (metrics_serve_addr); a stage from a
 * small server on a thread of its own (stage_metrics_http.c), without
 * libmicrohttpd.  One mutex guards the registry: every call below takes
 * it for a moment and may come from any thread; serving only renders (and
 * runs the collect hook).  A forked child must exec without calling any
 * of these (the serving thread may hold the mutex at the fork).
 *
 * Label sets are bounded: a family keeps at most METRICS_MAX_SERIES series;
 * more are dropped (counted in decod_metrics_series_dropped_total).  Callers
 * must not label by unbounded values (replicas, items, errors' text).
 */
#ifndef DECOD_METRICS_H
#define DECOD_METRICS_H

#include <stddef.h>

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

#define METRICS_MAX_SERIES 50000

struct metrics;
struct conf;

/* metrics_new - an empty registry; metrics_free stops serving and frees (NULL: no-op) */
struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* metrics_set_max_series - the bound on series per family (tests lower it) */
void metrics_set_max_series(struct metrics *m, size_t n);

/*
 * metrics_proc - the process's registry, made on first call and never
 * freed: what the stage skeleton serves and what common/ code (store, kube,
 * journal) records into without being handed a registry.
 */
struct metrics *metrics_proc(void);

/*
 * metrics_define - declare a family (name, type, help) so it is listed, with
 * value 0 when it has no labels, before anything happened.  Defining it
 * again is a no-op.  Names must be Prometheus names.  A histogram gets
 * the default buckets (5 ms to 60 s); metrics_define_histogram gives its own
 * (n upper bounds, increasing; +Inf is implied).
 */
void metrics_define(struct metrics *m, const char *name, enum metric_type type,
    const char *help);
void metrics_define_histogram(struct metrics *m, const char *name, const char *help,
    const double *bounds, size_t n);

/*
 * metrics_add / metrics_set / metrics_observe - change one series.  labels
 * is NULL for the unlabelled series, else the inside of the braces, already
 * escaped (metrics_labels), e.g. "operation=\"upsert\"".  A series of an
 * undefined family, or an observe on a family that is not a histogram,
 * aborts (a bug).
 */
void metrics_add(struct metrics *m, const char *name, const char *labels, double v);
void metrics_set(struct metrics *m, const char *name, const char *labels, double v);
void metrics_observe(struct metrics *m, const char *name, const char *labels, double v);
/* metrics_remove - forget one series (a deleted decofile's); absent is fine */
void metrics_remove(struct metrics *m, const char *name, const char *labels);
/* metrics_value - the series' value, a histogram's count (0 if none yet) */
double metrics_value(struct metrics *m, const char *name, const char *labels);

/*
 * metrics_labels - k1="v1",k2="v2" from NULL-terminated key, value pairs,
 * the values escaped as the format wants (\\, \", \n).  Returns out, or
 * NULL (out empty) when it does not fit.
 */
char *metrics_labels(char *out, size_t outlen, ...) __attribute__((sentinel));

/*
 * metrics_set_collect - cb runs before each render (on the serving
 * thread, without the mutex held, so it may call metrics_set and
 * metrics_define) to refresh gauges that are cheap to read then (a
 * file's size).  It must be thread-safe and must not touch a stage's
 * state: it runs beside the stage's loop, and two renders may run it at
 * once.
 */
void metrics_set_collect(struct metrics *m, void (*cb)(struct metrics *, void *), void *arg);

/* metrics_render - the whole registry in text format; caller frees */
char *metrics_render(struct metrics *m, size_t *len);

/*
 * metrics_listen_socket - a listening TCP socket on "HOST:PORT", "[V6]:PORT"
 * or ":PORT" (close-on-exec, blocking): the fd, or -1 with strerror in err
 */
int metrics_listen_socket(const char *addr, char *err, size_t errlen);

/*
 * metrics_set_server - what serves m, and how metrics_free stops it;
 * metrics_server - that (NULL: nothing serves it yet)
 */
void metrics_set_server(struct metrics *m, void *server, void (*stop)(void *));
void *metrics_server(struct metrics *m);

/*
 * metrics_serve - answer GET /metrics on port (every address) from a
 * libmicrohttpd thread (metrics_http.c).  0, or -1 with the reason in err.  Port 0: no-op.
 */
int metrics_serve(struct metrics *m, int port, char *err, size_t errlen);
/*
 * metrics_serve_addr - the same on "HOST:PORT", "[V6]:PORT" or ":PORT".
 * The socket is bound here, so a taken port is -1 with strerror in err.
 */
int metrics_serve_addr(struct metrics *m, const char *addr, char *err, size_t errlen);

/*
 * metrics_addr - where program who ("decod", "fetcher", ..., "web") serves
 * its metrics: metrics_listen for the supervisor, the next ports in the
 * fixed order fetcher, renderer, publisher, notifier, webhook, acl, web
 * for the stages, unless metrics_listen_STAGE gives the stage its own
 * HOST:PORT, and for acl metrics_port (any address) when that is set, as
 * the Go operator had it.  Writes "" when off.  Returns the setting that
 * decided it ("metrics_listen", "metrics_listen_fetcher"..., or
 * "metrics_port"), or NULL on a bad value (the reason in out).  Reads metrics_port only for acl and decod.
 */
const char *metrics_addr(const struct conf *cf, const char *who, char *out, size_t outlen);

/*
 * metrics_start - what every program does with its metrics setting: the
 * address metrics_addr gives who, served by serve(arg, addr, err, errlen)
 * when one is set, each outcome logged with the setting that named it.
 * 0 (served, or nothing to serve), -1 (a bad setting or a port that cannot
 * be had: the program exits 78)
 */
int metrics_start(const struct conf *cf, const char *who,
    int (*serve)(void *arg, const char *addr, char *err, size_t errlen), void *arg);

/*
 * metrics_addr_json - "metrics": the address metrics_addr gives who, or
 * null when off (or bad), as one more key of the object w is writing
 */
struct jw;
void metrics_addr_json(struct jw *w, const struct conf *cf, const char *who);

/* metrics_step_name - "fetch" for "fetcher" and so on; NULL for other stages */
const char *metrics_step_name(const char *stage);

#endif
