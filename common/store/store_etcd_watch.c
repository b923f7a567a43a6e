/*
 * store_etcd_watch - a watch on etcd: one thread per watch holds a
 * streaming POST to /v3/watch (curl multi, so it can be woken to stop),
 * queues events and wakes the caller's loop through a pipe.  A broken
 * stream reconnects from the last revision it saw (or the compaction
 * revision), so the caller never misses an event.
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

#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/store_etcd.h"
#include "common/util.h"

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
			metrics_watch_relist("etcd");
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
		k = etcd_b64_field(kv, "key", &kn);
		if (!etcd_prange_match(&w->r, k, kn)) {
			free(k);
			continue;
		}
		if (!del)
			val = etcd_b64_field(kv, "value", &vn);
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
	etcd_jw_b64(&jw, "key", w->r.key, w->r.klen);
	etcd_jw_b64(&jw, "range_end", w->r.end, w->r.elen);
	if (w->next_rev > 0)
		etcd_jw_i64(&jw, "start_revision", w->next_rev);
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
	etcd_client_tls(h, w->cl.cfg);
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
		metrics_watch_reconnect("etcd");
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
	etcd_client_free(&w->cl);
	buf_free(&w->line);
	if (w->pfd[0] >= 0)
		close(w->pfd[0]);
	if (w->pfd[1] >= 0)
		close(w->pfd[1]);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	etcd_prange_free(&w->r);
	free(w);
}

/*
 * etcd_watch_new - from_rev 0 means "from now on": the current revision is
 * read here, on the caller's thread, so nothing written after this returns
 * is missed even if the stream connects later.
 */
void *
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
	etcd_client_init(&w->cl, &e->cfg, &w->stop);
	w->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	w->cl.ep = e->cl.ep;
	etcd_prange_init(&w->r, prefix);
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

int
etcd_watch_fd(void *wbe)
{
	return ((struct ewatch *)wbe)->pfd[0];
}

int
etcd_watch_timeout_ms(void *wbe)
{
	(void)wbe;
	return 1000;	/* events wake the fd; nothing to do on a timer */
}

int
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

void
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

