/*
 * fetch_http - one HTTP exchange for the GitHub and OCI sources, run on a
 * fetch worker thread (never the stage loop) with the source's deadline:
 * response headers the sources need are picked out, the body is capped,
 * and redirects are followed by hand so that credentials never leave the
 * origin they were meant for.
 */
#ifndef DECOD_FETCH_HTTP_H
#define DECOD_FETCH_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

struct fetch_http_req {
	const char *method;		/* "GET" (default) or "HEAD" */
	const char *url;		/* http:// or https:// */
	const char *const *headers;	/* NULL-terminated "Name: value" lines, or NULL */
	const char *auth;		/* "Authorization: ..." line, or NULL: sent only
					 * to the origin of url, never after a redirect
					 * leaves it; never logged */
	int max_redirects;		/* 0: a 3xx is the answer */
	int allow_http;			/* 0: http:// (first or redirected) is refused */
	int64_t deadline;		/* now_ms() value the whole exchange must end by */
	size_t max_body;		/* larger bodies fail (0: 1 MiB) */
};

struct fetch_http_resp {
	long status;
	struct buf body;
	char etag[256];
	char content_type[256];
	char digest[160];		/* Docker-Content-Digest */
	char www_auth[1024];		/* WWW-Authenticate */
	char rl_remaining[32];		/* X-RateLimit-Remaining ("" when absent) */
	char rl_reset[32];		/* X-RateLimit-Reset (unix seconds) */
	char retry_after[32];		/* Retry-After */
	char location[2048];		/* absolute redirect target of a 3xx not followed */
	int redirects;			/* how many were followed */
};

/*
 * fetch_http - perform req into resp (initialised here; free it with
 * fetch_http_resp_free even on failure).  Any HTTP status is a success of
 * this call: 0.  -1 on a transport error, a refused scheme, a body over
 * max_body or the deadline, with a message naming the method and URL
 * (which carries no credentials) in err.
 */
int fetch_http(const struct fetch_http_req *req, struct fetch_http_resp *resp, char *err,
    size_t errlen);

void fetch_http_resp_free(struct fetch_http_resp *resp);

/* fetch_http_origin_same - a and b have the same scheme, host and port */
int fetch_http_origin_same(const char *a, const char *b);

#endif
