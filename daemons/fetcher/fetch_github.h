/*
 * fetch_github - the GitHub source: a ref is resolved through the commits
 * API with If-None-Match (a 304 costs no rate limit), the tree comes from
 * the zipball of that commit, read with fetch_archive by the Go operator's
 * rules (first entry is the root folder, spec.github.path a plain string
 * prefix under it, keys by fetch_keys).
 */
#ifndef DECOD_FETCH_GITHUB_H
#define DECOD_FETCH_GITHUB_H

#include <stdint.h>

#include "daemons/fetcher/fetch_archive.h"
#include "daemons/fetcher/fetch_tree.h"

struct spool;

struct fetch_github_req {
	const char *api_url;	/* https://api.github.com, or GitHub Enterprise's /api/v3 */
	const char *org, *repo;
	const char *commit;	/* a 40-hex sha (never polled) or a ref; NULL: HEAD */
	const char *path;	/* plain string prefix under the root folder; NULL: all */
	const char *token;	/* NULL: anonymous; sent as "Authorization: token ..." */
	const char *last_sha;	/* sha of the last good fetch, or "" */
	const char *etag;	/* ETag of the commits answer that gave last_sha, or "" */
	int force;		/* read the tree even when the sha did not move */
	const char *known_sha;	/* non-NULL: the ref's sha is already known (a poll on
				 * the loop asked); no commits request is made */
	const char *known_etag;	/* the ETag that came with known_sha */
	int allow_http;		/* api_url may be http:// (tests, a local proxy) */
	int64_t deadline;	/* now_ms() value the fetch must end by */
	struct fetch_limits lim;
	struct fetch_archive_limits alim;
};

struct fetch_github_out {
	char sha[41];
	char etag[256];		/* ETag to send next time */
	int unchanged;		/* same sha as last_sha and not forced: no tree read */
	int requests;		/* HTTP requests made (commits API, zipball, redirect hops) */
};

/*
 * fetch_github - resolve, then (unless unchanged) download and read the
 * tree into the spool.  0 with out (and res when a tree was read) filled;
 * -1 with res->reason and a message that never holds the token.  A rate
 * limit (403/429 with X-RateLimit-Remaining: 0, or Retry-After) sets
 * res->retry_after_ms to the wait the server asked for.
 */
int fetch_github(struct spool *sp, const struct fetch_github_req *req,
    struct fetch_github_out *out, struct fetch_result *res);

/*
 * fetch_github_poll_request - the conditional commits request a poll makes
 * when the ref's last sha and ETag are known: its URL and If-None-Match
 * line.  0, or -1 when req is not such a poll (a full sha, a first fetch,
 * a bad name or ref): the worker's fetch_github does those.
 */
int fetch_github_poll_request(const struct fetch_github_req *req, char *url, size_t urllen,
    char *inm, size_t inmlen);

/* the fixed header lines of that request (NULL-terminated) */
extern const char *const fetch_github_poll_headers[];

/*
 * fetch_github_poll_sha - the sha in a 200 answer's body (bare, or JSON with
 * "sha") into sha (41 bytes); 0, or -1 when there is none
 */
int fetch_github_poll_sha(const char *body, size_t len, char *sha);

/*
 * fetch_github_zip_tree - the operator's reading of a zipball held in
 * memory (exposed for the unit test): blocks under path into a new tree,
 * finished with commit sha.  0 or -1 with res filled.
 */
int fetch_github_zip_tree(struct spool *sp, const void *zip, size_t len, const char *path,
    const char *sha, const struct fetch_limits *lim,
    const struct fetch_archive_limits *alim, struct fetch_result *res);

#endif
