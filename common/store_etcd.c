/*
 * store_etcd - the etcd backend of the store: etcd's v3 JSON gateway over
 * libcurl, with failover across endpoints, a deadline on every call, TLS and
 * client certificates.  It owns one curl handle for the caller's thread, one
 * per watch thread and one for the session keep-alive thread, the session
 * lease that carries job locks (kept alive, revoked on close) and the
 * per-put leases of TTL keys (never kept alive, so they expire by themselves).
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/store_impl.h"
#include "common/util.h"

#define ETCD_DEF_TIMEOUT_MS	10000
#define ETCD_DEF_SESSION_TTL	10
#define ETCD_LIST_PAGE		500
#define ETCD_MAX_RESP		(256u << 20)
#define ETCD_BACKOFF_MIN_MS	50
#define ETCD_BACKOFF_MAX_MS	2000

struct etcd_cfg {
	char **eps;		/* "http://host:port", no trailing slash */
	size_t neps;
	int64_t timeout_ms;	/* deadline of one call */
	char *cacert, *cert, *key;
	int session_ttl;	/* seconds */
};

/* client - one curl easy handle and the endpoint it uses; one per thread */
struct client {
	const struct etcd_cfg *cfg;
	CURL *h;
	struct curl_slist *hdrs;
	struct buf resp;
	size_t ep;
	const int *stop;	/* non-NULL: give up when *stop becomes set */
	char err[512];
};

struct etcd {
	struct store *s;
	struct etcd_cfg cfg;
	struct client cl;	/* the caller's thread only */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t session;	/* session lease ID, 0: none (mu) */
	int ka_running;		/* keep-alive thread started */
	int ka_stop;		/* (mu) */
	pthread_t ka;
	struct client kacl;	/* the keep-alive thread only */
};

/* prange - the etcd range of a store prefix: see prange_init */
struct prange {
	char *key, *end;	/* [key, end) as raw bytes */
	size_t klen, elen;
	char *p;		/* non-NULL: filter on "p" or "p/..." */
	size_t plen;
};

struct wev {
	struct wev *next;
	enum store_event_type type;
	char *key;
	char *val;
	size_t vlen;
	int64_t rev;
};

struct ewatch {
	struct etcd *e;
	struct client cl;	/* the watch thread only */
	struct prange r;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct wev *head, **tail;	/* (mu) */
	int stop;			/* (mu), read atomically elsewhere */
	int pfd[2];
	CURLM *m;
	struct curl_slist *hdrs;	/* no "hasleader": followers serve watches */
	/* watch thread only */
	int64_t next_rev;
	struct buf line;
	int resume_now;
	int live;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void
curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- settings ---- */

static int
conf_has(const char *name)
{
	const struct conf_setting *t = conf_settings();

	for (; t != NULL && t->name != NULL; t++)
		if (strcmp(t->name, name) == 0)
			return 1;
	return 0;
}

/* setting - the value from cf when it knows the name, else from env */
static const char *
setting(const struct conf *cf, const char *name, const char *env)
{
	const char *v;

	if (cf != NULL && conf_has(name))
		return conf_get(cf, name);
	v = getenv(env);
	return v != NULL ? v : "";
}

static void
cfg_free(struct etcd_cfg *c)
{
	for (size_t i = 0; i < c->neps; i++)
		free(c->eps[i]);
	free(c->eps);
	free(c->cacert);
	free(c->cert);
	free(c->key);
	memset(c, 0, sizeof(*c));
}

static int
cfg_file(const char *what, const char *path, char **out, char *err, size_t errlen)
{
	if (*path == '\0')
		return 0;
	if (access(path, R_OK) < 0) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return -1;
	}
	*out = xstrdup(path);
	return 0;
}

static int
cfg_load(struct etcd_cfg *c, const char *spec, const struct conf *cf, char *err, size_t errlen)
{
	const char *p = spec, *v;
	int64_t ms;

	memset(c, 0, sizeof(*c));
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		char *ep;

		while (n > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		ep = xstrndup(p, n);
		while (strlen(ep) > 8 && (ep[strlen(ep) - 1] == '/' || ep[strlen(ep) - 1] == ' '))
			ep[strlen(ep) - 1] = '\0';
		if (strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0) {
			snprintf(err, errlen, "endpoint \"%s\" is not http://HOST:PORT or https://HOST:PORT", ep);
			free(ep);
			return -1;
		}
		if (strlen(ep) <= (ep[4] == 's' ? 8u : 7u) ||
		    strchr(ep + (ep[4] == 's' ? 8 : 7), '/') != NULL ||
		    ep[strlen(ep) - 1] == '/') {
			snprintf(err, errlen, "endpoint \"%s\" must be scheme://HOST:PORT without a path", ep);
			free(ep);
			return -1;
		}
		c->eps = xrealloc(c->eps, (c->neps + 1) * sizeof(*c->eps));
		c->eps[c->neps++] = ep;
		p += n;
		if (*p == ',')
			p++;
	}
	if (c->neps == 0) {
		snprintf(err, errlen, "no endpoint (want etcd:http://HOST:PORT[,...])");
		return -1;
	}
	c->timeout_ms = ETCD_DEF_TIMEOUT_MS;
	v = setting(cf, "etcd_timeout", "DECOD_ETCD_TIMEOUT");
	if (*v != '\0') {
		if (parse_duration_ms(v, &ms) < 0 || ms <= 0) {
			snprintf(err, errlen, "etcd_timeout \"%s\" is not a positive duration", v);
			return -1;
		}
		c->timeout_ms = ms;
	}
	c->session_ttl = ETCD_DEF_SESSION_TTL;
	v = setting(cf, "session_ttl", "DECOD_SESSION_TTL");
	if (*v != '\0') {
		if (parse_duration_ms(v, &ms) < 0 || ms < 1000 || ms > 86400000) {
			snprintf(err, errlen, "session_ttl \"%s\" is not a duration of 1s to 24h", v);
			return -1;
		}
		c->session_ttl = (int)((ms + 999) / 1000);
	}
	if (cfg_file("etcd_cacert", setting(cf, "etcd_cacert", "DECOD_ETCD_CACERT"),
	    &c->cacert, err, errlen) < 0 ||
	    cfg_file("etcd_cert", setting(cf, "etcd_cert", "DECOD_ETCD_CERT"),
	    &c->cert, err, errlen) < 0 ||
	    cfg_file("etcd_key", setting(cf, "etcd_key", "DECOD_ETCD_KEY"),
	    &c->key, err, errlen) < 0)
		return -1;
	if ((c->cert == NULL) != (c->key == NULL)) {
		snprintf(err, errlen, "etcd_cert and etcd_key go together: set both or neither");
		return -1;
	}
	return 0;
}

/* ---- one HTTP client with failover ---- */

static size_t
client_write(char *p, size_t sz, size_t n, void *arg)
{
	struct client *c = arg;

	if (c->resp.len + sz * n > ETCD_MAX_RESP)
		return 0;
	buf_add(&c->resp, p, sz * n);
	return sz * n;
}

static int
client_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct client *c = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return c->stop != NULL && __atomic_load_n(c->stop, __ATOMIC_ACQUIRE);
}

static void
client_tls(CURL *h, const struct etcd_cfg *cfg)
{
	if (cfg->cacert != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, cfg->cacert);
	if (cfg->cert != NULL) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key);
	}
}

static void
client_init(struct client *c, const struct etcd_cfg *cfg, const int *stop)
{
	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->stop = stop;
	c->h = curl_easy_init();
	buf_init(&c->resp);
	c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	c->hdrs = curl_slist_append(c->hdrs, "Expect:");
	/* a member without a leader answers "no leader" at once instead of
	 * holding the request until etcd's own request timeout (7 s) */
	c->hdrs = curl_slist_append(c->hdrs, "Grpc-Metadata-hasleader: true");
	if (c->h == NULL)
		fatal("store_etcd: curl_easy_init failed");
}

static void
client_free(struct client *c)
{
	if (c->h != NULL)
		curl_easy_cleanup(c->h);
	curl_slist_free_all(c->hdrs);
	buf_free(&c->resp);
	c->h = NULL;
	c->hdrs = NULL;
}

static int
client_stopped(const struct client *c)
{
	return c->stop != NULL && __atomic_load_n(c->stop, __ATOMIC_ACQUIRE);
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * client_call - POST body to path on the current endpoint and parse the
 * answer.  Connection failures move to the next endpoint; "unavailable"
 * answers (no leader, leader changed, timeouts) are retried with backoff;
 * everything within timeout_ms.  0 with *out (caller frees) or -1 with c->err.
 */
static int
client_call(struct client *c, const char *path, const struct buf *body,
    int64_t timeout_ms, yajl_val *out)
{
	int64_t deadline = now_ms() + timeout_ms, backoff = ETCD_BACKOFF_MIN_MS;
	/*
	 * One attempt gets a quarter of the deadline (1 to 3 s): a member that
	 * lost its leader without noticing yet holds a write until etcd's own
	 * request timeout; the next member may already have a new leader.
	 */
	int64_t attempt = timeout_ms / 4 < 1000 ? 1000 : timeout_ms / 4 > 3000 ? 3000 : timeout_ms / 4;
	char last[384] = "", ebuf[CURL_ERROR_SIZE], url[512];
	size_t fails = 0;

	*out = NULL;
	for (;;) {
		const char *ep = c->cfg->eps[c->ep];
		int64_t left = deadline - now_ms();
		long status = 0;
		CURLcode rc;
		yajl_val v;
		int transient = 0;

		if (left <= 0 || client_stopped(c))
			break;
		snprintf(url, sizeof(url), "%s%s", ep, path);
		curl_easy_reset(c->h);
		buf_reset(&c->resp);
		ebuf[0] = '\0';
		curl_easy_setopt(c->h, CURLOPT_URL, url);
		curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body->data);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, client_write);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
		curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, ebuf);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)(left < attempt ? left : attempt));
		curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS,
		    (long)(left < 3000 ? left : 3000));
		curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http,https");
		if (c->stop != NULL) {
			curl_easy_setopt(c->h, CURLOPT_NOPROGRESS, 0L);
			curl_easy_setopt(c->h, CURLOPT_XFERINFOFUNCTION, client_progress);
			curl_easy_setopt(c->h, CURLOPT_XFERINFODATA, c);
		}
		client_tls(c->h, c->cfg);
		rc = curl_easy_perform(c->h);
		if (rc != CURLE_OK) {
			snprintf(last, sizeof(last), "%s: %s", ep,
			    ebuf[0] ? ebuf : curl_easy_strerror(rc));
			/* settings errors: trying again will not help */
			if (rc == CURLE_ABORTED_BY_CALLBACK || rc == CURLE_WRITE_ERROR ||
			    rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT ||
			    rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CERTPROBLEM ||
			    rc == CURLE_SSL_CACERT_BADFILE) {
				snprintf(c->err, sizeof(c->err), "etcd %s", last);
				return -1;
			}
			transient = 1;
		} else {
			curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
			v = json_parse(c->resp.data, c->resp.len, NULL);
			if (status == 200 && v != NULL) {
				*out = v;
				return 0;
			}
			if (v == NULL) {
				snprintf(last, sizeof(last), "%s: HTTP %ld with an answer that is not JSON",
				    ep, status);
				transient = status >= 500;
			} else {
				const char *msg = json_get_str(v, "error", NULL);
				int64_t code = json_get_int(v, 0, "code", NULL);

				snprintf(last, sizeof(last), "%s: %s (HTTP %ld, code %lld)", ep,
				    msg ? msg : "error", status, (long long)code);
				transient = status >= 500 || code == 14 || code == 4;
				yajl_tree_free(v);
			}
			if (!transient) {
				snprintf(c->err, sizeof(c->err), "etcd %s", last);
				return -1;
			}
		}
		/* transient: next endpoint; after a full round, wait a little */
		c->ep = (c->ep + 1) % c->cfg->neps;
		if (++fails % c->cfg->neps == 0) {
			left = deadline - now_ms();
			sleep_ms(backoff < left ? backoff : (left > 0 ? left : 0));
			backoff = backoff * 2 > ETCD_BACKOFF_MAX_MS ? ETCD_BACKOFF_MAX_MS : backoff * 2;
		}
	}
	if (client_stopped(c))
		snprintf(c->err, sizeof(c->err), "etcd: call canceled");
	else
		snprintf(c->err, sizeof(c->err), "etcd: no answer within %lld ms; last error: %s",
		    (long long)timeout_ms, last[0] ? last : "none");
	return -1;
}

/* ---- JSON bits ---- */

static void
jw_b64(struct jw *w, const char *k, const void *p, size_t n)
{
	char *b = base64_encode(p, n, 0);

	jw_key(w, k);
	jw_str(w, b);
	free(b);
}

static void
jw_i64(struct jw *w, const char *k, int64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", (long long)v);
	jw_key(w, k);
	jw_str(w, s);
}

/* b64_field - decode a base64 string field; "" when absent (zero value) */
static char *
b64_field(yajl_val v, const char *name, size_t *len)
{
	const char *s = json_get_str(v, name, NULL);
	unsigned char *d;
	size_t n = 0;

	if (s == NULL || *s == '\0' || (d = base64_decode(s, strlen(s), &n)) == NULL) {
		*len = 0;
		return xstrdup("");
	}
	*len = n;
	return (char *)d;
}

/* prefix_end - the range end that covers every key starting with p */
static char *
prefix_end(const char *p, size_t n, size_t *outn)
{
	char *e = xmalloc(n + 1);

	memcpy(e, p, n);
	while (n > 0) {
		if ((unsigned char)e[n - 1] < 0xff) {
			e[n - 1]++;
			*outn = n;
			return e;
		}
		n--;
	}
	e[0] = '\0';	/* no end: every key from p on */
	*outn = 1;
	return e;
}

/*
 * prange - the etcd range a store prefix covers.  A prefix is a path (the
 * store's rule): "/a/b" names the key "/a/b" and the keys under "/a/b/",
 * never "/a/bc"; "/a/b/" names only the keys under it; "" and "/" every
 * key.  For "/a/b" the range ["/a/b", "/a/b0") also holds keys like
 * "/a/b-c", so those are filtered out by prange_match.
 */
static void
prange_init(struct prange *r, const char *prefix)
{
	size_t n = strlen(prefix);

	memset(r, 0, sizeof(*r));
	if (n == 0 || strcmp(prefix, "/") == 0) {
		r->key = xcalloc(1, 1);
		r->klen = 1;
		r->end = xcalloc(1, 1);
		r->elen = 1;
		return;
	}
	r->key = xstrndup(prefix, n);
	r->klen = n;
	if (prefix[n - 1] == '/') {
		r->end = prefix_end(prefix, n, &r->elen);
		return;
	}
	r->end = xmalloc(n + 2);
	memcpy(r->end, prefix, n);
	r->end[n] = '/' + 1;
	r->end[n + 1] = '\0';
	r->elen = n + 1;
	r->p = xstrndup(prefix, n);
	r->plen = n;
}

static void
prange_free(struct prange *r)
{
	free(r->key);
	free(r->end);
	free(r->p);
}

static int
prange_match(const struct prange *r, const char *key, size_t klen)
{
	if (r->p == NULL)
		return 1;
	if (klen < r->plen || memcmp(key, r->p, r->plen) != 0)
		return 0;
	return klen == r->plen || key[r->plen] == '/';
}

static int
etcd_call(struct etcd *e, const char *path, const struct buf *body, yajl_val *out)
{
	if (client_call(&e->cl, path, body, e->cfg.timeout_ms, out) < 0) {
		store_set_error(e->s, "%s", e->cl.err);
		return -1;
	}
	return 0;
}

static int
check_key(struct etcd *e, const char *op, const char *key)
{
	if (key == NULL || *key == '\0') {
		store_set_error(e->s, "%s: empty key", op);
		return -1;
	}
	return 0;
}

/* ---- leases ---- */

static int64_t
lease_grant(struct client *c, int ttl, int64_t timeout_ms, char *err, size_t errlen)
{
	struct buf b;
	struct jw w;
	yajl_val v;
	int64_t id;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_i64(&w, "TTL", ttl);
	jw_end_obj(&w);
	if (client_call(c, "/v3/lease/grant", &b, timeout_ms, &v) < 0) {
		snprintf(err, errlen, "lease grant: %.400s", c->err);
		buf_free(&b);
		return -1;
	}
	buf_free(&b);
	id = json_get_int(v, 0, "ID", NULL);
	if (id == 0) {
		const char *m = json_get_str(v, "error", NULL);

		snprintf(err, errlen, "lease grant: %s", m ? m : "no lease ID in the answer");
		yajl_tree_free(v);
		return -1;
	}
	yajl_tree_free(v);
	return id;
}

static int
lease_revoke(struct client *c, int64_t id, int64_t timeout_ms)
{
	struct buf b;
	struct jw w;
	yajl_val v;
	int rv;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_i64(&w, "ID", id);
	jw_end_obj(&w);
	rv = client_call(c, "/v3/lease/revoke", &b, timeout_ms, &v);
	buf_free(&b);
	if (rv == 0)
		yajl_tree_free(v);
	return rv;
}

/*
 * lease_keepalive - renew once; 1 alive, 0 gone (expired or revoked),
 * -1 could not ask.
 */
static int
lease_keepalive(struct client *c, int64_t id, int64_t timeout_ms)
{
	struct buf b;
	struct jw w;
	yajl_val v, r;
	int rv;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_i64(&w, "ID", id);
	jw_end_obj(&w);
	rv = client_call(c, "/v3/lease/keepalive", &b, timeout_ms, &v);
	buf_free(&b);
	if (rv < 0)
		return -1;
	r = json_get(v, "result", NULL);
	if (r == NULL)
		rv = json_get(v, "error", NULL) != NULL ? 0 : -1;
	else
		rv = json_get_int(r, 0, "TTL", NULL) > 0;
	yajl_tree_free(v);
	return rv;
}

static void *
ka_main(void *arg)
{
	struct etcd *e = arg;
	int64_t every = e->cfg.session_ttl * 1000 / 4, last_ok = now_ms();

	pthread_mutex_lock(&e->mu);
	while (!e->ka_stop) {
		struct timespec ts;
		int64_t id, until;
		int r, lost;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		until = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + every;
		ts.tv_sec = until / 1000;
		ts.tv_nsec = (until % 1000) * 1000000;
		while (!e->ka_stop && pthread_cond_timedwait(&e->cv, &e->mu, &ts) == 0)
			;
		if (e->ka_stop)
			break;
		if ((id = e->session) == 0) {
			last_ok = now_ms();
			continue;
		}
		pthread_mutex_unlock(&e->mu);
		r = lease_keepalive(&e->kacl, id, every < e->cfg.timeout_ms ? every : e->cfg.timeout_ms);
		if (r == 1)
			last_ok = now_ms();
		lost = r == 0 || (r < 0 && now_ms() - last_ok > e->cfg.session_ttl * 1000);
		if (lost)
			log_kv(LOG_WARN, "etcd session lost; its locks are released",
			    "reason", r == 0 ? "lease expired" : e->kacl.err, NULL);
		else if (r < 0 && !e->ka_stop)
			log_kv(LOG_WARN, "etcd session keep-alive failed", "error", e->kacl.err, NULL);
		pthread_mutex_lock(&e->mu);
		if (lost && e->session == id)
			e->session = 0;
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* session_get - the session lease, granted (and kept alive) on first use */
static int64_t
session_get(struct etcd *e)
{
	char err[512];
	int64_t id;

	pthread_mutex_lock(&e->mu);
	id = e->session;
	pthread_mutex_unlock(&e->mu);
	if (id != 0)
		return id;
	if ((id = lease_grant(&e->cl, e->cfg.session_ttl, e->cfg.timeout_ms, err,
	    sizeof(err))) < 0) {
		store_set_error(e->s, "session %s", err);
		return -1;
	}
	pthread_mutex_lock(&e->mu);
	e->session = id;
	pthread_mutex_unlock(&e->mu);
	if (!e->ka_running) {
		if (pthread_create(&e->ka, NULL, ka_main, e) != 0)
			fatal("store_etcd: cannot start the keep-alive thread");
		e->ka_running = 1;
	}
	return id;
}

/* ---- the operations ---- */

static void *
etcd_open(struct store *s, const char *spec, const struct conf *cf)
{
	struct etcd *e = xcalloc(1, sizeof(*e));
	pthread_condattr_t ca;
	struct buf b;
	yajl_val v;

	pthread_once(&curl_once, curl_init_once);
	e->s = s;
	if (cfg_load(&e->cfg, spec, cf, s->err, sizeof(s->err)) < 0) {
		cfg_free(&e->cfg);
		free(e);
		return NULL;
	}
	client_init(&e->cl, &e->cfg, NULL);
	client_init(&e->kacl, &e->cfg, &e->ka_stop);
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* one round trip so that a wrong URL or a dead cluster shows at once */
	buf_init(&b);
	buf_adds(&b, "{}");
	if (client_call(&e->cl, "/v3/maintenance/status", &b, e->cfg.timeout_ms, &v) < 0) {
		store_set_error(s, "%s", e->cl.err);
		buf_free(&b);
		client_free(&e->cl);
		client_free(&e->kacl);
		pthread_mutex_destroy(&e->mu);
		pthread_cond_destroy(&e->cv);
		cfg_free(&e->cfg);
		free(e);
		return NULL;
	}
	buf_free(&b);
	yajl_tree_free(v);
	return e;
}

static void
etcd_close(void *be)
{
	struct etcd *e = be;

	if (e->ka_running) {
		pthread_mutex_lock(&e->mu);
		e->ka_stop = 1;
		pthread_cond_signal(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->ka, NULL);
	}
	if (e->session != 0 && lease_revoke(&e->cl, e->session,
	    e->cfg.timeout_ms < 3000 ? e->cfg.timeout_ms : 3000) < 0)
		log_kv(LOG_WARN, "etcd: could not revoke the session lease; its locks expire by themselves",
		    "error", e->cl.err, NULL);
	client_free(&e->cl);
	client_free(&e->kacl);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	cfg_free(&e->cfg);
	free(e);
}

/*
 * etcd_put - with ttl_s > 0 the key gets a lease of its own, granted for this
 * put and never kept alive: it expires ttl_s seconds after this put (etcd
 * rounds TTLs below its minimum, 2 s by default, up to it).
 */
static int
etcd_put(void *be, const char *key, const void *val, size_t len, int ttl_s)
{
	struct etcd *e = be;
	int64_t lease = 0;
	char err[512];
	struct buf b;
	struct jw w;
	yajl_val v;

	if (check_key(e, "put", key) < 0)
		return -1;
	if (ttl_s > 0 && (lease = lease_grant(&e->cl, ttl_s, e->cfg.timeout_ms, err,
	    sizeof(err))) < 0) {
		store_set_error(e->s, "put %s: %s", key, err);
		return -1;
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_b64(&w, "key", key, strlen(key));
	jw_b64(&w, "value", val, len);
	if (lease != 0)
		jw_i64(&w, "lease", lease);
	jw_end_obj(&w);
	if (etcd_call(e, "/v3/kv/put", &b, &v) < 0) {
		buf_free(&b);
		return -1;
	}
	buf_free(&b);
	yajl_tree_free(v);
	return 0;
}

/*
 * PUT_BATCH - put ops per txn: etcd's max-txn-ops is 128 by default (3.4);
 * PUT_BATCH_BYTES keeps a txn well under its request limit (1.5 MiB).
 */
#define PUT_BATCH 127
#define PUT_BATCH_BYTES (512 * 1024)

/* etcd_put_many - one txn of plain puts per PUT_BATCH keys (or bytes) */
static int
etcd_put_many(void *be, const char *const *keys, const char *const *vals,
    const size_t *lens, size_t n)
{
	struct etcd *e = be;
	size_t i = 0;

	while (i < n) {
		size_t start = i, bytes = 0;
		struct buf b;
		struct jw w;
		yajl_val v;

		buf_init(&b);
		jw_init(&w, &b);
		jw_obj(&w);
		jw_key(&w, "success");
		jw_arr(&w);
		while (i < n && i - start < PUT_BATCH &&
		    (i == start || bytes + lens[i] + strlen(keys[i]) < PUT_BATCH_BYTES)) {
			bytes += lens[i] + strlen(keys[i]);
			jw_obj(&w);
			jw_key(&w, "request_put");
			jw_obj(&w);
			jw_b64(&w, "key", keys[i], strlen(keys[i]));
			jw_b64(&w, "value", vals[i] ? vals[i] : "", lens[i]);
			jw_end_obj(&w);
			jw_end_obj(&w);
			i++;
		}
		jw_end_arr(&w);
		jw_end_obj(&w);
		if (etcd_call(e, "/v3/kv/txn", &b, &v) < 0) {
			char m[sizeof(e->s->err)];

			snprintf(m, sizeof(m), "%s", store_error(e->s));
			store_set_error(e->s, "put_many (%zu of %zu keys written): %s", start, n, m);
			buf_free(&b);
			return -1;
		}
		buf_free(&b);
		yajl_tree_free(v);
	}
	return 0;
}

/* key_call - POST {"key": <key>} to path; the answer in *v (caller frees); 0 or -1 */
static int
key_call(struct etcd *e, const char *path, const char *key, yajl_val *v)
{
	struct buf b;
	struct jw w;
	int rc;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_b64(&w, "key", key, strlen(key));
	jw_end_obj(&w);
	rc = etcd_call(e, path, &b, v);
	buf_free(&b);
	return rc < 0 ? -1 : 0;
}

static int
etcd_get(void *be, const char *key, char **val, size_t *len)
{
	struct etcd *e = be;
	yajl_val v, kvs;
	size_t n;

	if (check_key(e, "get", key) < 0 || key_call(e, "/v3/kv/range", key, &v) < 0)
		return -1;
	kvs = json_get(v, "kvs", NULL);
	if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0) {
		yajl_tree_free(v);
		return 1;
	}
	*val = b64_field(kvs->u.array.values[0], "value", &n);
	if (len != NULL)
		*len = n;
	yajl_tree_free(v);
	return 0;
}

static int
etcd_del(void *be, const char *key)
{
	struct etcd *e = be;
	yajl_val v;

	if (check_key(e, "delete", key) < 0 ||
	    key_call(e, "/v3/kv/deleterange", key, &v) < 0)
		return -1;
	yajl_tree_free(v);
	return 0;
}

/*
 * etcd_del_prefix - one transaction (for "/a/b": the key itself and the
 * range under "/a/b/"), so the count is exact and nothing is half done.
 */
static long
etcd_del_prefix(void *be, const char *prefix)
{
	struct etcd *e = be;
	struct prange r;
	struct buf b;
	struct jw w;
	yajl_val v, rs;
	long n = 0;

	prange_init(&r, prefix);
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "success");
	jw_arr(&w);
	if (r.p != NULL) {
		size_t sl;
		char *sub = xmalloc(r.plen + 2), *subend;

		memcpy(sub, r.p, r.plen);
		sub[r.plen] = '/';
		sub[r.plen + 1] = '\0';
		subend = prefix_end(sub, r.plen + 1, &sl);
		jw_obj(&w);
		jw_key(&w, "request_delete_range");
		jw_obj(&w);
		jw_b64(&w, "key", r.p, r.plen);
		jw_end_obj(&w);
		jw_end_obj(&w);
		jw_obj(&w);
		jw_key(&w, "request_delete_range");
		jw_obj(&w);
		jw_b64(&w, "key", sub, r.plen + 1);
		jw_b64(&w, "range_end", subend, sl);
		jw_end_obj(&w);
		jw_end_obj(&w);
		free(sub);
		free(subend);
	} else {
		jw_obj(&w);
		jw_key(&w, "request_delete_range");
		jw_obj(&w);
		jw_b64(&w, "key", r.key, r.klen);
		jw_b64(&w, "range_end", r.end, r.elen);
		jw_end_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	prange_free(&r);
	if (etcd_call(e, "/v3/kv/txn", &b, &v) < 0) {
		buf_free(&b);
		return -1;
	}
	buf_free(&b);
	rs = json_get(v, "responses", NULL);
	for (size_t i = 0; rs != NULL && YAJL_IS_ARRAY(rs) && i < rs->u.array.len; i++)
		n += (long)json_get_int(rs->u.array.values[i], 0, "response_delete_range",
		    "deleted", NULL);
	yajl_tree_free(v);
	return n;
}

/*
 * etcd_list - pages of ETCD_LIST_PAGE keys, every page read at the revision
 * of the first, so the result is one consistent snapshot.
 */
static int
etcd_list(void *be, const char *prefix, struct store_list *out)
{
	struct etcd *e = be;
	struct prange r;
	size_t cap = 0, fromlen;
	char *from;
	int64_t rev = 0;
	int more = 1, rv = 0;

	prange_init(&r, prefix);
	from = xmalloc(r.klen + 1);
	memcpy(from, r.key, r.klen);
	fromlen = r.klen;
	while (more) {
		struct buf b;
		struct jw w;
		yajl_val v, kvs;

		buf_init(&b);
		jw_init(&w, &b);
		jw_obj(&w);
		jw_b64(&w, "key", from, fromlen);
		jw_b64(&w, "range_end", r.end, r.elen);
		jw_i64(&w, "limit", ETCD_LIST_PAGE);
		if (rev > 0)
			jw_i64(&w, "revision", rev);
		jw_end_obj(&w);
		if (etcd_call(e, "/v3/kv/range", &b, &v) < 0) {
			buf_free(&b);
			rv = -1;
			break;
		}
		buf_free(&b);
		if (rev == 0)
			rev = json_get_int(v, 0, "header", "revision", NULL);
		more = json_get_bool(v, 0, "more", NULL);
		kvs = json_get(v, "kvs", NULL);
		if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0)
			more = 0;
		for (size_t i = 0; kvs != NULL && YAJL_IS_ARRAY(kvs) && i < kvs->u.array.len; i++) {
			yajl_val kv = kvs->u.array.values[i];
			struct store_kv *o;
			size_t kn;
			char *k = b64_field(kv, "key", &kn);

			if (i + 1 == kvs->u.array.len) {
				/* next page starts just after this key */
				free(from);
				from = xmalloc(kn + 1);
				memcpy(from, k, kn);
				from[kn] = '\0';
				fromlen = kn + 1;
			}
			if (!prange_match(&r, k, kn)) {
				free(k);
				continue;
			}
			if (out->n == cap) {
				cap = cap ? cap * 2 : 64;
				out->kvs = xrealloc(out->kvs, cap * sizeof(*out->kvs));
			}
			o = &out->kvs[out->n++];
			o->key = k;
			o->value = b64_field(kv, "value", &o->vlen);
			o->mod_revision = json_get_int(kv, 0, "mod_revision", NULL);
		}
		yajl_tree_free(v);
	}
	free(from);
	prange_free(&r);
	if (rv < 0) {
		store_list_free(out);
		return -1;
	}
	out->revision = rev;
	return 0;
}

/* ---- watch ---- */

static void
wev_push(struct ewatch *w, enum store_event_type type, char *key, char *val,
    size_t vlen, int64_t rev)
{
	struct wev *ev = xcalloc(1, sizeof(*ev));
	int was_empty;
	char c = 1;

	ev->type = type;
	ev->key = key;
	ev->val = val;
	ev->vlen = vlen;
	ev->rev = rev;
	pthread_mutex_lock(&w->mu);
	was_empty = w->head == NULL;
	*w->tail = ev;
	w->tail = &ev->next;
	pthread_mutex_unlock(&w->mu);
	if (was_empty && write(w->pfd[1], &c, 1) < 0 && errno != EAGAIN)
		log_kv(LOG_WARN, "etcd watch: cannot wake the loop", "error", strerror(errno), NULL);
}

/* watch_line - one message of the stream; -1 ends this stream */
static int
watch_line(struct ewatch *w, const char *s, size_t n)
{
	yajl_val v, r, evs;
	int64_t maxrev = 0;

	while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (n == 0)
		return 0;
	if ((v = json_parse(s, n, NULL)) == NULL) {
		log_kv(LOG_WARN, "etcd watch: message is not JSON; reconnecting", NULL);
		return -1;
	}
	if (json_get(v, "error", NULL) != NULL || (r = json_get(v, "result", NULL)) == NULL) {
		const char *m = json_get_str(v, "error", "message", NULL);

		if (m == NULL)
			m = json_get_str(v, "error", NULL);
		log_kv(LOG_WARN, "etcd watch: stream error; reconnecting", "error",
		    m ? m : "unknown", NULL);
		yajl_tree_free(v);
		return -1;
	}
	if (json_get_bool(r, 0, "canceled", NULL)) {
		int64_t crev = json_get_int(r, 0, "compact_revision", NULL);

		if (crev > 0) {
			char rs[32];

			snprintf(rs, sizeof(rs), "%lld", (long long)crev);
			log_kv(LOG_INFO, "etcd watch: history compacted; caller must re-list",
			    "compact_revision", rs, NULL);
			w->next_rev = crev;
			wev_push(w, STORE_EV_RELIST, xstrdup(""), NULL, 0, crev);
			w->resume_now = 1;
		} else {
			const char *why = json_get_str(r, "cancel_reason", NULL);

			log_kv(LOG_WARN, "etcd watch canceled by etcd; reconnecting",
			    "reason", why ? why : "", NULL);
		}
		yajl_tree_free(v);
		return -1;
	}
	if (json_get_bool(r, 0, "created", NULL)) {
		w->live = 1;
		int64_t hrev = json_get_int(r, 0, "header", "revision", NULL);

		/* a revision etcd cannot have (found by fuzz_etcd) is ignored */
		if (w->next_rev == 0 && hrev >= 0 && hrev < INT64_MAX)
			w->next_rev = hrev + 1;
	}
	evs = json_get(r, "events", NULL);
	for (size_t i = 0; evs != NULL && YAJL_IS_ARRAY(evs) && i < evs->u.array.len; i++) {
		yajl_val ev = evs->u.array.values[i], kv = json_get(ev, "kv", NULL);
		const char *type = json_get_str(ev, "type", NULL);
		int64_t rev = json_get_int(kv, 0, "mod_revision", NULL);
		size_t kn, vn = 0;
		char *k, *val = NULL;
		int del = type != NULL && strcmp(type, "DELETE") == 0;

		if (kv == NULL || (rev > 0 && rev < w->next_rev))
			continue;	/* seen already */
		if (rev > maxrev && rev < INT64_MAX)
			maxrev = rev;
		k = b64_field(kv, "key", &kn);
		if (!prange_match(&w->r, k, kn)) {
			free(k);
			continue;
		}
		if (!del)
			val = b64_field(kv, "value", &vn);
		wev_push(w, del ? STORE_EV_DELETE : STORE_EV_PUT, k, val, vn, rev);
	}
	if (maxrev > 0)
		w->next_rev = maxrev + 1;
	yajl_tree_free(v);
	return 0;
}

static size_t
watch_write(char *p, size_t sz, size_t n, void *arg)
{
	struct ewatch *w = arg;
	size_t len = sz * n, start = 0;

	if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
		return 0;
	buf_add(&w->line, p, len);
	for (size_t i = 0; i < w->line.len; i++) {
		if (w->line.data[i] != '\n')
			continue;
		if (watch_line(w, w->line.data + start, i - start) < 0)
			return 0;
		start = i + 1;
	}
	if (start > 0) {
		memmove(w->line.data, w->line.data + start, w->line.len - start);
		w->line.len -= start;
		w->line.data[w->line.len] = '\0';
	}
	if (w->line.len > ETCD_MAX_RESP)
		return 0;
	return len;
}

/* watch_wait - sleep ms unless stopped; nonzero when stopped */
static int
watch_wait(struct ewatch *w, int64_t ms)
{
	struct timespec ts;
	int64_t until;
	int stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	until = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
	ts.tv_sec = until / 1000;
	ts.tv_nsec = (until % 1000) * 1000000;
	pthread_mutex_lock(&w->mu);
	while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &ts) == 0)
		;
	stop = w->stop;
	pthread_mutex_unlock(&w->mu);
	return stop;
}

/* watch_stream - one connection: runs until it breaks or we stop */
static CURLcode
watch_stream(struct ewatch *w, long *status)
{
	const char *ep = w->cl.cfg->eps[w->cl.ep];
	char url[512], ebuf[CURL_ERROR_SIZE];
	CURL *h = w->cl.h;
	CURLcode rc = CURLE_OK;
	struct buf b;
	struct jw jw;
	CURLMsg *msg;
	int running = 1, left;

	buf_init(&b);
	jw_init(&jw, &b);
	jw_obj(&jw);
	jw_key(&jw, "create_request");
	jw_obj(&jw);
	jw_b64(&jw, "key", w->r.key, w->r.klen);
	jw_b64(&jw, "range_end", w->r.end, w->r.elen);
	if (w->next_rev > 0)
		jw_i64(&jw, "start_revision", w->next_rev);
	jw_end_obj(&jw);
	jw_end_obj(&jw);
	snprintf(url, sizeof(url), "%s/v3/watch", ep);
	curl_easy_reset(h);
	ebuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, w->hdrs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, b.data);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b.len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(w->cl.cfg->timeout_ms < 3000 ?
	    w->cl.cfg->timeout_ms : 3000));
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 5L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	client_tls(h, w->cl.cfg);
	buf_reset(&w->line);
	w->resume_now = 0;
	w->live = 0;
	curl_multi_add_handle(w->m, h);
	while (running && !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		if (curl_multi_perform(w->m, &running) != CURLM_OK)
			break;
		if (running)
			curl_multi_poll(w->m, NULL, 0, 1000, NULL);
	}
	while ((msg = curl_multi_info_read(w->m, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE)
			rc = msg->data.result;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_multi_remove_handle(w->m, h);
	if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR &&
	    !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
		log_kv(LOG_WARN, "etcd watch: stream broke; reconnecting", "endpoint", ep,
		    "error", ebuf[0] ? ebuf : curl_easy_strerror(rc), NULL);
	buf_free(&b);
	return rc;
}

static void *
watch_main(void *arg)
{
	struct ewatch *w = arg;
	int64_t backoff = ETCD_BACKOFF_MIN_MS;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		long status = 0;
		CURLcode rc = watch_stream(w, &status);

		if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
			break;
		if (w->resume_now) {
			backoff = ETCD_BACKOFF_MIN_MS;
			continue;
		}
		if (w->live)
			backoff = ETCD_BACKOFF_MIN_MS;
		if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
			w->cl.ep = (w->cl.ep + 1) % w->cl.cfg->neps;
		else if (status != 200 && status != 0)
			w->cl.ep = (w->cl.ep + 1) % w->cl.cfg->neps;
		if (watch_wait(w, backoff))
			break;
		backoff = backoff * 2 > ETCD_BACKOFF_MAX_MS ? ETCD_BACKOFF_MAX_MS : backoff * 2;
	}
	return NULL;
}

/* current_revision - the store's revision now, or 0 if etcd cannot say */
static int64_t
current_revision(struct etcd *e)
{
	struct buf b;
	yajl_val v;
	int64_t rev;

	buf_init(&b);
	buf_adds(&b, "{\"key\":\"AA==\",\"limit\":\"1\",\"count_only\":true}");
	if (etcd_call(e, "/v3/kv/range", &b, &v) < 0) {
		buf_free(&b);
		return 0;
	}
	buf_free(&b);
	rev = json_get_int(v, 0, "header", "revision", NULL);
	yajl_tree_free(v);
	return rev;
}

static void
ewatch_free_mem(struct ewatch *w)
{
	struct wev *ev, *next;

	for (ev = w->head; ev != NULL; ev = next) {
		next = ev->next;
		free(ev->key);
		free(ev->val);
		free(ev);
	}
	if (w->m != NULL)
		curl_multi_cleanup(w->m);
	curl_slist_free_all(w->hdrs);
	client_free(&w->cl);
	buf_free(&w->line);
	if (w->pfd[0] >= 0)
		close(w->pfd[0]);
	if (w->pfd[1] >= 0)
		close(w->pfd[1]);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	prange_free(&w->r);
	free(w);
}

/*
 * etcd_watch_new - from_rev 0 means "from now on": the current revision is
 * read here, on the caller's thread, so nothing written after this returns
 * is missed even if the stream connects later.
 */
static void *
etcd_watch_new(void *be, struct store_watch *sw, const char *prefix, int64_t from_rev)
{
	struct etcd *e = be;
	struct ewatch *w = xcalloc(1, sizeof(*w));
	pthread_condattr_t ca;

	(void)sw;
	w->e = e;
	w->pfd[0] = w->pfd[1] = -1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->tail = &w->head;
	buf_init(&w->line);
	client_init(&w->cl, &e->cfg, &w->stop);
	w->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	w->cl.ep = e->cl.ep;
	prange_init(&w->r, prefix);
	if (pipe(w->pfd) < 0 || set_nonblock(w->pfd[0]) < 0 || set_nonblock(w->pfd[1]) < 0 ||
	    set_cloexec(w->pfd[0]) < 0 || set_cloexec(w->pfd[1]) < 0) {
		store_set_error(e->s, "watch %s: pipe: %s", prefix, strerror(errno));
		ewatch_free_mem(w);
		return NULL;
	}
	if ((w->m = curl_multi_init()) == NULL) {
		store_set_error(e->s, "watch %s: curl_multi_init failed", prefix);
		ewatch_free_mem(w);
		return NULL;
	}
	if (from_rev > 0)
		w->next_rev = from_rev;
	else if ((w->next_rev = current_revision(e)) > 0)
		w->next_rev++;
	else
		log_kv(LOG_WARN, "etcd watch: cannot read the revision now; starting from the stream's",
		    "error", e->s->err, NULL);
	if (pthread_create(&w->th, NULL, watch_main, w) != 0) {
		store_set_error(e->s, "watch %s: cannot start a thread", prefix);
		ewatch_free_mem(w);
		return NULL;
	}
	return w;
}

static int
etcd_watch_fd(void *wbe)
{
	return ((struct ewatch *)wbe)->pfd[0];
}

static int
etcd_watch_timeout_ms(void *wbe)
{
	(void)wbe;
	return 1000;	/* events wake the fd; nothing to do on a timer */
}

static int
etcd_watch_dispatch(void *wbe, struct store_watch *sw)
{
	struct ewatch *w = wbe;
	struct wev *ev, *next;
	char drain[64];

	while (read(w->pfd[0], drain, sizeof(drain)) > 0)
		;
	pthread_mutex_lock(&w->mu);
	ev = w->head;
	w->head = NULL;
	w->tail = &w->head;
	pthread_mutex_unlock(&w->mu);
	for (; ev != NULL; ev = next) {
		struct store_event se = {
			.type = ev->type, .key = ev->key, .value = ev->val,
			.vlen = ev->vlen, .revision = ev->rev,
		};

		next = ev->next;
		store_emit(sw, &se);
		free(ev->key);
		free(ev->val);
		free(ev);
	}
	return 0;
}

static void
etcd_watch_free(void *wbe)
{
	struct ewatch *w = wbe;

	pthread_mutex_lock(&w->mu);
	__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	curl_multi_wakeup(w->m);
	pthread_join(w->th, NULL);
	ewatch_free_mem(w);
}

/* ---- job locks ---- */

/*
 * etcd_try_lock - one transaction: if the key was never created, put it with
 * our identity on the session lease; else read it.  The lock is ours when the
 * key's lease is our session lease.
 */
static int
etcd_try_lock(void *be, const char *key, char **holder)
{
	struct etcd *e = be;
	size_t kl;

	if (check_key(e, "lock", key) < 0)
		return -1;
	kl = strlen(key);
	for (int attempt = 0; attempt < 3; attempt++) {
		int64_t id = session_get(e);
		struct buf b;
		struct jw w;
		yajl_val v, kvs;

		if (id < 0)
			return -1;
		buf_init(&b);
		jw_init(&w, &b);
		jw_obj(&w);
		jw_key(&w, "compare");
		jw_arr(&w);
		jw_obj(&w);
		jw_b64(&w, "key", key, kl);
		jw_key(&w, "target");
		jw_str(&w, "CREATE");
		jw_key(&w, "result");
		jw_str(&w, "EQUAL");
		jw_i64(&w, "create_revision", 0);
		jw_end_obj(&w);
		jw_end_arr(&w);
		jw_key(&w, "success");
		jw_arr(&w);
		jw_obj(&w);
		jw_key(&w, "request_put");
		jw_obj(&w);
		jw_b64(&w, "key", key, kl);
		jw_b64(&w, "value", e->s->identity, strlen(e->s->identity));
		jw_i64(&w, "lease", id);
		jw_end_obj(&w);
		jw_end_obj(&w);
		jw_end_arr(&w);
		jw_key(&w, "failure");
		jw_arr(&w);
		jw_obj(&w);
		jw_key(&w, "request_range");
		jw_obj(&w);
		jw_b64(&w, "key", key, kl);
		jw_end_obj(&w);
		jw_end_obj(&w);
		jw_end_arr(&w);
		jw_end_obj(&w);
		if (etcd_call(e, "/v3/kv/txn", &b, &v) < 0) {
			buf_free(&b);
			return -1;
		}
		buf_free(&b);
		if (json_get_bool(v, 0, "succeeded", NULL)) {
			yajl_tree_free(v);
			return 1;
		}
		kvs = json_get(v, "responses", NULL);
		if (kvs != NULL && YAJL_IS_ARRAY(kvs) && kvs->u.array.len > 0)
			kvs = json_get(kvs->u.array.values[0], "response_range", "kvs", NULL);
		else
			kvs = NULL;
		if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0) {
			yajl_tree_free(v);
			continue;	/* released between compare and read: again */
		}
		if (json_get_int(kvs->u.array.values[0], 0, "lease", NULL) == id) {
			yajl_tree_free(v);
			return 1;
		}
		if (holder != NULL) {
			size_t n;

			*holder = b64_field(kvs->u.array.values[0], "value", &n);
		}
		yajl_tree_free(v);
		return 0;
	}
	store_set_error(e->s, "lock %s: the key keeps changing hands", key);
	return -1;
}

/*
 * Keys per batch txn.  etcd (3.3 and later, checked on 3.4.23) takes nested
 * txns: the outer txn has no compare and one request_txn per key in its
 * success list, and each inner txn has its own compare (create_revision ==
 * 0), so each key is decided on its own in one raft round.  etcd counts the
 * inner ops against what the outer txn leaves of max-txn-ops (default 128):
 * N inner txns of one op each fit while N <= 127.
 */
#define LOCK_BATCH 100

/* lock_many_chunk - one txn for keys[0..n); 0, 1 (some key needs a retry alone) or -1 */
static int
lock_many_chunk(struct etcd *e, int64_t id, const char *const *keys, size_t n,
    int *results)
{
	const char *ident = e->s->identity;
	struct buf b;
	struct jw w;
	yajl_val v, rs;
	int again = 0;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "success");
	jw_arr(&w);
	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(keys[i]);

		jw_obj(&w);
		jw_key(&w, "request_txn");
		jw_obj(&w);
		jw_key(&w, "compare");
		jw_arr(&w);
		jw_obj(&w);
		jw_b64(&w, "key", keys[i], kl);
		jw_key(&w, "target");
		jw_str(&w, "CREATE");
		jw_key(&w, "result");
		jw_str(&w, "EQUAL");
		jw_i64(&w, "create_revision", 0);
		jw_end_obj(&w);
		jw_end_arr(&w);
		jw_key(&w, "success");
		jw_arr(&w);
		jw_obj(&w);
		jw_key(&w, "request_put");
		jw_obj(&w);
		jw_b64(&w, "key", keys[i], kl);
		jw_b64(&w, "value", ident, strlen(ident));
		jw_i64(&w, "lease", id);
		jw_end_obj(&w);
		jw_end_obj(&w);
		jw_end_arr(&w);
		jw_key(&w, "failure");
		jw_arr(&w);
		jw_obj(&w);
		jw_key(&w, "request_range");
		jw_obj(&w);
		jw_b64(&w, "key", keys[i], kl);
		jw_key(&w, "keys_only");
		jw_bool(&w, 1);
		jw_end_obj(&w);
		jw_end_obj(&w);
		jw_end_arr(&w);
		jw_end_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	if (etcd_call(e, "/v3/kv/txn", &b, &v) < 0) {
		buf_free(&b);
		return -1;
	}
	buf_free(&b);
	rs = json_get(v, "responses", NULL);
	if (rs == NULL || !YAJL_IS_ARRAY(rs) || rs->u.array.len != n) {
		store_set_error(e->s, "lock batch: etcd answered %zu results for %zu keys",
		    rs != NULL && YAJL_IS_ARRAY(rs) ? rs->u.array.len : 0, n);
		yajl_tree_free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		yajl_val t = json_get(rs->u.array.values[i], "response_txn", NULL);
		yajl_val kvs;

		if (json_get_bool(t, 0, "succeeded", NULL)) {
			results[i] = 1;
			continue;
		}
		kvs = json_get(t, "responses", NULL);
		if (kvs != NULL && YAJL_IS_ARRAY(kvs) && kvs->u.array.len > 0)
			kvs = json_get(kvs->u.array.values[0], "response_range", "kvs", NULL);
		else
			kvs = NULL;
		if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0) {
			results[i] = -1;	/* released in between: ask again alone */
			again = 1;
			continue;
		}
		results[i] = json_get_int(kvs->u.array.values[0], 0, "lease", NULL) == id;
	}
	yajl_tree_free(v);
	return again;
}

/*
 * etcd_try_lock_many - one txn per LOCK_BATCH keys (see above); a key that
 * was released between compare and read is asked again with etcd_try_lock.
 * An etcd that refuses the nested txn (max-txn-ops set low) gets one txn
 * per key.
 */
static int
etcd_try_lock_many(void *be, const char *const *keys, size_t n, int *results)
{
	struct etcd *e = be;
	int64_t id;
	int rv = 0, single = 0;

	for (size_t i = 0; i < n; i++)
		if (check_key(e, "lock", keys[i]) < 0)
			return -1;
	if ((id = session_get(e)) < 0)
		return -1;
	for (size_t off = 0; off < n; off += LOCK_BATCH) {
		size_t m = n - off < LOCK_BATCH ? n - off : LOCK_BATCH;
		int r = single ? -1 : lock_many_chunk(e, id, keys + off, m, results + off);

		if (r < 0 && !single && strstr(store_error(e->s), "too many operations") != NULL) {
			log_kv(LOG_WARN, "etcd refuses lock batches (max-txn-ops); one txn per lock",
			    NULL);
			single = 1;
		}
		if (r < 0 && !single) {
			for (size_t i = off; i < n; i++)
				results[i] = 0;
			return -1;
		}
		for (size_t i = off; i < off + m; i++) {
			int one;

			if (r == 0 || (r == 1 && results[i] >= 0))
				continue;
			if ((one = etcd_try_lock(e, keys[i], NULL)) < 0) {
				results[i] = 0;
				rv = -1;
				continue;
			}
			results[i] = one;
		}
	}
	return rv;
}

/* etcd_unlock - delete the key only while it is on our session lease */
static int
etcd_unlock(void *be, const char *key)
{
	struct etcd *e = be;
	struct buf b;
	struct jw w;
	yajl_val v;
	int64_t id;

	if (check_key(e, "unlock", key) < 0)
		return -1;
	pthread_mutex_lock(&e->mu);
	id = e->session;
	pthread_mutex_unlock(&e->mu);
	if (id == 0)
		return 0;
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "compare");
	jw_arr(&w);
	jw_obj(&w);
	jw_b64(&w, "key", key, strlen(key));
	jw_key(&w, "target");
	jw_str(&w, "LEASE");
	jw_key(&w, "result");
	jw_str(&w, "EQUAL");
	jw_i64(&w, "lease", id);
	jw_end_obj(&w);
	jw_end_arr(&w);
	jw_key(&w, "success");
	jw_arr(&w);
	jw_obj(&w);
	jw_key(&w, "request_delete_range");
	jw_obj(&w);
	jw_b64(&w, "key", key, strlen(key));
	jw_end_obj(&w);
	jw_end_obj(&w);
	jw_end_arr(&w);
	jw_end_obj(&w);
	if (etcd_call(e, "/v3/kv/txn", &b, &v) < 0) {
		buf_free(&b);
		return -1;
	}
	buf_free(&b);
	yajl_tree_free(v);
	return 0;
}

const struct store_ops store_etcd_ops = {
	.scheme = "etcd",
	.open = etcd_open,
	.close = etcd_close,
	.put = etcd_put,
	.put_many = etcd_put_many,
	.get = etcd_get,
	.del = etcd_del,
	.del_prefix = etcd_del_prefix,
	.list = etcd_list,
	.watch_new = etcd_watch_new,
	.watch_fd = etcd_watch_fd,
	.watch_timeout_ms = etcd_watch_timeout_ms,
	.watch_dispatch = etcd_watch_dispatch,
	.watch_free = etcd_watch_free,
	.try_lock = etcd_try_lock,
	.try_lock_many = etcd_try_lock_many,
	.unlock = etcd_unlock,
};
