/*
 * store_etcd_client - what every part of the etcd backend talks through:
 * its settings, one HTTP client per thread on etcd's v3 JSON gateway with
 * failover across endpoints and a deadline on every call, TLS and client
 * certificates, the JSON helpers of the gateway's base64 fields, key
 * ranges, leases, and the session lease kept alive by its own thread.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
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
#include "common/store_etcd.h"
#include "common/util.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void
curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void
etcd_global_init(void)
{
	pthread_once(&curl_once, curl_init_once);
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

void
etcd_cfg_free(struct etcd_cfg *c)
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

int
etcd_cfg_load(struct etcd_cfg *c, const char *spec, const struct conf *cf, char *err, size_t errlen)
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

void
etcd_client_tls(CURL *h, const struct etcd_cfg *cfg)
{
	if (cfg->cacert != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, cfg->cacert);
	if (cfg->cert != NULL) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key);
	}
}

void
etcd_client_init(struct client *c, const struct etcd_cfg *cfg, const int *stop)
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

void
etcd_client_free(struct client *c)
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
 * etcd_client_call - POST body to path on the current endpoint and parse the
 * answer.  Connection failures move to the next endpoint; "unavailable"
 * answers (no leader, leader changed, timeouts) are retried with backoff;
 * everything within timeout_ms.  0 with *out (caller frees) or -1 with c->err.
 */
int
etcd_client_call(struct client *c, const char *path, const struct buf *body,
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
		etcd_client_tls(c->h, c->cfg);
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

void
etcd_jw_b64(struct jw *w, const char *k, const void *p, size_t n)
{
	char *b = base64_encode(p, n, 0);

	jw_key(w, k);
	jw_str(w, b);
	free(b);
}

void
etcd_jw_i64(struct jw *w, const char *k, int64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", (long long)v);
	jw_key(w, k);
	jw_str(w, s);
}

/* etcd_b64_field - decode a base64 string field; "" when absent (zero value) */
char *
etcd_b64_field(yajl_val v, const char *name, size_t *len)
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

/* etcd_prefix_end - the range end that covers every key starting with p */
char *
etcd_prefix_end(const char *p, size_t n, size_t *outn)
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
 * etcd_prange_init - the etcd range a store prefix covers.  A prefix is a
 * path (the store's rule): "/a/b" names the key "/a/b" and the keys under
 * "/a/b/", never "/a/bc"; "/a/b/" names only the keys under it; "" and "/"
 * every key.  For "/a/b" the range ["/a/b", "/a/b0") also holds keys like
 * "/a/b-c", so those are filtered out by etcd_prange_match.
 */
void
etcd_prange_init(struct prange *r, const char *prefix)
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
		r->end = etcd_prefix_end(prefix, n, &r->elen);
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

void
etcd_prange_free(struct prange *r)
{
	free(r->key);
	free(r->end);
	free(r->p);
}

int
etcd_prange_match(const struct prange *r, const char *key, size_t klen)
{
	if (r->p == NULL)
		return 1;
	if (klen < r->plen || memcmp(key, r->p, r->plen) != 0)
		return 0;
	return klen == r->plen || key[r->plen] == '/';
}

int
etcd_call(struct etcd *e, const char *path, const struct buf *body, yajl_val *out)
{
	if (etcd_client_call(&e->cl, path, body, e->cfg.timeout_ms, out) < 0) {
		store_set_error(e->s, "%s", e->cl.err);
		return -1;
	}
	return 0;
}

int
etcd_check_key(struct etcd *e, const char *op, const char *key)
{
	if (key == NULL || *key == '\0') {
		store_set_error(e->s, "%s: empty key", op);
		return -1;
	}
	return 0;
}

/* ---- leases ---- */

int64_t
etcd_lease_grant(struct client *c, int ttl, int64_t timeout_ms, char *err, size_t errlen)
{
	struct buf b;
	struct jw w;
	yajl_val v;
	int64_t id;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	etcd_jw_i64(&w, "TTL", ttl);
	jw_end_obj(&w);
	if (etcd_client_call(c, "/v3/lease/grant", &b, timeout_ms, &v) < 0) {
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

/* lease_call - POST {"ID": id} to path; 0 with the answer in *v (caller frees), or -1 */
static int
lease_call(struct client *c, const char *path, int64_t id, int64_t timeout_ms, yajl_val *v)
{
	struct buf b;
	struct jw w;
	int rv;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	etcd_jw_i64(&w, "ID", id);
	jw_end_obj(&w);
	rv = etcd_client_call(c, path, &b, timeout_ms, v);
	buf_free(&b);
	return rv;
}

int
etcd_lease_revoke(struct client *c, int64_t id, int64_t timeout_ms)
{
	yajl_val v;

	if (lease_call(c, "/v3/lease/revoke", id, timeout_ms, &v) < 0)
		return -1;
	yajl_tree_free(v);
	return 0;
}

/*
 * lease_keepalive - renew once; 1 alive, 0 gone (expired or revoked),
 * -1 could not ask.
 */
static int
lease_keepalive(struct client *c, int64_t id, int64_t timeout_ms)
{
	yajl_val v, r;
	int rv;

	if (lease_call(c, "/v3/lease/keepalive", id, timeout_ms, &v) < 0)
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

/* etcd_session_get - the session lease, granted (and kept alive) on first use */
int64_t
etcd_session_get(struct etcd *e)
{
	char err[512];
	int64_t id;

	pthread_mutex_lock(&e->mu);
	id = e->session;
	pthread_mutex_unlock(&e->mu);
	if (id != 0)
		return id;
	if ((id = etcd_lease_grant(&e->cl, e->cfg.session_ttl, e->cfg.timeout_ms, err,
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

