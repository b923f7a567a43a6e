/*
 * fetch_git - the git source through the git command line: a cheap
 * ls-remote tells the commit, a shallow fetch into a bare cache repository
 * brings it, and ls-tree + cat-file read spec.git.dir at that commit (no
 * work tree).  Credentials reach git only through GIT_ASKPASS.
 */
#ifndef DECOD_FETCH_GIT_H
#define DECOD_FETCH_GIT_H

#include <stdint.h>

#include "daemons/fetcher/fetch_tree.h"

struct spool;

struct fetch_git_req {
	const char *url;
	const char *ref;	/* branch, tag, full ref or 40-hex sha; NULL: HEAD */
	const char *dir;	/* folder in the repository; NULL or "": the top */
	const char *cache_root;	/* <state_dir>/git: one bare repository per url */
	const char *secret_file;	/* "user:password" or a token; NULL: none */
	const char *askpass;	/* program git runs as GIT_ASKPASS (the fetcher) */
	int64_t timeout_ms;	/* deadline of every git call */
	int64_t deadline;	/* > 0: now_ms() value every call must also end by */
	struct fetch_limits lim;
};

/* env var telling the fetcher it runs as git's askpass: its value is the file */
#define FETCH_GIT_ASKPASS_ENV "DECOD_GIT_ASKPASS_FILE"

/*
 * fetch_git_resolve - the remote id of req->ref: a 40-hex ref is taken as
 * it is; otherwise `git ls-remote` (refs/heads/R before refs/tags/R; an
 * annotated tag gives the tag object, peeled after the fetch).  id gets
 * 41 bytes.  0, or -1 with res->reason FetchError.
 */
int fetch_git_resolve(const struct fetch_git_req *req, char *id, struct fetch_result *res);

/*
 * fetch_git_tree - make sure the object id is in the cache repository
 * (shallow fetch only when missing), then put every block under req->dir
 * at that commit into the spool.  res->commit gets the commit sha (a tag
 * peeled).  0 with res filled, or -1 with reason and message.
 */
int fetch_git_tree(struct spool *sp, const struct fetch_git_req *req, const char *id,
    struct fetch_result *res);

/*
 * fetch_git_askpass_main - the askpass side: git runs the fetcher with a
 * prompt ("Username for ...", "Password for ...") and FETCH_GIT_ASKPASS_ENV
 * naming the secret file; print the answer.  The file holds
 * "username:password", or a lone token (username "x-access-token").
 * Returns the exit status.
 */
int fetch_git_askpass_main(const char *prompt);

/* fetch_git_valid_url - refuse URLs git would read as options or run */
int fetch_git_valid_url(const char *url);

/* fetch_git_redact - url with any user:password@ removed (caller frees) */
char *fetch_git_redact(const char *url);

#endif
