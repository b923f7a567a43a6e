/*
 * web_hook - the git push receivers' rules (see web_hook.h): signatures
 * (OpenSSL's HMAC and CRYPTO_memcmp), the push's JSON, repository
 * addresses in one form, the Decofiles a push concerns, and the ring of
 * delivery ids.  Nothing here does I/O or keeps a secret past a call.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/web/web_hook.h"

static const char *const provider_names[WEB_NPROVIDERS] = { "github", "gitlab", "gitea" };

const char *
web_provider_name(enum web_provider p)
{
	return p < WEB_NPROVIDERS ? provider_names[p] : "?";
}

/* unhex - 2*n hex digits (either case) into n bytes; 0 or -1 */
static int
unhex(const char *s, size_t slen, unsigned char *out, size_t n)
{
	if (slen != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		char a = s[2 * i], b = s[2 * i + 1];

		if (!isxdigit((unsigned char)a) || !isxdigit((unsigned char)b))
			return -1;
		hi = isdigit((unsigned char)a) ? a - '0' : (tolower((unsigned char)a) - 'a' + 10);
		lo = isdigit((unsigned char)b) ? b - '0' : (tolower((unsigned char)b) - 'a' + 10);
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int
web_hook_verify(enum web_provider p, const char *secret, size_t slen, const char *header,
    const char *body, size_t blen)
{
	unsigned char want[EVP_MAX_MD_SIZE], got[SHA256_DIGEST_LENGTH];
	unsigned int wlen = 0;
	const char *hex;
	int ok;

	if (secret == NULL || slen == 0 || header == NULL)
		return 0;
	if (p == WEB_GITLAB) {
		unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];

		SHA256((const unsigned char *)secret, slen, a);
		SHA256((const unsigned char *)header, strlen(header), b);
		ok = CRYPTO_memcmp(a, b, sizeof(a)) == 0;
		OPENSSL_cleanse(a, sizeof(a));
		return ok;
	}
	hex = header;
	if (p == WEB_GITHUB) {
		if (strncmp(header, "sha256=", 7) != 0)
			return 0;
		hex += 7;
	}
	if (unhex(hex, strlen(hex), got, sizeof(got)) < 0)
		return 0;
	if (HMAC(EVP_sha256(), secret, (int)slen, (const unsigned char *)body, blen, want,
	    &wlen) == NULL || wlen != sizeof(got))
		return 0;
	ok = CRYPTO_memcmp(want, got, sizeof(got)) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

int
web_url_normalise(const char *url, char *out, size_t len)
{
	const char *s, *e, *scheme, *at, *colon, *slash;
	struct buf b;
	int local = 0, rc = 0;

	if (url == NULL)
		return -1;
	while (isspace((unsigned char)*url))
		url++;
	e = url + strlen(url);
	while (e > url && isspace((unsigned char)e[-1]))
		e--;
	if (e == url)
		return -1;
	buf_init(&b);
	s = url;
	scheme = strstr(url, "://");
	if (scheme != NULL && scheme < e && strncmp(url, "file://", 7) == 0) {
		s = url + 7;
		local = 1;
	} else if (scheme != NULL && scheme < e) {
		/* scheme://[user@]host[:port]/path */
		s = scheme + 3;
		slash = memchr(s, '/', (size_t)(e - s));
		if (slash == NULL)
			slash = e;
		at = NULL;
		for (const char *q = s; q < slash; q++)
			if (*q == '@')
				at = q;
		if (at != NULL)
			s = at + 1;
		colon = memchr(s, ':', (size_t)(slash - s));
		buf_add(&b, s, (size_t)((colon ? colon : slash) - s));
		s = slash;
	} else if (*url != '/' && (colon = memchr(url, ':', (size_t)(e - url))) != NULL &&
	    (memchr(url, '/', (size_t)(colon - url)) == NULL)) {
		/* scp form: [user@]host:path */
		at = memchr(url, '@', (size_t)(colon - url));
		s = at ? at + 1 : url;
		buf_add(&b, s, (size_t)(colon - s));
		s = colon + 1;
	} else {
		local = 1;
	}
	if (!local) {
		while (s < e && *s == '/')
			s++;
		buf_addc(&b, '/');
	}
	buf_add(&b, s, (size_t)(e - s));
	buf_addc(&b, '\0');
	b.len--;
	/* trailing slashes and ".git", in either order */
	for (;;) {
		if (b.len > 1 && b.data[b.len - 1] == '/')
			b.data[--b.len] = '\0';
		else if (b.len > 4 && strcasecmp(b.data + b.len - 4, ".git") == 0)
			b.data[b.len -= 4] = '\0';
		else
			break;
	}
	if (!local)
		for (size_t i = 0; i < b.len; i++)
			b.data[i] = (char)tolower((unsigned char)b.data[i]);
	if (b.len == 0 || b.len + 1 > len || (!local && b.data[0] == '/'))
		rc = -1;
	else
		memcpy(out, b.data, b.len + 1);
	buf_free(&b);
	return rc;
}

static void
add_url(struct web_push *p, const char *u)
{
	char n[2048];

	if (u == NULL || p->nurls >= WEB_PUSH_URLS || web_url_normalise(u, n, sizeof(n)) < 0)
		return;
	for (size_t i = 0; i < p->nurls; i++)
		if (strcmp(p->urls[i], n) == 0)
			return;
	p->urls[p->nurls++] = xstrdup(n);
}

int
web_push_parse(enum web_provider pv, const char *body, size_t len, struct web_push *p,
    char *err, size_t errlen)
{
	static const char *const fields[] = { "clone_url", "ssh_url", "git_url", "html_url",
		"url", "git_http_url", "git_ssh_url", "web_url", "homepage" };
	struct json_error je;
	yajl_val doc, repo;
	const char *ref, *def;

	memset(p, 0, sizeof(*p));
	if ((doc = json_parse(body, len, &je)) == NULL || !YAJL_IS_OBJECT(doc)) {
		snprintf(err, errlen, "the body is not a JSON object");
		yajl_tree_free(doc);
		return -1;
	}
	/* GitLab says "project" (and an older "repository"); the others "repository" */
	for (int pass = 0; pass < 2; pass++) {
		repo = json_get(doc, pass == 0 && pv == WEB_GITLAB ? "project" : "repository",
		    NULL);
		if (!YAJL_IS_OBJECT(repo))
			continue;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			add_url(p, json_get_str(repo, fields[i], NULL));
		def = json_get_str(repo, "default_branch", NULL);
		if (def != NULL && p->default_branch == NULL)
			p->default_branch = xstrdup(def);
	}
	ref = json_get_str(doc, "ref", NULL);
	if (p->nurls == 0 || ref == NULL) {
		snprintf(err, errlen, "a push names its repository and ref; this one %s",
		    p->nurls == 0 ? "has no repository address" : "has no ref");
		yajl_tree_free(doc);
		web_push_free(p);
		return -1;
	}
	if (strncmp(ref, "refs/heads/", 11) == 0)
		p->branch = xstrdup(ref + 11);
	if (json_get_str(doc, "after", NULL) != NULL)
		p->after = xstrdup(json_get_str(doc, "after", NULL));
	yajl_tree_free(doc);
	return 0;
}

void
web_push_free(struct web_push *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nurls; i++)
		free(p->urls[i]);
	free(p->branch);
	free(p->default_branch);
	free(p->after);
	memset(p, 0, sizeof(*p));
}

/* branch_is - the Decofile's ref (NULL: the default branch) names the pushed branch */
static int
branch_is(const char *ref, const struct web_push *p)
{
	if (p->branch == NULL)
		return 0;
	if (ref == NULL)
		return p->default_branch != NULL && strcmp(p->default_branch, p->branch) == 0;
	return strcmp(ref, p->branch) == 0;
}

static int
has_url(const struct web_push *p, const char *n)
{
	for (size_t i = 0; i < p->nurls; i++)
		if (strcmp(p->urls[i], n) == 0)
			return 1;
	return 0;
}

/* source_set - s from a repository address and the ref it follows; 1, or 0 (none) */
static int
source_set(struct web_push_source *s, const char *url, const char *ref)
{
	char n[2048];

	if (web_url_normalise(url, n, sizeof(n)) < 0)
		return 0;
	if (ref != NULL && strncmp(ref, "refs/heads/", 11) == 0)
		ref += 11;
	s->url = xstrdup(n);
	s->ref = ref != NULL && *ref != '\0' && strcmp(ref, "HEAD") != 0 ? xstrdup(ref) : NULL;
	return 1;
}

int
web_push_source_of(yajl_val doc, struct web_push_source *s)
{
	const char *source = json_get_str(doc, "spec", "source", NULL);

	memset(s, 0, sizeof(*s));
	if (source == NULL)
		return 0;
	if (strcmp(source, "git") == 0)
		return source_set(s, json_get_str(doc, "spec", "git", "url", NULL),
		    json_get_str(doc, "spec", "git", "ref", NULL));
	if (strcmp(source, "github") == 0) {
		const char *org = json_get_str(doc, "spec", "github", "org", NULL);
		const char *repo = json_get_str(doc, "spec", "github", "repo", NULL);
		const char *c = json_get_str(doc, "spec", "github", "commit", NULL);
		char u[1024];

		if (org == NULL || repo == NULL)
			return 0;
		if (c != NULL && strlen(c) == 40 && strspn(c, "0123456789abcdefABCDEF") == 40)
			return 0;
		snprintf(u, sizeof(u), "https://github.com/%s/%s", org, repo);
		return source_set(s, u, c);
	}
	return 0;
}

void
web_push_source_free(struct web_push_source *s)
{
	if (s == NULL)
		return;
	free(s->url);
	free(s->ref);
	memset(s, 0, sizeof(*s));
}

int
web_push_source_matches(const struct web_push_source *s, const struct web_push *p)
{
	return s->url != NULL && has_url(p, s->url) && branch_is(s->ref, p);
}

int
web_push_matches(yajl_val doc, const struct web_push *p)
{
	struct web_push_source s;
	int m = web_push_source_of(doc, &s) && web_push_source_matches(&s, p);

	web_push_source_free(&s);
	return m;
}

struct web_ring {
	char **ids;
	size_t n, next;
};

struct web_ring *
web_ring_new(size_t n)
{
	struct web_ring *r = xcalloc(1, sizeof(*r));

	r->n = n > 0 ? n : 1;
	r->ids = xcalloc(r->n, sizeof(*r->ids));
	return r;
}

void
web_ring_free(struct web_ring *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->ids[i]);
	free(r->ids);
	free(r);
}

int
web_ring_seen(struct web_ring *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->ids[i] != NULL && strcmp(r->ids[i], id) == 0)
			return 1;
	free(r->ids[r->next]);
	r->ids[r->next] = xstrdup(id);
	r->next = (r->next + 1) % r->n;
	return 0;
}
