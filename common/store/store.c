/*
 * store - picks the backend from the URL's scheme and forwards each call.
 * Backends live in store_local.c and store_etcd.c; the key layout lives in
 * store_keys.c.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/metrics_series.h"
#include "common/store_impl.h"
#include "common/util.h"

static const struct store_ops *const backends[] = {
	&store_local_ops,
	&store_etcd_ops,
};

void
store_set_error(struct store *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
}

void
store_emit(struct store_watch *w, const struct store_event *ev)
{
	w->cb(w->arg, ev);
}

/* open_mode - store_open, and store_open_existing when no_create */
static struct store *
open_mode(const char *url, const struct conf *cf, int no_create, int *missing, char *err,
    size_t errlen)
{
	const char *colon = url ? strchr(url, ':') : NULL;
	struct store *s;
	char host[64];

	if (colon == NULL) {
		snprintf(err, errlen, "store: \"%s\" is not local:PATH or etcd:URL[,URL...]",
		    url ? url : "");
		return NULL;
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		const struct store_ops *ops = backends[i];

		if (strlen(ops->scheme) != (size_t)(colon - url) ||
		    strncmp(ops->scheme, url, (size_t)(colon - url)) != 0)
			continue;
		s = xcalloc(1, sizeof(*s));
		s->ops = ops;
		s->no_create = no_create;
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(s->identity, sizeof(s->identity), "%s:%ld", host, (long)getpid());
		/* an operator-given name, where there is one: shown as the owner */
		if (cf != NULL && *conf_get(cf, "instance_id") != '\0')
			snprintf(s->identity, sizeof(s->identity), "%s:%ld",
			    conf_get(cf, "instance_id"), (long)getpid());
		if ((s->be = ops->open(s, colon + 1, cf)) == NULL) {
			snprintf(err, errlen, "store %s: %s", url, s->err);
			if (missing != NULL)
				*missing = s->missing;
			free(s);
			return NULL;
		}
		return s;
	}
	snprintf(err, errlen, "store: unknown scheme in \"%s\" (want local: or etcd:)", url);
	return NULL;
}

struct store *
store_open(const char *url, const struct conf *cf, char *err, size_t errlen)
{
	return open_mode(url, cf, 0, NULL, err, errlen);
}

struct store *
store_open_existing(const char *url, const struct conf *cf, int *missing, char *err,
    size_t errlen)
{
	*missing = 0;
	return open_mode(url, cf, 1, missing, err, errlen);
}

int
store_url_check(const char *url, char *err, size_t errlen)
{
	const char *colon = url ? strchr(url, ':') : NULL;

	if (colon == NULL) {
		snprintf(err, errlen, "store: \"%s\" is not local:PATH or etcd:URL[,URL...]",
		    url ? url : "");
		return -1;
	}
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		const char *scheme = backends[i]->scheme;

		if (strlen(scheme) != (size_t)(colon - url) ||
		    strncmp(scheme, url, (size_t)(colon - url)) != 0)
			continue;
		if (colon[1] == '\0' || strcmp(colon + 1, "//") == 0) {
			snprintf(err, errlen, "store: \"%s\" names no %s", url,
			    strcmp(scheme, "local") == 0 ? "folder" : "URL");
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "store: unknown scheme in \"%s\" (want local: or etcd:)", url);
	return -1;
}

void
store_close(struct store *s)
{
	if (s == NULL)
		return;
	s->ops->close(s->be);
	free(s);
}

const char *
store_error(const struct store *s)
{
	return s->err;
}

const char *
store_identity(const struct store *s)
{
	return s->identity;
}

/* mono_s - monotonic seconds, for the store calls' latency */
static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * TIMED - return the backend call's result, its latency and failure (< 0)
 * recorded by operation (decod_store_request_duration_seconds, ..._errors)
 */
#define TIMED(op, type, call) do { \
	double t0_ = mono_s(); \
	type rv_ = (call); \
	metrics_store_call(op, rv_ < 0, mono_s() - t0_); \
	return rv_; \
} while (0)

int
store_put(struct store *s, const char *key, const void *val, size_t len)
{
	TIMED("put", long, s->ops->put(s->be, key, val, len, 0));
}

int
store_put_volatile(struct store *s, const char *key, const void *val, size_t len)
{
	if (s->ops->put_volatile != NULL)
		TIMED("put", long, s->ops->put_volatile(s->be, key, val, len));
	TIMED("put", long, s->ops->put(s->be, key, val, len, 0));
}

static int put_many(struct store *s, const char *const *keys, const char *const *vals,
    const size_t *lens, size_t n, int volatile_);

int
store_put_many(struct store *s, const char *const *keys, const char *const *vals,
    const size_t *lens, size_t n)
{
	return put_many(s, keys, vals, lens, n, 0);
}

int
store_put_many_volatile(struct store *s, const char *const *keys, const char *const *vals,
    const size_t *lens, size_t n)
{
	return put_many(s, keys, vals, lens, n, 1);
}

static int
put_many(struct store *s, const char *const *keys, const char *const *vals,
    const size_t *lens, size_t n, int volatile_)
{
	for (size_t i = 0; i < n; i++) {
		if (keys[i] == NULL || keys[i][0] == '\0') {
			store_set_error(s, "put_many: empty key (#%zu)", i);
			return -1;
		}
		if (vals[i] == NULL && lens[i] > 0) {
			store_set_error(s, "put_many %s: no value", keys[i]);
			return -1;
		}
	}
	if (n == 0)
		return 0;
	if (s->ops->put_many != NULL)
		TIMED("put_many", long, s->ops->put_many(s->be, keys, vals, lens, n));
	for (size_t i = 0; i < n; i++)
		if ((volatile_ ? store_put_volatile(s, keys[i], vals[i] ? vals[i] : "", lens[i]) :
		    s->ops->put(s->be, keys[i], vals[i] ? vals[i] : "", lens[i], 0)) < 0)
			return -1;
	return 0;
}

int
store_put_ttl(struct store *s, const char *key, const void *val, size_t len, int ttl_s)
{
	if (ttl_s <= 0) {
		store_set_error(s, "put %s: ttl must be positive", key);
		return -1;
	}
	TIMED("put_ttl", long, s->ops->put(s->be, key, val, len, ttl_s));
}

int
store_get(struct store *s, const char *key, char **val, size_t *len)
{
	TIMED("get", long, s->ops->get(s->be, key, val, len));
}

int
store_delete(struct store *s, const char *key)
{
	TIMED("delete", long, s->ops->del(s->be, key));
}

long
store_delete_prefix(struct store *s, const char *prefix)
{
	TIMED("delete_prefix", long, s->ops->del_prefix(s->be, prefix));
}

int
store_list(struct store *s, const char *prefix, struct store_list *out)
{
	memset(out, 0, sizeof(*out));
	TIMED("list", long, s->ops->list(s->be, prefix, out));
}

void
store_list_free(struct store_list *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->kvs[i].key);
		free(l->kvs[i].value);
	}
	free(l->kvs);
	memset(l, 0, sizeof(*l));
}

size_t
store_list_seek(const struct store_list *l, const char *key)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(l->kvs[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct store_watch *
store_watch_new(struct store *s, const char *prefix, int64_t from_rev,
    store_watch_cb cb, void *arg)
{
	struct store_watch *w = xcalloc(1, sizeof(*w));

	w->s = s;
	w->cb = cb;
	w->arg = arg;
	if ((w->wbe = s->ops->watch_new(s->be, w, prefix, from_rev)) == NULL) {
		free(w);
		return NULL;
	}
	return w;
}

struct store_watch *
store_watch_new_list(struct store *s, const char *prefix, store_watch_cb cb, void *arg,
    struct store_list *out)
{
	struct store_watch *w;

	memset(out, 0, sizeof(*out));
	if (s->ops->watch_new_list == NULL) {
		if ((w = store_watch_new(s, prefix, 0, cb, arg)) != NULL &&
		    store_list(s, prefix, out) < 0) {
			store_watch_free(w);
			return NULL;
		}
		return w;
	}
	w = xcalloc(1, sizeof(*w));
	w->s = s;
	w->cb = cb;
	w->arg = arg;
	if ((w->wbe = s->ops->watch_new_list(s->be, w, prefix, out)) == NULL) {
		store_list_free(out);
		free(w);
		return NULL;
	}
	return w;
}

int
store_watch_fd(const struct store_watch *w)
{
	return w->s->ops->watch_fd(w->wbe);
}

int
store_watch_timeout_ms(const struct store_watch *w)
{
	return w->s->ops->watch_timeout_ms(w->wbe);
}

int
store_watch_dispatch(struct store_watch *w)
{
	return w->s->ops->watch_dispatch(w->wbe, w);
}

void
store_watch_free(struct store_watch *w)
{
	if (w == NULL)
		return;
	w->s->ops->watch_free(w->wbe);
	free(w);
}

int
store_try_lock(struct store *s, const char *key, char **holder)
{
	if (holder != NULL)
		*holder = NULL;
	TIMED("try_lock", long, s->ops->try_lock(s->be, key, holder));
}

int
store_try_lock_many(struct store *s, const char *const *keys, size_t n, int *results)
{
	for (size_t i = 0; i < n; i++)
		results[i] = 0;
	if (n == 0)
		return 0;
	TIMED("try_lock_many", long, s->ops->try_lock_many(s->be, keys, n, results));
}

int
store_unlock(struct store *s, const char *key)
{
	TIMED("unlock", long, s->ops->unlock(s->be, key));
}
