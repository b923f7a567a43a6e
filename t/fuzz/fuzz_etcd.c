/*
 * fuzz_etcd - the etcd JSON gateway's answers as the store reads them:
 * the watch stream (split into lines by the curl write callback, each a
 * JSON message with base64 keys and values, cancel and compaction
 * notices), reached by including store_etcd_watch.c; the input is also read as
 * a range answer's kvs the way etcd_list reads them.
 */
#include "config.h"

#include "common/store/store_etcd_watch.c"

#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ewatch *w = xcalloc(1, sizeof(*w));
	yajl_val v, kvs;
	char *copy;

	log_init("fuzz_etcd", LOG_ERROR, LOG_FMT_KV);	/* every bad line warns */
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->pfd[0] = w->pfd[1] = -1;
	w->tail = &w->head;
	buf_init(&w->line);
	etcd_prange_init(&w->r, "/decod/");
	/* curl hands the stream over in pieces: two here */
	copy = xmalloc(size + 1);
	memcpy(copy, data, size);
	if (watch_write(copy, 1, size / 2, w) == size / 2)
		(void)watch_write(copy + size / 2, 1, size - size / 2, w);
	free(copy);
	for (struct wev *ev = w->head; ev != NULL; ev = ev->next)
		fuzz_check(ev->key != NULL, "every event has a key");
	ewatch_free_mem(w);

	if ((v = json_parse((const char *)data, size, NULL)) == NULL)
		return 0;
	kvs = json_get(v, "kvs", NULL);
	for (size_t i = 0; kvs != NULL && YAJL_IS_ARRAY(kvs) && i < kvs->u.array.len; i++) {
		size_t kn = 0, vn = 0;
		char *k = etcd_b64_field(kvs->u.array.values[i], "key", &kn);
		char *val = etcd_b64_field(kvs->u.array.values[i], "value", &vn);

		free(k);
		free(val);
	}
	yajl_tree_free(v);
	return 0;
}
