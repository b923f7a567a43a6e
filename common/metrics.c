/*
 * metrics - counters and gauges in one mutex-protected registry, rendered
 * in Prometheus text format and served by libmicrohttpd's own thread.  The
 * HTTP thread only takes the lock long enough to render; it never touches
 * the stage's state, the journal or the store.  Families keep the order
 * they were defined in; series keep the order they first appeared in.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"

struct series {
	char *labels;		/* NULL: the unlabelled one */
	double v;
};

struct family {
	char *name;
	char *help;
	enum metric_type type;
	struct series *s;
	size_t n;
};

struct metrics {
	pthread_mutex_t mu;
	struct family *f;
	size_t n;
	struct MHD_Daemon *httpd;
};

struct metrics *
metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	pthread_mutex_init(&m->mu, NULL);
	return m;
}

void
metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	if (m->httpd != NULL)
		MHD_stop_daemon(m->httpd);
	for (size_t i = 0; i < m->n; i++) {
		for (size_t k = 0; k < m->f[i].n; k++)
			free(m->f[i].s[k].labels);
		free(m->f[i].s);
		free(m->f[i].name);
		free(m->f[i].help);
	}
	free(m->f);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* family - the family called name, or NULL; caller holds the lock */
static struct family *
family(struct metrics *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->f[i].name, name) == 0)
			return &m->f[i];
	return NULL;
}

/* series - the series of f with labels, made on first use; caller holds the lock */
static struct series *
series(struct family *f, const char *labels)
{
	for (size_t i = 0; i < f->n; i++) {
		const char *l = f->s[i].labels;

		if ((l == NULL && labels == NULL) ||
		    (l != NULL && labels != NULL && strcmp(l, labels) == 0))
			return &f->s[i];
	}
	f->s = xrealloc(f->s, (f->n + 1) * sizeof(*f->s));
	f->s[f->n].labels = labels != NULL ? xstrdup(labels) : NULL;
	f->s[f->n].v = 0;
	return &f->s[f->n++];
}

void
metrics_define(struct metrics *m, const char *name, enum metric_type type, const char *help)
{
	pthread_mutex_lock(&m->mu);
	if (family(m, name) == NULL) {
		m->f = xrealloc(m->f, (m->n + 1) * sizeof(*m->f));
		memset(&m->f[m->n], 0, sizeof(m->f[0]));
		m->f[m->n].name = xstrdup(name);
		m->f[m->n].help = xstrdup(help != NULL ? help : "");
		m->f[m->n].type = type;
		m->n++;
	}
	pthread_mutex_unlock(&m->mu);
}

/* change - add (set=0) or set (set=1) v on one series */
static void
change(struct metrics *m, const char *name, const char *labels, double v, int set)
{
	struct family *f;
	struct series *s;

	pthread_mutex_lock(&m->mu);
	if ((f = family(m, name)) == NULL) {
		pthread_mutex_unlock(&m->mu);
		fatal("metrics: %s was never defined (a bug)", name);
	}
	s = series(f, labels);
	s->v = set ? v : s->v + v;
	pthread_mutex_unlock(&m->mu);
}

void
metrics_add(struct metrics *m, const char *name, const char *labels, double v)
{
	change(m, name, labels, v, 0);
}

void
metrics_set(struct metrics *m, const char *name, const char *labels, double v)
{
	change(m, name, labels, v, 1);
}

double
metrics_value(struct metrics *m, const char *name, const char *labels)
{
	struct family *f;
	double v = 0;

	pthread_mutex_lock(&m->mu);
	if ((f = family(m, name)) != NULL) {
		for (size_t i = 0; i < f->n; i++) {
			const char *l = f->s[i].labels;

			if ((l == NULL && labels == NULL) ||
			    (l != NULL && labels != NULL && strcmp(l, labels) == 0))
				v = f->s[i].v;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return v;
}

/* put_value - a sample value: whole numbers without a fraction */
static void
put_value(struct buf *b, double v)
{
	if (v == (double)(long long)v && v < 9e15 && v > -9e15)
		buf_printf(b, "%lld\n", (long long)v);
	else
		buf_printf(b, "%.17g\n", v);
}

char *
metrics_render(struct metrics *m, size_t *len)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "");
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n; i++) {
		struct family *f = &m->f[i];
		int plain = 0;

		buf_printf(&b, "# HELP %s %s\n", f->name, f->help);
		buf_printf(&b, "# TYPE %s %s\n", f->name,
		    f->type == METRIC_COUNTER ? "counter" : "gauge");
		for (size_t k = 0; k < f->n; k++) {
			if (f->s[k].labels == NULL) {
				plain = 1;
				buf_printf(&b, "%s ", f->name);
			} else {
				buf_printf(&b, "%s{%s} ", f->name, f->s[k].labels);
			}
			put_value(&b, f->s[k].v);
		}
		/* a family nothing happened to yet still shows a zero */
		if (f->n == 0 && !plain)
			buf_printf(&b, "%s 0\n", f->name);
	}
	pthread_mutex_unlock(&m->mu);
	return buf_steal(&b, len);
}

/* answer - libmicrohttpd's request handler (its own thread) */
static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_len, void **state)
{
	struct metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result rv;
	unsigned status = MHD_HTTP_OK;
	char *body;
	size_t len;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		body = xstrdup("method not allowed\n");
		len = strlen(body);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") != 0 && strcmp(url, "/") != 0) {
		body = xstrdup("not found; try /metrics\n");
		len = strlen(body);
		status = MHD_HTTP_NOT_FOUND;
	} else {
		body = metrics_render(m, &len);
	}
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	rv = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rv;
}

int
metrics_serve(struct metrics *m, int port, char *err, size_t errlen)
{
	if (port <= 0)
		return 0;
	m->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
	    (uint16_t)port, NULL, NULL, answer, m,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
	if (m->httpd == NULL) {
		snprintf(err, errlen, "cannot serve metrics on port %d (in use?)", port);
		return -1;
	}
	return 0;
}
