/*
 * store_etcd_lock - job locks on etcd: a lock is a key put on this
 * process's session lease (store_etcd_client.c keeps it alive), taken only
 * if the key was never created, released only while it is still on our
 * lease.  Every lock request is the same single-key transaction, built by
 * txn_write(); a batch nests one per key in an outer txn.
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

/*
 * etcd_txn - one compare-and-act on one key: if the key's target
 * ("CREATE": create_revision, "LEASE": lease) equals want, put put_value on
 * lease (put_value NULL: delete the key); else, with read_on_failure, read
 * the key (2: keys only, enough to see its lease).
 */
struct etcd_txn {
	const char *key;
	const char *target;
	int64_t want;
	const char *put_value;
	int64_t lease;
	int read_on_failure;
};

/* txn_write - t as etcd's TxnRequest JSON object into w */
static void
txn_write(struct jw *w, const struct etcd_txn *t)
{
	size_t kl = strlen(t->key);

	jw_obj(w);
	jw_key(w, "compare");
	jw_arr(w);
	jw_obj(w);
	etcd_jw_b64(w, "key", t->key, kl);
	jw_key(w, "target");
	jw_str(w, t->target);
	jw_key(w, "result");
	jw_str(w, "EQUAL");
	etcd_jw_i64(w, strcmp(t->target, "LEASE") == 0 ? "lease" : "create_revision", t->want);
	jw_end_obj(w);
	jw_end_arr(w);
	jw_key(w, "success");
	jw_arr(w);
	jw_obj(w);
	jw_key(w, t->put_value != NULL ? "request_put" : "request_delete_range");
	jw_obj(w);
	etcd_jw_b64(w, "key", t->key, kl);
	if (t->put_value != NULL) {
		etcd_jw_b64(w, "value", t->put_value, strlen(t->put_value));
		etcd_jw_i64(w, "lease", t->lease);
	}
	jw_end_obj(w);
	jw_end_obj(w);
	jw_end_arr(w);
	if (t->read_on_failure) {
		jw_key(w, "failure");
		jw_arr(w);
		jw_obj(w);
		jw_key(w, "request_range");
		jw_obj(w);
		etcd_jw_b64(w, "key", t->key, kl);
		if (t->read_on_failure == 2) {
			jw_key(w, "keys_only");
			jw_bool(w, 1);
		}
		jw_end_obj(w);
		jw_end_obj(w);
		jw_end_arr(w);
	}
	jw_end_obj(w);
}

/* txn_call - send t alone; 0 with etcd's answer in *v (caller frees), or -1 */
static int
txn_call(struct etcd *e, const struct etcd_txn *t, yajl_val *v)
{
	struct buf b;
	struct jw w;
	int rv;

	buf_init(&b);
	jw_init(&w, &b);
	txn_write(&w, t);
	rv = etcd_call(e, "/v3/kv/txn", &b, v);
	buf_free(&b);
	return rv;
}

/* txn_failure_kv - the key read by a failed txn_write txn, or NULL if gone */
static yajl_val
txn_failure_kv(yajl_val txn)
{
	yajl_val kvs = json_get(txn, "responses", NULL);

	if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0)
		return NULL;
	kvs = json_get(kvs->u.array.values[0], "response_range", "kvs", NULL);
	if (kvs == NULL || !YAJL_IS_ARRAY(kvs) || kvs->u.array.len == 0)
		return NULL;
	return kvs->u.array.values[0];
}

/*
 * etcd_try_lock - one transaction: if the key was never created, put it with
 * our identity on the session lease; else read it.  The lock is ours when the
 * key's lease is our session lease.
 */
int
etcd_try_lock(void *be, const char *key, char **holder)
{
	struct etcd *e = be;
	struct etcd_txn t = { .key = key, .target = "CREATE", .want = 0,
		.put_value = e->s->identity, .read_on_failure = 1 };

	if (etcd_check_key(e, "lock", key) < 0)
		return -1;
	for (int attempt = 0; attempt < 3; attempt++) {
		int64_t id = etcd_session_get(e);
		yajl_val v, kv;

		if (id < 0)
			return -1;
		t.lease = id;
		if (txn_call(e, &t, &v) < 0)
			return -1;
		if (json_get_bool(v, 0, "succeeded", NULL)) {
			yajl_tree_free(v);
			return 1;
		}
		if ((kv = txn_failure_kv(v)) == NULL) {
			yajl_tree_free(v);
			continue;	/* released between compare and read: again */
		}
		if (json_get_int(kv, 0, "lease", NULL) == id) {
			yajl_tree_free(v);
			return 1;
		}
		if (holder != NULL) {
			size_t n;

			*holder = etcd_b64_field(kv, "value", &n);
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
		struct etcd_txn t = { .key = keys[i], .target = "CREATE", .want = 0,
			.put_value = ident, .lease = id, .read_on_failure = 2 };

		jw_obj(&w);
		jw_key(&w, "request_txn");
		txn_write(&w, &t);
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
		yajl_val kv;

		if (json_get_bool(t, 0, "succeeded", NULL)) {
			results[i] = 1;
			continue;
		}
		if ((kv = txn_failure_kv(t)) == NULL) {
			results[i] = -1;	/* released in between: ask again alone */
			again = 1;
			continue;
		}
		results[i] = json_get_int(kv, 0, "lease", NULL) == id;
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
int
etcd_try_lock_many(void *be, const char *const *keys, size_t n, int *results)
{
	struct etcd *e = be;
	int64_t id;
	int rv = 0, single = 0;

	for (size_t i = 0; i < n; i++)
		if (etcd_check_key(e, "lock", keys[i]) < 0)
			return -1;
	if ((id = etcd_session_get(e)) < 0)
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
int
etcd_unlock(void *be, const char *key)
{
	struct etcd *e = be;
	struct etcd_txn t = { .key = key, .target = "LEASE", .put_value = NULL };
	yajl_val v;
	int64_t id;

	if (etcd_check_key(e, "unlock", key) < 0)
		return -1;
	pthread_mutex_lock(&e->mu);
	id = e->session;
	pthread_mutex_unlock(&e->mu);
	if (id == 0)
		return 0;
	t.want = id;
	if (txn_call(e, &t, &v) < 0)
		return -1;
	yajl_tree_free(v);
	return 0;
}
