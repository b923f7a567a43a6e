/*
 * notify_engine - the reload calls of a rollout on one curl multi handle.
 * curl's sockets live in an epoll set the engine owns (one fd for the
 * caller's loop); curl's timer and the engine's own times (retry backoff,
 * deadlines) fold into one timeout.  Each job owns its replicas, their
 * results, and FIFO retry queues (one per attempt number: a constant delay
 * per queue keeps each FIFO sorted by due time, so scheduling is O(1)).
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/curl_epoll.h"
#include "common/util.h"
#include "daemons/notifier/notify_engine.h"

#include "daemons/notifier/notify_engine_int.h"

void
notify_params_default(struct notify_params *p)
{
	p->concurrency = 30;
	p->attempts = 3;
	p->attempt_timeout_ms = 30000;
	p->backoff_ms = 2000;
	p->poll_timeout_ms = 150000;
	p->deadline_ms = 300000;
	p->connect_timeout_ms = 10000;
}

const char *
notify_state_name(enum notify_state s)
{
	switch (s) {
	case NOTIFY_CONFIRMED: return "confirmed";
	case NOTIFY_FAILED: return "failed";
	case NOTIFY_GONE: return "gone";
	case NOTIFY_MISSING_TOKEN: return "missing-token";
	default: return "pending";
	}
}

/* on_socket - curl tells which sockets to watch: mirror it in the epoll set */
static int
on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct notify_engine *e = userp;

	(void)easy;
	return curl_epoll_socket(e->multi, e->epfd, s, what, socketp, e);
}

/* on_timer - curl wants socket_action(TIMEOUT) after timeout_ms */
static int
on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct notify_engine *e = userp;

	e->curl_due = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	return 0;
}

struct notify_engine *
notify_engine_new(void)
{
	struct notify_engine *e;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	e = xcalloc(1, sizeof(*e));
	if ((e->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		free(e);
		return NULL;
	}
	e->curl_due = -1;
	return e;
}

/*
 * engine_multi - the curl multi handle, made on the first call: an idle
 * notifier does not load libcurl (common/curl_lazy.c).  Aborts when curl
 * cannot start, as making it at start did.
 */
static CURLM *
engine_multi(struct notify_engine *e)
{
	static int global_done;

	if (e->multi != NULL)
		return e->multi;
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			abort();
		global_done = 1;
	}
	if ((e->multi = curl_multi_init()) == NULL)
		abort();
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	return e->multi;
}

static void job_release(struct notify_job *job);

void
notify_engine_free(struct notify_engine *e)
{
	if (e == NULL)
		return;
	while (e->jobs != NULL)
		notify_job_cancel(e->jobs);
	while (e->finished != NULL) {
		struct notify_job *j = e->finished;

		e->finished = j->next;
		job_release(j);
	}
	if (e->multi != NULL)
		curl_multi_cleanup(e->multi);
	close(e->epfd);
	free(e);
}

int
notify_engine_fd(const struct notify_engine *e)
{
	return e->epfd;
}

size_t
notify_engine_jobs(const struct notify_engine *e)
{
	return e->njobs;
}

/* job_next_due - earliest time the job needs attention (INT64_MAX: none) */
static int64_t
job_next_due(const struct notify_job *job)
{
	int64_t due = job->deadline;

	for (int k = 0; k < MAX_ATTEMPTS; k++) {
		if (job->retry[k].head != NULL && job->retry[k].head->due < due)
			due = job->retry[k].head->due;
	}
	return due;
}

int64_t
notify_engine_timeout(const struct notify_engine *e)
{
	int64_t due = INT64_MAX, now = now_ms();

	if (e->finished != NULL)
		return 0;
	if (e->curl_due >= 0)
		due = e->curl_due;
	for (const struct notify_job *j = e->jobs; j != NULL; j = j->next) {
		int64_t d = job_next_due(j);

		if (j->next_new < j->n && j->in_flight < (size_t)j->p.concurrency)
			return 0;
		if (d < due)
			due = d;
	}
	if (due == INT64_MAX)
		return -1;
	return due <= now ? 0 : due - now;
}

static void
set_str(const char **dst, const char *src)
{
	char *old = (char *)*dst;

	*dst = src ? xstrdup(src) : NULL;
	free(old);
}

/* set_error - the replica's error message (printf-like) */
static void
set_error(struct rep *rep, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
set_error(struct rep *rep, const char *fmt, ...)
{
	char msg[sizeof(((struct notify_result *)0)->error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	free(rep->r.error);
	rep->r.error = xstrdup(msg);
}

static int
has_error(const struct rep *rep)
{
	return rep->r.error != NULL && rep->r.error[0] != '\0';
}

/* finish_rep - the replica's outcome is known */
static void
finish_rep(struct notify_job *job, struct rep *rep, enum notify_state st)
{
	int64_t now = now_ms();

	rep->r.state = st;
	rep->r.ms = rep->first_ms ? now - rep->first_ms : 0;
	job->finished++;
	job->last_outcome = now;
	if (st == NOTIFY_CONFIRMED || st == NOTIFY_GONE) {
		free(rep->r.error);
		rep->r.error = NULL;
	}
}

static size_t
on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct job_call *c = userdata;
	size_t n = size * nmemb, room = sizeof(c->resp) - 1 - c->resplen;

	if (room > 0) {
		size_t k = n < room ? n : room;

		memcpy(c->resp + c->resplen, ptr, k);
		c->resplen += k;
		c->resp[c->resplen] = '\0';
	}
	return n;
}

/* build_url - the reload URL of the replica for this job */
static char *
build_url(struct notify_job *job, struct rep *rep, CURL *easy)
{
	size_t ul = strlen(rep->t.url);
	char *url, *esc;

	while (ul > 0 && rep->t.url[ul - 1] == '/')
		ul--;
	if (rep->t.style == NOTIFY_PUSH)
		return xasprintf("%.*s/.decofile/reload", (int)ul, rep->t.url);
	if (rep->t.ts_file == NULL || rep->t.ts_file[0] == '\0')
		return xasprintf("%.*s/.decofile/reload?timestamp=%lld", (int)ul,
		    rep->t.url, (long long)job->timestamp);
	esc = curl_easy_escape(easy, rep->t.ts_file, 0);
	url = xasprintf("%.*s/.decofile/reload?timestamp=%lld&tsFile=%s", (int)ul,
	    rep->t.url, (long long)job->timestamp, esc ? esc : "");
	curl_free(esc);
	return url;
}

/*
 * start_try - re-resolve the replica, then start one call.  Returns 1 if a
 * call is in flight, 0 if the replica finished without one.
 */
static int
start_try(struct notify_job *job, struct rep *rep)
{
	struct notify_engine *e = job->e;
	struct job_call *c;
	struct notify_target t = rep->t;
	int64_t now = now_ms(), timeout;
	char *url;
	CURLMcode mc;

	if (job->resolve != NULL) {
		int r = job->resolve(job->arg, &t);

		if (r == 0) {
			finish_rep(job, rep, NOTIFY_GONE);
			return 0;
		}
		if (r > 0) {
			/* the callback may have pointed the fields at new strings */
			if (t.url != rep->t.url) {
				if (rep->t.id == rep->t.url)	/* the id keeps the old string */
					rep->t.id = xstrdup(rep->t.id);
				set_str(&rep->t.url, t.url);
			}
			if (t.ts_file != rep->t.ts_file)
				set_str(&rep->t.ts_file, t.ts_file);
			if (t.token != rep->t.token)
				set_str(&rep->t.token, t.token);
			rep->t.style = t.style;
		}
	}
	if (rep->t.url == NULL || strncmp(rep->t.url, "http", 4) != 0) {
		set_error(rep, "no usable URL");
		finish_rep(job, rep, NOTIFY_FAILED);
		return 0;
	}
	if (rep->first_ms == 0) {
		rep->first_ms = now;
		rep->poll_end = now + job->p.poll_timeout_ms;
	}
	if (rep->t.style == NOTIFY_POLL)
		timeout = rep->poll_end - now;
	else
		timeout = job->p.attempt_timeout_ms;
	if (job->deadline - now < timeout)
		timeout = job->deadline - now;
	if (timeout <= 0) {
		if (!has_error(rep))
			set_error(rep, "no time left to try");
		finish_rep(job, rep, NOTIFY_FAILED);
		return 0;
	}

	(void)engine_multi(e);
	c = xcalloc(1, sizeof(*c));
	c->job = job;
	c->rep = rep;
	if ((c->easy = curl_easy_init()) == NULL)
		abort();
	url = build_url(job, rep, c->easy);
	curl_easy_setopt(c->easy, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	/* answers are a few bytes: a 4 KB receive buffer, not 16 KB per call in flight */
	curl_easy_setopt(c->easy, CURLOPT_BUFFERSIZE, 4096L);
	/* replicas are mostly IP addresses; a DNS cache of thousands of them
	 * costs a full scan on every new name (curl prunes it on each resolve) */
	curl_easy_setopt(c->easy, CURLOPT_DNS_CACHE_TIMEOUT, 0L);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, (long)timeout);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(job->p.connect_timeout_ms < timeout ? job->p.connect_timeout_ms : timeout));
	curl_easy_setopt(c->easy, CURLOPT_USERAGENT, "decod-notifier/" PACKAGE_VERSION);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	if (rep->t.token != NULL && rep->t.token[0] != '\0') {
		char *h = xasprintf("Authorization: Token %s", rep->t.token);

		if (rep->t.style == NOTIFY_PUSH) {
			c->hdrs = curl_slist_append(c->hdrs, "Content-Type: application/json");
			c->hdrs = curl_slist_append(c->hdrs, "Expect:");
		}
		c->hdrs = curl_slist_append(c->hdrs, h);
		explicit_bzero(h, strlen(h));
		free(h);
		c->sent_token = 1;
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs);
	} else if (rep->t.style == NOTIFY_PUSH)
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, job->push_hdrs);
	if (rep->t.style == NOTIFY_PUSH) {
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, job->body);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)job->body_len);
	}
	rep->call = c;
	rep->r.attempts++;
	if ((mc = curl_multi_add_handle(e->multi, c->easy)) != CURLM_OK) {
		set_error(rep, "curl: %s",
		    curl_multi_strerror(mc));
		curl_easy_cleanup(c->easy);
		curl_slist_free_all(c->hdrs);
		free(c);
		rep->call = NULL;
		finish_rep(job, rep, NOTIFY_FAILED);
		return 0;
	}
	job->in_flight++;
	return 1;
}

static void
call_free(struct notify_engine *e, struct job_call *c)
{
	curl_multi_remove_handle(e->multi, c->easy);
	curl_easy_cleanup(c->easy);
	if (c->hdrs != NULL) {
		/* the token header: wipe it before it goes back to malloc */
		for (struct curl_slist *l = c->hdrs; l != NULL; l = l->next)
			explicit_bzero(l->data, strlen(l->data));
		curl_slist_free_all(c->hdrs);
	}
	free(c);
}

static void
queue_push(struct queue *q, struct rep *rep)
{
	rep->qnext = NULL;
	if (q->tail != NULL)
		q->tail->qnext = rep;
	else
		q->head = rep;
	q->tail = rep;
}

static struct rep *
queue_pop(struct queue *q)
{
	struct rep *rep = q->head;

	if (rep != NULL && (q->head = rep->qnext) == NULL)
		q->tail = NULL;
	return rep;
}

/* call_done - one try ended: confirm, retry later, or give up */
static void
call_done(struct notify_engine *e, struct job_call *c, CURLcode code)
{
	struct notify_job *job = c->job;
	struct rep *rep = c->rep;
	long status = 0;
	int retry = 0;
	int64_t now = now_ms(), backoff;

	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	rep->call = NULL;
	job->in_flight--;
	rep->r.http_status = status;
	if (code == CURLE_OK && status >= 200 && status < 300) {
		finish_rep(job, rep, NOTIFY_CONFIRMED);
		call_free(e, c);
		return;
	}
	if (code != CURLE_OK) {
		set_error(rep, "%s",
		    c->errbuf[0] ? c->errbuf : curl_easy_strerror(code));
		retry = 1;
	} else if (status == 401 && !c->sent_token) {
		set_error(rep, "HTTP 401 and no reload token is known");
		finish_rep(job, rep, NOTIFY_MISSING_TOKEN);
		call_free(e, c);
		return;
	} else {
		/* printable start of the answer helps the operator */
		for (size_t i = 0; i < c->resplen; i++) {
			if ((unsigned char)c->resp[i] < 0x20)
				c->resp[i] = ' ';
		}
		if (status == 401)
			set_error(rep, "HTTP 401 (reload token refused)");
		else
			set_error(rep, "HTTP %ld%s%.*s",
			    status, c->resplen ? ": " : "", 120, c->resp);
		retry = status >= 500 || status == 408 || status == 429;
	}
	call_free(e, c);
	if (!retry || rep->r.attempts >= job->p.attempts) {
		finish_rep(job, rep, NOTIFY_FAILED);
		return;
	}
	backoff = job->p.backoff_ms;
	for (int k = 1; k < rep->r.attempts && backoff < job->p.deadline_ms; k++)
		backoff *= 2;
	rep->due = now + backoff;
	if (rep->due >= job->deadline ||
	    (rep->t.style == NOTIFY_POLL && rep->due >= rep->poll_end)) {
		finish_rep(job, rep, NOTIFY_FAILED);
		return;
	}
	queue_push(&job->retry[rep->r.attempts < MAX_ATTEMPTS ? rep->r.attempts : MAX_ATTEMPTS - 1],
	    rep);
}

/* job_pump - start what the concurrency limit allows; end the job when all are known */
static void
job_pump(struct notify_job *job)
{
	int64_t now = now_ms();

	if (job->ended)
		return;
	if (now >= job->deadline) {
		/* everything not started or waiting for a retry fails now */
		for (int k = 0; k < MAX_ATTEMPTS; k++) {
			struct rep *rep;

			while ((rep = queue_pop(&job->retry[k])) != NULL)
				finish_rep(job, rep, NOTIFY_FAILED);
		}
		for (; job->next_new < job->n; job->next_new++) {
			struct rep *rep = &job->reps[job->next_new];

			set_error(rep, "not tried before the deadline");
			finish_rep(job, rep, NOTIFY_FAILED);
		}
	}
	while (job->in_flight < (size_t)job->p.concurrency) {
		struct rep *rep = NULL;
		int best = -1;

		for (int k = 0; k < MAX_ATTEMPTS; k++) {
			struct rep *h = job->retry[k].head;

			if (h != NULL && h->due <= now && (best < 0 ||
			    h->due < job->retry[best].head->due))
				best = k;
		}
		if (best >= 0)
			rep = queue_pop(&job->retry[best]);
		else if (job->next_new < job->n)
			rep = &job->reps[job->next_new++];
		else
			break;
		start_try(job, rep);
	}
	if (job->finished == job->n && job->in_flight == 0) {
		struct notify_engine *e = job->e;
		struct notify_job **pp;

		job->ended = 1;
		for (pp = &e->jobs; *pp != job; pp = &(*pp)->next)
			;
		*pp = job->next;
		e->njobs--;
		job->next = e->finished;
		e->finished = job;
	}
}

void
notify_engine_dispatch(struct notify_engine *e)
{
	int n, round;
	CURLMsg *m;

	if (e->multi != NULL)
		curl_epoll_ready(e->multi, e->epfd);

	for (round = 0; round < 4; round++) {
		struct notify_job *j, *next;

		if (e->multi != NULL)
			curl_epoll_timeout(e->multi, &e->curl_due);
		while (e->multi != NULL && (m = curl_multi_info_read(e->multi, &n)) != NULL) {
			struct job_call *c = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			call_done(e, c, m->data.result);
		}
		for (j = e->jobs; j != NULL; j = next) {
			next = j->next;
			job_pump(j);
		}
		/* new transfers ask for an immediate timeout: serve it now */
		if (e->curl_due < 0 || e->curl_due > now_ms())
			break;
	}

	/* done callbacks last: they may start or free jobs */
	while (e->finished != NULL) {
		struct notify_job *j = e->finished;

		e->finished = j->next;
		j->next = NULL;
		if (j->done != NULL)
			j->done(j->arg, j);
	}
}

int
notify_engine_run(struct notify_engine *e, int64_t max_ms)
{
	int64_t end = max_ms < 0 ? INT64_MAX : now_ms() + max_ms;

	for (;;) {
		struct pollfd pfd = { .fd = e->epfd, .events = POLLIN };
		int64_t t;

		notify_engine_dispatch(e);
		if (e->njobs == 0 && e->finished == NULL)
			return 0;
		if ((t = notify_engine_timeout(e)) < 0 || t > 1000)
			t = 1000;
		if (now_ms() >= end)
			return -1;
		if (poll(&pfd, 1, (int)t) < 0 && errno != EINTR)
			return -1;
	}
}

struct notify_job *
notify_job_start(struct notify_engine *e, const struct notify_target *targets,
    size_t n, const char *body, size_t body_len, int64_t timestamp,
    const struct notify_params *p, notify_resolve_fn resolve,
    notify_done_fn done, void *arg)
{
	struct notify_job *job = xcalloc(1, sizeof(*job));

	job->e = e;
	job->n = n;
	job->reps = xcalloc(n ? n : 1, sizeof(*job->reps));
	for (size_t i = 0; i < n; i++) {
		struct rep *rep = &job->reps[i];

		set_str(&rep->t.url, targets[i].url);
		if (targets[i].id == NULL || (targets[i].url != NULL &&
		    strcmp(targets[i].id, targets[i].url) == 0))
			rep->t.id = rep->t.url;	/* one string for both */
		else
			set_str(&rep->t.id, targets[i].id);
		set_str(&rep->t.ts_file, targets[i].ts_file);
		set_str(&rep->t.token, targets[i].token);
		rep->t.style = targets[i].style;
	}
	job->body = body ? body : "";
	job->body_len = body ? body_len : 0;
	job->timestamp = timestamp;
	if (p != NULL)
		job->p = *p;
	else
		notify_params_default(&job->p);
	if (job->p.concurrency < 1)
		job->p.concurrency = 1;
	if (job->p.attempts < 1)
		job->p.attempts = 1;
	if (job->p.attempts > MAX_ATTEMPTS)
		job->p.attempts = MAX_ATTEMPTS;
	job->resolve = resolve;
	job->done = done;
	job->arg = arg;
	job->start = job->last_outcome = now_ms();
	job->deadline = job->start + job->p.deadline_ms;
	job->push_hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	job->push_hdrs = curl_slist_append(job->push_hdrs, "Expect:");
	job->next = e->jobs;
	e->jobs = job;
	e->njobs++;
	return job;
}

/* job_release - free the job's memory (no calls in flight) */
static void
job_release(struct notify_job *job)
{
	for (size_t i = 0; i < job->n; i++) {
		struct rep *rep = &job->reps[i];

		if (rep->t.id != rep->t.url)
			free((char *)rep->t.id);
		free((char *)rep->t.url);
		free(rep->r.error);
		free((char *)rep->t.ts_file);
		if (rep->t.token != NULL)
			explicit_bzero((char *)rep->t.token, strlen(rep->t.token));
		free((char *)rep->t.token);
	}
	free(job->reps);
	curl_slist_free_all(job->push_hdrs);
	free(job);
}

void
notify_job_cancel(struct notify_job *job)
{
	struct notify_engine *e;
	struct notify_job **pp;

	if (job == NULL)
		return;
	e = job->e;
	for (size_t i = 0; i < job->n; i++) {
		if (job->reps[i].call != NULL)
			call_free(e, job->reps[i].call);
	}
	for (pp = &e->jobs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			e->njobs--;
			break;
		}
	}
	for (pp = &e->finished; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			break;
		}
	}
	job_release(job);
}

void
notify_job_free(struct notify_job *job)
{
	if (job == NULL)
		return;
	if (!job->ended) {
		notify_job_cancel(job);
		return;
	}
	job_release(job);
}
