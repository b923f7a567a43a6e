/*
 * store_etcd.h - the parts of the etcd backend shared by its files:
 * store_etcd.c (the key/value operations), store_etcd_client.c (settings,
 * the HTTP client with failover, JSON helpers, leases and the session),
 * store_etcd_watch.c and store_etcd_lock.c.  Only those include this.
 */
#ifndef DECOD_STORE_ETCD_H
#define DECOD_STORE_ETCD_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>

#include "common/json.h"
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

/* ---- store_etcd_client.c ---- */

/* etcd_global_init - curl's global state, once per process (thread-safe) */
void etcd_global_init(void);

/*
 * etcd_cfg_load - endpoints from spec ("etcd:URL[,URL...]") and the etcd_*
 * and session_ttl settings from cf (or the environment when cf is NULL or
 * does not know them).  0, or -1 with a message naming the setting in err;
 * etcd_cfg_free releases what it filled either way.
 */
int etcd_cfg_load(struct etcd_cfg *c, const char *spec, const struct conf *cf, char *err,
    size_t errlen);
void etcd_cfg_free(struct etcd_cfg *c);

/*
 * etcd_client_init - a client for one thread on cfg; with stop non-NULL a
 * call gives up once *stop is set (read atomically).  Aborts if curl cannot
 * make a handle.  etcd_client_free releases it (not c itself).
 */
void etcd_client_init(struct client *c, const struct etcd_cfg *cfg, const int *stop);
void etcd_client_free(struct client *c);
/* etcd_client_tls - the CA and client certificate of cfg on handle h */
void etcd_client_tls(CURL *h, const struct etcd_cfg *cfg);
/*
 * etcd_client_call - POST body to path on the current endpoint and parse the
 * answer.  Connection failures move to the next endpoint; "unavailable"
 * answers are retried with backoff; everything within timeout_ms.  0 with
 * *out (caller frees with yajl_tree_free) or -1 with c->err.
 */
int etcd_client_call(struct client *c, const char *path, const struct buf *body,
    int64_t timeout_ms, yajl_val *out);
/* etcd_call - etcd_client_call on e's own client and deadline; errors go to the store */
int etcd_call(struct etcd *e, const char *path, const struct buf *body, yajl_val *out);
/* etcd_check_key - -1 (store error naming op) for an empty key, else 0 */
int etcd_check_key(struct etcd *e, const char *op, const char *key);

/* etcd_jw_b64, etcd_jw_i64 - a key with a base64 value, or an int64 as a string */
void etcd_jw_b64(struct jw *w, const char *k, const void *p, size_t n);
void etcd_jw_i64(struct jw *w, const char *k, int64_t v);
/* etcd_b64_field - decode base64 field name of v; "" when absent; caller frees */
char *etcd_b64_field(yajl_val v, const char *name, size_t *len);
/* etcd_prefix_end - the range end covering every key starting with p; caller frees */
char *etcd_prefix_end(const char *p, size_t n, size_t *outn);
/*
 * etcd_prange_init - the etcd range a store prefix covers: "/a/b" names the
 * key "/a/b" and the keys under "/a/b/", never "/a/bc" (etcd_prange_match
 * filters those out); "/a/b/" names the keys under it; "" and "/" every
 * key.  etcd_prange_free releases it.
 */
void etcd_prange_init(struct prange *r, const char *prefix);
void etcd_prange_free(struct prange *r);
int etcd_prange_match(const struct prange *r, const char *key, size_t klen);

/*
 * etcd_lease_grant - a new lease of ttl seconds: its ID, or -1 with err.
 * etcd_lease_revoke - revoke it now; 0 or -1.
 */
int64_t etcd_lease_grant(struct client *c, int ttl, int64_t timeout_ms, char *err,
    size_t errlen);
int etcd_lease_revoke(struct client *c, int64_t id, int64_t timeout_ms);
/*
 * etcd_session_get - the session lease that carries this process's locks,
 * granted on first use and kept alive by a thread; its ID, or -1 with the
 * store's error.  A lost session is granted anew on the next call.
 */
int64_t etcd_session_get(struct etcd *e);

/* ---- store_etcd_watch.c: the store_ops watch entries (see store_impl.h) ---- */
void *etcd_watch_new(void *be, struct store_watch *sw, const char *prefix, int64_t from_rev);
int etcd_watch_fd(void *wbe);
int etcd_watch_timeout_ms(void *wbe);
int etcd_watch_dispatch(void *wbe, struct store_watch *sw);
void etcd_watch_free(void *wbe);

/* ---- store_etcd_lock.c: the store_ops lock entries (see store_impl.h) ---- */
int etcd_try_lock(void *be, const char *key, char **holder);
int etcd_try_lock_many(void *be, const char *const *keys, size_t n, int *results);
int etcd_unlock(void *be, const char *key);

#endif
