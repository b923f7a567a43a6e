/*
 * kube - the Kubernetes API client's calls: a deadline on every call,
 * retries of 429 (Retry-After), 5xx and transport errors within it, the
 * bearer token re-read when its file changes, and completed calls handed
 * to their callbacks only from kube_dispatch.  The client itself (its curl
 * multi handle, epoll set and stage glue) is in kube_client.c.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/backoff.h"
#include "common/curl_epoll.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/kube_impl.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/stage.h"
#include "common/util.h"

#define KUBE_CONNECT_MS		10000
#define KUBE_BACKOFF_MIN_MS	200
#define KUBE_BACKOFF_MAX_MS	5000
#define KUBE_TOKEN_CHECK_MS	1000
#define KUBE_MAX_RESP		(64u << 20)

struct kube_call {
	struct kube *k;
	struct kube_call *prev, *next;	/* k->calls */
	char *method, *path, *ctype;
	char *accept;		/* the Accept header's value, NULL: application/json */
	char *body;
	size_t len;
	int64_t start, deadline;
	int64_t start_at;		/* > 0: waiting to (re)start then */
	CURL *easy;			/* non-NULL while in the multi handle */
	struct curl_slist *hdrs;
	struct buf resp;
	int64_t retry_after_ms;		/* from the last answer's Retry-After */
	int attempts;
	int token_retry;		/* a 401 already made us re-read the token */
	int finished;			/* r is final */
	int sync;			/* kube_do owns it */
	int early;			/* done may run from kube_progress (kube_call_early) */
	kube_done_fn done;
	void *arg;
	kube_data_fn data;		/* streaming */
	long stream_status;		/* status seen by the header callback */
	struct kube_resp r;
};

const char kube_user_agent[] = "decod/" PACKAGE_VERSION;



void
kube_mark_pending(struct kube *k)
{
	k->pending = 1;
}

/* ---- token ---- */

void
kube_token_refresh(struct kube *k, int force)
{
	struct stat st;
	char *t;
	size_t n;
	int64_t now = now_ms();

	if (k->cfg.token_file == NULL)
		return;
	if (!force && k->token != NULL && now - k->token_checked < KUBE_TOKEN_CHECK_MS)
		return;
	k->token_checked = now;
	if (stat(k->cfg.token_file, &st) < 0) {
		log_kv(LOG_WARN, "kube token file unreadable", "file", k->cfg.token_file,
		    "error", strerror(errno), NULL);
		return;
	}
	if (!force && k->token != NULL && st.st_ino == k->token_st.st_ino &&
	    st.st_dev == k->token_st.st_dev && st.st_size == k->token_st.st_size &&
	    st.st_mtim.tv_sec == k->token_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == k->token_st.st_mtim.tv_nsec)
		return;
	if ((t = read_file(k->cfg.token_file, &n, 64 * 1024)) == NULL) {
		log_kv(LOG_WARN, "kube token file unreadable", "file", k->cfg.token_file,
		    "error", strerror(errno), NULL);
		return;
	}
	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
		t[--n] = '\0';
	if (k->token != NULL) {
		if (strcmp(k->token, t) != 0) {
			k->stats.token_reloads++;
			log_kv(LOG_INFO, "kube token re-read", "file", k->cfg.token_file, NULL);
		}
		explicit_bzero(k->token, strlen(k->token));
		free(k->token);
	}
	k->token = t;
	k->token_st = st;
}

/* ---- calls ---- */

static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct kube_call *c = arg;
	size_t len = size * n;

	/* curl's header lines are not NUL-terminated: read numbers from a copy */
	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
		const char *sp = memchr(p, ' ', len);
		char tmp[8] = "";

		if (sp != NULL) {
			size_t m = len - (size_t)(sp + 1 - p);

			m = m < sizeof(tmp) - 1 ? m : sizeof(tmp) - 1;
			memcpy(tmp, sp + 1, m);
			tmp[m] = '\0';
		}
		c->stream_status = strtol(tmp, NULL, 10);
		c->retry_after_ms = -1;
	} else if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
		char tmp[32];
		size_t m = len - 12 < sizeof(tmp) - 1 ? len - 12 : sizeof(tmp) - 1;
		char *end;
		long v;

		memcpy(tmp, p + 12, m);
		tmp[m] = '\0';
		v = strtol(tmp, &end, 10);
		/* seconds; an HTTP date is rare from the API server: backoff then */
		if (end != tmp && v >= 0 && v < 3600)
			c->retry_after_ms = v * 1000;
	}
	return len;
}

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct kube_call *c = arg;
	size_t len = size * n;

	if (c->data != NULL && c->stream_status >= 200 && c->stream_status < 300) {
		c->data(c->arg, p, len);
		kube_mark_pending(c->k);
		return len;
	}
	if (c->resp.len + len > KUBE_MAX_RESP)
		return 0;	/* too large: curl fails the transfer */
	buf_add(&c->resp, p, len);
	return len;
}

static void
call_unlink(struct kube_call *c)
{
	struct kube *k = c->k;

	if (c->prev != NULL)
		c->prev->next = c->next;
	else if (k->calls == c)
		k->calls = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void
call_stop_easy(struct kube_call *c)
{
	if (c->easy != NULL) {
		curl_multi_remove_handle(c->k->multi, c->easy);
		curl_easy_cleanup(c->easy);
		c->easy = NULL;
	}
	curl_slist_free_all(c->hdrs);
	c->hdrs = NULL;
}

yajl_val
kube_resp_take_json(const struct kube_resp *r)
{
	struct kube_resp *w = (struct kube_resp *)r;	/* the call's own, freed after done */
	yajl_val v = w->json;

	w->json = NULL;
	w->reason = "";		/* it may point into the object */
	return v;
}

static void
resp_clear(struct kube_resp *r)
{
	free(r->body);
	yajl_tree_free(r->json);
	memset(r, 0, sizeof(*r));
	r->reason = "";
}

static void
call_free(struct kube_call *c)
{
	if (c == NULL)
		return;
	call_stop_easy(c);
	buf_free(&c->resp);
	resp_clear(&c->r);
	free(c->method);
	free(c->path);
	free(c->ctype);
	free(c->accept);
	free(c->body);
	free(c);
}

/* call_start - one attempt: a new easy handle in the multi */
static void
call_start(struct kube_call *c)
{
	struct kube *k = c->k;
	char *url, *auth;
	int64_t left = c->deadline - now_ms();
	CURL *h;
	CURLMcode mc;

	c->start_at = 0;
	c->attempts++;
	c->stream_status = 0;
	c->retry_after_ms = -1;
	buf_reset(&c->resp);
	kube_token_refresh(k, 0);
	if ((h = curl_easy_init()) == NULL)
		abort();
	url = xasprintf("%s%s", k->cfg.server, c->path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, c);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, kube_user_agent);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
	if (strcmp(c->method, "GET") == 0)
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(left < KUBE_CONNECT_MS && left > 1 ? left : KUBE_CONNECT_MS));
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/*
	 * HTTP/1.1, one call per connection.  client-go multiplexes on HTTP/2;
	 * Debian 12's libcurl (7.88) now and then left one stream of a
	 * multiplexed connection without its answer until the deadline: a list
	 * page of the publisher's Decofile cache stalled 30 s in one restart
	 * of five with 10,000 CRs (bench/bench_kube_scale.sh RESTARTS=5), with
	 * the API server showing nothing slow.  A watch holds a connection of
	 * its own; the other calls share the rest of KUBE_MAX_CONNS.
	 */
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (c->body != NULL) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->len);
	}
	/* TLS */
	if (k->cfg.insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (k->cfg.ca_data != NULL) {
		struct curl_blob b = { k->cfg.ca_data, k->cfg.ca_len, CURL_BLOB_NOCOPY };

		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
	} else if (k->cfg.ca_file != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, k->cfg.ca_file);
	if (k->cfg.cert_data != NULL) {
		struct curl_blob b = { k->cfg.cert_data, k->cfg.cert_len, CURL_BLOB_NOCOPY };

		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	} else if (k->cfg.cert_file != NULL)
		curl_easy_setopt(h, CURLOPT_SSLCERT, k->cfg.cert_file);
	if (k->cfg.key_data != NULL) {
		struct curl_blob b = { k->cfg.key_data, k->cfg.key_len, CURL_BLOB_NOCOPY };

		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	} else if (k->cfg.key_file != NULL)
		curl_easy_setopt(h, CURLOPT_SSLKEY, k->cfg.key_file);
	/* headers */
	{
		char *acc = xasprintf("Accept: %s", c->accept != NULL ? c->accept :
		    "application/json");

		c->hdrs = curl_slist_append(NULL, acc);
		free(acc);
	}
	if (c->body != NULL) {
		char *ct = xasprintf("Content-Type: %s", c->ctype != NULL ? c->ctype :
		    "application/json");

		c->hdrs = curl_slist_append(c->hdrs, ct);
		free(ct);
	}
	c->hdrs = curl_slist_append(c->hdrs, "Expect:");
	if (k->token != NULL && *k->token != '\0') {
		auth = xasprintf("Authorization: Bearer %s", k->token);
		c->hdrs = curl_slist_append(c->hdrs, auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
	c->easy = h;
	k->stats.calls++;
	if ((mc = curl_multi_add_handle(k->multi, h)) != CURLM_OK) {
		log_kv(LOG_ERROR, "kube curl_multi_add_handle", "error",
		    curl_multi_strerror(mc), NULL);
		abort();
	}
}

static int
retriable(const struct kube_call *c, long status, CURLcode rc)
{
	if (c->data != NULL)
		return 0;
	if (status == 429)
		return 1;
	if (strcmp(c->method, "POST") == 0)
		return 0;
	if (status >= 500 && status != 501)
		return 1;
	return status == 0 && rc != CURLE_OK && rc != CURLE_OPERATION_TIMEDOUT &&
	    rc != CURLE_WRITE_ERROR;
}

/* call_finish - r is final: fill it from the last attempt */
static void
call_finish(struct kube_call *c, long status, CURLcode rc)
{
	struct kube_resp *r = &c->r;
	struct json_error je;

	resp_clear(r);
	r->status = status;
	r->attempts = c->attempts;
	r->ms = now_ms() - c->start;
	r->len = c->resp.len;
	if (c->resp.data == NULL)
		buf_adds(&c->resp, "");
	r->body = buf_steal(&c->resp, NULL);
	if (r->len > 0 && (r->body[0] == '{' || r->body[0] == '['))
		r->json = json_parse(r->body, r->len, &je);
	if (status == 0)
		snprintf(r->err, sizeof(r->err), "%s %s: %s", c->method, c->path,
		    rc == CURLE_OPERATION_TIMEDOUT ? "deadline exceeded" : curl_easy_strerror(rc));
	else if (!kube_ok(r)) {
		const char *m = json_get_str(r->json, "message", NULL);
		const char *reason = json_get_str(r->json, "reason", NULL);

		r->reason = reason != NULL ? reason : "";
		snprintf(r->err, sizeof(r->err), "%s %s: HTTP %ld%s%s%s", c->method,
		    c->path, status, m != NULL ? ": " : "", m != NULL ? m : "",
		    c->attempts > 1 ? " (after retries)" : "");
	}
	if (!kube_ok(r))
		c->k->stats.errors++;
	c->finished = 1;
	c->k->pending = 1;
}

/* attempt_done - an attempt ended: retry within the deadline, or finish */
static void
attempt_done(struct kube_call *c, CURLcode rc)
{
	struct kube *k = c->k;
	long status = 0;
	int64_t now = now_ms(), wait;

	if (rc == CURLE_OK)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	metrics_kube_request(c->method, status);
	call_stop_easy(c);
	if (status == 429)
		k->stats.throttled++;
	if (status == 401 && k->cfg.token_file != NULL && !c->token_retry && c->data == NULL) {
		/* the projected token may have rotated under us: re-read, once */
		c->token_retry = 1;
		kube_token_refresh(k, 1);
		c->start_at = now;
		k->stats.retries++;
		return;
	}
	if (retriable(c, status, rc)) {
		wait = KUBE_BACKOFF_MIN_MS << (c->attempts - 1 < 5 ? c->attempts - 1 : 5);
		if (wait > KUBE_BACKOFF_MAX_MS)
			wait = KUBE_BACKOFF_MAX_MS;
		wait = backoff_jitter(wait);
		if (c->retry_after_ms >= 0 && (status == 429 || status == 503))
			wait = c->retry_after_ms > wait ? c->retry_after_ms : wait;
		if (now + wait < c->deadline - 10) {
			log_kv(LOG_DEBUG, "kube call retried", "method", c->method,
			    "path", c->path, "status", status == 0 ? curl_easy_strerror(rc) : "",
			    NULL);
			c->start_at = now + wait;
			k->stats.retries++;
			return;
		}
	}
	call_finish(c, status, rc);
}

/*
 * call_new - the one way a call is made: queued now, or started after
 * delay_ms; timeout_ms 0 is the client's timeout; data, when set, takes
 * the body as it streams (a watch)
 */
static struct kube_call *
call_new(struct kube *k, const char *method, const char *path, const char *ctype,
    const char *body, size_t len, int64_t timeout_ms, int64_t delay_ms,
    const char *accept, kube_data_fn data, kube_done_fn done, void *arg)
{
	struct kube_call *c = xcalloc(1, sizeof(*c));
	int64_t now = now_ms();

	c->k = k;
	c->method = xstrdup(method);
	c->path = xstrdup(path);
	c->ctype = ctype != NULL ? xstrdup(ctype) : NULL;
	c->accept = accept != NULL ? xstrdup(accept) : NULL;
	if (body != NULL) {
		c->body = xmalloc(len + 1);
		memcpy(c->body, body, len);
		c->body[len] = '\0';
		c->len = len;
	}
	c->start = now;
	c->deadline = now + delay_ms + (timeout_ms > 0 ? timeout_ms : k->timeout_ms);
	c->done = done;
	c->arg = arg;
	c->data = data;
	c->r.reason = "";
	buf_init(&c->resp);
	c->next = k->calls;
	if (k->calls != NULL)
		k->calls->prev = c;
	k->calls = c;
	if (delay_ms > 0)
		c->start_at = now + delay_ms;
	else
		call_start(c);
	return c;
}

struct kube_call *
kube_send(struct kube *k, const char *method, const char *path, const char *ctype,
    const char *body, size_t len, int64_t timeout_ms, kube_done_fn done, void *arg)
{
	struct kube_call *c = call_new(k, method, path, ctype, body, len, timeout_ms,
	    0, NULL, NULL, done, arg);

	kube_rearm(k);
	return c;
}

struct kube_call *
kube_send_later(struct kube *k, const char *method, const char *path,
    const char *accept, int64_t delay_ms, kube_done_fn done, void *arg)
{
	struct kube_call *c = call_new(k, method, path, NULL, NULL, 0, 0, delay_ms,
	    accept, NULL, done, arg);

	kube_rearm(k);
	return c;
}

struct kube_call *
kube_send_stream(struct kube *k, const char *path, const char *accept, int64_t delay_ms,
    int64_t timeout_ms, kube_data_fn data, kube_done_fn done, void *arg)
{
	struct kube_call *c = call_new(k, "GET", path, NULL, NULL, 0, timeout_ms, delay_ms,
	    accept, data, done, arg);

	kube_rearm(k);
	return c;
}

void
kube_cancel(struct kube_call *c)
{
	if (c == NULL)
		return;
	call_unlink(c);
	call_free(c);
}

struct kube_call *
kube_apply(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *name, const char *sub, const char *manager, int force,
    const char *body, size_t len, kube_done_fn done, void *arg)
{
	char *p = kube_apply_path(kd, ns, name, sub, manager, force);
	struct kube_call *c = kube_send(k, "PATCH", p, KUBE_APPLY_CTYPE, body, len, 0,
	    done, arg);

	free(p);
	return c;
}

struct kube_call *
kube_merge_patch(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *name, const char *manager, const char *body, size_t len,
    kube_done_fn done, void *arg)
{
	char *q = manager != NULL ? kube_escape(manager) : NULL;
	char *qs = q != NULL ? xasprintf("fieldManager=%s", q) : NULL;
	char *p = kube_path(kd, ns, name, NULL, qs);
	struct kube_call *c = kube_send(k, "PATCH", p, KUBE_MERGE_PATCH_CTYPE, body, len, 0,
	    done, arg);

	free(p);
	free(qs);
	free(q);
	return c;
}

/* ---- the engine ---- */

/*
 * run_early - the callbacks of finished calls marked early (a list's
 * pages): they only keep what came and ask for more, so they may run
 * before the caller's loop does
 */
static void
run_early(struct kube *k)
{
	struct kube_call *c, *next;

	for (c = k->calls; c != NULL; c = next) {
		next = c->next;
		if (!c->finished || c->sync || !c->early)
			continue;
		call_unlink(c);
		if (c->done != NULL)
			c->done(c->arg, &c->r);
		call_free(c);
		next = k->calls;	/* the callback may have added or cancelled calls */
	}
}

void
kube_call_early(struct kube_call *c)
{
	if (c != NULL)
		c->early = 1;
}

/* progress - sockets, curl timers, finished attempts, due restarts; no callbacks */
static void
progress(struct kube *k)
{
	int n, round;
	CURLMsg *m;
	struct kube_call *c, *next;

	curl_epoll_ready(k->multi, k->epfd);
	for (round = 0; round < 4; round++) {
		int64_t now = now_ms();

		curl_epoll_timeout(k->multi, &k->curl_due);
		while ((m = curl_multi_info_read(k->multi, &n)) != NULL) {
			struct kube_call *mc = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&mc);
			attempt_done(mc, m->data.result);
		}
		for (c = k->calls; c != NULL; c = next) {
			next = c->next;
			if (c->finished || c->start_at == 0 || c->start_at > now)
				continue;
			if (now >= c->deadline)
				call_finish(c, 0, CURLE_OPERATION_TIMEDOUT);
			else
				call_start(c);
		}
		if (k->curl_due < 0 || k->curl_due > now_ms())
			break;
	}
}

void
kube_progress(struct kube *k)
{
	progress(k);
	run_early(k);
	progress(k);	/* what they asked for, on the wire now */
	kube_rearm(k);
}

void
kube_dispatch(struct kube *k)
{
	struct kube_call *c, *next;
	int more;

	progress(k);
	k->pending = 0;
	/* watch events first, then finished calls (a watch's end after its events) */
	do {
		more = 0;
		for (size_t i = 0; i < k->ninfs; i++)
			more |= kube_informer_pump(k->infs[i]);
	} while (more);
	for (c = k->calls; c != NULL; c = next) {
		next = c->next;
		if (!c->finished || c->sync)
			continue;
		call_unlink(c);
		if (c->done != NULL)
			c->done(c->arg, &c->r);
		call_free(c);
		next = k->calls;	/* the callback may have cancelled others */
	}
	kube_rearm(k);
}

int
kube_fd(const struct kube *k)
{
	return k->epfd;
}

int64_t
kube_timeout(const struct kube *k)
{
	int64_t due = k->curl_due, now = now_ms();

	if (k->pending)
		return 0;
	for (const struct kube_call *c = k->calls; c != NULL; c = c->next) {
		if (c->finished && !c->sync)
			return 0;
		if (c->start_at > 0 && (due < 0 || c->start_at < due))
			due = c->start_at;
	}
	if (due < 0)
		return -1;
	return due > now ? due - now : 0;
}

void
kube_run(struct kube *k, int64_t max_ms, const volatile int *stop)
{
	int64_t end = max_ms < 0 ? INT64_MAX : now_ms() + max_ms;

	for (;;) {
		struct pollfd pfd = { .fd = k->epfd, .events = POLLIN };
		int64_t t, left;

		kube_dispatch(k);
		if ((stop != NULL && *stop) || (left = end - now_ms()) <= 0)
			return;
		if ((t = kube_timeout(k)) < 0 || t > left)
			t = left;
		if (t > 1000)
			t = 1000;
		poll(&pfd, 1, (int)t);
	}
}

struct kube_resp *
kube_do(struct kube *k, const char *method, const char *path, const char *ctype,
    const char *body, size_t len, int64_t timeout_ms)
{
	struct kube_call *c = call_new(k, method, path, ctype, body, len, timeout_ms,
	    0, NULL, NULL, NULL, NULL);
	struct kube_resp *r;

	c->sync = 1;
	while (!c->finished) {
		struct pollfd pfd = { .fd = k->epfd, .events = POLLIN };
		int64_t t = k->curl_due < 0 ? 100 : k->curl_due - now_ms();

		if (c->start_at > 0 && c->start_at - now_ms() < t)
			t = c->start_at - now_ms();
		if (t > 100)
			t = 100;
		if (t > 0)
			poll(&pfd, 1, (int)t);
		progress(k);
	}
	call_unlink(c);
	r = xmalloc(sizeof(*r));
	*r = c->r;
	memset(&c->r, 0, sizeof(c->r));
	call_free(c);
	kube_rearm(k);	/* others may have finished meanwhile */
	return r;
}

void
kube_resp_free(struct kube_resp *r)
{
	if (r == NULL)
		return;
	resp_clear(r);
	free(r);
}
