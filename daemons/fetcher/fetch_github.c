/*
 * fetch_github - talks to the GitHub REST API (or a GitHub Enterprise /
 * stand-in at github_api_url) from a fetch worker.  It owns nothing between
 * calls: the caller keeps the last sha and ETag and hands them back, so a
 * poll of an unchanged ref is one conditional request that GitHub does not
 * count against the rate limit.  The token only ever goes into an
 * Authorization header for the API's own origin.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_github.h"
#include "daemons/fetcher/fetch_http.h"
#include "daemons/fetcher/fetch_keys.h"

#define API_VERSION "X-GitHub-Api-Version: 2022-11-28"

static int
is_hex40(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return i == 40;
}

/* an owner or repository name as GitHub allows them */
static int
valid_name(const char *s)
{
	if (s == NULL || *s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
	    strlen(s) > 100)
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return 0;
	return 1;
}

/* a ref that can go into the URL path as it is */
static int
valid_ref(const char *r)
{
	if (*r == '\0' || *r == '-' || *r == '/' || strstr(r, "..") != NULL || strlen(r) > 255)
		return 0;
	for (; *r != '\0'; r++)
		if ((unsigned char)*r <= ' ' || *r == 0x7f || strchr(":?*[\\^~%#", *r))
			return 0;
	return 1;
}

/* "message" of a GitHub error body, or "" */
static void
gh_message(const struct buf *body, char *out, size_t outlen)
{
	yajl_val v = body->len > 0 ? json_parse(body->data, body->len, NULL) : NULL;
	const char *m = v != NULL ? json_get_str(v, "message", NULL) : NULL;

	snprintf(out, outlen, "%s", m != NULL ? m : "");
	yajl_tree_free(v);
}

/*
 * a non-200 answer into res: the rate limit with the wait it asks for,
 * bad credentials, a missing repository, anything else with its status
 */
static int
gh_error(const struct fetch_github_req *req, const char *what,
    const struct fetch_http_resp *r, struct fetch_result *res)
{
	char msg[256], when[40];
	int64_t wait = 0;

	gh_message(&r->body, msg, sizeof(msg));
	if ((r->status == 403 || r->status == 429) &&
	    (strcmp(r->rl_remaining, "0") == 0 || r->retry_after[0] != '\0')) {
		int64_t reset = strtoll(r->rl_reset, NULL, 10);

		if (r->retry_after[0] != '\0')
			wait = strtoll(r->retry_after, NULL, 10) * 1000;
		else if (reset > 0)
			wait = reset * 1000 - wall_ms();
		if (wait < 1000)
			wait = 1000;
		if (wait > 3600 * 1000)
			wait = 3600 * 1000;
		rfc3339_from((wall_ms() + wait + 999) / 1000, when, sizeof(when));
		res->retry_after_ms = wait;
		return fetch_result_error(res, "FetchError",
		    "GitHub rate limit reached (%ld, X-RateLimit-Remaining: %s): waiting until "
		    "%s (X-RateLimit-Reset) before asking again", r->status,
		    r->rl_remaining[0] ? r->rl_remaining : "-", when);
	}
	if (r->status == 401)
		return fetch_result_error(res, "FetchError",
		    "GitHub %s/%s: 401 %s: %s", req->org, req->repo,
		    msg[0] ? msg : "Unauthorized",
		    req->token != NULL ? "the token was refused (spec.github.secret)" :
		    "no token was sent (spec.github.secret, github_token_file or GITHUB_TOKEN)");
	if (r->status == 404)
		return fetch_result_error(res, "FetchError",
		    "GitHub %s/%s: 404 %s: no such repository or commit '%s'%s", req->org,
		    req->repo, msg[0] ? msg : "Not Found",
		    req->commit ? req->commit : "HEAD",
		    req->token == NULL ? " (a private repository needs a token)" : "");
	return fetch_result_error(res, "FetchError", "GitHub %s/%s: %s answered %ld%s%s",
	    req->org, req->repo, what, r->status, msg[0] ? ": " : "", msg);
}

/* the common part of every request to the API */
static void
gh_req(const struct fetch_github_req *req, struct fetch_http_req *h, char *auth,
    size_t authlen)
{
	memset(h, 0, sizeof(*h));
	h->deadline = req->deadline;
	h->allow_http = req->allow_http;
	if (req->token != NULL && req->token[0] != '\0') {
		snprintf(auth, authlen, "Authorization: token %s", req->token);
		h->auth = auth;
	}
}

const char *const fetch_github_poll_headers[] = {
	"Accept: application/vnd.github.sha", API_VERSION, NULL
};

int
fetch_github_poll_sha(const char *body, size_t len, char *sha)
{
	const char *b = body;
	yajl_val v = NULL;
	int rc;

	while (*b == ' ' || *b == '\n')
		b++;
	if (*b == '{' && (v = json_parse(body, len, NULL)) != NULL &&
	    json_get_str(v, "sha", NULL) != NULL)
		b = json_get_str(v, "sha", NULL);
	snprintf(sha, 41, "%.40s", b);
	for (char *c = sha; *c != '\0'; c++)
		*c = (char)tolower((unsigned char)*c);
	rc = is_hex40(sha) ? 0 : -1;
	yajl_tree_free(v);
	return rc;
}

/* the base URL without its trailing '/' */
static void
base_url(const struct fetch_github_req *req, char *base, size_t len)
{
	size_t n;

	snprintf(base, len, "%s", req->api_url ? req->api_url : "");
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		base[--n] = '\0';
}

int
fetch_github_poll_request(const struct fetch_github_req *req, char *url, size_t urllen,
    char *inm, size_t inmlen)
{
	const char *ref = req->commit != NULL && req->commit[0] != '\0' ? req->commit : "HEAD";
	char base[1024];

	if (!valid_name(req->org) || !valid_name(req->repo) || is_hex40(ref) ||
	    !valid_ref(ref) || req->etag == NULL || req->etag[0] == '\0' ||
	    req->last_sha == NULL || req->last_sha[0] == '\0' || req->force)
		return -1;
	base_url(req, base, sizeof(base));
	snprintf(url, urllen, "%s/repos/%s/%s/commits/%s", base, req->org, req->repo, ref);
	snprintf(inm, inmlen, "If-None-Match: %s", req->etag);
	return 0;
}

/* the sha of the ref; sets out->unchanged on a 304 */
static int
resolve(const struct fetch_github_req *req, const char *base, struct fetch_github_out *out,
    struct fetch_result *res)
{
	const char *ref = req->commit != NULL && req->commit[0] != '\0' ? req->commit : "HEAD";
	char url[2048], auth[4200], inm[300], err[1024];
	const char *hdrs[5];
	struct fetch_http_req h;
	struct fetch_http_resp r;
	int n = 0, rc;

	if (req->known_sha != NULL && is_hex40(req->known_sha)) {
		snprintf(out->sha, sizeof(out->sha), "%s", req->known_sha);
		snprintf(out->etag, sizeof(out->etag), "%s",
		    req->known_etag != NULL ? req->known_etag : "");
		return 0;
	}
	if (is_hex40(ref)) {
		for (int i = 0; i < 40; i++)
			out->sha[i] = (char)tolower((unsigned char)ref[i]);
		out->sha[40] = '\0';
		return 0;
	}
	if (!valid_ref(ref))
		return fetch_result_error(res, "FetchError",
		    "source github: spec.github.commit '%s' is not a valid ref", ref);
	snprintf(url, sizeof(url), "%s/repos/%s/%s/commits/%s", base, req->org, req->repo, ref);
	gh_req(req, &h, auth, sizeof(auth));
	hdrs[n++] = "Accept: application/vnd.github.sha";
	hdrs[n++] = API_VERSION;
	if (req->etag != NULL && req->etag[0] != '\0' && req->last_sha != NULL &&
	    req->last_sha[0] != '\0') {
		snprintf(inm, sizeof(inm), "If-None-Match: %s", req->etag);
		hdrs[n++] = inm;
	}
	hdrs[n] = NULL;
	h.url = url;
	h.headers = hdrs;
	h.max_body = 1 << 20;
	out->requests++;
	if (fetch_http(&h, &r, err, sizeof(err)) < 0) {
		fetch_http_resp_free(&r);
		return fetch_result_error(res, "FetchError", "GitHub %s/%s: %s", req->org,
		    req->repo, err);
	}
	if (r.status == 304) {
		snprintf(out->sha, sizeof(out->sha), "%s", req->last_sha);
		snprintf(out->etag, sizeof(out->etag), "%s", req->etag);
		out->unchanged = 1;
		rc = 0;
	} else if (r.status == 200) {
		if (fetch_github_poll_sha(r.body.data ? r.body.data : "", r.body.len,
		    out->sha) < 0) {
			rc = fetch_result_error(res, "FetchError",
			    "GitHub %s/%s: the commits API gave no commit sha for '%s'",
			    req->org, req->repo, ref);
		} else {
			snprintf(out->etag, sizeof(out->etag), "%s", r.etag);
			rc = 0;
		}
	} else {
		rc = gh_error(req, "the commits API", &r, res);
	}
	fetch_http_resp_free(&r);
	return rc;
}

/* reading a zipball by the operator's rules */
struct zipread {
	char root[1024];	/* the first entry's folder, with its '/' */
	int have_root;
	const char *prefix;	/* spec.github.path without leading '/' */
	struct fetch_tree *t;
};

/* path under the root, or NULL (with res set) when outside it */
static const char *
under_root(struct zipread *z, const char *path, struct fetch_result *res)
{
	size_t n = strlen(z->root);

	if (strncmp(path, z->root, n) != 0) {
		fetch_result_error(res, "FetchError",
		    "zipball: refused: entry '%s' is outside its root folder '%s'", path,
		    z->root);
		return NULL;
	}
	return path + n;
}

static int
zip_want(void *arg, const char *path, int is_dir, struct fetch_result *res)
{
	struct zipread *z = arg;
	const char *rel, *slash;
	char key[1024];
	int krc;

	if (!z->have_root) {
		/* the first entry is the root folder ("org-repo-sha7/") */
		slash = strchr(path, '/');
		if (slash == NULL)
			return fetch_result_error(res, "FetchError",
			    "zipball: first entry '%s' is not a root folder", path);
		snprintf(z->root, sizeof(z->root), "%.*s", (int)(slash - path + 1), path);
		z->have_root = 1;
	}
	if ((rel = under_root(z, path, res)) == NULL)
		return -1;
	if (is_dir)
		return 0;
	if (strncmp(rel, z->prefix, strlen(z->prefix)) != 0)
		return 0;
	krc = fetch_key_from_path(rel, key, sizeof(key), res->error, sizeof(res->error));
	if (krc < 0)
		res->reason = "FetchError";
	return krc < 0 ? -1 : krc == 0;
}

static int
zip_file(void *arg, const char *path, const void *data, size_t len,
    struct fetch_result *res)
{
	struct zipread *z = arg;
	const char *rel = path + strlen(z->root);
	char key[1024];

	if (fetch_key_from_path(rel, key, sizeof(key), res->error, sizeof(res->error)) != 0)
		return fetch_result_error(res, "FetchError", "%s: no block key", rel);
	return fetch_tree_add(z->t, key, rel, data, len, res);
}

int
fetch_github_zip_tree(struct spool *sp, const void *zip, size_t len, const char *path,
    const char *sha, const struct fetch_limits *lim,
    const struct fetch_archive_limits *alim, struct fetch_result *res)
{
	struct zipread z;
	int rc;

	memset(&z, 0, sizeof(z));
	z.prefix = path != NULL ? path : "";
	while (*z.prefix == '/')
		z.prefix++;
	z.t = fetch_tree_new(sp, lim);
	rc = fetch_archive_read(zip, len, FETCH_ARCHIVE_ZIP, alim, "zipball", zip_want,
	    zip_file, &z, res);
	if (rc == 0 && !z.have_root)
		rc = fetch_result_error(res, "FetchError", "zipball: empty archive");
	if (rc == 0)
		rc = fetch_tree_finish(z.t, "github", sha, res);
	fetch_tree_free(z.t);
	return rc;
}

int
fetch_github(struct spool *sp, const struct fetch_github_req *req,
    struct fetch_github_out *out, struct fetch_result *res)
{
	char base[1024], url[2048], auth[4200], err[1024];
	const char *hdrs[3] = { "Accept: application/vnd.github+json", API_VERSION, NULL };
	struct fetch_http_req h;
	struct fetch_http_resp r;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(out, 0, sizeof(*out));
	if (!valid_name(req->org) || !valid_name(req->repo))
		return fetch_result_error(res, "FetchError",
		    "source github: spec.github.org and spec.github.repo must be GitHub names");
	base_url(req, base, sizeof(base));
	if (resolve(req, base, out, res) < 0)
		return -1;
	if (!req->force && req->last_sha != NULL && strcmp(out->sha, req->last_sha) == 0) {
		out->unchanged = 1;
		return 0;
	}
	out->unchanged = 0;
	snprintf(url, sizeof(url), "%s/repos/%s/%s/zipball/%s", base, req->org, req->repo,
	    out->sha);
	gh_req(req, &h, auth, sizeof(auth));
	h.url = url;
	h.headers = hdrs;
	h.max_redirects = 5;
	h.max_body = req->lim.max_tree > 0 ? (size_t)req->lim.max_tree + (1 << 20) :
	    (size_t)256 << 20;
	out->requests++;
	if (fetch_http(&h, &r, err, sizeof(err)) < 0) {
		fetch_http_resp_free(&r);
		return fetch_result_error(res, "FetchError", "GitHub %s/%s: zipball: %s",
		    req->org, req->repo, err);
	}
	out->requests += r.redirects;
	if (r.status != 200)
		rc = gh_error(req, "the zipball", &r, res);
	else
		rc = fetch_github_zip_tree(sp, r.body.data ? r.body.data : "", r.body.len,
		    req->path, out->sha, &req->lim, &req->alim, res);
	fetch_http_resp_free(&r);
	return rc;
}
