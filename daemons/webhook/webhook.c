/*
 * webhook - the admission stage (SPEC §4.5): an HTTPS server (libmicrohttpd
 * driven from the stage's own poll loop by webhook_conn, so every request
 * is answered on the loop's thread) that injects Decofiles into
 * Knative Services and guards Decofiles in use.  It answers only from the
 * in-memory index that webhook_store keeps level with the store (and that
 * writes the records of injected Services from a thread of its own, so a
 * slow store never delays an answer).  This file holds the HTTP side: the
 * routes, /metrics, the certificate timer, and the stage's life.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <openssl/rand.h>

#include "common/conf.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"
#include "daemons/webhook/webhook_conn.h"
#include "daemons/webhook/webhook_index.h"
#include "daemons/webhook/webhook_store.h"
#include "daemons/webhook/webhook_tls.h"

#define STAGE		"webhook"
#define CERT_CHECK_MS	1000
#define PATH_MUTATE	"/mutate-serving-knative-dev-v1-service"
#define PATH_VALIDATE	"/validate-deco-sites-v1alpha1-decofile"
#define PATH_TRACK	"/validate-serving-knative-dev-v1-service"
#define PATH_MANAGED	"/validate-decod-managed"

enum route { R_MUTATE, R_VALIDATE, R_TRACK, R_MANAGED, R_HEALTHZ, R_METRICS, R_OTHER,
	NROUTES };
static const char *const route_names[NROUTES] = {
	"mutate", "validate-decofile", "track-service", "validate-managed", "healthz", "metrics",
	"other",
};
/* outcomes: the four of enum wh_outcome, then HTTP-level ones */
enum { O_PATCHED, O_ALLOWED, O_DENIED, O_INVALID, O_TOO_LARGE, O_NOT_FOUND, O_OK,
	NOUTCOMES };
static const char *const outcome_names[NOUTCOMES] = {
	"patched", "allowed", "denied", "invalid", "too_large", "not_found", "ok",
};
static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 1 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

/* one HTTP request being read */
struct req {
	int64_t start;		/* now_ms() at the headers */
	struct buf body;
	int too_large;
};

struct webhook {
	struct stage *st;
	struct wh_tls *tls;
	struct MHD_Daemon *mhd;
	struct wh_conns *conns;
	int64_t cert_timer;
	struct wh_store *store;		/* the index and the records' writer */
	char *s3_host, *s3_prefix, *managers;
	uint64_t max_request;
	int64_t request_ms, idle_ms;
	struct wh_env env;
	unsigned long max_conns;
	unsigned long cert_errors;
};

static struct webhook *
W(struct stage *st)
{
	return stage_data(st);
}


/* ---- what the index tells the admission code ---- */

static const struct wh_decofile *
env_find(void *arg, const char *ns, const char *dep)
{
	return wh_index_find(wh_store_index(((struct webhook *)arg)->store), ns, dep);
}

static size_t
env_users(void *arg, const char *ns, const char *name, struct buf *out, size_t max)
{
	return wh_index_users(wh_store_index(((struct webhook *)arg)->store), ns, name, out,
	    max);
}

/* env_token - 32 random bytes from openssl, hex */
static void
env_token(void *arg, char *out, size_t len)
{
	unsigned char rnd[32];

	(void)arg;
	if (len < 2 * sizeof(rnd) + 1 || RAND_bytes(rnd, sizeof(rnd)) != 1)
		fatal("cannot make a random reload token");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
}

/* ---- metrics ---- */

/*
 * The webhook's series live in the process registry (common/metrics.c),
 * served on its metrics_listen port like every stage's and on its own
 * HTTPS /metrics as before.  Counters move as requests are answered; the
 * gauges read from the connections, certificates and index are refreshed
 * on the loop (every second and before an HTTPS scrape), never from the
 * metrics thread.
 */
#define M_REQ "decod_webhook_requests_total"
#define M_ADMIT "decod_webhook_admission_seconds"

static const struct { const char *name; enum metric_type type; const char *help; } fams[] = {
	{ "decod_webhook_tls_sessions", METRIC_GAUGE, "TLS sessions holding a certificate "
	    "pair (old pairs are freed with their last session)." },
	{ "decod_webhook_connections_open", METRIC_GAUGE, "Connections open now." },
	{ "decod_webhook_connections_total", METRIC_COUNTER, "Connections accepted." },
	{ "decod_webhook_deadline_closed_total", METRIC_COUNTER, "Connections closed for a "
	    "request that overran webhook_request_timeout (counted from accept: TLS "
	    "handshake and headers included)." },
	{ "decod_webhook_evicted_total", METRIC_COUNTER, "Connections closed at "
	    "webhook_max_connections to free a slot for a waiting one (the oldest slow or "
	    "idle)." },
	{ "decod_webhook_idle_closed_total", METRIC_COUNTER, "Keep-alive connections closed "
	    "after webhook_idle_timeout without a request." },
	{ "decod_webhook_cert_loads_total", METRIC_COUNTER, "Certificate pairs loaded (1 at "
	    "start, then one per rotation)." },
	{ "decod_webhook_cert_errors_total", METRIC_COUNTER, "Changed certificate files that "
	    "could not be used (the old pair kept)." },
	{ "decod_webhook_decofiles", METRIC_GAUGE, "Decofiles in the webhook's index." },
	{ "decod_webhook_injected_services", METRIC_GAUGE, "Services known to use a "
	    "Decofile." },
	{ "decod_webhook_record_writes_pending", METRIC_GAUGE, "Service records waiting to "
	    "be written to the store." },
	{ "decod_webhook_record_write_errors_total", METRIC_COUNTER, "Service record writes "
	    "that failed." },
};

static void
metrics_init(void)
{
	struct metrics *m = metrics_proc();

	metrics_define(m, M_REQ, METRIC_COUNTER, "Requests answered, by path and outcome.");
	metrics_define_histogram(m, M_ADMIT, "Time from a review's headers to its answer.",
	    buckets, NBUCKETS);
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
		metrics_define(m, fams[i].name, fams[i].type, fams[i].help);
}

/* count - one request answered on route rt with outcome o */
static void
count(enum route rt, int o)
{
	char l[96];

	metrics_add(metrics_proc(), M_REQ, metrics_labels(l, sizeof(l), "path",
	    route_names[rt], "outcome", outcome_names[o], NULL), 1);
}

static void
observe(int64_t ms)
{
	metrics_observe(metrics_proc(), M_ADMIT, NULL, (double)ms / 1000.0);
}

/* metrics_refresh - the gauges and the counters kept elsewhere, now (loop thread) */
static void
metrics_refresh(struct webhook *wh)
{
	struct metrics *m = metrics_proc();
	unsigned long loads, errors;
	size_t held, ndf, nsvc, pending;
	struct wh_conn_counts k;
	double v[sizeof(fams) / sizeof(fams[0])];

	wh_tls_counts(wh->tls, &loads, &held);
	wh_conns_counts(wh->conns, &k);
	wh_index_counts(wh_store_index(wh->store), &ndf, &nsvc);
	wh_store_counts(wh->store, &pending, &errors);
	v[0] = (double)held;
	v[1] = (double)k.open;
	v[2] = (double)k.total;
	v[3] = (double)k.deadline_closed;
	v[4] = (double)k.evicted;
	v[5] = (double)k.idle_closed;
	v[6] = (double)loads;
	v[7] = (double)wh->cert_errors;
	v[8] = (double)ndf;
	v[9] = (double)nsvc;
	v[10] = (double)pending;
	v[11] = (double)errors;
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
		metrics_set(m, fams[i].name, NULL, v[i]);
}

/* ---- HTTP ---- */

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned int status, const char *type, struct buf *b)
{
	struct MHD_Response *resp;
	enum MHD_Result rc;
	size_t len;
	char *data = buf_steal(b, &len);

	resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	rc = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static enum MHD_Result
reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, text);
	return reply(c, status, "text/plain; charset=utf-8", &b);
}

static enum route
route_of(const char *url)
{
	if (strcmp(url, PATH_MUTATE) == 0)
		return R_MUTATE;
	if (strcmp(url, PATH_VALIDATE) == 0)
		return R_VALIDATE;
	if (strcmp(url, PATH_TRACK) == 0)
		return R_TRACK;
	if (strcmp(url, PATH_MANAGED) == 0)
		return R_MANAGED;
	if (strcmp(url, "/healthz") == 0)
		return R_HEALTHZ;
	if (strcmp(url, "/metrics") == 0)
		return R_METRICS;
	return R_OTHER;
}

/* admit - answer one whole review */
static enum MHD_Result
admit(struct webhook *wh, struct MHD_Connection *c, enum route rt, struct req *q)
{
	struct wh_result r;
	enum MHD_Result rc;

	wh_result_init(&r);
	if (rt == R_MUTATE)
		wh_mutate(&wh->env, q->body.data, q->body.len, &r);
	else if (rt == R_VALIDATE)
		wh_validate_decofile(&wh->env, q->body.data, q->body.len, &r);
	else if (rt == R_MANAGED)
		wh_validate_managed(&wh->env, q->body.data, q->body.len, &r);
	else
		wh_track_service(&wh->env, q->body.data, q->body.len, &r);
	count(rt, r.outcome);
	if (r.outcome != WH_ALLOWED || r.track != WH_TRACK_NONE)
		log_kv(r.outcome == WH_INVALID ? LOG_WARN : LOG_INFO,
		    r.outcome == WH_PATCHED ? "Service injected" :
		    r.outcome == WH_DENIED ? "request denied" :
		    r.outcome == WH_INVALID ? "malformed review" : "request allowed",
		    "path", route_names[rt], "ns", r.ns, "service", r.service,
		    "detail", r.message, NULL);
	wh_store_track(wh->store, &r);
	rc = reply(c, (unsigned int)r.http_status, r.http_status == 200 ?
	    "application/json" : "text/plain; charset=utf-8", &r.body);
	observe(now_ms() - q->start);
	wh_result_free(&r);
	return rc;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct webhook *wh = cls;
	struct req *q = *con_cls;
	enum route rt = route_of(url);
	enum MHD_Result rc;

	(void)version;
	if (q == NULL) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);

		q = xcalloc(1, sizeof(*q));
		q->start = now_ms();
		buf_init(&q->body);
		if (cl != NULL && strtoull(cl, NULL, 10) > wh->max_request)
			q->too_large = 1;
		*con_cls = q;
		wh_conns_request(wh->conns, c);
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (!q->too_large && q->body.len + *upload_size > wh->max_request) {
			q->too_large = 1;
			buf_free(&q->body);
			buf_init(&q->body);
		}
		if (!q->too_large)
			buf_add(&q->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	/* the whole request is in: answer */
	if (rt == R_HEALTHZ || rt == R_METRICS) {
		struct buf b;

		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
			return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET\n");
		count(rt, O_OK);
		if (rt == R_HEALTHZ)
			return reply_text(c, MHD_HTTP_OK, "ok\n");
		buf_init(&b);
		metrics_refresh(wh);
		{
			size_t len;
			char *text = metrics_render(metrics_proc(), &len);

			buf_add(&b, text, len);
			free(text);
		}
		return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &b);
	}
	if (rt == R_OTHER) {
		count(rt, O_NOT_FOUND);
		return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
	}
	if (strcmp(method, "POST") != 0)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST\n");
	if (q->too_large) {
		char msg[160];

		count(rt, O_TOO_LARGE);
		log_kv(LOG_WARN, "review larger than webhook_max_request refused", "path",
		    route_names[rt], NULL);
		snprintf(msg, sizeof(msg), "malformed AdmissionReview: body larger than %llu "
		    "bytes (webhook_max_request)\n", (unsigned long long)wh->max_request);
		return reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
	}
	buf_addc(&q->body, '\0');	/* NUL-terminate for the parser, not counted */
	q->body.len--;
	rc = admit(wh, c, rt, q);
	return rc;
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct webhook *wh = cls;
	struct req *q = *con_cls;

	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		wh_conns_answered(wh->conns, c);
	if (q == NULL)
		return;
	buf_free(&q->body);
	free(q);
	*con_cls = NULL;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct webhook *wh = cls;
	const union MHD_ConnectionInfo *ci;

	wh_conns_notify(wh->conns, c, socket_context, toe);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		return;
	if ((ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION)) != NULL)
		wh_tls_closed((gnutls_session_t)ci->tls_session);
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	/* a plain-HTTP client or a port scanner makes TLS errors: not a fault of ours */
	log_kv(LOG_DEBUG, "libmicrohttpd", "detail", msg, NULL);
}

static void
on_cert_timer(struct stage *st, void *arg)
{
	struct webhook *wh = W(st);
	char err[512], fp[65];
	int rc;

	(void)arg;
	rc = wh_tls_check(wh->tls, err, sizeof(err));
	if (rc > 0) {
		wh_tls_fingerprint(wh->tls, fp, sizeof(fp));
		log_kv(LOG_INFO, "new certificate in use for new connections", "sha256", fp,
		    NULL);
	} else if (rc < 0) {
		wh->cert_errors++;
		log_kv(LOG_WARN, "certificate files changed but cannot be used yet; keeping "
		    "the old pair", "error", err, NULL);
	}
	metrics_refresh(wh);
	wh->cert_timer = stage_add_timer(st, CERT_CHECK_MS, on_cert_timer, NULL);
}

static unsigned int
secs(int64_t ms)
{
	return (unsigned int)((ms + 999) / 1000);
}

/* read_live - the settings a SIGHUP applies without a restart */
static void
read_live(struct webhook *wh)
{
	struct conf *cf = stage_conf(wh->st);

	free(wh->managers);
	wh->managers = xstrdup(conf_get(cf, "webhook_managers"));
	wh->env.managers = wh->managers;
	wh->max_request = conf_get_size(cf, "webhook_max_request");
	wh->request_ms = conf_get_ms(cf, "webhook_request_timeout");
	wh->idle_ms = conf_get_ms(cf, "webhook_idle_timeout");
	if (wh->conns != NULL)
		wh_conns_set_timeouts(wh->conns, wh->request_ms, wh->idle_ms);
}

/*
 * webhook_reload - SIGHUP: the live settings take effect for the next
 * request.  A restart would make the API server's calls fail meanwhile
 * (failurePolicy Fail), so whatever can change in place does.
 */
static int
webhook_reload(struct stage *st)
{
	struct webhook *wh = W(st);

	read_live(wh);
	log_kv(LOG_INFO, "webhook settings reloaded", "managers", wh->managers, NULL);
	return 0;
}

static int
webhook_init(struct stage *st)
{
	struct webhook *wh = xcalloc(1, sizeof(*wh));
	struct conf *cf = stage_conf(st);
	const char *listen = conf_get(cf, "webhook_listen");
	const char *cert = conf_get(cf, "webhook_cert_file");
	const char *key = conf_get(cf, "webhook_key_file");
	struct sockaddr_storage ss;
	socklen_t sl;
	const union MHD_DaemonInfo *di;
	unsigned int flags;
	char err[512], fp[65], addr[300], portstr[16];

	stage_set_data(st, wh);
	wh->st = st;
	metrics_init();
	wh->s3_host = xstrdup(conf_get(cf, "s3_public_host"));
	wh->s3_prefix = xstrdup(conf_get(cf, "s3_prefix"));
	wh->max_conns = (unsigned long)conf_get_int(cf, "webhook_max_connections");
	read_live(wh);
	wh->conns = wh_conns_new(st, wh->max_conns, wh->request_ms, wh->idle_ms);
	wh->env.s3_public_host = wh->s3_host;
	wh->env.s3_prefix = wh->s3_prefix;
	wh->env.find = env_find;
	wh->env.users = env_users;
	wh->env.token = env_token;
	wh->env.arg = wh;

	if (*cert == '\0' || *key == '\0') {
		log_kv(LOG_ERROR, "webhook_cert_file and webhook_key_file must be set: the "
		    "webhook serves HTTPS only", NULL);
		return -1;
	}
	if (listen_addr_parse(listen, &ss, &sl) < 0) {
		log_kv(LOG_ERROR, "webhook_listen is not HOST:PORT", "value", listen, NULL);
		return -1;
	}
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS) ||
	    !MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK)) {
		log_kv(LOG_ERROR, "this libmicrohttpd lacks TLS or the certificate callback",
		    NULL);
		return -1;
	}
	if (wh->max_conns > wh_conns_max()) {
		char max[32];

		snprintf(max, sizeof(max), "%lu", wh_conns_max());
		log_kv(LOG_ERROR, "webhook_max_connections is too large: libmicrohttpd is "
		    "driven through select() sets", "max", max, NULL);
		return -1;
	}
	if ((wh->tls = wh_tls_new(cert, key, err, sizeof(err))) == NULL) {
		log_kv(LOG_ERROR, "cannot load the webhook certificate", "error", err, NULL);
		return -1;
	}

	/* the index first, so the first request already has answers */
	if ((wh->store = wh_store_new(st, conf_get(cf, "default_target"))) == NULL)
		return -1;

	/* external select mode: webhook_conn hands it only sockets that are ready */
	flags = MHD_USE_TLS | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	wh->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, wh,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, wh,
	    MHD_OPTION_HTTPS_CERT_CALLBACK, wh_tls_retrieve,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)wh->max_conns,
	    MHD_OPTION_CONNECTION_TIMEOUT, secs(wh->idle_ms),
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, wh,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, wh,
	    MHD_OPTION_END);
	if (wh->mhd == NULL) {
		log_kv(LOG_ERROR, "cannot start the HTTPS server", "listen", listen, "error",
		    strerror(errno), NULL);
		return -1;
	}
	if (wh_conns_attach(wh->conns, wh->mhd) < 0)
		return -1;
	wh->cert_timer = stage_add_timer(st, CERT_CHECK_MS, on_cert_timer, NULL);

	di = MHD_get_daemon_info(wh->mhd, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(portstr, sizeof(portstr), "%u", di != NULL ? di->port : 0);
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
	wh_tls_fingerprint(wh->tls, fp, sizeof(fp));
	{
		size_t ndf, nsvc;
		char a[32], b[32];

		wh_index_counts(wh_store_index(wh->store), &ndf, &nsvc);
		snprintf(a, sizeof(a), "%zu", ndf);
		snprintf(b, sizeof(b), "%zu", nsvc);
		log_kv(LOG_INFO, "webhook listening", "addr", addr, "port", portstr, "sha256", fp,
		    "decofiles", a, "services", b, NULL);
	}
	return 0;
}

static void
webhook_shutdown(struct stage *st)
{
	struct webhook *wh = W(st);

	if (wh == NULL)
		return;
	if (wh->mhd != NULL)
		MHD_stop_daemon(wh->mhd);
	wh_conns_free(wh->conns);
	wh_store_free(wh->store);
	wh_tls_free(wh->tls);
	free(wh->s3_host);
	free(wh->s3_prefix);
	free(wh->managers);
	free(wh);
	stage_set_data(st, NULL);
}

static const struct stage_ops ops = {
	.name = STAGE,
	.use_store = 1,
	.init = webhook_init,
	.reload = webhook_reload,
	.shutdown = webhook_shutdown,
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
