/*
 * fetch_oci - a distribution-API client for one fetch, on a fetch worker.
 * A session (struct oci) owns the registry's base URL, the repository, the
 * Authorization line it earned (basic, or a bearer token from the realm a
 * WWW-Authenticate challenge named) and the files gathered from the layers
 * (fetch_oci_layers.c reads them).  A credential goes only to the
 * registry's origin and its token realm.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_http.h"
#include "daemons/fetcher/fetch_oci_int.h"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define ACCEPT "Accept: " MT_OCI_MANIFEST ", " MT_OCI_INDEX ", " MT_DOCKER_MANIFEST ", " \
	MT_DOCKER_LIST
#define MAX_MANIFEST (4 << 20)

int
fetch_oci_parse_ref(const char *image, char *host, size_t hostlen, char *name,
    size_t namelen, char *ref, size_t reflen)
{
	char tmp[512], *at, *slash, *colon, *rest;

	if (image == NULL || *image == '\0' || strlen(image) >= sizeof(tmp))
		return -1;
	for (const char *c = image; *c != '\0'; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || strchr("?#\\%", *c))
			return -1;
	snprintf(tmp, sizeof(tmp), "%s", image);
	if ((at = strchr(tmp, '@')) != NULL) {
		*at++ = '\0';
		if (strncmp(at, "sha256:", 7) != 0 || strlen(at) != 71)
			return -1;
		for (const char *c = at + 7; *c != '\0'; c++)
			if (!isxdigit((unsigned char)*c) || isupper((unsigned char)*c))
				return -1;
		snprintf(ref, reflen, "%s", at);
	}
	slash = strchr(tmp, '/');
	if (slash != NULL && (memchr(tmp, '.', (size_t)(slash - tmp)) != NULL ||
	    memchr(tmp, ':', (size_t)(slash - tmp)) != NULL ||
	    strncmp(tmp, "localhost/", 10) == 0)) {
		*slash = '\0';
		snprintf(host, hostlen, "%s", tmp);
		rest = slash + 1;
	} else {
		snprintf(host, hostlen, "registry-1.docker.io");
		rest = tmp;
	}
	if ((colon = strrchr(rest, ':')) != NULL) {
		*colon++ = '\0';
		if (at == NULL)
			snprintf(ref, reflen, "%s", colon);
		if (*colon == '\0' || strlen(colon) > 128)
			return -1;
		for (const char *c = colon; *c != '\0'; c++)
			if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
				return -1;
	} else if (at == NULL) {
		snprintf(ref, reflen, "latest");
	}
	if (*rest == '\0' || *rest == '/' || rest[strlen(rest) - 1] == '/' ||
	    strstr(rest, "//") != NULL || strstr(rest, "..") != NULL)
		return -1;
	for (const char *c = rest; *c != '\0'; c++)
		if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) ||
		    strchr("._-/", *c)))
			return -1;
	if (strcmp(host, "registry-1.docker.io") == 0 && strchr(rest, '/') == NULL)
		snprintf(name, namelen, "library/%s", rest);
	else
		snprintf(name, namelen, "%s", rest);
	return 0;
}

/* host (with its port) is listed in the insecure registries */
static int
insecure(const char *list, const char *host)
{
	size_t n = strlen(host);

	for (const char *p = list; p != NULL && *p != '\0';) {
		size_t k;

		p += strspn(p, " ,\t");
		k = strcspn(p, " ,\t");
		if (k == n && strncmp(p, host, n) == 0)
			return 1;
		p += k;
	}
	return 0;
}

/* the value of key in a challenge's parameters (key="value") */
static void
challenge_param(const char *ch, const char *key, char *out, size_t outlen)
{
	size_t k = strlen(key);

	out[0] = '\0';
	for (const char *p = ch; (p = strcasestr(p, key)) != NULL; p += k) {
		const char *v, *end;

		if ((p != ch && p[-1] != ' ' && p[-1] != ',') || p[k] != '=')
			continue;
		v = p + k + 1;
		if (*v == '"') {
			end = strchr(++v, '"');
		} else {
			end = v + strcspn(v, ", ");
		}
		if (end == NULL)
			return;
		snprintf(out, outlen, "%.*s", (int)(end - v), v);
		return;
	}
}

static void
basic_auth(struct oci *o)
{
	char *b = base64_encode(o->req->creds, strlen(o->req->creds), 0);

	snprintf(o->auth, sizeof(o->auth), "Authorization: Basic %s", b);
	explicit_bzero(b, strlen(b));
	free(b);
}

/* answer a 401's challenge: basic credentials, or a token from the realm */
static int
authenticate(struct oci *o, const char *challenge)
{
	char realm[1024], service[256], scope[512], url[2400], err[1024];
	char *es = NULL, *esc = NULL;
	struct fetch_http_req h;
	struct fetch_http_resp r;
	char basic[1200];
	yajl_val v;
	const char *tok;
	CURL *c;

	if (strncasecmp(challenge, "Basic", 5) == 0) {
		if (o->req->creds == NULL)
			return fetch_result_error(o->res, "FetchError",
			    "registry %s asks for credentials (Basic): set spec.oci.secret",
			    o->host);
		basic_auth(o);
		return 0;
	}
	if (strncasecmp(challenge, "Bearer", 6) != 0)
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: unknown authentication challenge", o->host);
	challenge_param(challenge + 6, "realm", realm, sizeof(realm));
	challenge_param(challenge + 6, "service", service, sizeof(service));
	challenge_param(challenge + 6, "scope", scope, sizeof(scope));
	if (scope[0] == '\0')
		snprintf(scope, sizeof(scope), "repository:%s:pull", o->name);
	if (realm[0] == '\0')
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: bearer challenge without a realm", o->host);
	c = curl_easy_init();
	es = curl_easy_escape(c, service, 0);
	esc = curl_easy_escape(c, scope, 0);
	snprintf(url, sizeof(url), "%s%sservice=%s&scope=%s", realm,
	    strchr(realm, '?') != NULL ? "&" : "?", es, esc);
	curl_free(es);
	curl_free(esc);
	curl_easy_cleanup(c);
	memset(&h, 0, sizeof(h));
	h.url = url;
	h.deadline = o->req->deadline;
	/* the realm gets the credentials over plain HTTP only beside an insecure registry */
	h.allow_http = o->allow_http;
	h.max_body = 1 << 20;
	if (o->req->creds != NULL) {
		char *b = base64_encode(o->req->creds, strlen(o->req->creds), 0);

		snprintf(basic, sizeof(basic), "Authorization: Basic %s", b);
		explicit_bzero(b, strlen(b));
		free(b);
		h.auth = basic;
	}
	o->out->requests++;
	if (fetch_http(&h, &r, err, sizeof(err)) < 0) {
		explicit_bzero(basic, sizeof(basic));
		fetch_http_resp_free(&r);
		return fetch_result_error(o->res, "FetchError", "registry %s: token: %s",
		    o->host, err);
	}
	explicit_bzero(basic, sizeof(basic));
	if (r.status != 200) {
		fetch_http_resp_free(&r);
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: the token service at %s refused (%ld)%s", o->host, realm,
		    r.status, o->req->creds == NULL ? ": no credentials were sent "
		    "(spec.oci.secret)" : ": check spec.oci.secret");
	}
	v = json_parse(r.body.data ? r.body.data : "", r.body.len, NULL);
	tok = v != NULL ? json_get_str(v, "token", NULL) : NULL;
	if (tok == NULL && v != NULL)
		tok = json_get_str(v, "access_token", NULL);
	if (tok == NULL || strlen(tok) > sizeof(o->auth) - 40) {
		yajl_tree_free(v);
		fetch_http_resp_free(&r);
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: the token service gave no token", o->host);
	}
	snprintf(o->auth, sizeof(o->auth), "Authorization: Bearer %s", tok);
	yajl_tree_free(v);
	explicit_bzero(r.body.data, r.body.len);
	fetch_http_resp_free(&r);
	return 0;
}

/*
 * one request to the registry, authenticating once on a 401.  0 with r
 * filled (any status), or -1 with res set.
 */
int
oci_call(struct oci *o, const char *method, const char *path, const char *accept,
    size_t max_body, struct fetch_http_resp *r)
{
	const char *hdrs[2] = { accept, NULL };
	char url[1200], err[1024];
	struct fetch_http_req h;

	snprintf(url, sizeof(url), "%s/v2/%s/%s", o->base, o->name, path);
	for (;;) {
		memset(&h, 0, sizeof(h));
		h.method = method;
		h.url = url;
		h.headers = accept != NULL ? hdrs : NULL;
		h.auth = o->auth[0] ? o->auth : NULL;
		h.allow_http = o->allow_http;
		h.deadline = o->req->deadline;
		h.max_body = max_body;
		h.max_redirects = 5;
		o->out->requests++;
		if (fetch_http(&h, r, err, sizeof(err)) < 0) {
			fetch_http_resp_free(r);
			return fetch_result_error(o->res, "FetchError", "registry %s: %s",
			    o->host, err);
		}
		o->out->requests += r->redirects;
		if (r->status != 401 || o->tried_auth)
			return 0;
		o->tried_auth = 1;
		if (authenticate(o, r->www_auth) < 0) {
			fetch_http_resp_free(r);
			return -1;
		}
		fetch_http_resp_free(r);
	}
}

/* a non-2xx answer into res, with the registry's error code */
int
oci_reg_error(struct oci *o, const char *what, struct fetch_http_resp *r)
{
	yajl_val v = r->body.len > 0 ? json_parse(r->body.data, r->body.len, NULL) : NULL;
	yajl_val errs = v != NULL ? json_get(v, "errors", NULL) : NULL;
	const char *code = NULL, *msg = NULL;
	int rc;

	if (errs != NULL && YAJL_IS_ARRAY(errs) && errs->u.array.len > 0) {
		code = json_get_str(errs->u.array.values[0], "code", NULL);
		msg = json_get_str(errs->u.array.values[0], "message", NULL);
	}
	rc = fetch_result_error(o->res, "FetchError", "registry %s: %s %s:%s: %ld%s%s%s%s%s",
	    o->host, what, o->name, o->ref, r->status, code ? " " : "", code ? code : "",
	    msg ? " (" : "", msg ? msg : "", msg ? ")" : "");
	if (r->status == 401)
		snprintf(o->res->error + strlen(o->res->error),
		    sizeof(o->res->error) - strlen(o->res->error), "%s",
		    o->req->creds ? ": the credentials were refused (spec.oci.secret)" :
		    ": credentials needed (spec.oci.secret)");
	yajl_tree_free(v);
	return rc;
}

/* digest is "sha256:" + 64 lowercase hex */
int
oci_valid_digest(const char *d)
{
	if (d == NULL || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71)
		return 0;
	for (d += 7; *d != '\0'; d++)
		if (!isxdigit((unsigned char)*d) || isupper((unsigned char)*d))
			return 0;
	return 1;
}

int
oci_verify(struct oci *o, const char *what, const char *digest, const struct buf *b)
{
	char h[65];

	sha256_hex(b->data ? b->data : "", b->len, h);
	if (strcmp(h, digest + 7) != 0)
		return fetch_result_error(o->res, "FetchError",
		    "registry %s: %s %s: digest mismatch (the bytes hash to sha256:%s); refused",
		    o->host, what, digest, h);
	return 0;
}

/* GET the manifest named by digest (verified); the parsed tree or NULL */
static yajl_val
get_manifest(struct oci *o, const char *digest, char *mtype, size_t mtlen)
{
	struct fetch_http_resp r;
	char path[120];
	yajl_val v;
	const char *mt;

	snprintf(path, sizeof(path), "manifests/%s", digest);
	if (oci_call(o, "GET", path, ACCEPT, MAX_MANIFEST, &r) < 0)
		return NULL;
	if (r.status != 200) {
		oci_reg_error(o, "manifest", &r);
		fetch_http_resp_free(&r);
		return NULL;
	}
	if (oci_verify(o, "manifest", digest, &r.body) < 0 ||
	    (v = json_parse(r.body.data ? r.body.data : "", r.body.len, NULL)) == NULL) {
		if (o->res->reason == NULL)
			fetch_result_error(o->res, "FetchError",
			    "registry %s: manifest %s is not JSON", o->host, digest);
		fetch_http_resp_free(&r);
		return NULL;
	}
	mt = json_get_str(v, "mediaType", NULL);
	snprintf(mtype, mtlen, "%.199s", mt != NULL ? mt : r.content_type);
	mtype[strcspn(mtype, ";")] = '\0';
	fetch_http_resp_free(&r);
	return v;
}

/* ---- files gathered from the layers ---- */

/* a manifest's layers into the files; an index is followed to one manifest */
static int
read_manifest(struct oci *o, const char *digest, int depth)
{
	char mtype[200];
	yajl_val v = get_manifest(o, digest, mtype, sizeof(mtype)), list;
	int rc = 0;

	if (v == NULL)
		return -1;
	if (strcmp(mtype, MT_OCI_INDEX) == 0 || strcmp(mtype, MT_DOCKER_LIST) == 0) {
		const char *pick = NULL;

		list = json_get(v, "manifests", NULL);
		for (size_t i = 0; list != NULL && YAJL_IS_ARRAY(list) && i < list->u.array.len;
		    i++) {
			yajl_val m = list->u.array.values[i];
			const char *os = json_get_str(m, "platform", "os", NULL);
			const char *arch = json_get_str(m, "platform", "architecture", NULL);

			if (pick == NULL || (os != NULL && arch != NULL &&
			    strcmp(os, "linux") == 0 && strcmp(arch, "amd64") == 0))
				pick = json_get_str(m, "digest", NULL);
		}
		if (depth > 0 || pick == NULL || !oci_valid_digest(pick)) {
			rc = fetch_result_error(o->res, "FetchError",
			    "registry %s: index %s names no usable manifest", o->host, digest);
		} else {
			char child[80];

			snprintf(child, sizeof(child), "%s", pick);
			rc = read_manifest(o, child, depth + 1);
		}
	} else if (strcmp(mtype, MT_OCI_MANIFEST) == 0 ||
	    strcmp(mtype, MT_DOCKER_MANIFEST) == 0) {
		rc = oci_read_layers(o, digest, json_get(v, "layers", NULL));
	} else {
		rc = fetch_result_error(o->res, "FetchError",
		    "registry %s: manifest %s has media type '%s', not an OCI or Docker "
		    "manifest or index", o->host, digest, mtype);
	}
	yajl_tree_free(v);
	return rc;
}

/* the digest of the reference: HEAD, or a GET when the HEAD does not say */
static int
resolve(struct oci *o)
{
	struct fetch_http_resp r;
	char path[300];

	if (strncmp(o->ref, "sha256:", 7) == 0) {
		snprintf(o->out->digest, sizeof(o->out->digest), "%.71s", o->ref);
		return 0;
	}
	snprintf(path, sizeof(path), "manifests/%s", o->ref);
	if (oci_call(o, "HEAD", path, ACCEPT, 0, &r) < 0)
		return -1;
	if (r.status == 200 && oci_valid_digest(r.digest)) {
		snprintf(o->out->digest, sizeof(o->out->digest), "%.71s", r.digest);
		fetch_http_resp_free(&r);
		return 0;
	}
	if (r.status != 200) {
		oci_reg_error(o, "manifest", &r);
		fetch_http_resp_free(&r);
		return -1;
	}
	fetch_http_resp_free(&r);
	/* no Docker-Content-Digest: the manifest's own hash is its digest */
	if (oci_call(o, "GET", path, ACCEPT, MAX_MANIFEST, &r) < 0)
		return -1;
	if (r.status != 200) {
		oci_reg_error(o, "manifest", &r);
		fetch_http_resp_free(&r);
		return -1;
	}
	memcpy(o->out->digest, "sha256:", 7);
	sha256_hex(r.body.data ? r.body.data : "", r.body.len, o->out->digest + 7);
	fetch_http_resp_free(&r);
	return 0;
}

int
fetch_oci(struct spool *sp, const struct fetch_oci_req *req, struct fetch_oci_out *out,
    struct fetch_result *res)
{
	struct oci o;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(out, 0, sizeof(*out));
	memset(&o, 0, sizeof(o));
	o.req = req;
	o.out = out;
	o.res = res;
	if (fetch_oci_parse_ref(req->image, o.host, sizeof(o.host), o.name, sizeof(o.name),
	    o.ref, sizeof(o.ref)) < 0)
		return fetch_result_error(res, "FetchError",
		    "source oci: spec.oci.image '%s' is not an image reference "
		    "([registry/]name[:tag][@sha256:...])", req->image ? req->image : "");
	if (req->dir != NULL && strcmp(req->dir, "/") != 0 && strcmp(req->dir, ".") != 0 &&
	    req->dir[0] != '\0') {
		const char *d = req->dir;
		char tmp[1024];
		size_t n;

		while (*d == '/')
			d++;
		snprintf(tmp, sizeof(tmp), "%s", d);
		n = strlen(tmp);
		while (n > 0 && tmp[n - 1] == '/')
			tmp[--n] = '\0';
		if (oci_clean(tmp, o.dir, sizeof(o.dir)) < 0)
			return fetch_result_error(res, "FetchError",
			    "source oci: spec.oci.dir '%s' is not a clean path", req->dir);
	}
	o.allow_http = insecure(req->insecure, o.host);
	/*
	 * a token from the last poll spares the challenge (an expired one gets
	 * a 401); it is "host SOH line", used only on the registry it came from
	 */
	if (req->auth != NULL && strncmp(req->auth, o.host, strlen(o.host)) == 0 &&
	    req->auth[strlen(o.host)] == '\001')
		snprintf(o.auth, sizeof(o.auth), "%s", req->auth + strlen(o.host) + 1);
	snprintf(o.base, sizeof(o.base), "%s://%s", o.allow_http ? "http" : "https", o.host);
	if (req->creds != NULL && strchr(req->creds, ':') == NULL)
		return fetch_result_error(res, "FetchError",
		    "source oci: the secret must hold username:password");
	rc = resolve(&o);
	if (rc == 0 && !req->force && req->last_digest != NULL &&
	    strcmp(out->digest, req->last_digest) == 0) {
		out->unchanged = 1;
	} else if (rc == 0) {
		rc = read_manifest(&o, out->digest, 0);
		if (rc == 0)
			rc = oci_add_files(&o, sp);
	}
	oci_files_free(&o);
	if (rc == 0 && strncmp(o.auth, "Authorization: Bearer ", 22) == 0)
		snprintf(out->auth, sizeof(out->auth), "%s\001%s", o.host, o.auth);
	explicit_bzero(o.auth, sizeof(o.auth));
	return rc;
}
