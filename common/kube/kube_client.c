/*
 * kube_client - a Kubernetes API client's life: its curl multi handle,
 * whose sockets sit in an epoll set the caller polls as one fd, its
 * configuration, its informers' registration and the stage timer of
 * kube_attach.  The calls it makes are in kube.c.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/curl_epoll.h"
#include "common/kube.h"
#include "common/kube_impl.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"

#define KUBE_DEF_TIMEOUT_MS	30000
#define KUBE_MAX_CONNS		16	/* per API server */

static int curl_ready;

/* ---- loop plumbing ---- */

static int
on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct kube *k = userp;

	(void)easy;
	return curl_epoll_socket(k->multi, k->epfd, s, what, socketp, k);
}

static int
on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct kube *k = userp;

	(void)multi;
	k->curl_due = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	return 0;
}

/* ---- client ---- */

static char *
dup_bytes(const char *p, size_t n)
{
	char *d;

	if (p == NULL)
		return NULL;
	d = xmalloc(n + 1);
	memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

struct kube *
kube_new(const struct kube_config *c, int64_t timeout_ms, char *err, size_t errlen)
{
	struct kube *k;

	if (c->server == NULL || *c->server == '\0') {
		snprintf(err, errlen, "no API server URL");
		return NULL;
	}
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(err, errlen, "curl_global_init failed");
			return NULL;
		}
		curl_ready = 1;
	}
	k = xcalloc(1, sizeof(*k));
	k->cfg.server = xstrdup(c->server);
	k->cfg.ca_file = c->ca_file != NULL ? xstrdup(c->ca_file) : NULL;
	k->cfg.ca_data = dup_bytes(c->ca_data, c->ca_len);
	k->cfg.ca_len = c->ca_len;
	k->cfg.cert_file = c->cert_file != NULL ? xstrdup(c->cert_file) : NULL;
	k->cfg.cert_data = dup_bytes(c->cert_data, c->cert_len);
	k->cfg.cert_len = c->cert_len;
	k->cfg.key_file = c->key_file != NULL ? xstrdup(c->key_file) : NULL;
	k->cfg.key_data = dup_bytes(c->key_data, c->key_len);
	k->cfg.key_len = c->key_len;
	k->cfg.token_file = c->token_file != NULL ? xstrdup(c->token_file) : NULL;
	k->cfg.namespace = xstrdup(c->namespace != NULL ? c->namespace : "default");
	k->cfg.insecure = c->insecure;
	if (c->token != NULL)
		k->token = xstrdup(c->token);
	k->timeout_ms = timeout_ms > 0 ? timeout_ms : KUBE_DEF_TIMEOUT_MS;
	kube_token_refresh(k, 1);
	if (k->cfg.token_file != NULL && k->token == NULL) {
		snprintf(err, errlen, "token file %s: unreadable", k->cfg.token_file);
		kube_free(k);
		return NULL;
	}
	if ((k->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
		k->epfd = -1;
		kube_free(k);
		return NULL;
	}
	if ((k->multi = curl_multi_init()) == NULL)
		abort();
	k->curl_due = -1;
	curl_multi_setopt(k->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(k->multi, CURLMOPT_SOCKETDATA, k);
	curl_multi_setopt(k->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(k->multi, CURLMOPT_TIMERDATA, k);
	curl_multi_setopt(k->multi, CURLMOPT_MAXCONNECTS, 64L);
	/*
	 * A burst of thousands of calls queues in curl instead of opening a
	 * connection each: at most KUBE_MAX_CONNS calls (watches included) are
	 * in flight to one API server.
	 */
	curl_multi_setopt(k->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)KUBE_MAX_CONNS);
	return k;
}

void
kube_free(struct kube *k)
{
	if (k == NULL)
		return;
	while (k->ninfs > 0)
		kube_informer_free(k->infs[k->ninfs - 1]);
	free(k->infs);
	while (k->calls != NULL)
		kube_cancel(k->calls);
	if (k->st != NULL) {
		stage_del_fd(k->st, k->epfd);
		if (k->timer > 0)
			stage_cancel_timer(k->st, k->timer);
	}
	if (k->multi != NULL)
		curl_multi_cleanup(k->multi);
	if (k->epfd >= 0)
		close(k->epfd);
	if (k->token != NULL)
		explicit_bzero(k->token, strlen(k->token));
	free(k->token);
	kube_config_free(&k->cfg);
	free(k);
}

const char *
kube_namespace(const struct kube *k)
{
	return k->cfg.namespace;
}

const char *
kube_server(const struct kube *k)
{
	return k->cfg.server;
}

void
kube_get_stats(const struct kube *k, struct kube_stats *s)
{
	*s = k->stats;
}

void
kube_informer_register(struct kube *k, struct kube_informer *inf)
{
	k->infs = xrealloc(k->infs, (k->ninfs + 1) * sizeof(*k->infs));
	k->infs[k->ninfs++] = inf;
}

void
kube_informer_unregister(struct kube *k, struct kube_informer *inf)
{
	for (size_t i = 0; i < k->ninfs; i++)
		if (k->infs[i] == inf) {
			memmove(&k->infs[i], &k->infs[i + 1], (k->ninfs - i - 1) * sizeof(*k->infs));
			k->ninfs--;
			return;
		}
}

/* ---- stage glue ---- */

static void
on_stage_timer(struct stage *st, void *arg)
{
	struct kube *k = arg;

	(void)st;
	k->timer = 0;
	kube_dispatch(k);
}

static void
on_stage_fd(struct stage *st, int fd, short revents, void *arg)
{
	(void)st;
	(void)fd;
	(void)revents;
	kube_dispatch(arg);
}

/* kube_rearm - keep one stage timer at the client's next deadline */
void
kube_rearm(struct kube *k)
{
	int64_t t;

	if (k->st == NULL)
		return;
	t = kube_timeout(k);
	if (k->timer > 0)
		stage_cancel_timer(k->st, k->timer);
	k->timer = 0;
	if (t >= 0)
		k->timer = stage_add_timer(k->st, t, on_stage_timer, k);
}

void
kube_attach(struct kube *k, struct stage *st)
{
	k->st = st;
	if (stage_add_fd(st, k->epfd, POLLIN, on_stage_fd, k) < 0)
		fatal("kube: cannot add its fd to the loop");
	kube_rearm(k);
}
