/*
 * store_etcd - the etcd backend of the store (store_impl.h): the key/value
 * operations on etcd's v3 JSON gateway and the ops table.  Puts with a TTL
 * get a lease of their own, never kept alive, so they expire by themselves.
 * The client, session and helpers are in store_etcd_client.c, the watch in
 * store_etcd_watch.c, job locks in store_etcd_lock.c.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/store_etcd.h"
#include "common/util.h"

/* ---- the operations ---- */

/* etcd_free_mem - e's clients, lock, condition and settings, and e */
static void
etcd_free_mem(struct etcd *e)
{
	etcd_client_free(&e->cl);
	etcd_client_free(&e->kacl);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	etcd_cfg_free(&e->cfg);
	free(e);
}

static void *
etcd_open(struct store *s, const char *spec, const struct conf *cf)
{
	struct etcd *e = xcalloc(1, sizeof(*e));
	pthread_condattr_t ca;
	struct buf b;
	yajl_val v;

	etcd_global_init();
	e->s = s;
	if (etcd_cfg_load(&e->cfg, spec, cf, s->err, sizeof(s->err)) < 0) {
		etcd_cfg_free(&e->cfg);
		free(e);
		return NULL;
	}
	etcd_client_init(&e->cl, &e->cfg, NULL);
	etcd_client_init(&e->kacl, &e->cfg, &e->ka_stop);
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* one round trip so that a wrong URL or a dead cluster shows at once */
	buf_init(&b);
	buf_adds(&b, "{}");
	if (etcd_client_call(&e->cl, "/v3/maintenance/status", &b, e->cfg.timeout_ms, &v) < 0) {
		store_set_error(s, "%s", e->cl.err);
		buf_free(&b);
		etcd_free_mem(e);
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
	if (e->session != 0 && etcd_lease_revoke(&e->cl, e->session,
	    e->cfg.timeout_ms < 3000 ? e->cfg.timeout_ms : 3000) < 0)
		log_kv(LOG_WARN, "etcd: could not revoke the session lease; its locks expire by themselves",
		    "error", e->cl.err, NULL);
	etcd_free_mem(e);
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

	if (etcd_check_key(e, "put", key) < 0)
		return -1;
	if (ttl_s > 0 && (lease = etcd_lease_grant(&e->cl, ttl_s, e->cfg.timeout_ms, err,
	    sizeof(err))) < 0) {
		store_set_error(e->s, "put %s: %s", key, err);
		return -1;
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	etcd_jw_b64(&w, "key", key, strlen(key));
	etcd_jw_b64(&w, "value", val, len);
	if (lease != 0)
		etcd_jw_i64(&w, "lease", lease);
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
			etcd_jw_b64(&w, "key", keys[i], strlen(keys[i]));
			etcd_jw_b64(&w, "value", vals[i] ? vals[i] : "", lens[i]);
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
	etcd_jw_b64(&w, "key", key, strlen(key));
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

	if (etcd_check_key(e, "get", key) < 0 || key_call(e, "/v3/kv/range", key, &v) < 0)
		return -1;
	kvs = json_get(v, "kvs", NULL);
	if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0) {
		yajl_tree_free(v);
		return 1;
	}
	*val = etcd_b64_field(kvs->u.array.values[0], "value", &n);
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

	if (etcd_check_key(e, "delete", key) < 0 ||
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

	etcd_prange_init(&r, prefix);
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
		subend = etcd_prefix_end(sub, r.plen + 1, &sl);
		jw_obj(&w);
		jw_key(&w, "request_delete_range");
		jw_obj(&w);
		etcd_jw_b64(&w, "key", r.p, r.plen);
		jw_end_obj(&w);
		jw_end_obj(&w);
		jw_obj(&w);
		jw_key(&w, "request_delete_range");
		jw_obj(&w);
		etcd_jw_b64(&w, "key", sub, r.plen + 1);
		etcd_jw_b64(&w, "range_end", subend, sl);
		jw_end_obj(&w);
		jw_end_obj(&w);
		free(sub);
		free(subend);
	} else {
		jw_obj(&w);
		jw_key(&w, "request_delete_range");
		jw_obj(&w);
		etcd_jw_b64(&w, "key", r.key, r.klen);
		etcd_jw_b64(&w, "range_end", r.end, r.elen);
		jw_end_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	etcd_prange_free(&r);
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

	etcd_prange_init(&r, prefix);
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
		etcd_jw_b64(&w, "key", from, fromlen);
		etcd_jw_b64(&w, "range_end", r.end, r.elen);
		etcd_jw_i64(&w, "limit", ETCD_LIST_PAGE);
		if (rev > 0)
			etcd_jw_i64(&w, "revision", rev);
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
			char *k = etcd_b64_field(kv, "key", &kn);

			if (i + 1 == kvs->u.array.len) {
				/* next page starts just after this key */
				free(from);
				from = xmalloc(kn + 1);
				memcpy(from, k, kn);
				from[kn] = '\0';
				fromlen = kn + 1;
			}
			if (!etcd_prange_match(&r, k, kn)) {
				free(k);
				continue;
			}
			if (out->n == cap) {
				cap = cap ? cap * 2 : 64;
				out->kvs = xrealloc(out->kvs, cap * sizeof(*out->kvs));
			}
			o = &out->kvs[out->n++];
			o->key = k;
			o->value = etcd_b64_field(kv, "value", &o->vlen);
			o->mod_revision = json_get_int(kv, 0, "mod_revision", NULL);
		}
		yajl_tree_free(v);
	}
	free(from);
	etcd_prange_free(&r);
	if (rv < 0) {
		store_list_free(out);
		return -1;
	}
	out->revision = rev;
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

