/*
 * fetch_worker - the fetcher's pool of fetch_concurrency worker threads.
 * A worker takes a job off the queue, runs its source (inline, dir, git,
 * github, oci) within the job's own fetch_timeout deadline and puts it on
 * the done queue for the loop.  It touches only the remote, the spool and
 * the two queues (under f->mu): never sqlite or the store.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_dir.h"
#include "daemons/fetcher/fetch_git.h"
#include "daemons/fetcher/fetch_github.h"
#include "daemons/fetcher/fetch_inline.h"
#include "daemons/fetcher/fetch_oci.h"
#include "daemons/fetcher/fetch_secret.h"
#include "daemons/fetcher/fetcher.h"

void
fetch_job_free(struct job *j)
{
	if (j == NULL)
		return;
	free(j->url);
	free(j->ref);
	free(j->dir);
	free(j->secret_file);
	free(j->path);
	free(j->inline_json);
	fetch_secret_free(j->oci_auth);
	free(j->org);
	free(j->repo);
	free(j->image);
	fetch_result_unstage(&j->res);	/* a tree never synced (shutdown) */
	free(j);
}

char *
fetch_github_token(struct fetcher *f, const struct job *j)
{
	return j->secret_file != NULL ? fetch_secret_read(j->secret_file, "token") :
	    f->github_token_file != NULL ? fetch_secret_read(f->github_token_file, "token") :
	    f->github_env_token != NULL ? xstrdup(f->github_env_token) : NULL;
}

/* run_github - the github source on a worker; the token is read now and wiped after */
static void
run_github(struct fetcher *f, struct job *j, int64_t deadline)
{
	struct fetch_github_req req;
	struct fetch_github_out out;
	char *token = fetch_github_token(f, j);

	memset(&req, 0, sizeof(req));
	req.api_url = f->github_api;
	req.allow_http = strncmp(f->github_api, "http://", 7) == 0;
	req.org = j->org;
	req.repo = j->repo;
	req.commit = j->ref;
	req.path = j->path;
	req.token = token;
	req.last_sha = j->last_id;
	req.etag = j->etag;
	req.force = j->force;
	req.known_sha = j->known_sha[0] != '\0' ? j->known_sha : NULL;
	req.known_etag = j->etag;
	req.deadline = deadline;
	req.lim = f->lim;
	req.alim = f->alim;
	if (token == NULL && (j->secret_file != NULL || f->github_token_file != NULL))
		fetch_result_error(&j->res, "FetchError", "cannot read the GitHub token (%s)",
		    j->secret_file != NULL ? "spec.github.secret" : "github_token_file");
	else if (fetch_github(f->sp, &req, &out, &j->res) == 0) {
		snprintf(j->remote_id, sizeof(j->remote_id), "%s", out.sha);
		snprintf(j->etag, sizeof(j->etag), "%s", out.etag);
		j->unchanged = out.unchanged;
	}
	fetch_secret_free(token);
}

/* run_oci - the oci source on a worker; credentials are read now and wiped after */
static void
run_oci(struct fetcher *f, struct job *j, int64_t deadline)
{
	struct fetch_oci_req req;
	struct fetch_oci_out out;
	char *creds = j->secret_file != NULL ?
	    fetch_secret_read(j->secret_file, "credentials") : NULL;

	memset(&req, 0, sizeof(req));
	req.image = j->image;
	req.dir = j->dir;
	req.creds = creds;
	req.insecure = f->oci_insecure;
	req.auth = j->oci_auth;
	req.last_digest = j->last_id;
	req.force = j->force;
	req.deadline = deadline;
	req.lim = f->lim;
	req.alim = f->alim;
	if (j->secret_file != NULL && creds == NULL)
		fetch_result_error(&j->res, "FetchError", "cannot read the secret of spec.oci");
	else if (fetch_oci(f->sp, &req, &out, &j->res) == 0) {
		snprintf(j->remote_id, sizeof(j->remote_id), "%s", out.digest);
		j->unchanged = out.unchanged;
		fetch_secret_free(j->oci_auth);
		j->oci_auth = out.auth[0] != '\0' ? xstrdup(out.auth) : NULL;
	}
	explicit_bzero(out.auth, sizeof(out.auth));
	fetch_secret_free(creds);
}

/* run_job - one fetch on a pool worker, within its own deadline */
static void
run_job(struct fetcher *f, struct job *j)
{
	int64_t t0 = now_ms();
	int64_t deadline = t0 + f->timeout_ms;

	if (strcmp(j->source, "inline") == 0) {
		yajl_val v = j->inline_json ? json_parse(j->inline_json,
		    strlen(j->inline_json), NULL) : NULL;

		fetch_inline(f->sp, &f->lim, v, &j->res);
		yajl_tree_free(v);
	} else if (strcmp(j->source, "dir") == 0) {
		fetch_dir(f->sp, &f->lim, j->path, &j->res);
	} else if (strcmp(j->source, "git") == 0) {
		struct fetch_git_req req;

		memset(&req, 0, sizeof(req));
		req.url = j->url;
		req.ref = j->ref;
		req.dir = j->dir;
		req.cache_root = f->cache_root;
		req.secret_file = j->secret_file;
		req.askpass = f->askpass;
		req.timeout_ms = f->timeout_ms;
		req.deadline = deadline;
		req.lim = f->lim;
		if (fetch_git_resolve(&req, j->remote_id, &j->res) == 0) {
			if (!j->force && strcmp(j->remote_id, j->last_id) == 0)
				j->unchanged = 1;
			else
				fetch_git_tree(f->sp, &req, j->remote_id, &j->res);
		}
	} else if (strcmp(j->source, "github") == 0) {
		run_github(f, j, deadline);
	} else if (strcmp(j->source, "oci") == 0) {
		run_oci(f, j, deadline);
	}
	j->took_ms = now_ms() - t0;
}

/* a fetch that waits on a remote (git, github, oci), not on local work */
static int
remote_job(const struct job *j)
{
	return strcmp(j->source, "inline") != 0 && strcmp(j->source, "dir") != 0;
}

/*
 * take - the first queued job this worker may run, off the queue (mutex
 * held), or NULL.  Remote fetches may hold every worker but one: that one
 * is kept for inline and dir sources, so however many remotes hang, a
 * local source never waits behind them.
 */
static struct job *
take(struct fetcher *f)
{
	int remote_ok = f->nthreads < 2 || f->remote_busy < f->nthreads - 1;

	for (struct job **pp = &f->queue; *pp != NULL; pp = &(*pp)->next) {
		struct job *j = *pp;

		if (remote_job(j) && !remote_ok)
			continue;
		*pp = j->next;
		if (f->queue_tail == &j->next)
			f->queue_tail = pp;
		j->next = NULL;
		if (remote_job(j))
			f->remote_busy++;
		return j;
	}
	return NULL;
}

void *
fetch_worker(void *arg)
{
	struct fetcher *f = arg;
	struct job *j;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		j = NULL;
		while (!f->stop && (j = take(f)) == NULL) {
			f->idle++;
			pthread_cond_wait(&f->cv, &f->mu);
			f->idle--;
		}
		if (f->stop) {
			if (j != NULL) {	/* back on the queue: shutdown frees it */
				j->next = f->queue;
				f->queue = j;
				if (f->queue_tail == &f->queue)
					f->queue_tail = &j->next;
			}
			break;
		}
		pthread_mutex_unlock(&f->mu);
		run_job(f, j);
		pthread_mutex_lock(&f->mu);
		if (remote_job(j)) {
			f->remote_busy--;
			pthread_cond_broadcast(&f->cv);	/* a held-back remote job may go */
		}
		*f->done_tail = j;
		f->done_tail = &j->next;
		stage_wake(f->st);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}