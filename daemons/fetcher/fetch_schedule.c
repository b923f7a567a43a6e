/*
 * fetch_schedule - when the fetcher fetches a Decofile and on what: one
 * timer per schedule (fetcher_schedule), the job built from the resource
 * text (its source's fields, its secret checked), and where the job runs:
 * a github ref whose sha and ETag are known is polled with one conditional
 * request on the loop, anything else goes to the worker pool.  The backoff
 * after failures and the jitter of periods live here too; finishing a job
 * (the journal) is fetcher.c's.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_github.h"
#include "daemons/fetcher/fetch_lock.h"
#include "daemons/fetcher/fetch_poll.h"
#include "daemons/fetcher/fetch_secret.h"
#include "daemons/fetcher/fetcher.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS (5 * 60 * 1000)

int64_t
fetch_schedule_backoff(int failures)
{
	int64_t d = BACKOFF_MIN_MS;

	for (int i = 1; i < failures && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS;
}

/* a job for s from its resource text; NULL with the error on s's status */
static struct job *
make_job(struct stage *st, struct src *s, int force)
{
	struct fetcher *f = F(st);
	struct job *j;
	yajl_val doc;
	const char *secret;
	char msg[512];

	if ((doc = json_parse(s->doc, strlen(s->doc), NULL)) == NULL)
		return NULL;
	j = xcalloc(1, sizeof(*j));
	snprintf(j->ns, sizeof(j->ns), "%s", s->ns);
	snprintf(j->name, sizeof(j->name), "%s", s->name);
	snprintf(j->source, sizeof(j->source), "%s", s->source);
	snprintf(j->last_id, sizeof(j->last_id), "%s", s->last_id);
	snprintf(j->etag, sizeof(j->etag), "%s", s->etag);
	j->oci_auth = s->oci_auth != NULL ? xstrdup(s->oci_auth) : NULL;
	j->generation = s->generation;
	j->tpl = s->tpl;
	j->sync_req = s->sync_req;
	j->force = force;
	msg[0] = '\0';
	if (strcmp(s->source, "inline") == 0) {
		struct buf b;
		struct jw w;
		yajl_val v = json_get(doc, "spec", "inline", "value", NULL);

		if (v != NULL) {
			buf_init(&b);
			jw_init(&w, &b);
			jw_value(&w, v);
			j->inline_json = buf_steal(&b, NULL);
		}
	} else if (strcmp(s->source, "dir") == 0) {
		const char *p = json_get_str(doc, "spec", "dir", "path", NULL);

		j->path = p ? xstrdup(p) : NULL;
	} else if (strcmp(s->source, "git") == 0) {
		const char *u = json_get_str(doc, "spec", "git", "url", NULL);
		const char *r = json_get_str(doc, "spec", "git", "ref", NULL);
		const char *d = json_get_str(doc, "spec", "git", "dir", NULL);

		j->url = u ? xstrdup(u) : NULL;
		j->ref = r ? xstrdup(r) : NULL;
		j->dir = d ? xstrdup(d) : NULL;
	} else if (strcmp(s->source, "github") == 0) {
		const char *o = json_get_str(doc, "spec", "github", "org", NULL);
		const char *r = json_get_str(doc, "spec", "github", "repo", NULL);
		const char *c = json_get_str(doc, "spec", "github", "commit", NULL);
		const char *p = json_get_str(doc, "spec", "github", "path", NULL);

		j->org = o ? xstrdup(o) : NULL;
		j->repo = r ? xstrdup(r) : NULL;
		j->ref = c ? xstrdup(c) : NULL;
		j->path = p ? xstrdup(p) : NULL;
		if (o == NULL || r == NULL)
			snprintf(msg, sizeof(msg), "source github: spec.github.org and "
			    "spec.github.repo are required");
	} else if (strcmp(s->source, "oci") == 0) {
		const char *i = json_get_str(doc, "spec", "oci", "image", NULL);
		const char *d = json_get_str(doc, "spec", "oci", "dir", NULL);

		j->image = i ? xstrdup(i) : NULL;
		j->dir = d ? xstrdup(d) : NULL;
		if (i == NULL)
			snprintf(msg, sizeof(msg), "source oci: spec.oci.image is required");
	} else {
		snprintf(msg, sizeof(msg), "unknown source '%s' (inline, git, dir, github, oci)",
		    s->source);
	}
	secret = json_get(doc, "spec", s->source, NULL) != NULL ?
	    json_get_str(doc, "spec", s->source, "secret", NULL) : NULL;
	if (msg[0] == '\0' && secret != NULL && *secret != '\0' &&
	    strcmp(s->source, "inline") != 0 && strcmp(s->source, "dir") != 0) {
		if (strchr(secret, '/') != NULL || secret[0] == '.')
			snprintf(msg, sizeof(msg),
			    "spec.%s.secret '%s' must be a file name in secrets_dir", s->source,
			    secret);
		else if (access((j->secret_file = xasprintf("%s/%s", f->secrets_dir,
		    secret)), R_OK) < 0)
			snprintf(msg, sizeof(msg),
			    "secret '%s' not found in secrets_dir (%s)", secret,
			    strerror(errno));
	}
	yajl_tree_free(doc);
	if (msg[0] != '\0') {
		log_kv(LOG_WARN, "cannot fetch", "ns", s->ns, "name", s->name, "error", msg, NULL);
		fetch_status_syncing(st, s, "False", "FetchError", msg);
		fetch_job_free(j);
		return NULL;
	}
	return j;
}

/*
 * enqueue - hand j to the worker pool, starting one more worker (up to
 * fetch_concurrency) when the queue holds more jobs than idle workers: an
 * idle fetcher keeps no thread of its own
 */
static void
enqueue(struct fetcher *f, struct job *j)
{
	int queued = 0;

	pthread_mutex_lock(&f->mu);
	*f->queue_tail = j;
	f->queue_tail = &j->next;
	for (struct job *q = f->queue; q != NULL; q = q->next)
		queued++;
	if (queued > f->idle && f->nstarted < f->nthreads) {
		if (pthread_create(&f->threads[f->nstarted], NULL, fetch_worker, f) == 0)
			f->nstarted++;
		else if (f->nstarted == 0)
			log_kv(LOG_ERROR, "cannot start a fetch worker", "error", strerror(errno),
			    NULL);
	}
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/*
 * poll_done - the loop's conditional request came back: an unchanged ref
 * is finished here like a worker's unchanged fetch; anything else (a new
 * sha, an error, a rate limit) goes to the pool, which says why or fetches
 */
static void
poll_done(void *arg, const struct fetch_poll_answer *a)
{
	struct job *j = arg;
	struct fetcher *f = F(j->st);
	char sha[41];

	for (struct job **pp = &f->polling; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	}
	j->next = NULL;

	if (a->err == NULL && a->status == 200 && fetch_github_poll_sha(a->body, a->len,
	    sha) == 0) {
		if (a->etag != NULL && a->etag[0] != '\0')
			snprintf(j->etag, sizeof(j->etag), "%s", a->etag);
		if (strcmp(sha, j->last_id) != 0) {
			memcpy(j->known_sha, sha, sizeof(sha));
			enqueue(f, j);
			return;
		}
	} else if (a->err != NULL || a->status != 304) {
		enqueue(f, j);
		return;
	}
	j->unchanged = 1;
	snprintf(j->remote_id, sizeof(j->remote_id), "%s", j->last_id);
	j->took_ms = now_ms() - j->t0;
	pthread_mutex_lock(&f->mu);
	*f->done_tail = j;
	f->done_tail = &j->next;
	pthread_mutex_unlock(&f->mu);
	stage_wake(j->st);
}

/*
 * poll_on_loop - a github ref whose sha and ETag are known is polled with
 * one conditional request on the loop (curl multi), not on a worker; 0
 * started, -1 not this kind of poll (the caller hands j to the pool)
 */
static int
poll_on_loop(struct stage *st, struct job *j)
{
	struct fetcher *f = F(st);
	struct fetch_github_req req;
	char url[2048], inm[300], auth[4200];
	const char *hdrs[4];
	char *token;
	int rc;

	if (f->poll == NULL || strcmp(j->source, "github") != 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.api_url = f->github_api;
	req.org = j->org;
	req.repo = j->repo;
	req.commit = j->ref;
	req.last_sha = j->last_id;
	req.etag = j->etag;
	req.force = j->force;
	if (fetch_github_poll_request(&req, url, sizeof(url), inm, sizeof(inm)) < 0)
		return -1;
	token = fetch_github_token(f, j);
	if (token == NULL && (j->secret_file != NULL || f->github_token_file != NULL))
		return -1;	/* the worker says it cannot read the token */
	hdrs[0] = fetch_github_poll_headers[0];
	hdrs[1] = fetch_github_poll_headers[1];
	hdrs[2] = inm;
	hdrs[3] = NULL;
	if (token != NULL)
		snprintf(auth, sizeof(auth), "Authorization: token %s", token);
	j->st = st;
	j->t0 = now_ms();
	rc = fetch_poll_get(f->poll, url, hdrs, token != NULL ? auth : NULL,
	    strncmp(f->github_api, "http://", 7) == 0, f->timeout_ms, poll_done, j);
	explicit_bzero(auth, sizeof(auth));
	fetch_secret_free(token);
	if (rc == 0) {
		j->next = f->polling;
		f->polling = j;
	}
	return rc;
}

static void
poll_cb(struct stage *st, void *arg)
{
	struct fetcher *f = F(st);
	struct src *s = arg;
	struct job *j;
	int force = s->again_force;

	s->timer = 0;
	if (!s->tpl && !fetch_lock_held(f->locks, s->ns, s->name))
		return;		/* another instance works it; fetch_lock calls us back */
	if (s->suspended) {
		fetch_status_synced(st, s, s->sync_req);	/* answered: Syncing says why */
		return;
	}
	if (s->busy) {
		s->again = 1;
		return;
	}
	s->again = 0;
	s->again_force = 0;
	if ((j = make_job(st, s, force)) == NULL) {
		/* a bad spec waits for an edit; a missing secret may appear */
		fetch_status_synced(st, s, s->sync_req);	/* answered: on Syncing */
		if (s->period_ms > 0)
			fetcher_schedule(st, s, fetch_schedule_backoff(++s->failures), force);
		return;
	}
	s->busy = 1;
	if (poll_on_loop(st, j) == 0)
		return;
	enqueue(f, j);
}

/* schedule - poll s after after_ms (jitter is the caller's); force reads the tree */
void
fetcher_schedule(struct stage *st, struct src *s, int64_t after_ms, int force)
{
	if (force)
		s->again_force = 1;
	if (s->busy) {
		if (after_ms == 0)
			s->again = 1;
		return;
	}
	if (s->timer > 0)
		stage_cancel_timer(st, s->timer);
	s->timer = stage_add_timer(st, after_ms, poll_cb, s);
}

int64_t
fetch_schedule_jitter(int64_t ms)
{
	unsigned r = 0;

	random_bytes(&r, sizeof(r));
	return ms - ms / 10 + (int64_t)(r % (unsigned)(ms / 5 + 1));
}
