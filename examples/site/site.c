/*
 * decod-site - the reference replica: a tiny site that serves its current
 * decofile and implements the replica side of both reload styles (push:
 * POST /.decofile/reload with the document; poll: GET /.decofile/reload,
 * answered once the timestamp file reaches the asked timestamp), as a Deco
 * runtime does.  libmicrohttpd's internal epoll thread serves HTTP; the main
 * thread owns timers (slow, long-polling answers), heartbeats and signals.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "examples/site/site_doc.h"

#define MAX_BODY	(64u << 20)	/* default --max-body */
#define MAX_CONNS	1000		/* default --max-connections */
#define IDLE_TIMEOUT_S	30		/* default --idle-timeout */
#define LONG_POLL_MS	120000		/* a poll is answered within this */
#define TICK_MS		50		/* main loop granularity */

enum wait_kind { W_DELAY, W_POLL, W_HANG };

/* a suspended connection and what it waits for */
struct waiter {
	struct MHD_Connection *conn;
	struct req *req;
	enum wait_kind kind;
	int64_t not_before;	/* monotonic ms: answer no earlier */
	int64_t deadline;	/* W_POLL: answer 504 then */
	int64_t want_ts;	/* W_POLL: timestamp asked for */
	char *ts_file;		/* W_POLL: file to read */
	struct waiter *next;
};

/* per-request state (MHD's con_cls) */
struct req {
	struct buf body;
	int ready;		/* a response is decided: status + text */
	unsigned int status;
	char *resp;
	const char *ctype;
	int suspended;
};

static struct {
	/* options */
	const char *decofile_dir;
	const char *ts_file;
	char *token;
	int64_t delay_ms;
	int fail, hang;
	int lenient;		/* --lenient: no token set accepts any; poll falls back to --ts-file */
	size_t max_body;
	const char *style;

	/* current decofile, guarded by mu */
	pthread_mutex_t mu;
	char *doc;		/* compact JSON text */
	size_t doclen;
	char sha[SHA256_HEX_LEN + 1];
	char ts[32];		/* timestamp of the current document */
	const char *source;	/* "dir", "push", "empty" */
	int64_t file_ts;	/* last value seen in the timestamp file */
	struct waiter *waiters;
	long reloads;
} site = { .mu = PTHREAD_MUTEX_INITIALIZER, .style = "push" };

static int sigpipe[2] = { -1, -1 };

/* on_signal - write a byte; the main loop does the work */
static void
on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(sigpipe[1], &c, 1) < 0) {
		/* nothing sensible to do */
	}
	errno = saved;
}

/* set_doc - install a new current document (takes text); caller holds mu */
static void
set_doc(char *text, size_t len, const char *ts, const char *source)
{
	free(site.doc);
	site.doc = text;
	site.doclen = len;
	sha256_hex(text, len, site.sha);
	snprintf(site.ts, sizeof(site.ts), "%s", ts ? ts : "");
	site.source = source;
	site.reloads++;
}

/* reload_from_dir - re-read --decofile-dir; caller holds mu; 0 or -1 */
static int
reload_from_dir(int64_t ts)
{
	char err[512], tsbuf[32];
	size_t len;
	char *text;

	if (site.decofile_dir == NULL)
		return 0;
	if ((text = site_load_dir(site.decofile_dir, &len, err, sizeof(err))) == NULL) {
		log_kv(LOG_WARN, "cannot load decofile", "error", err, NULL);
		return -1;
	}
	snprintf(tsbuf, sizeof(tsbuf), "%lld", (long long)ts);
	set_doc(text, len, ts >= 0 ? tsbuf : "", "dir");
	log_kv(LOG_INFO, "decofile loaded", "dir", site.decofile_dir, "sha256",
	    site.sha, "timestamp", site.ts, NULL);
	return 0;
}

/* token_ok - the Authorization header carries the configured token */
static int
token_ok(struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	size_t tl, hl;
	unsigned char diff = 0;

	/* as the real runtime: fail-closed when no token is set (unless --lenient) */
	if (site.token == NULL || site.token[0] == '\0')
		return site.lenient;
	if (h == NULL || strncmp(h, "Token ", 6) != 0)
		return 0;
	h += 6;
	tl = strlen(site.token);
	hl = strlen(h);
	for (size_t i = 0; i < tl; i++)
		diff |= (unsigned char)(site.token[i] ^ (i < hl ? h[i] : 0));
	return diff == 0 && hl == tl;
}

static void
decide(struct req *r, unsigned int status, const char *ctype, char *text)
{
	r->ready = 1;
	r->status = status;
	r->ctype = ctype;
	free(r->resp);
	r->resp = text;
}

static void
decide_json(struct req *r, unsigned int status, const char *error)
{
	if (error == NULL)
		decide(r, status, "application/json", xstrdup("{\"success\":true}"));
	else {
		struct buf b;

		buf_init(&b);
		buf_adds(&b, "{\"success\":false,\"error\":");
		json_escape(&b, error, strlen(error));
		buf_addc(&b, '}');
		decide(r, status, "application/json", buf_steal(&b, NULL));
	}
}

/* handle_push - the push reload: check token and body, then swap */
static void
handle_push(struct MHD_Connection *conn, struct req *r)
{
	struct json_error je;
	const char *v;
	size_t vlen;
	yajl_val tree, ts;
	char tsbuf[32] = "";
	struct buf doc;

	if (!token_ok(conn)) {
		log_kv(LOG_WARN, "reload refused", "reason", "bad or missing token", NULL);
		decide_json(r, MHD_HTTP_UNAUTHORIZED, "unauthorized");
		return;
	}
	if ((tree = json_parse(r->body.data, r->body.len, &je)) == NULL) {
		char why[384];

		snprintf(why, sizeof(why), "body is not acceptable JSON: %d:%d: %s",
		    je.line, je.column, je.msg);
		log_kv(LOG_WARN, "reload refused", "reason", why, NULL);
		decide_json(r, MHD_HTTP_BAD_REQUEST, why);
		return;
	}
	if (!YAJL_IS_OBJECT(tree) || !YAJL_IS_OBJECT(json_get(tree, "decofile", NULL)) ||
	    site_member_raw(r->body.data, r->body.len, "decofile", &v, &vlen) < 0) {
		yajl_tree_free(tree);
		decide_json(r, MHD_HTTP_BAD_REQUEST, "missing decofile object");
		return;
	}
	if ((ts = json_get(tree, "timestamp", NULL)) != NULL) {
		if (YAJL_IS_STRING(ts))
			snprintf(tsbuf, sizeof(tsbuf), "%s", YAJL_GET_STRING(ts));
		else if (YAJL_IS_NUMBER(ts))
			snprintf(tsbuf, sizeof(tsbuf), "%s", YAJL_GET_NUMBER(ts));
	}
	yajl_tree_free(tree);
	buf_init(&doc);
	json_compact(&doc, v, vlen);
	pthread_mutex_lock(&site.mu);
	vlen = doc.len;
	set_doc(buf_steal(&doc, NULL), vlen, tsbuf, "push");
	log_kv(LOG_INFO, "decofile reloaded", "style", "push", "sha256", site.sha,
	    "timestamp", site.ts, NULL);
	pthread_mutex_unlock(&site.mu);
	decide_json(r, MHD_HTTP_OK, NULL);
}

/* suspend - park the connection until the main loop decides */
static void
suspend(struct MHD_Connection *conn, struct req *r, enum wait_kind kind,
    int64_t want_ts, const char *ts_file)
{
	struct waiter *w = xcalloc(1, sizeof(*w));

	w->conn = conn;
	w->req = r;
	w->kind = kind;
	w->not_before = now_ms() + site.delay_ms;
	w->deadline = now_ms() + LONG_POLL_MS;
	w->want_ts = want_ts;
	w->ts_file = ts_file ? xstrdup(ts_file) : NULL;
	r->suspended = 1;
	/* suspend before the main loop can see (and resume) the waiter */
	pthread_mutex_lock(&site.mu);
	MHD_suspend_connection(conn);
	w->next = site.waiters;
	site.waiters = w;
	pthread_mutex_unlock(&site.mu);
}

/* handle_poll - the poll reload: answer when the timestamp file is new enough */
static void
handle_poll(struct MHD_Connection *conn, struct req *r)
{
	const char *tsq = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "timestamp");
	const char *file = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tsFile");
	char *end;
	long long want;

	if (!token_ok(conn)) {
		decide_json(r, MHD_HTTP_UNAUTHORIZED, "unauthorized");
		return;
	}
	if (tsq == NULL || (errno = 0, want = strtoll(tsq, &end, 10), *end != '\0') ||
	    errno != 0 || end == tsq || want < 0) {
		decide_json(r, MHD_HTTP_BAD_REQUEST, "timestamp must be unix seconds");
		return;
	}
	if ((file == NULL || file[0] == '\0') && !site.lenient) {
		/* what a poll-era runtime answers */
		decide_json(r, MHD_HTTP_BAD_REQUEST, "Missing timestamp or tsFile parameter");
		return;
	}
	if (file == NULL || file[0] == '\0')
		file = site.ts_file;
	if (file == NULL) {
		decide_json(r, MHD_HTTP_BAD_REQUEST, "no tsFile given and none configured");
		return;
	}
	if (site.delay_ms == 0 && site_read_ts(file) >= want) {
		pthread_mutex_lock(&site.mu);
		if (site.decofile_dir != NULL && want > site.file_ts) {
			site.file_ts = site_read_ts(file);
			reload_from_dir(site.file_ts);
		}
		pthread_mutex_unlock(&site.mu);
		decide_json(r, MHD_HTTP_OK, NULL);
		return;
	}
	suspend(conn, r, W_POLL, want, file);
}

/* render_home - the small HTML page of GET / */
static char *
render_home(void)
{
	char *page;

	pthread_mutex_lock(&site.mu);
	page = site_doc_page(site.doc, site.doclen, site.sha, site.ts, site.source);
	pthread_mutex_unlock(&site.mu);
	return page;
}

static char *
render_decofile(void)
{
	struct buf b;

	buf_init(&b);
	pthread_mutex_lock(&site.mu);
	buf_printf(&b, "{\"sha256\":\"%s\",\"timestamp\":", site.sha);
	json_escape(&b, site.ts, strlen(site.ts));
	buf_printf(&b, ",\"source\":\"%s\",\"reloads\":%ld,\"decofile\":",
	    site.source, site.reloads);
	buf_add(&b, site.doc, site.doclen);
	buf_adds(&b, "}\n");
	pthread_mutex_unlock(&site.mu);
	return buf_steal(&b, NULL);
}

static enum MHD_Result
queue(struct MHD_Connection *conn, struct req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len = r->resp ? strlen(r->resp) : 0;

	resp = MHD_create_response_from_buffer(len, r->resp, MHD_RESPMEM_MUST_FREE);
	r->resp = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype);
	ret = MHD_queue_response(conn, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	struct req *r = *con_cls;
	int is_reload = strcmp(url, "/.decofile/reload") == 0;

	if (r == NULL) {
		const char *cl;

		r = xcalloc(1, sizeof(*r));
		buf_init(&r->body);
		*con_cls = r;
		if (!is_reload || strcmp(method, "POST") != 0)
			return MHD_YES;
		/*
		 * Headers only so far: refuse before reading a byte of the
		 * body, so unauthenticated or oversized bodies cost nothing.
		 */
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (!token_ok(conn)) {
			log_kv(LOG_WARN, "reload refused", "reason", "bad or missing token", NULL);
			decide_json(r, MHD_HTTP_UNAUTHORIZED, "unauthorized");
			return queue(conn, r);
		}
		if (cl != NULL && strtoull(cl, NULL, 10) > site.max_body) {
			decide_json(r, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
			return queue(conn, r);
		}
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (r->ready) {		/* answered early: drop what still comes */
			*upload_data_size = 0;
			return MHD_YES;
		}
		if (r->body.len + *upload_data_size > site.max_body) {
			/* chunked, no length told: stop reading, close */
			log_kv(LOG_WARN, "reload refused", "reason", "body too large", NULL);
			return MHD_NO;
		}
		buf_add(&r->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->ready)
		return queue(conn, r);
	if (r->suspended)	/* resumed without a decision: keep waiting */
		return MHD_YES;

	if (is_reload && strcmp(method, "POST") == 0) {
		if (site.fail)
			decide_json(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "failing on purpose");
		else if (site.hang) {
			suspend(conn, r, W_HANG, 0, NULL);
			return MHD_YES;
		} else
			handle_push(conn, r);
		if (site.delay_ms > 0) {
			suspend(conn, r, W_DELAY, 0, NULL);
			return MHD_YES;
		}
	} else if (is_reload && strcmp(method, "GET") == 0) {
		if (site.fail)
			decide_json(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "failing on purpose");
		else if (site.hang) {
			suspend(conn, r, W_HANG, 0, NULL);
			return MHD_YES;
		} else
			handle_poll(conn, r);
		if (r->suspended)
			return MHD_YES;
		if (site.delay_ms > 0) {
			suspend(conn, r, W_DELAY, 0, NULL);
			return MHD_YES;
		}
	} else if (strcmp(method, "GET") == 0 && strcmp(url, "/.decofile") == 0)
		decide(r, MHD_HTTP_OK, "application/json", render_decofile());
	else if (strcmp(method, "GET") == 0 && strcmp(url, "/") == 0)
		decide(r, MHD_HTTP_OK, "text/html; charset=utf-8", render_home());
	else if (is_reload || strcmp(url, "/") == 0 || strcmp(url, "/.decofile") == 0)
		decide_json(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	else
		decide_json(r, MHD_HTTP_NOT_FOUND, "not found");
	return queue(conn, r);
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;

	if (r == NULL)
		return;
	buf_free(&r->body);
	free(r->resp);
	free(r);
	*con_cls = NULL;
}

/*
 * tick - decide the waiters whose time has come and resume them.  Also
 * notices a newer timestamp file and reloads the folder, as a runtime
 * reading a file release does.  Holding mu while resuming is fine: MHD
 * only queues the resumption.
 */
static void
tick(int stopping)
{
	struct waiter **pp, *w;
	int64_t now = now_ms(), fts;

	pthread_mutex_lock(&site.mu);
	if (site.ts_file != NULL && (fts = site_read_ts(site.ts_file)) > site.file_ts) {
		site.file_ts = fts;
		reload_from_dir(fts);
	}
	for (pp = &site.waiters; (w = *pp) != NULL;) {
		int answer = stopping;

		if (stopping)
			decide_json(w->req, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
		else if (w->kind == W_DELAY)
			answer = now >= w->not_before;
		else if (w->kind == W_POLL && now >= w->not_before) {
			int64_t have = site_read_ts(w->ts_file);

			if (have >= w->want_ts) {
				if (site.decofile_dir != NULL && have > site.file_ts) {
					site.file_ts = have;
					reload_from_dir(have);
				}
				decide_json(w->req, MHD_HTTP_OK, NULL);
				log_kv(LOG_INFO, "decofile reloaded", "style", "poll",
				    "tsFile", w->ts_file, NULL);
				answer = 1;
			} else if (now >= w->deadline) {
				decide_json(w->req, MHD_HTTP_GATEWAY_TIMEOUT,
				    "timestamp not reached");
				answer = 1;
			}
		}
		if (!answer) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		MHD_resume_connection(w->conn);
		free(w->ts_file);
		free(w);
	}
	pthread_mutex_unlock(&site.mu);
}

/* registration in the store: one Endpoint record kept alive by heartbeats */
static struct {
	struct store *st;
	char *key;
	char *value;
	int ttl;
	int64_t next;
} reg;

static void
heartbeat(void)
{
	if (reg.st == NULL || now_ms() < reg.next)
		return;
	if (store_put_ttl(reg.st, reg.key, reg.value, strlen(reg.value), reg.ttl) < 0)
		log_kv(LOG_WARN, "endpoint heartbeat failed", "key", reg.key,
		    "error", store_error(reg.st), NULL);
	reg.next = now_ms() + (reg.ttl * 1000) / 3;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: decod-site [options]\n"
	    "  --port N            listen port (0: pick a free one; default 8000)\n"
	    "  --bind ADDR         listen address (default 127.0.0.1)\n"
	    "  --decofile-dir DIR  initial decofile (decofile.json|.bin or *.json blocks)\n"
	    "  --ts-file PATH      timestamp file (default DIR/timestamp.txt)\n"
	    "  --token-file PATH   reload token (or env DECO_RELEASE_RELOAD_TOKEN;\n"
	    "                      --token T works but shows in ps)\n"
	    "  --style push|poll   style advertised when registering (default push)\n"
	    "  --register STORE    register as an Endpoint in the store (local:DIR|etcd:URL)\n"
	    "  --store-prefix P    store key prefix (default /decod)\n"
	    "  --namespace NS --deployment ID --id ID --ttl SECONDS (default 15)\n"
	    "  --delay MS          answer reload calls slowly\n"
	    "  --fail              answer reload calls with 500\n"
	    "  --hang              never answer reload calls\n"
	    "  --lenient           accept reloads when no token is set, and polls without\n"
	    "                      tsFile (default: strict, as the Deco runtime)\n"
	    "  --max-depth N       deepest nesting of a decofile accepted (default 512)\n"
	    "  --max-body BYTES    largest push body (default 64 MiB; checked from\n"
	    "                      Content-Length, after the token)\n"
	    "  --max-connections N connections at once (default 1000, and at most\n"
	    "                      the open-file limit less 64)\n"
	    "  --idle-timeout S    close a connection idle this long (default 30;\n"
	    "                      a parked poll is not idle)\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "decofile-dir", required_argument, NULL, 'd' },
		{ "ts-file", required_argument, NULL, 'T' },
		{ "token", required_argument, NULL, 't' },
		{ "token-file", required_argument, NULL, 'F' },
		{ "style", required_argument, NULL, 's' },
		{ "register", required_argument, NULL, 'r' },
		{ "store-prefix", required_argument, NULL, 'P' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "deployment", required_argument, NULL, 'D' },
		{ "id", required_argument, NULL, 'i' },
		{ "ttl", required_argument, NULL, 'L' },
		{ "delay", required_argument, NULL, 'y' },
		{ "fail", no_argument, NULL, 'f' },
		{ "hang", no_argument, NULL, 'h' },
		{ "lenient", no_argument, NULL, 'E' },
		{ "max-depth", required_argument, NULL, 'M' },
		{ "max-body", required_argument, NULL, 'B' },
		{ "max-connections", required_argument, NULL, 'C' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	const char *bind_addr = "127.0.0.1", *store_url = NULL, *ns = "default";
	const char *deployment = NULL, *id = NULL, *prefix = NULL;
	char *ts_default = NULL, err[512], *end;
	long port = 8000, ttl = 15, max_depth = JSON_MAX_DEPTH_DEFAULT;
	long max_conns = MAX_CONNS, idle_s = IDLE_TIMEOUT_S;
	uint64_t max_body = MAX_BODY;
	struct rlimit rl;
	struct sockaddr_in sa;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	int c, stop = 0;

	log_init("decod-site", LOG_INFO, LOG_FMT_KV);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = strtol(optarg, &end, 10);
			if (*end != '\0' || port < 0 || port > 65535)
				fatal("--port: \"%s\" is not a port number", optarg);
			break;
		case 'b': bind_addr = optarg; break;
		case 'd': site.decofile_dir = optarg; break;
		case 'T': site.ts_file = optarg; break;
		case 't':
			site.token = xstrdup(optarg);
			/* hide it from ps where the platform allows */
			memset(optarg, 'x', strlen(optarg));
			break;
		case 'F': {
			char *tok = read_file(optarg, NULL, 4096);

			if (tok == NULL)
				fatal("--token-file %s: %s", optarg, strerror(errno));
			tok[strcspn(tok, "\r\n")] = '\0';
			site.token = tok;
			break;
		}
		case 's':
			if (strcmp(optarg, "push") != 0 && strcmp(optarg, "poll") != 0)
				fatal("--style: want push or poll, not \"%s\"", optarg);
			site.style = optarg;
			break;
		case 'r': store_url = optarg; break;
		case 'P': prefix = optarg; break;
		case 'n': ns = optarg; break;
		case 'D': deployment = optarg; break;
		case 'i': id = optarg; break;
		case 'L':
			ttl = strtol(optarg, &end, 10);
			if (*end != '\0' || ttl < 1 || ttl > 86400)
				fatal("--ttl: \"%s\" is not a number of seconds (1..86400)", optarg);
			break;
		case 'y':
			site.delay_ms = strtol(optarg, &end, 10);
			if (*end != '\0' || site.delay_ms < 0)
				fatal("--delay: \"%s\" is not milliseconds", optarg);
			break;
		case 'M':
			max_depth = strtol(optarg, &end, 10);
			if (*end != '\0' || max_depth < 16 || max_depth > 100000)
				fatal("--max-depth: \"%s\" is not a number (16..100000)", optarg);
			break;
		case 'B':
			if (parse_size(optarg, &max_body) < 0 || max_body == 0)
				fatal("--max-body: \"%s\" is not a size", optarg);
			break;
		case 'C':
			max_conns = strtol(optarg, &end, 10);
			if (*end != '\0' || max_conns < 1 || max_conns > 1000000)
				fatal("--max-connections: \"%s\" is not a number", optarg);
			break;
		case 'I':
			idle_s = strtol(optarg, &end, 10);
			if (*end != '\0' || idle_s < 1 || idle_s > 86400)
				fatal("--idle-timeout: \"%s\" is not seconds (1..86400)", optarg);
			break;
		case 'f': site.fail = 1; break;
		case 'h': site.hang = 1; break;
		case 'E': site.lenient = 1; break;
		case 'H': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	site.max_body = (size_t)max_body;
	/* past the open-file limit accept() fails and the site is unreachable */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)max_conns + 64 > rl.rlim_cur)
		max_conns = rl.rlim_cur > 128 ? (long)rl.rlim_cur - 64 : 64;
	/* a push body wraps the decofile in one more object */
	json_set_max_depth((int)max_depth + 1);
	if (site.token == NULL && getenv("DECO_RELEASE_RELOAD_TOKEN") != NULL)
		site.token = xstrdup(getenv("DECO_RELEASE_RELOAD_TOKEN"));
	if (site.ts_file == NULL && site.decofile_dir != NULL)
		site.ts_file = ts_default = xasprintf("%s/timestamp.txt", site.decofile_dir);

	site.file_ts = site_read_ts(site.ts_file);
	site.source = "empty";
	set_doc(xstrdup("{}"), 2, "", "empty");
	site.reloads = 0;
	if (site.decofile_dir != NULL && reload_from_dir(site.file_ts) < 0)
		fatal("--decofile-dir %s: cannot load a decofile", site.decofile_dir);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1)
		fatal("--bind: \"%s\" is not an IPv4 address", bind_addr);

	if (pipe(sigpipe) < 0)
		fatal("pipe: %s", strerror(errno));
	set_nonblock(sigpipe[0]);
	set_nonblock(sigpipe[1]);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
	    MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)max_conns,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)idle_s,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
	    MHD_OPTION_END);
	if (d == NULL)
		fatal("cannot listen on %s:%ld: %s", bind_addr, port, strerror(errno));
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (info != NULL && info->port != 0)
		port = info->port;

	if (store_url != NULL) {
		char url[128], pbuf[16];
		struct buf v;
		struct jw w;

		if (deployment == NULL)
			fatal("--register needs --deployment");
		if (!name_valid(ns) || !name_valid(deployment))
			fatal("--namespace and --deployment must be valid names");
		if (prefix != NULL)
			keys_set_prefix(prefix);
		if ((reg.st = store_open(store_url, NULL, err, sizeof(err))) == NULL)
			fatal("--register: %s", err);
		snprintf(pbuf, sizeof(pbuf), "%ld", port);
		if (id == NULL) {
			char host[64];

			if (gethostname(host, sizeof(host)) < 0)
				snprintf(host, sizeof(host), "site");
			host[sizeof(host) - 1] = '\0';
			id = xasprintf("%s-%s", host, pbuf);
		}
		reg.key = key_endpoint(ns, deployment, id);
		snprintf(url, sizeof(url), "http://%s:%ld",
		    strcmp(bind_addr, "0.0.0.0") == 0 ? "127.0.0.1" : bind_addr, port);
		buf_init(&v);
		jw_init(&w, &v);
		jw_obj(&w);
		jw_key(&w, "url");
		jw_str(&w, url);
		jw_key(&w, "style");
		jw_str(&w, site.style);
		if (site.ts_file != NULL) {
			jw_key(&w, "tsFile");
			jw_str(&w, site.ts_file);
		}
		if (site.token != NULL && site.token[0] != '\0') {
			jw_key(&w, "token");
			jw_str(&w, site.token);
		}
		jw_end_obj(&w);
		reg.value = buf_steal(&v, NULL);
		reg.ttl = (int)ttl;
		heartbeat();
		log_kv(LOG_INFO, "registered", "key", reg.key, "url", url, NULL);
	}

	log_kv(LOG_INFO, "listening", "port", (snprintf(err, sizeof(err), "%ld", port), err),
	    "auth", site.token ? "token" : "none", NULL);
	printf("listening on %ld\n", port);
	fflush(stdout);

	while (!stop) {
		struct pollfd pfd = { .fd = sigpipe[0], .events = POLLIN };
		char sig;

		if (poll(&pfd, 1, TICK_MS) > 0) {
			while (read(sigpipe[0], &sig, 1) == 1)
				stop = 1;
		}
		tick(0);
		heartbeat();
	}
	log_kv(LOG_INFO, "stopping", NULL);
	if (reg.st != NULL) {
		if (store_delete(reg.st, reg.key) < 0)
			log_kv(LOG_WARN, "cannot remove endpoint", "key", reg.key,
			    "error", store_error(reg.st), NULL);
		store_close(reg.st);
	}
	tick(1);
	/* give MHD a moment to send the 503s of the resumed connections */
	usleep(100000);
	MHD_stop_daemon(d);
	free(site.doc);
	free(site.token);
	free(ts_default);
	free(reg.key);
	free(reg.value);
	return 0;
}
