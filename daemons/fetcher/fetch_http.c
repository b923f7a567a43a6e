/*
 * fetch_http - libcurl easy handles driven by the fetch workers.  Each
 * call owns its handle; the body goes into a capped buffer; a transfer is
 * cut at the source's deadline or when the fetcher shuts down
 * (fetch_run_aborted).  Redirects are followed here, not by curl, so the
 * Authorization line is dropped as soon as a hop leaves the first origin
 * (GitHub's codeload, a registry's blob storage) and https never becomes
 * http.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "daemons/fetcher/fetch_http.h"
#include "daemons/fetcher/fetch_run.h"

struct xfer {
	struct fetch_http_resp *r;
	size_t max;
	int over;
};

static size_t
on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;

	if (x->r->body.len + sz * n > x->max) {
		x->over = 1;
		return 0;
	}
	buf_add(&x->r->body, p, sz * n);
	return sz * n;
}

/* keep the value of header line h (len n) in out when its name is name */
static void
pick(const char *h, size_t n, const char *name, char *out, size_t outlen)
{
	size_t k = strlen(name);
	const char *v, *end = h + n;

	if (n <= k || strncasecmp(h, name, k) != 0 || h[k] != ':')
		return;
	for (v = h + k + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	snprintf(out, outlen, "%.*s", (int)(end - v), v);
}

static size_t
on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	struct fetch_http_resp *r = x->r;
	size_t len = sz * n;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* a new response (after 100 Continue): forget the old headers */
		r->etag[0] = r->content_type[0] = r->digest[0] = r->www_auth[0] = '\0';
		r->rl_remaining[0] = r->rl_reset[0] = r->retry_after[0] = '\0';
		return len;
	}
	pick(p, len, "ETag", r->etag, sizeof(r->etag));
	pick(p, len, "Content-Type", r->content_type, sizeof(r->content_type));
	pick(p, len, "Docker-Content-Digest", r->digest, sizeof(r->digest));
	pick(p, len, "WWW-Authenticate", r->www_auth, sizeof(r->www_auth));
	pick(p, len, "X-RateLimit-Remaining", r->rl_remaining, sizeof(r->rl_remaining));
	pick(p, len, "X-RateLimit-Reset", r->rl_reset, sizeof(r->rl_reset));
	pick(p, len, "Retry-After", r->retry_after, sizeof(r->retry_after));
	return len;
}

static int
on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)arg;
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return fetch_run_aborted();
}

/* scheme, host and port of url into out ("https://h:443"); 0 or -1 */
static int
origin(const char *url, char *out, size_t outlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = -1;

	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
		for (char *c = host; *c != '\0'; c++)
			*c = (char)tolower((unsigned char)*c);
		snprintf(out, outlen, "%s://%s:%s", scheme, host, port);
		rc = 0;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

int
fetch_http_origin_same(const char *a, const char *b)
{
	char oa[1024], ob[1024];

	return origin(a, oa, sizeof(oa)) == 0 && origin(b, ob, sizeof(ob)) == 0 &&
	    strcmp(oa, ob) == 0;
}

/* one request, no redirect following; 0 or -1 with err */
static int
one(const struct fetch_http_req *req, const char *url, int with_auth,
    struct fetch_http_resp *resp, char *err, size_t errlen)
{
	const char *method = req->method != NULL ? req->method : "GET";
	struct curl_slist *hl = NULL;
	struct xfer x = { resp, req->max_body ? req->max_body : (size_t)1 << 20, 0 };
	int64_t left = req->deadline - now_ms();
	char *redir = NULL;
	CURLcode cc;
	CURL *h;

	if (left <= 0) {
		snprintf(err, errlen, "%s %s: deadline passed", method, url);
		return -1;
	}
	if (strncmp(url, "https://", 8) != 0 &&
	    !(req->allow_http && strncmp(url, "http://", 7) == 0)) {
		snprintf(err, errlen, "%s %s: only %s URLs are allowed here", method, url,
		    req->allow_http ? "http and https" : "https");
		return -1;
	}
	if ((h = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "%s %s: cannot make a curl handle", method, url);
		return -1;
	}
	for (const char *const *p = req->headers; p != NULL && *p != NULL; p++)
		hl = curl_slist_append(hl, *p);
	if (with_auth && req->auth != NULL)
		hl = curl_slist_append(hl, req->auth);
	hl = curl_slist_append(hl, "Expect:");
	buf_reset(&resp->body);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "decod-fetcher/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(left < 10000 ? left : 10000));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		if (x.over)
			snprintf(err, errlen, "%s %s: answer larger than %zu bytes", method, url,
			    x.max);
		else
			snprintf(err, errlen, "%s %s: %s", method, url, curl_easy_strerror(cc));
		curl_slist_free_all(hl);
		curl_easy_cleanup(h);
		return -1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	resp->location[0] = '\0';
	if (resp->status >= 300 && resp->status < 400 &&
	    curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &redir) == CURLE_OK && redir != NULL)
		snprintf(resp->location, sizeof(resp->location), "%s", redir);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return 0;
}

int
fetch_http(const struct fetch_http_req *req, struct fetch_http_resp *resp, char *err,
    size_t errlen)
{
	char url[2048];
	int with_auth = 1;

	memset(resp, 0, sizeof(*resp));
	buf_init(&resp->body);
	snprintf(url, sizeof(url), "%s", req->url);
	for (;;) {
		if (one(req, url, with_auth, resp, err, errlen) < 0)
			return -1;
		if (resp->status < 300 || resp->status >= 400 || resp->location[0] == '\0' ||
		    resp->redirects >= req->max_redirects)
			return 0;
		if (strncmp(url, "https://", 8) == 0 &&
		    strncmp(resp->location, "https://", 8) != 0) {
			snprintf(err, errlen, "%s: redirect from https to a plain URL refused",
			    url);
			return -1;
		}
		if (!fetch_http_origin_same(req->url, resp->location))
			with_auth = 0;
		snprintf(url, sizeof(url), "%s", resp->location);
		resp->redirects++;
	}
}

void
fetch_http_resp_free(struct fetch_http_resp *resp)
{
	if (resp != NULL)
		buf_free(&resp->body);
}
