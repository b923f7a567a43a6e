/*
 * webhook - the admission stage (SPEC §4.5): an HTTPS server (libmicrohttpd
 * driven from the stage's own poll loop by webhook_conn, so every request
 * is answered on the loop's thread) that injects Decofiles into
 * Knative Services and guards Decofiles in use.  It answers only from the
 * in-memory index that a store list + watch keeps level; the records of
 * injected Services go to the store from a writer thread with its own
 * store handle, so a slow store never delays an answer.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <openssl/rand.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/stage_watch.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"
#include "daemons/webhook/webhook_conn.h"
#include "daemons/webhook/webhook_index.h"
#include "daemons/webhook/webhook_tls.h"

#define STAGE		"webhook"
#define CERT_CHECK_MS	1000
#define WATCH_TICK_MS	1000
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

/* one store write of the writer thread; val NULL: delete */
struct wop {
	char *key, *val;
	struct wop *next;
};

struct writer {
	pthread_t th;
	int up;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct wop *head, **tail;
	size_t pending;		/* (mu) */
	unsigned long errors;	/* (mu) */
	int stop;		/* (mu) */
	struct store *s;	/* the thread's own handle */
};

/* one HTTP request being read */
struct req {
	int64_t start;		/* now_ms() at the headers */
	struct buf body;
	int too_large;
};

struct webhook {
	struct stage *st;
	struct wh_index *ix;
	struct wh_tls *tls;
	struct MHD_Daemon *mhd;
	struct wh_conns *conns;
	int64_t cert_timer;
	struct store_watch *df_watch, *svc_watch;
	struct stage_watch *df_sw, *svc_sw;
	char *df_prefix, *svc_prefix;
	char *def_target, *s3_host, *s3_prefix, *managers;
	uint64_t max_request;
	int64_t request_ms, idle_ms;
	struct wh_env env;
	struct writer w;
	/* metrics */
	unsigned long requests[NROUTES][NOUTCOMES];
	unsigned long hist[NBUCKETS + 1];
	double hist_sum;
	unsigned long hist_count;
	unsigned long max_conns;
	unsigned long cert_errors;
};

static struct webhook *
W(struct stage *st)
{
	return stage_data(st);
}

/* ---- the writer thread: records of injected Services to the store ---- */

static void *
writer_main(void *arg)
{
	struct writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct wop *o;
		int rc;

		while (w->head == NULL && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->head == NULL)
			break;
		o = w->head;
		pthread_mutex_unlock(&w->mu);
		rc = o->val != NULL ? store_put(w->s, o->key, o->val, strlen(o->val)) :
		    store_delete(w->s, o->key);
		pthread_mutex_lock(&w->mu);
		if (rc < 0) {
			struct timespec ts;

			w->errors++;
			log_kv(LOG_WARN, "cannot record an injected Service; will retry", "key",
			    o->key, "error", store_error(w->s), NULL);
			if (w->stop)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
			continue;
		}
		w->head = o->next;
		if (w->head == NULL)
			w->tail = &w->head;
		w->pending--;
		free(o->key);
		free(o->val);
		free(o);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* writer_push - queue a put (val) or delete (val NULL) of key; takes both */
static void
writer_push(struct writer *w, char *key, char *val)
{
	struct wop *o = xcalloc(1, sizeof(*o));

	o->key = key;
	o->val = val;
	pthread_mutex_lock(&w->mu);
	*w->tail = o;
	w->tail = &o->next;
	w->pending++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* apply_track - remember (or forget) which Decofile a Service uses */
static void
apply_track(struct webhook *wh, const struct wh_result *r)
{
	char at[40];
	struct buf b;
	struct jw j;

	if (r->track == WH_TRACK_SET) {
		if (!wh_index_set_service(wh->ix, r->ns, r->service, r->decofile))
			return;
		rfc3339_now(at, sizeof(at));
		buf_init(&b);
		jw_init(&j, &b);
		jw_obj(&j);
		jw_key(&j, "decofile");
		jw_str(&j, r->decofile);
		jw_key(&j, "injectedAt");
		jw_str(&j, at);
		jw_end_obj(&j);
		writer_push(&wh->w, key_injected(r->ns, r->service), buf_steal(&b, NULL));
	} else if (r->track == WH_TRACK_DROP) {
		if (wh_index_drop_service(wh->ix, r->ns, r->service))
			writer_push(&wh->w, key_injected(r->ns, r->service), NULL);
	}
}

/* ---- the store: list, then watch ---- */

static void
df_event(struct webhook *wh, int put, const char *key, const char *val, size_t len)
{
	char kind[254], ns[254], name[254];

	if (key_parse_resource(key, kind, ns, name) < 0 || strcmp(kind, "decofiles") != 0)
		return;
	if (!put)
		wh_index_del_decofile(wh->ix, ns, name);
	else if (wh_index_put_decofile(wh->ix, ns, name, val, len, wh->def_target) < 0)
		log_kv(LOG_WARN, "a stored Decofile does not parse; ignored", "ns", ns, "name",
		    name, NULL);
}

static void
svc_event(struct webhook *wh, int put, const char *key, const char *val, size_t len)
{
	char ns[254], svc[254];
	yajl_val v;

	if (strncmp(key, wh->svc_prefix, strlen(wh->svc_prefix)) != 0 ||
	    sscanf(key + strlen(wh->svc_prefix), "%253[^/]/%253[^/]", ns, svc) != 2)
		return;
	if (!put) {
		wh_index_drop_service(wh->ix, ns, svc);
		return;
	}
	if ((v = json_parse(val, len, NULL)) != NULL &&
	    json_get_str(v, "decofile", NULL) != NULL)
		wh_index_set_service(wh->ix, ns, svc, json_get_str(v, "decofile", NULL));
	yajl_tree_free(v);
}

/*
 * rebuild - a new index from a listing of both prefixes (at start, and when
 * a watch lost history), swapped in only when both listings succeeded
 */
static int
rebuild(struct webhook *wh)
{
	struct store *s = stage_store(wh->st);
	struct store_list dl, sl;
	struct wh_index *old = wh->ix;

	if (store_list(s, wh->df_prefix, &dl) < 0) {
		log_kv(LOG_ERROR, "cannot list Decofiles", "error", store_error(s), NULL);
		return -1;
	}
	if (store_list(s, wh->svc_prefix, &sl) < 0) {
		log_kv(LOG_ERROR, "cannot list injected Services", "error", store_error(s), NULL);
		store_list_free(&dl);
		return -1;
	}
	wh->ix = wh_index_new();
	for (size_t i = 0; i < dl.n; i++)
		df_event(wh, 1, dl.kvs[i].key, dl.kvs[i].value, dl.kvs[i].vlen);
	for (size_t i = 0; i < sl.n; i++)
		svc_event(wh, 1, sl.kvs[i].key, sl.kvs[i].value, sl.kvs[i].vlen);
	store_list_free(&dl);
	store_list_free(&sl);
	wh_index_free(old);
	return 0;
}

static void
on_df_watch(void *arg, const struct store_event *ev)
{
	struct webhook *wh = arg;

	if (ev->type == STORE_EV_RELIST)
		rebuild(wh);
	else
		df_event(wh, ev->type == STORE_EV_PUT, ev->key, ev->value, ev->vlen);
}

static void
on_svc_watch(void *arg, const struct store_event *ev)
{
	struct webhook *wh = arg;

	if (ev->type == STORE_EV_RELIST)
		rebuild(wh);
	else
		svc_event(wh, ev->type == STORE_EV_PUT, ev->key, ev->value, ev->vlen);
}

static struct store_watch *
watch(struct webhook *wh, const char *prefix, store_watch_cb cb, struct stage_watch **sw)
{
	struct store_watch *w = store_watch_new(stage_store(wh->st), prefix, 0, cb, wh);

	if (w == NULL) {
		log_kv(LOG_ERROR, "cannot watch the store", "prefix", prefix, "error",
		    store_error(stage_store(wh->st)), NULL);
		return NULL;
	}
	*sw = store_watch_attach(w, wh->st, WATCH_TICK_MS);
	return w;
}

/* ---- what the index tells the admission code ---- */

static const struct wh_decofile *
env_find(void *arg, const char *ns, const char *dep)
{
	return wh_index_find(((struct webhook *)arg)->ix, ns, dep);
}

static size_t
env_users(void *arg, const char *ns, const char *name, struct buf *out, size_t max)
{
	return wh_index_users(((struct webhook *)arg)->ix, ns, name, out, max);
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

static void
observe(struct webhook *wh, int64_t ms)
{
	double s = (double)ms / 1000.0;
	size_t i;

	for (i = 0; i < NBUCKETS && s > buckets[i]; i++)
		;
	wh->hist[i]++;
	wh->hist_sum += s;
	wh->hist_count++;
}

static void
metrics(struct webhook *wh, struct buf *b)
{
	unsigned long loads, cum = 0, errors;
	size_t held, ndf, nsvc, pending;
	struct wh_conn_counts k;

	buf_adds(b, "# HELP decod_webhook_requests_total Requests answered, by path and outcome.\n"
	    "# TYPE decod_webhook_requests_total counter\n");
	for (int r = 0; r < NROUTES; r++)
		for (int o = 0; o < NOUTCOMES; o++)
			if (wh->requests[r][o] > 0)
				buf_printf(b, "decod_webhook_requests_total{path=\"%s\","
				    "outcome=\"%s\"} %lu\n", route_names[r], outcome_names[o],
				    wh->requests[r][o]);
	buf_adds(b, "# HELP decod_webhook_admission_seconds Time from a review's headers to "
	    "its answer.\n# TYPE decod_webhook_admission_seconds histogram\n");
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += wh->hist[i];
		buf_printf(b, "decod_webhook_admission_seconds_bucket{le=\"%g\"} %lu\n",
		    buckets[i], cum);
	}
	buf_printf(b, "decod_webhook_admission_seconds_bucket{le=\"+Inf\"} %lu\n",
	    wh->hist_count);
	buf_printf(b, "decod_webhook_admission_seconds_sum %.6f\n", wh->hist_sum);
	buf_printf(b, "decod_webhook_admission_seconds_count %lu\n", wh->hist_count);
	wh_tls_counts(wh->tls, &loads, &held);
	wh_conns_counts(wh->conns, &k);
	wh_index_counts(wh->ix, &ndf, &nsvc);
	pthread_mutex_lock(&wh->w.mu);
	pending = wh->w.pending;
	errors = wh->w.errors;
	pthread_mutex_unlock(&wh->w.mu);
	buf_printf(b, "# HELP decod_webhook_tls_sessions TLS sessions holding a certificate "
	    "pair (old pairs are freed with their last session).\n"
	    "# TYPE decod_webhook_tls_sessions gauge\ndecod_webhook_tls_sessions %zu\n", held);
	buf_printf(b, "# TYPE decod_webhook_connections_open gauge\n"
	    "decod_webhook_connections_open %lu\n"
	    "# TYPE decod_webhook_connections_total counter\n"
	    "decod_webhook_connections_total %lu\n"
	    "# HELP decod_webhook_deadline_closed_total Connections closed for a request "
	    "that overran webhook_request_timeout (counted from accept: TLS handshake and "
	    "headers included).\n"
	    "# TYPE decod_webhook_deadline_closed_total counter\n"
	    "decod_webhook_deadline_closed_total %lu\n"
	    "# HELP decod_webhook_evicted_total Connections closed at webhook_max_connections "
	    "to free a slot for a waiting one (the oldest slow or idle).\n"
	    "# TYPE decod_webhook_evicted_total counter\n"
	    "decod_webhook_evicted_total %lu\n"
	    "# HELP decod_webhook_idle_closed_total Keep-alive connections closed after "
	    "webhook_idle_timeout without a request.\n"
	    "# TYPE decod_webhook_idle_closed_total counter\n"
	    "decod_webhook_idle_closed_total %lu\n"
	    "# HELP decod_webhook_cert_loads_total Certificate pairs loaded (1 at start, "
	    "then one per rotation).\n"
	    "# TYPE decod_webhook_cert_loads_total counter\n"
	    "decod_webhook_cert_loads_total %lu\n"
	    "# TYPE decod_webhook_cert_errors_total counter\n"
	    "decod_webhook_cert_errors_total %lu\n"
	    "# TYPE decod_webhook_decofiles gauge\n"
	    "decod_webhook_decofiles %zu\n"
	    "# HELP decod_webhook_injected_services Services known to use a Decofile.\n"
	    "# TYPE decod_webhook_injected_services gauge\n"
	    "decod_webhook_injected_services %zu\n"
	    "# TYPE decod_webhook_record_writes_pending gauge\n"
	    "decod_webhook_record_writes_pending %zu\n"
	    "# TYPE decod_webhook_record_write_errors_total counter\n"
	    "decod_webhook_record_write_errors_total %lu\n",
	    k.open, k.total, k.deadline_closed, k.evicted, k.idle_closed, loads, wh->cert_errors,
	    ndf, nsvc, pending, errors);
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
	wh->requests[rt][r.outcome]++;
	if (r.outcome != WH_ALLOWED || r.track != WH_TRACK_NONE)
		log_kv(r.outcome == WH_INVALID ? LOG_WARN : LOG_INFO,
		    r.outcome == WH_PATCHED ? "Service injected" :
		    r.outcome == WH_DENIED ? "request denied" :
		    r.outcome == WH_INVALID ? "malformed review" : "request allowed",
		    "path", route_names[rt], "ns", r.ns, "service", r.service,
		    "detail", r.message, NULL);
	apply_track(wh, &r);
	rc = reply(c, (unsigned int)r.http_status, r.http_status == 200 ?
	    "application/json" : "text/plain; charset=utf-8", &r.body);
	observe(wh, now_ms() - q->start);
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
		wh->requests[rt][O_OK]++;
		if (rt == R_HEALTHZ)
			return reply_text(c, MHD_HTTP_OK, "ok\n");
		buf_init(&b);
		metrics(wh, &b);
		return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &b);
	}
	if (rt == R_OTHER) {
		wh->requests[rt][O_NOT_FOUND]++;
		return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
	}
	if (strcmp(method, "POST") != 0)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST\n");
	if (q->too_large) {
		char msg[160];

		wh->requests[rt][O_TOO_LARGE]++;
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
	int rv;

	stage_set_data(st, wh);
	wh->st = st;
	wh->def_target = xstrdup(conf_get(cf, "default_target"));
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
	wh->ix = wh_index_new();
	pthread_mutex_init(&wh->w.mu, NULL);
	pthread_cond_init(&wh->w.cv, NULL);
	wh->w.tail = &wh->w.head;

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

	/* the index first, so the first request already has answers: watch, then list */
	wh->df_prefix = key_resource_prefix("decofiles", NULL);
	wh->svc_prefix = key_injected_prefix();
	if ((wh->df_watch = watch(wh, wh->df_prefix, on_df_watch, &wh->df_sw)) == NULL ||
	    (wh->svc_watch = watch(wh, wh->svc_prefix, on_svc_watch, &wh->svc_sw)) == NULL)
		return -1;
	if (rebuild(wh) < 0)
		return -1;

	/* the records' writer: its own store handle, used by its thread only */
	if ((wh->w.s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL) {
		log_kv(LOG_ERROR, "cannot open the store for the writer", "error", err, NULL);
		return -1;
	}
	if ((rv = pthread_create(&wh->w.th, NULL, writer_main, &wh->w)) != 0) {
		log_kv(LOG_ERROR, "cannot start the writer thread", "error", strerror(rv), NULL);
		return -1;
	}
	wh->w.up = 1;

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

		wh_index_counts(wh->ix, &ndf, &nsvc);
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
	struct wop *o;

	if (wh == NULL)
		return;
	if (wh->mhd != NULL)
		MHD_stop_daemon(wh->mhd);
	wh_conns_free(wh->conns);
	if (wh->w.up) {
		pthread_mutex_lock(&wh->w.mu);
		wh->w.stop = 1;
		pthread_cond_signal(&wh->w.cv);
		pthread_mutex_unlock(&wh->w.mu);
		pthread_join(wh->w.th, NULL);
	}
	while ((o = wh->w.head) != NULL) {
		wh->w.head = o->next;
		log_kv(LOG_WARN, "record of an injected Service not written", "key", o->key,
		    NULL);
		free(o->key);
		free(o->val);
		free(o);
	}
	store_close(wh->w.s);
	store_watch_detach(wh->df_sw);
	store_watch_detach(wh->svc_sw);
	store_watch_free(wh->df_watch);
	store_watch_free(wh->svc_watch);
	wh_tls_free(wh->tls);
	wh_index_free(wh->ix);
	pthread_mutex_destroy(&wh->w.mu);
	pthread_cond_destroy(&wh->w.cv);
	free(wh->df_prefix);
	free(wh->svc_prefix);
	free(wh->def_target);
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
