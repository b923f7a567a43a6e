/*
 * metrics - counters, gauges and histograms in one mutex-protected
 * registry, rendered in Prometheus text format.  What serves it is
 * elsewhere, so a program links libmicrohttpd only if it uses it: the
 * supervisor's libmicrohttpd thread (metrics_http.c), a stage's metrics
 * thread (stage_metrics_http.c).  Every entry point takes the one mutex;
 * rendering holds it while it writes the text (an update from the stage's
 * loop waits that long), and never touches the stage's state, the journal
 * or the store.  Families keep the order they were defined in; series keep the
 * order they first appeared in.  Where each program serves is decided by
 * metrics_addr, in one place, for the supervisor, the stages and decoctl.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"

#define DROPPED "decod_metrics_series_dropped_total"

struct series {
	char *labels;		/* NULL: the unlabelled one */
	double v;		/* counter, gauge; a histogram's sum */
	unsigned long long *counts;	/* histogram: per bucket (not cumulative), +Inf last */
};

struct family {
	char *name;
	char *help;
	enum metric_type type;
	double *bounds;		/* histogram upper bounds */
	size_t nbounds;
	struct series *s;
	size_t n;
	size_t *idx;		/* open addressing on the labels: series index + 1, 0 free */
	size_t cap;		/* idx's slots, a power of two over 2n (0: none yet) */
};

struct metrics {
	pthread_mutex_t mu;
	struct family *f;
	size_t n;
	void *server;		/* what serves it (metrics_http.c, stage_metrics_http.c) */
	void (*stop)(void *);
	void (*collect)(struct metrics *, void *);
	void *collect_arg;
	size_t max_series;
};

static const double default_bounds[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60
};

struct metrics *
metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	pthread_mutex_init(&m->mu, NULL);
	m->max_series = METRICS_MAX_SERIES;
	return m;
}

static pthread_once_t proc_once = PTHREAD_ONCE_INIT;
static struct metrics *proc;

static void
proc_make(void)
{
	proc = metrics_new();
	metrics_define(proc, DROPPED, METRIC_COUNTER,
	    "series not kept because their family had too many label sets (a bug)");
}

struct metrics *
metrics_proc(void)
{
	pthread_once(&proc_once, proc_make);
	return proc;
}

void
metrics_set_max_series(struct metrics *m, size_t n)
{
	pthread_mutex_lock(&m->mu);
	m->max_series = n;
	pthread_mutex_unlock(&m->mu);
}

void
metrics_free(struct metrics *m)
{
	void (*stop)(void *);
	void *server;

	if (m == NULL)
		return;
	/* stop the server without the mutex: its thread may be rendering */
	pthread_mutex_lock(&m->mu);
	stop = m->stop;
	server = m->server;
	pthread_mutex_unlock(&m->mu);
	if (stop != NULL)
		stop(server);
	for (size_t i = 0; i < m->n; i++) {
		for (size_t k = 0; k < m->f[i].n; k++) {
			free(m->f[i].s[k].labels);
			free(m->f[i].s[k].counts);
		}
		free(m->f[i].s);
		free(m->f[i].idx);
		free(m->f[i].name);
		free(m->f[i].help);
		free(m->f[i].bounds);
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

static int
same_labels(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* label_hash - of labels; the unlabelled series has its own value */
static size_t
label_hash(const char *labels)
{
	return labels != NULL ? (size_t)str_hash(labels) : 1;
}

/*
 * index_build - f's index made again for its n series (a site per label
 * set makes thousands: a walk per update was a cost per site squared)
 */
static void
index_build(struct family *f, size_t cap)
{
	free(f->idx);
	f->cap = cap;
	f->idx = xcalloc(cap, sizeof(*f->idx));
	for (size_t i = 0; i < f->n; i++) {
		size_t h = label_hash(f->s[i].labels) & (cap - 1);

		while (f->idx[h] != 0)
			h = (h + 1) & (cap - 1);
		f->idx[h] = i + 1;
	}
}

/* find_series - the series of f with labels, or NULL; caller holds the lock */
static struct series *
find_series(struct family *f, const char *labels)
{
	size_t h;

	if (f->cap == 0)
		return NULL;
	for (h = label_hash(labels) & (f->cap - 1); f->idx[h] != 0; h = (h + 1) & (f->cap - 1))
		if (same_labels(f->s[f->idx[h] - 1].labels, labels))
			return &f->s[f->idx[h] - 1];
	return NULL;
}

/* series - the series of f with labels, made on first use (NULL: too many) */
static struct series *
series(struct metrics *m, struct family *f, const char *labels)
{
	struct series *s = find_series(f, labels);

	if (s != NULL)
		return s;
	if (f->n >= m->max_series) {
		struct family *d = family(m, DROPPED);

		if (d != NULL && (s = find_series(d, NULL)) != NULL)
			s->v++;
		else if (d != NULL && d->n == 0) {
			d->s = xcalloc(1, sizeof(*d->s));
			d->s[0].v = 1;
			d->n = 1;
			index_build(d, 16);
		}
		return NULL;
	}
	f->s = xrealloc(f->s, (f->n + 1) * sizeof(*f->s));
	s = &f->s[f->n++];
	memset(s, 0, sizeof(*s));
	s->labels = labels != NULL ? xstrdup(labels) : NULL;
	if (f->type == METRIC_HISTOGRAM)
		s->counts = xcalloc(f->nbounds + 1, sizeof(*s->counts));
	if (2 * f->n > f->cap)
		index_build(f, f->cap == 0 ? 16 : 2 * f->cap);
	else {
		size_t h = label_hash(s->labels) & (f->cap - 1);

		while (f->idx[h] != 0)
			h = (h + 1) & (f->cap - 1);
		f->idx[h] = f->n;
	}
	return s;
}

static void
define(struct metrics *m, const char *name, enum metric_type type, const char *help,
    const double *bounds, size_t nb)
{
	pthread_mutex_lock(&m->mu);
	if (family(m, name) == NULL) {
		struct family *f;

		m->f = xrealloc(m->f, (m->n + 1) * sizeof(*m->f));
		f = &m->f[m->n++];
		memset(f, 0, sizeof(*f));
		f->name = xstrdup(name);
		f->help = xstrdup(help != NULL ? help : "");
		f->type = type;
		if (type == METRIC_HISTOGRAM) {
			f->bounds = xcalloc(nb, sizeof(*f->bounds));
			memcpy(f->bounds, bounds, nb * sizeof(*bounds));
			f->nbounds = nb;
		}
	}
	pthread_mutex_unlock(&m->mu);
}

void
metrics_define(struct metrics *m, const char *name, enum metric_type type, const char *help)
{
	define(m, name, type, help, default_bounds,
	    sizeof(default_bounds) / sizeof(default_bounds[0]));
}

void
metrics_define_histogram(struct metrics *m, const char *name, const char *help,
    const double *bounds, size_t n)
{
	define(m, name, METRIC_HISTOGRAM, help, bounds, n);
}

enum op { OP_ADD, OP_SET, OP_OBSERVE };

/* change - add, set or observe v on one series */
static void
change(struct metrics *m, const char *name, const char *labels, double v, enum op op)
{
	struct family *f;
	struct series *s;

	pthread_mutex_lock(&m->mu);
	if ((f = family(m, name)) == NULL) {
		pthread_mutex_unlock(&m->mu);
		fatal("metrics: %s was never defined (a bug)", name);
	}
	if ((op == OP_OBSERVE) != (f->type == METRIC_HISTOGRAM)) {
		pthread_mutex_unlock(&m->mu);
		fatal("metrics: %s is %sa histogram (a bug)", name, op == OP_OBSERVE ?
		    "not " : "");
	}
	if ((s = series(m, f, labels)) != NULL) {
		if (op == OP_SET) {
			s->v = v;
		} else if (op == OP_ADD) {
			s->v += v;
		} else {
			size_t b = 0;

			while (b < f->nbounds && v > f->bounds[b])
				b++;
			s->counts[b]++;
			s->v += v;
		}
	}
	pthread_mutex_unlock(&m->mu);
}

void
metrics_add(struct metrics *m, const char *name, const char *labels, double v)
{
	change(m, name, labels, v, OP_ADD);
}

void
metrics_set(struct metrics *m, const char *name, const char *labels, double v)
{
	change(m, name, labels, v, OP_SET);
}

void
metrics_observe(struct metrics *m, const char *name, const char *labels, double v)
{
	change(m, name, labels, v, OP_OBSERVE);
}

void
metrics_remove(struct metrics *m, const char *name, const char *labels)
{
	struct family *f;
	struct series *s;

	pthread_mutex_lock(&m->mu);
	if ((f = family(m, name)) != NULL && (s = find_series(f, labels)) != NULL) {
		free(s->labels);
		free(s->counts);
		memmove(s, s + 1, (size_t)(&f->s[f->n] - (s + 1)) * sizeof(*s));
		f->n--;
		index_build(f, f->cap);	/* the later series moved down one */
	}
	pthread_mutex_unlock(&m->mu);
}

double
metrics_value(struct metrics *m, const char *name, const char *labels)
{
	struct family *f;
	struct series *s;
	double v = 0;

	pthread_mutex_lock(&m->mu);
	if ((f = family(m, name)) != NULL && (s = find_series(f, labels)) != NULL) {
		v = s->v;
		if (f->type == METRIC_HISTOGRAM) {
			v = 0;
			for (size_t b = 0; b <= f->nbounds; b++)
				v += (double)s->counts[b];
		}
	}
	pthread_mutex_unlock(&m->mu);
	return v;
}

char *
metrics_labels(char *out, size_t outlen, ...)
{
	va_list ap;
	const char *k, *v;
	size_t o = 0;

	if (outlen == 0)
		return NULL;
	va_start(ap, outlen);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (v == NULL)
			v = "";
		if (o + strlen(k) + 4 >= outlen)
			goto full;
		o += (size_t)snprintf(out + o, outlen - o, "%s%s=\"", o ? "," : "", k);
		for (; *v != '\0'; v++) {
			const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" :
			    *v == '\n' ? "\\n" : NULL;
			size_t n = esc != NULL ? 2 : 1;

			if (o + n + 2 >= outlen)
				goto full;
			if (esc != NULL)
				memcpy(out + o, esc, 2);
			else
				out[o] = *v;
			o += n;
		}
		out[o++] = '"';
	}
	va_end(ap);
	out[o] = '\0';
	return out;
full:
	va_end(ap);
	out[0] = '\0';
	return NULL;
}

void
metrics_set_collect(struct metrics *m, void (*cb)(struct metrics *, void *), void *arg)
{
	pthread_mutex_lock(&m->mu);
	m->collect = cb;
	m->collect_arg = arg;
	pthread_mutex_unlock(&m->mu);
}

/* shortest - the shortest of %.15g..%.17g that reads back as v */
static void
shortest(double v, char *out, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, len, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

/* put_value - a sample value: whole numbers without a fraction */
static void
put_value(struct buf *b, double v)
{
	if (isnan(v))
		buf_adds(b, "NaN\n");
	else if (isinf(v))
		buf_adds(b, v > 0 ? "+Inf\n" : "-Inf\n");
	else if (v == (double)(long long)v && v < 9e15 && v > -9e15)
		buf_printf(b, "%lld\n", (long long)v);
	else {
		char s[40];

		shortest(v, s, sizeof(s));
		buf_printf(b, "%s\n", s);
	}
}

/* put_histogram - one histogram series: cumulative buckets, sum, count */
static void
put_histogram(struct buf *b, const struct family *f, const struct series *s)
{
	const char *l = s->labels != NULL ? s->labels : "", *comma = *l ? "," : "";
	unsigned long long cum = 0;

	for (size_t i = 0; i <= f->nbounds; i++) {
		cum += s->counts[i];
		if (i < f->nbounds) {
			char le[40];

			shortest(f->bounds[i], le, sizeof(le));
			buf_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", f->name, l, comma,
			    le, cum);
		} else
			buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", f->name, l, comma,
			    cum);
	}
	if (*l)
		buf_printf(b, "%s_sum{%s} ", f->name, l);
	else
		buf_printf(b, "%s_sum ", f->name);
	put_value(b, s->v);
	if (*l)
		buf_printf(b, "%s_count{%s} %llu\n", f->name, l, cum);
	else
		buf_printf(b, "%s_count %llu\n", f->name, cum);
}

static const char *
type_name(enum metric_type t)
{
	return t == METRIC_COUNTER ? "counter" : t == METRIC_GAUGE ? "gauge" : "histogram";
}

/* put_help - the HELP text, its \ and newlines escaped as the format wants */
static void
put_help(struct buf *b, const char *help)
{
	for (; *help != '\0'; help++) {
		if (*help == '\\')
			buf_adds(b, "\\\\");
		else if (*help == '\n')
			buf_adds(b, "\\n");
		else
			buf_addc(b, *help);
	}
}

char *
metrics_render(struct metrics *m, size_t *len)
{
	void (*collect)(struct metrics *, void *);
	void *arg;
	struct buf b;

	pthread_mutex_lock(&m->mu);
	collect = m->collect;
	arg = m->collect_arg;
	pthread_mutex_unlock(&m->mu);
	if (collect != NULL)
		collect(m, arg);
	buf_init(&b);
	buf_adds(&b, "");
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n; i++) {
		struct family *f = &m->f[i];

		buf_printf(&b, "# HELP %s ", f->name);
		put_help(&b, f->help);
		buf_printf(&b, "\n# TYPE %s %s\n", f->name, type_name(f->type));
		for (size_t k = 0; k < f->n; k++) {
			if (f->type == METRIC_HISTOGRAM) {
				put_histogram(&b, f, &f->s[k]);
				continue;
			}
			if (f->s[k].labels == NULL)
				buf_printf(&b, "%s ", f->name);
			else
				buf_printf(&b, "%s{%s} ", f->name, f->s[k].labels);
			put_value(&b, f->s[k].v);
		}
		/* an unlabelled counter or gauge nothing happened to yet shows a zero */
		if (f->n == 0 && f->type != METRIC_HISTOGRAM)
			buf_printf(&b, "%s 0\n", f->name);
	}
	pthread_mutex_unlock(&m->mu);
	return buf_steal(&b, len);
}

int
metrics_listen_socket(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	if (listen_addr_parse(addr, &ss, &sl) < 0) {
		snprintf(err, errlen, "\"%s\" is not HOST:PORT", addr);
		return -1;
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void
metrics_set_server(struct metrics *m, void *server, void (*stop)(void *))
{
	pthread_mutex_lock(&m->mu);
	m->server = server;
	m->stop = stop;
	pthread_mutex_unlock(&m->mu);
}

void *
metrics_server(struct metrics *m)
{
	void *server;

	pthread_mutex_lock(&m->mu);
	server = m->server;
	pthread_mutex_unlock(&m->mu);
	return server;
}

/* the fixed order of metrics ports after metrics_listen's own (the supervisor's) */
static const char *const port_order[] = {
	"decod", "fetcher", "renderer", "publisher", "notifier", "webhook", "acl", "web", NULL
};

/* who_setting - "metrics_listen_fetcher" and so on, as a string that lasts */
static const char *
who_setting(const char *who)
{
	static const char *const names[][2] = {
		{ "fetcher", "metrics_listen_fetcher" }, { "renderer", "metrics_listen_renderer" },
		{ "publisher", "metrics_listen_publisher" }, { "notifier", "metrics_listen_notifier" },
		{ "webhook", "metrics_listen_webhook" }, { "acl", "metrics_listen_acl" },
		{ "web", "metrics_listen_web" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i][0], who) == 0)
			return names[i][1];
	return "metrics_listen";
}

const char *
metrics_addr(const struct conf *cf, const char *who, char *out, size_t outlen)
{
	const char *base, *colon;
	char *end;
	long port;
	int k = -1;

	out[0] = '\0';
	if (strcmp(who, "acl") == 0) {
		const char *p = conf_get_for(cf, "metrics_port", "acl");

		if (*p != '\0' && strcmp(p, "0") != 0) {
			snprintf(out, outlen, ":%s", p);
			return "metrics_port";
		}
	}
	for (int i = 0; port_order[i] != NULL; i++)
		if (strcmp(port_order[i], who) == 0)
			k = i;
	/* a stage's own address wins over its place after metrics_listen */
	if (k > 0) {
		char name[64];

		snprintf(name, sizeof(name), "metrics_listen_%s", who);
		base = conf_get_for(cf, name, who);
		if (*base != '\0') {
			if ((colon = strrchr(base, ':')) == NULL ||
			    (base[0] == '[' && colon[-1] != ']')) {
				snprintf(out, outlen, "%s: \"%s\" is not HOST:PORT", name, base);
				return NULL;
			}
			errno = 0;
			port = strtol(colon + 1, &end, 10);
			if (errno != 0 || end == colon + 1 || *end != '\0' || port < 1 ||
			    port > 65535) {
				snprintf(out, outlen, "%s: \"%s\" wants a port from 1 to 65535",
				    name, base);
				return NULL;
			}
			snprintf(out, outlen, "%s", base);
			return who_setting(who);
		}
	}
	base = conf_get_for(cf, "metrics_listen", "decod");
	if (*base == '\0' || k < 0)
		return "metrics_listen";
	if ((colon = strrchr(base, ':')) == NULL || (base[0] == '[' && colon[-1] != ']')) {
		snprintf(out, outlen, "metrics_listen: \"%s\" is not HOST:PORT", base);
		return NULL;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || port < 1 ||
	    port + (long)(sizeof(port_order) / sizeof(port_order[0])) - 2 > 65535) {
		snprintf(out, outlen, "metrics_listen: \"%s\" wants a port from 1 to %d "
		    "(the stages take the next %d)", base,
		    65535 - (int)(sizeof(port_order) / sizeof(port_order[0])) + 2,
		    (int)(sizeof(port_order) / sizeof(port_order[0])) - 2);
		return NULL;
	}
	snprintf(out, outlen, "%.*s:%ld", (int)(colon - base), base, port + k);
	return "metrics_listen";
}

void
metrics_addr_json(struct jw *w, const struct conf *cf, const char *who)
{
	char addr[300];

	jw_key(w, "metrics");
	if (metrics_addr(cf, who, addr, sizeof(addr)) != NULL && addr[0] != '\0')
		jw_str(w, addr);
	else
		jw_null(w);
}

const char *
metrics_step_name(const char *stage)
{
	static const char *const steps[][2] = {
		{ "fetcher", "fetch" }, { "renderer", "render" },
		{ "publisher", "publish" }, { "notifier", "notify" },
	};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (strcmp(steps[i][0], stage) == 0)
			return steps[i][1];
	return NULL;
}

int
metrics_start(const struct conf *cf, const char *who,
    int (*serve)(void *arg, const char *addr, char *err, size_t errlen), void *arg)
{
	char addr[300], err[512];
	const char *setting = metrics_addr(cf, who, addr, sizeof(addr));

	if (setting == NULL) {
		log_kv(LOG_ERROR, "bad metrics setting", "error", addr, NULL);
		return -1;
	}
	if (addr[0] == '\0')
		return 0;
	if (serve(arg, addr, err, sizeof(err)) < 0) {
		log_kv(LOG_ERROR, "cannot serve metrics", "setting", setting, "addr", addr,
		    "error", err, NULL);
		return -1;
	}
	log_kv(LOG_INFO, "serving metrics", "addr", addr, "setting", setting, NULL);
	return 0;
}
