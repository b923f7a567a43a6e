/*
 * web - the web stage: a status page, its JSON API with live updates, and
 * the git push receivers, served by libmicrohttpd over HTTP or HTTPS.  The
 * server runs in libmicrohttpd's epoll mode without a thread of its own:
 * its epoll fd is one more descriptor in the stage's poll loop, so every
 * request is answered on the loop's thread, the only one that touches the
 * store.  This file holds the server, the routing and the stage's life;
 * the routes are in web_push.c, web_api.c, web_events.c and web_page.c.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "common/conf.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/web/web.h"

#define STAGE		"web"
#define TICK_MS		500
#define DELIVERIES	256
/* a connection silent this long is closed (a suspended event stream is exempt) */
#define IDLE_S		60

static struct web *
W(struct stage *st)
{
	return stage_data(st);
}

enum MHD_Result
web_reply(struct MHD_Connection *c, unsigned int status, const char *type, struct buf *b)
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
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	rc = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result
web_reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, text);
	return web_reply(c, status, "text/plain; charset=utf-8", &b);
}

enum MHD_Result
web_reply_json(struct MHD_Connection *c, unsigned int status, struct buf *b)
{
	buf_addc(b, '\n');
	return web_reply(c, status, "application/json", b);
}

static void web_soon(struct stage *st, void *arg);

/*
 * web_run - libmicrohttpd's due work.  In epoll mode its descriptors are
 * edge-triggered: a connection with more to write (a snapshot of
 * thousands of rows goes out in blocks) raises no new event, and
 * libmicrohttpd says so by a timeout of 0; it is run again from the loop
 * at once, not at the next tick.
 */
void
web_run(struct web *w)
{
	MHD_UNSIGNED_LONG_LONG to;

	if (w->mhd == NULL)
		return;
	(void)MHD_run(w->mhd);
	if (!w->soon && MHD_get_timeout(w->mhd, &to) == MHD_YES && to < TICK_MS) {
		w->soon = 1;
		stage_add_timer(w->st, (int)to, web_soon, NULL);
	}
}

void
web_run_soon(struct web *w)
{
	if (w->mhd != NULL && !w->soon) {
		w->soon = 1;
		stage_add_timer(w->st, 0, web_soon, NULL);
	}
}

static void
web_soon(struct stage *st, void *arg)
{
	struct web *w = stage_data(st);

	(void)arg;
	if (w == NULL)
		return;
	w->soon = 0;
	web_run(w);
}

/* hook_of - the provider of a /hooks/ path, or -1 */
static int
hook_of(const char *url)
{
	if (strncmp(url, "/hooks/", 7) != 0)
		return -1;
	for (int p = 0; p < WEB_NPROVIDERS; p++)
		if (strcmp(url + 7, web_provider_name((enum web_provider)p)) == 0)
			return p;
	return -1;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct web *w = cls;
	struct web_req *q = *con_cls;
	int hook = hook_of(url);

	(void)version;
	if (q == NULL) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);

		q = xcalloc(1, sizeof(*q));
		q->start = now_ms();
		buf_init(&q->body);
		if (cl != NULL && strtoull(cl, NULL, 10) > w->max_body)
			q->too_large = 1;
		*con_cls = q;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (!q->too_large && q->body.len + *upload_size > w->max_body) {
			q->too_large = 1;
			buf_free(&q->body);
			buf_init(&q->body);
		}
		if (!q->too_large)
			buf_add(&q->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	/* the whole request is in */
	if (q->too_large) {
		char msg[128];

		log_kv(LOG_WARN, "request body larger than web_max_body refused", "path", url,
		    NULL);
		snprintf(msg, sizeof(msg), "body larger than %llu bytes (web_max_body)\n",
		    (unsigned long long)w->max_body);
		return web_reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
	}
	buf_addc(&q->body, '\0');	/* NUL-terminated, not counted */
	q->body.len--;
	if (hook >= 0) {
		if (strcmp(method, "POST") != 0)
			return web_reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST\n");
		if (w->secret[hook] == NULL)
			return web_reply_text(c, MHD_HTTP_NOT_FOUND, "this receiver is off: its "
			    "secret file is not set\n");
		return web_push_answer(w, c, (enum web_provider)hook, q);
	}
	if (strcmp(url, "/healthz") == 0)
		return web_reply_text(c, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/api/v1/events") == 0 && strcmp(method, "GET") == 0)
		return web_events_answer(w->events, c);
	if (strncmp(url, "/api/", 5) == 0)
		return web_api_answer(w, c, url, method, q);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return web_reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET\n");
	return web_static_answer(w, c, url);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct web_req *q = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (q == NULL)
		return;
	buf_free(&q->body);
	free(q);
	*con_cls = NULL;
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_kv(LOG_DEBUG, "libmicrohttpd", "detail", msg, NULL);
}

static void
on_epoll(struct stage *st, int fd, short revents, void *arg)
{
	(void)fd;
	(void)revents;
	(void)arg;
	web_run(W(st));
}

/* on_tick - libmicrohttpd's own timeouts (idle connections) */
static void
on_tick(struct stage *st, void *arg)
{
	struct web *w = W(st);

	(void)arg;
	web_run(w);
	w->tick = stage_add_timer(st, TICK_MS, on_tick, NULL);
}

/*
 * read_secret - a secret file's bytes, trailing whitespace dropped (an
 * editor's newline is not part of the secret); NULL when unset.  -1 when
 * set but unreadable or empty.
 */
static int
read_secret(const char *setting, const char *path, char **out, size_t *len)
{
	char *s;

	*out = NULL;
	*len = 0;
	if (path == NULL || *path == '\0')
		return 0;
	if ((s = read_file(path, len, 64 * 1024)) == NULL) {
		log_kv(LOG_ERROR, "cannot read a secret file", "setting", setting, "path", path,
		    "error", strerror(errno), NULL);
		return -1;
	}
	while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == '\r' ||
	    s[*len - 1] == ' ' || s[*len - 1] == '\t'))
		s[--*len] = '\0';
	if (*len == 0) {
		free(s);
		log_kv(LOG_ERROR, "a secret file is empty", "setting", setting, "path", path,
		    NULL);
		return -1;
	}
	*out = s;
	return 0;
}

static int
web_init(struct stage *st)
{
	static const char *const secret_settings[WEB_NPROVIDERS] = {
		"web_github_secret_file", "web_gitlab_secret_file", "web_gitea_secret_file",
	};
	struct web *w = xcalloc(1, sizeof(*w));
	struct conf *cf = stage_conf(st);
	const char *listen = conf_get(cf, "web_listen");
	const char *cert = conf_get(cf, "web_cert_file");
	const char *key = conf_get(cf, "web_key_file");
	struct sockaddr_storage ss;
	socklen_t sl;
	const union MHD_DaemonInfo *di;
	unsigned int flags;
	char *certpem = NULL, *keypem = NULL, portstr[16];
	size_t tlen;
	int tls = cert != NULL && *cert != '\0';

	stage_set_data(st, w);
	w->st = st;
	w->epfd = -1;
	w->max_body = conf_get_size(cf, "web_max_body");
	w->static_dir = xstrdup(conf_get(cf, "web_static_dir"));
	w->default_target = xstrdup(conf_get(cf, "default_target"));
	w->deliveries = web_ring_new(DELIVERIES);
	for (int p = 0; p < WEB_NPROVIDERS; p++)
		if (read_secret(secret_settings[p], conf_get(cf, secret_settings[p]),
		    &w->secret[p], &w->secret_len[p]) < 0)
			return -1;
	if (read_secret("web_token_file", conf_get(cf, "web_token_file"), &w->token,
	    &tlen) < 0)
		return -1;
	if (listen_addr_parse(listen, &ss, &sl) < 0) {
		log_kv(LOG_ERROR, "web_listen is not HOST:PORT", "value", listen, NULL);
		return -1;
	}
	if (tls != (key != NULL && *key != '\0')) {
		log_kv(LOG_ERROR, "web_cert_file and web_key_file go together: set both for "
		    "HTTPS, neither for HTTP", NULL);
		return -1;
	}
	flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (tls) {
		size_t n;

		if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
			log_kv(LOG_ERROR, "this libmicrohttpd has no TLS", NULL);
			return -1;
		}
		if ((certpem = read_file(cert, &n, 1 << 20)) == NULL ||
		    (keypem = read_file(key, &n, 1 << 20)) == NULL) {
			log_kv(LOG_ERROR, "cannot read the web certificate or key", "cert", cert,
			    "key", key, "error", strerror(errno), NULL);
			free(certpem);
			return -1;
		}
		flags |= MHD_USE_TLS;
	}
	w->events = web_events_new(w);
	w->rows = web_rows_new(w, web_events_changed, w->events);
	w->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, w,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, w,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)256,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_S,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, w,
	    tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, certpem,
	    MHD_OPTION_HTTPS_MEM_KEY, keypem,
	    MHD_OPTION_END);
	if (keypem != NULL)
		explicit_bzero(keypem, strlen(keypem));
	free(certpem);
	free(keypem);
	if (w->mhd == NULL) {
		log_kv(LOG_ERROR, "cannot start the web server", "listen", listen, "error",
		    strerror(errno), NULL);
		return -1;
	}
	di = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (di == NULL || di->epoll_fd < 0) {
		log_kv(LOG_ERROR, "libmicrohttpd gave no epoll descriptor", NULL);
		return -1;
	}
	w->epfd = di->epoll_fd;
	if (stage_add_fd(st, w->epfd, POLLIN, on_epoll, NULL) < 0)
		return -1;
	w->tick = stage_add_timer(st, TICK_MS, on_tick, NULL);
	di = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(portstr, sizeof(portstr), "%u", di != NULL ? di->port : 0);
	log_kv(LOG_INFO, "web listening", "listen", listen, "port", portstr, "scheme",
	    tls ? "https" : "http", "github", w->secret[WEB_GITHUB] ? "on" : "off",
	    "gitlab", w->secret[WEB_GITLAB] ? "on" : "off",
	    "gitea", w->secret[WEB_GITEA] ? "on" : "off",
	    "actions", w->token ? "on" : "off", NULL);
	return 0;
}

static void
web_shutdown(struct stage *st)
{
	struct web *w = W(st);

	if (w == NULL)
		return;
	if (w->epfd >= 0)
		stage_del_fd(st, w->epfd);
	web_rows_free(w->rows);
	web_events_free(w->events);	/* resumes its connections first */
	if (w->mhd != NULL)
		MHD_stop_daemon(w->mhd);
	for (int p = 0; p < WEB_NPROVIDERS; p++) {
		if (w->secret[p] != NULL)
			explicit_bzero(w->secret[p], w->secret_len[p]);
		free(w->secret[p]);
	}
	if (w->token != NULL)
		explicit_bzero(w->token, strlen(w->token));
	free(w->token);
	free(w->static_dir);
	free(w->default_target);
	web_ring_free(w->deliveries);
	free(w);
	stage_set_data(st, NULL);
}

/* web_reload - SIGHUP: the store watches opened again and every row read again */
static int
web_reload(struct stage *st)
{
	struct web *w = W(st);

	if (w != NULL && w->rows != NULL)
		web_rows_reload(w->rows);
	return 0;
}

static const struct stage_ops ops = {
	.name = STAGE,
	.use_store = 1,
	.init = web_init,
	.reload = web_reload,
	.shutdown = web_shutdown,
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
