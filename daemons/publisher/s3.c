/*
 * s3 - PutObject/HeadObject/DeleteObject on one curl multi handle whose
 * sockets live in an epoll set of ours (one fd for the stage's loop).  Each
 * request owns its easy handle, header list, body copy and answer buffers;
 * it is signed just before it is added, with the credentials current then.
 * Owns the credentials in memory (wiped on free).
 */
#include "config.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/curl_epoll.h"
#include "common/hash.h"
#include "common/util.h"
#include "daemons/publisher/s3.h"
#include "daemons/publisher/sigv4.h"

#define BODY_KEEP	8192	/* bytes of an answer kept (error documents are small) */
#define META_HASH	"x-amz-meta-decod-content-hash"

struct creds {
	char ak[256];
	char sk[256];
	char token[4096];
};

struct s3_client {
	CURLM *multi;
	int epfd;
	int64_t curl_due;	/* monotonic ms; -1 none */
	size_t in_flight;
	char *bucket, *region, *scheme, *host, *base_path, *cred_file, *profile;
	int path_style;
	int64_t timeout_ms, connect_timeout_ms;
	struct creds file_creds;	/* from the credentials file */
	int file_loaded;
	struct timespec file_mtime;
	off_t file_size;
	struct req *reqs;		/* in flight */
};

struct req {
	struct s3_client *c;
	struct req *next;
	CURL *easy;
	struct curl_slist *hdrs;
	enum s3_op op;
	char *body;
	size_t body_len;
	char answer[BODY_KEEP];
	size_t answer_len;
	char etag[130];
	char meta_hash[65];
	char errbuf[CURL_ERROR_SIZE];
	int64_t start;
	s3_done_fn fn;
	void *arg;
};

static int
on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct s3_client *c = userp;

	(void)easy;
	return curl_epoll_socket(c->multi, c->epfd, s, what, socketp, c);
}

static int
on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct s3_client *c = userp;

	c->curl_due = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	return 0;
}

/* parse_endpoint - scheme://host[:port][/path]; 0 or -1 */
static int
parse_endpoint(struct s3_client *c, const char *url)
{
	const char *p, *slash;
	size_t n;

	if (strncmp(url, "http://", 7) == 0) {
		c->scheme = xstrdup("http");
		p = url + 7;
	} else if (strncmp(url, "https://", 8) == 0) {
		c->scheme = xstrdup("https");
		p = url + 8;
	} else {
		return -1;
	}
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (n == 0 || memchr(p, '@', n) != NULL || strpbrk(url, " ?#\r\n") != NULL)
		return -1;
	c->host = xstrndup(p, n);
	for (char *h = c->host; *h; h++)
		*h = (char)tolower((unsigned char)*h);
	c->base_path = xstrdup(slash ? slash : "");
	n = strlen(c->base_path);
	while (n > 0 && c->base_path[n - 1] == '/')
		c->base_path[--n] = '\0';
	return 0;
}

struct s3_client *
s3_client_new(const struct s3_config *cf, char *err, size_t errlen)
{
	static int global_done;
	struct s3_client *c;
	const char *home;

	if (cf->bucket == NULL || cf->bucket[0] == '\0') {
		snprintf(err, errlen, "no bucket configured (DECOFILE_S3_BUCKET)");
		return NULL;
	}
	if (strpbrk(cf->bucket, "/ ?#%") != NULL) {
		snprintf(err, errlen, "bucket name \"%s\" is not valid", cf->bucket);
		return NULL;
	}
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(err, errlen, "curl_global_init failed");
			return NULL;
		}
		global_done = 1;
	}
	c = xcalloc(1, sizeof(*c));
	c->bucket = xstrdup(cf->bucket);
	c->region = xstrdup(cf->region && cf->region[0] ? cf->region : "us-east-1");
	if (cf->endpoint != NULL && cf->endpoint[0] != '\0') {
		if (parse_endpoint(c, cf->endpoint) < 0) {
			/* not echoed: a user:password in it must not reach a log */
			snprintf(err, errlen, "AWS_ENDPOINT_URL (s3_endpoint) is not an http(s)"
			    " URL without user, query or fragment");
			s3_client_free(c);
			return NULL;
		}
		c->path_style = 1;
	} else {
		c->scheme = xstrdup("https");
		c->host = xasprintf("%s.s3.%s.amazonaws.com", c->bucket, c->region);
		c->base_path = xstrdup("");
	}
	if (cf->credentials_file != NULL && cf->credentials_file[0] != '\0')
		c->cred_file = xstrdup(cf->credentials_file);
	else if ((home = getenv("HOME")) != NULL && home[0] != '\0')
		c->cred_file = xasprintf("%s/.aws/credentials", home);
	c->profile = xstrdup(cf->profile && cf->profile[0] ? cf->profile : "default");
	c->timeout_ms = cf->timeout_ms > 0 ? cf->timeout_ms : 30000;
	c->connect_timeout_ms = cf->connect_timeout_ms > 0 ? cf->connect_timeout_ms : 10000;
	if ((c->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
		s3_client_free(c);
		return NULL;
	}
	if ((c->multi = curl_multi_init()) == NULL)
		abort();
	c->curl_due = -1;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
	    (long)(cf->max_connections > 0 ? cf->max_connections : 16));
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS,
	    (long)(cf->max_connections > 0 ? cf->max_connections : 16));
	return c;
}

static void
req_free(struct req *r)
{
	if (r == NULL)
		return;
	if (r->easy != NULL) {
		curl_multi_remove_handle(r->c->multi, r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->hdrs);	/* holds the Authorization and token lines */
	free(r->body);
	free(r);
}

void
s3_client_free(struct s3_client *c)
{
	if (c == NULL)
		return;
	while (c->reqs != NULL) {
		struct req *r = c->reqs;

		c->reqs = r->next;
		r->fn(r->arg, NULL);
		req_free(r);
	}
	if (c->multi != NULL)
		curl_multi_cleanup(c->multi);
	if (c->epfd > 0)
		close(c->epfd);
	OPENSSL_cleanse(&c->file_creds, sizeof(c->file_creds));
	free(c->bucket);
	free(c->region);
	free(c->scheme);
	free(c->host);
	free(c->base_path);
	free(c->cred_file);
	free(c->profile);
	free(c);
}

int
s3_client_fd(const struct s3_client *c)
{
	return c->epfd;
}

int64_t
s3_client_timeout(const struct s3_client *c)
{
	int64_t now = now_ms();

	if (c->curl_due < 0)
		return c->in_flight > 0 ? 1000 : -1;
	return c->curl_due <= now ? 0 : c->curl_due - now;
}

size_t
s3_client_in_flight(const struct s3_client *c)
{
	return c->in_flight;
}

/* ---- credentials ---- */

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* load_file - (re)read the profile from the credentials file when it changed */
static void
load_file(struct s3_client *c)
{
	struct stat sb;
	char *data, *line, *save = NULL, sect[256] = "";
	size_t len;

	if (c->cred_file == NULL || stat(c->cred_file, &sb) < 0) {
		OPENSSL_cleanse(&c->file_creds, sizeof(c->file_creds));
		c->file_loaded = 0;
		return;
	}
	if (c->file_loaded && sb.st_mtim.tv_sec == c->file_mtime.tv_sec &&
	    sb.st_mtim.tv_nsec == c->file_mtime.tv_nsec && sb.st_size == c->file_size)
		return;
	OPENSSL_cleanse(&c->file_creds, sizeof(c->file_creds));
	c->file_loaded = 0;
	if ((data = read_file(c->cred_file, &len, 1 << 20)) == NULL)
		return;
	for (line = strtok_r(data, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *l = trim(line), *eq;

		if (*l == '#' || *l == ';' || *l == '\0')
			continue;
		if (*l == '[') {
			char *e = strchr(l, ']');

			if (e != NULL) {
				*e = '\0';
				snprintf(sect, sizeof(sect), "%s", trim(l + 1));
			}
			continue;
		}
		if (strcmp(sect, c->profile) != 0 || (eq = strchr(l, '=')) == NULL)
			continue;
		*eq = '\0';
		l = trim(l);
		eq = trim(eq + 1);
		if (strcmp(l, "aws_access_key_id") == 0)
			snprintf(c->file_creds.ak, sizeof(c->file_creds.ak), "%s", eq);
		else if (strcmp(l, "aws_secret_access_key") == 0)
			snprintf(c->file_creds.sk, sizeof(c->file_creds.sk), "%s", eq);
		else if (strcmp(l, "aws_session_token") == 0)
			snprintf(c->file_creds.token, sizeof(c->file_creds.token), "%s", eq);
	}
	OPENSSL_cleanse(data, len);
	free(data);
	c->file_loaded = 1;
	c->file_mtime = sb.st_mtim;
	c->file_size = sb.st_size;
}

/* get_creds - environment first, then the file; 0 or -1 */
static int
get_creds(struct s3_client *c, struct creds *out)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *tok = getenv("AWS_SESSION_TOKEN");

	memset(out, 0, sizeof(*out));
	if (ak != NULL && ak[0] != '\0' && sk != NULL && sk[0] != '\0') {
		snprintf(out->ak, sizeof(out->ak), "%s", ak);
		snprintf(out->sk, sizeof(out->sk), "%s", sk);
		if (tok != NULL)
			snprintf(out->token, sizeof(out->token), "%s", tok);
		return 0;
	}
	load_file(c);
	if (c->file_loaded && c->file_creds.ak[0] != '\0' && c->file_creds.sk[0] != '\0') {
		*out = c->file_creds;
		return 0;
	}
	return -1;
}

int
s3_credentials_ok(struct s3_client *c, char *err, size_t errlen)
{
	struct creds cr;
	int rv = get_creds(c, &cr);

	OPENSSL_cleanse(&cr, sizeof(cr));
	if (rv < 0)
		snprintf(err, errlen, "no AWS credentials: set AWS_ACCESS_KEY_ID and"
		    " AWS_SECRET_ACCESS_KEY, or profile [%s] in %s", c->profile,
		    c->cred_file ? c->cred_file : "(no credentials file: HOME unset)");
	return rv;
}

/* ---- requests ---- */

int
s3_object_url(const struct s3_client *c, const char *key, char *out, size_t len)
{
	struct buf b;
	int rv;

	buf_init(&b);
	buf_printf(&b, "%s://%s%s/", c->scheme, c->host, c->base_path);
	if (c->path_style) {
		sigv4_uri_encode(&b, c->bucket, strlen(c->bucket), 0);
		buf_addc(&b, '/');
	}
	sigv4_uri_encode(&b, key, strlen(key), 1);
	rv = b.len < len ? 0 : -1;
	if (rv == 0)
		memcpy(out, b.data, b.len + 1);
	buf_free(&b);
	return rv;
}

static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n, room = sizeof(r->answer) - 1 - r->answer_len;

	if (room > 0) {
		size_t k = len < room ? len : room;

		memcpy(r->answer + r->answer_len, p, k);
		r->answer_len += k;
		r->answer[r->answer_len] = '\0';
	}
	return len;
}

/* header_value - value of "Name: value\r\n" when line is that header */
static int
header_value(const char *line, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), i;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return 0;
	i = nl + 1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	while (len > i && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
	    line[len - 1] == ' '))
		len--;
	snprintf(out, outlen, "%.*s", (int)(len - i), line + i);
	return 1;
}

static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t len = size * n;

	if (!header_value(p, len, "ETag", r->etag, sizeof(r->etag)))
		header_value(p, len, META_HASH, r->meta_hash, sizeof(r->meta_hash));
	return len;
}

static void
add_hdr(struct req *r, const char *name, const char *value)
{
	char *line = xasprintf("%s: %s", name, value);
	struct curl_slist *l = curl_slist_append(r->hdrs, line);

	OPENSSL_cleanse(line, strlen(line));
	free(line);
	if (l == NULL)
		abort();
	r->hdrs = l;
}

static const char *
op_method(enum s3_op op)
{
	return op == S3_PUT ? "PUT" : op == S3_HEAD ? "HEAD" : "DELETE";
}

static int
start(struct s3_client *c, enum s3_op op, const char *key, const void *data, size_t len,
    const char *content_hash, s3_done_fn fn, void *arg, char *err, size_t errlen)
{
	struct sigv4_header h[8];
	struct sigv4_req q;
	struct sigv4_out o;
	struct creds cr;
	struct buf path;
	char url[2048], date[17], payload[65], host_port[512];
	size_t nh = 0;
	struct req *r;
	CURLMcode mc;

	if (key == NULL || key[0] == '\0' || strlen(key) > 1024) {
		snprintf(err, errlen, "object key empty or longer than 1024 bytes");
		return -1;
	}
	if (s3_object_url(c, key, url, sizeof(url)) < 0) {
		snprintf(err, errlen, "object URL too long");
		return -1;
	}
	if (get_creds(c, &cr) < 0) {
		s3_credentials_ok(c, err, errlen);
		return -1;
	}
	r = xcalloc(1, sizeof(*r));
	r->c = c;
	r->op = op;
	r->fn = fn;
	r->arg = arg;
	r->start = now_ms();
	if (op == S3_PUT) {
		r->body = xmalloc(len + 1);
		if (len > 0)
			memcpy(r->body, data, len);
		r->body_len = len;
	}
	sha256_hex(r->body ? r->body : "", r->body_len, payload);
	sigv4_amz_date(wall_ms() / 1000, date);
	snprintf(host_port, sizeof(host_port), "%s", c->host);

	/* the path as signed: decoded, under the endpoint's own path */
	buf_init(&path);
	buf_printf(&path, "%s/", c->base_path);
	if (c->path_style)
		buf_printf(&path, "%s/", c->bucket);
	buf_adds(&path, key);

	h[nh++] = (struct sigv4_header){ "host", host_port };
	h[nh++] = (struct sigv4_header){ "x-amz-date", date };
	h[nh++] = (struct sigv4_header){ "x-amz-content-sha256", payload };
	if (cr.token[0] != '\0')
		h[nh++] = (struct sigv4_header){ "x-amz-security-token", cr.token };
	if (op == S3_PUT) {
		h[nh++] = (struct sigv4_header){ "content-type", "application/json" };
		h[nh++] = (struct sigv4_header){ "cache-control", "no-cache" };
		if (content_hash != NULL && content_hash[0] != '\0')
			h[nh++] = (struct sigv4_header){ META_HASH, content_hash };
	}
	q = (struct sigv4_req){ op_method(op), path.data, NULL, h, nh, payload, date,
	    c->region, "s3", cr.ak, cr.sk, 0 };
	if (sigv4_sign(&q, &o) < 0) {
		OPENSSL_cleanse(&cr, sizeof(cr));
		buf_free(&path);
		req_free(r);
		snprintf(err, errlen, "cannot sign the request");
		return -1;
	}
	buf_free(&path);
	for (size_t i = 0; i < nh; i++)
		add_hdr(r, h[i].name, h[i].value);
	add_hdr(r, "Authorization", o.authorization);
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	OPENSSL_cleanse(o.authorization, strlen(o.authorization));
	sigv4_out_free(&o);
	OPENSSL_cleanse(&cr, sizeof(cr));

	if ((r->easy = curl_easy_init()) == NULL)
		abort();
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	if (op == S3_PUT) {
		curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (op == S3_HEAD) {
		curl_easy_setopt(r->easy, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	if ((mc = curl_multi_add_handle(c->multi, r->easy)) != CURLM_OK) {
		snprintf(err, errlen, "curl: %s", curl_multi_strerror(mc));
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		req_free(r);
		return -1;
	}
	r->next = c->reqs;
	c->reqs = r;
	c->in_flight++;
	return 0;
}

int
s3_put(struct s3_client *c, const char *key, const void *data, size_t len,
    const char *content_hash, s3_done_fn fn, void *arg, char *err, size_t errlen)
{
	return start(c, S3_PUT, key, data, len, content_hash, fn, arg, err, errlen);
}

int
s3_head(struct s3_client *c, const char *key, s3_done_fn fn, void *arg, char *err,
    size_t errlen)
{
	return start(c, S3_HEAD, key, NULL, 0, NULL, fn, arg, err, errlen);
}

int
s3_delete(struct s3_client *c, const char *key, s3_done_fn fn, void *arg, char *err,
    size_t errlen)
{
	return start(c, S3_DELETE, key, NULL, 0, NULL, fn, arg, err, errlen);
}

/* xml_text - the text of the first <tag>...</tag>, entities &amp; &lt; &gt; &quot; &apos; undone */
static void
xml_text(const char *xml, size_t len, const char *tag, char *out, size_t outlen)
{
	char open[64], close[64];
	const char *s, *e;
	size_t j = 0;

	out[0] = '\0';
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if ((s = memmem(xml, len, open, strlen(open))) == NULL)
		return;
	s += strlen(open);
	if ((e = memmem(s, len - (size_t)(s - xml), close, strlen(close))) == NULL)
		return;
	for (; s < e && j + 1 < outlen; s++) {
		static const struct { const char *ent; char c; } ents[] = {
			{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
			{ "&apos;", '\'' },
		};
		char ch = *s;

		for (size_t k = 0; ch == '&' && k < sizeof(ents) / sizeof(ents[0]); k++) {
			size_t l = strlen(ents[k].ent);

			if ((size_t)(e - s) >= l && strncmp(s, ents[k].ent, l) == 0) {
				ch = ents[k].c;
				s += l - 1;
				break;
			}
		}
		out[j++] = (unsigned char)ch < 0x20 ? ' ' : ch;
	}
	out[j] = '\0';
}

void
s3_error_code(const char *xml, size_t len, char *code, size_t codelen, char *msg,
    size_t msglen)
{
	xml_text(xml, len, "Code", code, codelen);
	xml_text(xml, len, "Message", msg, msglen);
}

/* status_code - a name for an answer without an error document (HEAD) */
static const char *
status_code(long st)
{
	switch (st) {
	case 301: return "PermanentRedirect";
	case 400: return "BadRequest";
	case 403: return "Forbidden";
	case 404: return "NotFound";
	case 409: return "Conflict";
	case 412: return "PreconditionFailed";
	case 500: return "InternalError";
	case 503: return "ServiceUnavailable";
	default: return "HTTPError";
	}
}

static void
finish(struct s3_client *c, struct req *r, CURLcode rc)
{
	struct s3_result res;

	memset(&res, 0, sizeof(res));
	res.op = r->op;
	res.ms = now_ms() - r->start;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &res.status);
	snprintf(res.etag, sizeof(res.etag), "%s", r->etag);
	if (strlen(r->meta_hash) == 64)
		snprintf(res.content_hash, sizeof(res.content_hash), "%s", r->meta_hash);
	if (rc != CURLE_OK) {
		snprintf(res.code, sizeof(res.code), "%s", rc == CURLE_OPERATION_TIMEDOUT ?
		    "RequestTimeout" : "ConnectionError");
		snprintf(res.message, sizeof(res.message), "%s", r->errbuf[0] ? r->errbuf :
		    curl_easy_strerror(rc));
		res.status = 0;
	} else if (res.status >= 200 && res.status < 300) {
		res.ok = 1;
	} else {
		s3_error_code(r->answer, r->answer_len, res.code, sizeof(res.code),
		    res.message, sizeof(res.message));
		if (res.code[0] == '\0')
			snprintf(res.code, sizeof(res.code), "%s", status_code(res.status));
		if (res.message[0] == '\0')
			snprintf(res.message, sizeof(res.message), "HTTP %ld", res.status);
	}
	for (struct req **pp = &c->reqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	c->in_flight--;
	r->fn(r->arg, &res);
	req_free(r);
}

void
s3_client_dispatch(struct s3_client *c)
{
	CURLMsg *m;
	int left;

	curl_epoll_ready(c->multi, c->epfd);
	curl_epoll_timeout(c->multi, &c->curl_due);
	while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
		struct req *r = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (r != NULL)
			finish(c, r, m->data.result);
	}
}
