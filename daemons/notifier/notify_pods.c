/*
 * notify_pods - pod discovery for the notifier.  It owns a Kubernetes
 * client on the stage's loop and an informer of the pods that carry the
 * app.deco/deploymentId label (all namespaces), and a small pool of the
 * strings it last handed out (URLs), which the notify engine copies.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/s3key.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/notifier/notify_pods.h"

struct notify_pods {
	struct kube *k;
	struct kube_informer *inf;
	char **pool;		/* strings handed out by the last call */
	size_t npool;
};

static void
pool_reset(struct notify_pods *np)
{
	for (size_t i = 0; i < np->npool; i++)
		free(np->pool[i]);
	np->npool = 0;
}

static const char *
pool_add(struct notify_pods *np, char *s)
{
	np->pool = xrealloc(np->pool, (np->npool + 1) * sizeof(*np->pool));
	np->pool[np->npool++] = s;
	return s;
}

/* mount_ts - the tsFile where container c has the decofile, or "" */
static void
mount_ts(yajl_val c, char *ts, size_t tslen)
{
	yajl_val m = json_get(c, "volumeMounts", NULL), env = json_get(c, "env", NULL);

	ts[0] = '\0';
	for (size_t i = 0; m != NULL && YAJL_IS_ARRAY(m) && i < m->u.array.len; i++) {
		const char *n = json_get_str(m->u.array.values[i], "name", NULL);
		const char *p = json_get_str(m->u.array.values[i], "mountPath", NULL);

		if (n != NULL && p != NULL && *p == '/' && strcmp(n, DECOFILE_VOLUME) == 0) {
			snprintf(ts, tslen, "%s%stimestamp.txt", p, p[strlen(p) - 1] == '/' ? "" : "/");
			return;
		}
	}
	for (size_t i = 0; env != NULL && YAJL_IS_ARRAY(env) && i < env->u.array.len; i++) {
		const char *n = json_get_str(env->u.array.values[i], "name", NULL);
		const char *v = json_get_str(env->u.array.values[i], "value", NULL);
		const char *slash;

		if (n != NULL && v != NULL && strcmp(n, "DECO_RELEASE") == 0 &&
		    strncmp(v, "file:///", 8) == 0 && (slash = strrchr(v, '/')) > v + 7) {
			snprintf(ts, tslen, "%.*s/timestamp.txt", (int)(slash - (v + 7)), v + 7);
			return;
		}
	}
}

int
notify_pods_replica(yajl_val pod, char *url, size_t urllen, const char **token,
    char *ts, size_t tslen)
{
	const char *phase = json_get_str(pod, "status", "phase", NULL);
	const char *ip = json_get_str(pod, "status", "podIP", NULL);
	yajl_val cs = json_get(pod, "spec", "containers", NULL);
	int64_t port = NOTIFY_PODS_DEFAULT_PORT;

	*token = NULL;
	snprintf(ts, tslen, "%s", NOTIFY_PODS_TS_FILE);
	if (phase == NULL || strcmp(phase, "Running") != 0 || ip == NULL || *ip == '\0' ||
	    json_get(pod, "metadata", "deletionTimestamp", NULL) != NULL)
		return 0;
	if (cs != NULL && YAJL_IS_ARRAY(cs) && cs->u.array.len > 0) {
		yajl_val ports = json_get(cs->u.array.values[0], "ports", NULL);

		if (ports != NULL && YAJL_IS_ARRAY(ports) && ports->u.array.len > 0)
			port = json_get_int(ports->u.array.values[0], NOTIFY_PODS_DEFAULT_PORT,
			    "containerPort", NULL);
		for (size_t i = 0; i < cs->u.array.len; i++) {
			yajl_val c = cs->u.array.values[i], env;
			const char *n = json_get_str(c, "name", NULL);

			if (n == NULL || strcmp(n, "app") != 0)
				continue;
			{
				char mt[1024];

				mount_ts(c, mt, sizeof(mt));
				if (mt[0] != '\0')
					snprintf(ts, tslen, "%s", mt);
			}
			env = json_get(c, "env", NULL);
			for (size_t e = 0; env != NULL && YAJL_IS_ARRAY(env) && e < env->u.array.len; e++) {
				const char *en = json_get_str(env->u.array.values[e], "name", NULL);

				/* only a literal value: valueFrom would need the Secret */
				if (en != NULL && strcmp(en, NOTIFY_PODS_TOKEN_ENV) == 0)
					*token = json_get_str(env->u.array.values[e], "value", NULL);
			}
		}
	}
	if (strchr(ip, ':') != NULL)
		snprintf(url, urllen, "http://[%s]:%lld", ip, (long long)port);
	else
		snprintf(url, urllen, "http://%s:%lld", ip, (long long)port);
	return 1;
}

static void
on_pod(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	(void)arg;
	(void)ev;
	(void)obj;
	(void)old;
	/* the cache is all we need: rollouts read it when they start and before each try */
}

struct notify_pods *
notify_pods_new(struct stage *st, char *err, size_t errlen)
{
	struct kube *k;
	struct notify_pods *np;

	if ((k = kube_from_conf(stage_conf(st), err, errlen)) == NULL)
		return NULL;
	np = xcalloc(1, sizeof(*np));
	np->k = k;
	kube_attach(np->k, st);
	np->inf = kube_informer_new(np->k, &kube_pods, NULL, NOTIFY_PODS_LABEL, on_pod, np);
	log_kv(LOG_INFO, "pod discovery on", "server", kube_server(np->k), NULL);
	return np;
}

void
notify_pods_free(struct notify_pods *np)
{
	if (np == NULL)
		return;
	kube_free(np->k);
	pool_reset(np);
	free(np->pool);
	free(np);
}

int
notify_pods_synced(const struct notify_pods *np)
{
	return kube_informer_synced(np->inf);
}

struct walk {
	const char *ns, *dep;
	struct notify_pods *np;
	enum notify_style style;
	struct notify_target *t;
	size_t max, n;
};

static void
walk_one(void *arg, yajl_val pod)
{
	struct walk *w = arg;
	const char *dep = json_get_str(pod, "metadata", "labels", NOTIFY_PODS_LABEL, NULL);
	const char *token;
	char url[128], ts[1024];

	if (dep == NULL || strcmp(dep, w->dep) != 0 || strcmp(kube_obj_ns(pod), w->ns) != 0 ||
	    !notify_pods_replica(pod, url, sizeof(url), &token, ts, sizeof(ts)))
		return;
	if (w->t != NULL && w->n < w->max) {
		struct notify_target *t = &w->t[w->n];

		memset(t, 0, sizeof(*t));
		t->id = pool_add(w->np, xasprintf("pod/%s", kube_obj_name(pod)));
		t->url = pool_add(w->np, xstrdup(url));
		t->token = token != NULL ? pool_add(w->np, xstrdup(token)) : NULL;
		t->style = w->style;
		t->ts_file = w->style == NOTIFY_POLL ? pool_add(w->np, xstrdup(ts)) : NULL;
	}
	w->n++;
}

size_t
notify_pods_count(struct notify_pods *np, const char *ns, const char *deployment)
{
	struct walk w = { ns, deployment, np, NOTIFY_PUSH, NULL, 0, 0 };

	kube_informer_foreach(np->inf, walk_one, &w);
	return w.n;
}

size_t
notify_pods_fill(struct notify_pods *np, const char *ns, const char *deployment,
    enum notify_style style, struct notify_target *t, size_t max)
{
	struct walk w = { ns, deployment, np, style, t, max, 0 };

	pool_reset(np);
	kube_informer_foreach(np->inf, walk_one, &w);
	return w.n < max ? w.n : max;
}

int
notify_pods_resolve(struct notify_pods *np, const char *ns, struct notify_target *t)
{
	yajl_val pod;
	const char *token;
	char url[128], ts[1024];

	if (strncmp(t->id, "pod/", 4) != 0)
		return -1;
	if ((pod = kube_informer_get(np->inf, ns, t->id + 4)) == NULL ||
	    !notify_pods_replica(pod, url, sizeof(url), &token, ts, sizeof(ts)))
		return 0;
	pool_reset(np);
	t->url = pool_add(np, xstrdup(url));
	if (t->style == NOTIFY_POLL)
		t->ts_file = pool_add(np, xstrdup(ts));
	t->token = token != NULL ? pool_add(np, xstrdup(token)) : NULL;
	return 1;
}
