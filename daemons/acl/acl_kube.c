/*
 * acl_kube - the acl stage's tenant source in Kubernetes: namespaces
 * annotated deco.sites/valkey-acl: "true" (user = the name without
 * "sites-"), held by the finalizer deco.sites/valkey-acl while provisioned,
 * credentials in their Secret valkey-acl.  Reserved users are refused: the
 * annotation is removed.  A namespace being deleted has its user deleted on
 * every node, then the finalizer is released.  A change of the
 * deco.sites/valkey-acl-sync annotation resyncs the tenant.  A Secret
 * deleted by hand is written again with the same password.
 *
 * The Secret write is asynchronous: cred_save answers 1 (pending) and the
 * tenant is resynced once the write has landed, so a password is only used
 * once it is kept.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/conf.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/acl/acl.h"
#include "daemons/acl/acl_cmd.h"
#include "daemons/acl/acl_cred.h"
#include "daemons/acl/acl_impl.h"

#define ANN "deco.sites/valkey-acl"
#define ANN_SYNC "deco.sites/valkey-acl-sync"
#define FINALIZER "deco.sites/valkey-acl"
#define SECRET "valkey-acl"
#define MANAGER "decod-acl"
#define RETRY_MIN_MS 1000	/* a failed Secret write is tried again, doubling */
#define RETRY_MAX_MS 60000

enum { PW_NONE, PW_PENDING, PW_LANDED };

struct kt {
	char ns[256];
	char user[ACL_USER_MAX];
	char pw[128];
	int pw_state;
	int put;		/* acl_tenant_put as enabled */
	struct backoff retry;	/* failed Secret writes: RETRY_MIN_MS doubling */
	struct kt *next;
};

struct ksrc {
	struct acl *a;
	struct stage *st;
	struct kube *k;
	struct kube_informer *nsi, *seci;
	struct kt *kts;
};

struct wr {			/* a write in flight */
	struct ksrc *s;
	char ns[256];
	const char *what;
};

static struct kt *
kt_get(struct ksrc *s, const char *ns, int make)
{
	struct kt *t;

	for (t = s->kts; t != NULL; t = t->next)
		if (strcmp(t->ns, ns) == 0)
			return t;
	if (!make)
		return NULL;
	t = xcalloc(1, sizeof(*t));
	snprintf(t->ns, sizeof(t->ns), "%s", ns);
	backoff_init(&t->retry, RETRY_MIN_MS, RETRY_MAX_MS);
	t->next = s->kts;
	s->kts = t;
	return t;
}

static void
kt_drop(struct ksrc *s, const char *ns)
{
	for (struct kt **pp = &s->kts; *pp != NULL; pp = &(*pp)->next) {
		struct kt *t = *pp;

		if (strcmp(t->ns, ns) == 0) {
			*pp = t->next;
			acl_wipe(t->pw, sizeof(t->pw));
			free(t);
			return;
		}
	}
}

static const char *
ann(yajl_val obj, const char *key)
{
	yajl_val m = json_get(obj, "metadata", "annotations", NULL);

	return m != NULL ? json_get_str(m, key, NULL) : NULL;
}

static int
has_finalizer(yajl_val obj)
{
	yajl_val f = json_get(obj, "metadata", "finalizers", NULL);

	for (size_t i = 0; f != NULL && YAJL_IS_ARRAY(f) && i < f->u.array.len; i++)
		if (YAJL_IS_STRING(f->u.array.values[i]) &&
		    strcmp(f->u.array.values[i]->u.string, FINALIZER) == 0)
			return 1;
	return 0;
}

static void
wr_done(void *arg, const struct kube_resp *r)
{
	struct wr *w = arg;

	if (!kube_ok(r) && r->status != 404)
		log_kv(LOG_WARN, "acl: Kubernetes write failed", "what", w->what, "ns", w->ns,
		    "status", r->status == 0 ? "none" : "error", "error", r->err, NULL);
	free(w);
}

/* wr_new - the record of a write in flight to ns, for its answer's callback */
static struct wr *
wr_new(struct ksrc *s, const char *ns, const char *what)
{
	struct wr *w = xcalloc(1, sizeof(*w));

	w->s = s;
	w->what = what;
	snprintf(w->ns, sizeof(w->ns), "%s", ns);
	return w;
}

/* finalizer - hold (1) or release (0) ours, by server-side apply */
static void
finalizer(struct ksrc *s, const char *ns, int hold)
{
	struct buf b;

	buf_init(&b);
	buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":");
	json_escape(&b, ns, strlen(ns));
	buf_printf(&b, hold ? ",\"finalizers\":[\"" FINALIZER "\"]}}" : "}}");
	kube_apply(s->k, &kube_namespaces, NULL, ns, NULL, MANAGER, 1, b.data, b.len,
	    wr_done, wr_new(s, ns, hold ? "finalizer" : "finalizer release"));
	buf_free(&b);
}

static void
annotation_remove(struct ksrc *s, const char *ns)
{
	struct buf b;

	buf_init(&b);
	buf_printf(&b, "{\"metadata\":{\"annotations\":{\"" ANN "\":null}}}");
	kube_merge_patch(s->k, &kube_namespaces, NULL, ns, NULL, b.data, b.len, wr_done,
	    wr_new(s, ns, "annotation removal"));
	buf_free(&b);
}

/* retry_cb - a Secret write failed a while ago (t->retry): try the tenant again */
static void
retry_cb(struct stage *st, void *arg)
{
	struct wr *w = arg;
	struct kt *t = kt_get(w->s, w->ns, 0);

	(void)st;
	if (t != NULL && t->put)
		acl_resync(w->s->a, w->ns, w->ns);
	free(w);
}

static void
secret_done(void *arg, const struct kube_resp *r)
{
	struct wr *w = arg;
	struct ksrc *s = w->s;
	struct kt *t = kt_get(s, w->ns, 0);

	if (t != NULL && t->pw_state == PW_PENDING) {
		if (kube_ok(r)) {
			t->pw_state = PW_LANDED;
			backoff_reset(&t->retry);
			log_kv(LOG_INFO, "acl: credentials kept in Secret " SECRET, "ns", w->ns,
			    "user", t->user, NULL);
		} else {
			log_kv(LOG_WARN, "acl: cannot write Secret " SECRET, "ns", w->ns,
			    "error", r->err, NULL);
			t->pw_state = PW_NONE;
			acl_wipe(t->pw, sizeof(t->pw));
		}
		/* landed: provision now; failed: a new try later, not in a hot loop */
		if (t->pw_state == PW_LANDED) {
			acl_resync(s->a, w->ns, w->ns);
		} else {
			stage_add_timer(s->st, backoff_next(&t->retry), retry_cb, w);
			return;
		}
	}
	free(w);
}

static void
secret_write(struct ksrc *s, struct kt *t)
{
	struct buf b;

	buf_init(&b);
	buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\""
	    SECRET "\",\"namespace\":");
	json_escape(&b, t->ns, strlen(t->ns));
	buf_printf(&b, ",\"labels\":{\"app.kubernetes.io/managed-by\":\"decod\"}},"
	    "\"type\":\"Opaque\",\"stringData\":{\"LOADER_CACHE_REDIS_USERNAME\":");
	json_escape(&b, t->user, strlen(t->user));
	buf_printf(&b, ",\"LOADER_CACHE_REDIS_PASSWORD\":");
	json_escape(&b, t->pw, strlen(t->pw));
	buf_printf(&b, "}}");
	kube_apply(s->k, &kube_secrets, t->ns, SECRET, NULL, MANAGER, 1, b.data, b.len,
	    secret_done, wr_new(s, t->ns, "secret"));
	acl_wipe(b.data, b.len);
	buf_free(&b);
}

/* ---- namespaces ---- */

static void
on_ns(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct ksrc *s = arg;
	const char *ns, *a, *since, *why_reason;
	char user[ACL_USER_MAX], why[256];
	int want, deleting, fin;
	struct kt *t;

	if (ev == KUBE_SYNCED || obj == NULL)
		return;
	ns = kube_obj_name(obj);
	a = ann(obj, ANN);
	want = ev != KUBE_DELETED && a != NULL && strcmp(a, "true") == 0;
	deleting = ev == KUBE_DELETED ||
	    json_get(obj, "metadata", "deletionTimestamp", NULL) != NULL;
	fin = ev != KUBE_DELETED && has_finalizer(obj);
	if (acl_user_for_namespace(ns, user, sizeof(user)) < 0)
		snprintf(user, sizeof(user), "%s", ns);
	t = kt_get(s, ns, 0);
	if (want && !deleting) {
		if (acl_user_check(user, strlen(user), &why_reason, why, sizeof(why)) < 0) {
			log_kv(LOG_WARN, "acl: namespace refused; annotation removed", "ns", ns,
			    "reason", why_reason, "message", why, NULL);
			annotation_remove(s, ns);
			if (fin)
				finalizer(s, ns, 0);
			return;
		}
		if (!fin)
			finalizer(s, ns, 1);
		t = kt_get(s, ns, 1);
		snprintf(t->user, sizeof(t->user), "%s", user);
		since = json_get_str(obj, "metadata", "creationTimestamp", NULL);
		{
			const char *o = old != NULL ? ann(old, ANN_SYNC) : NULL, *n = ann(obj, ANN_SYNC);
			int resync = 0;

			if (ev == KUBE_MODIFIED && o != NULL && n != NULL)
				resync = strcmp(o, n) != 0;
			else if (ev == KUBE_MODIFIED)
				resync = (o == NULL) != (n == NULL);
			acl_tenant_put(s->a, ns, ns, user, strlen(user), since, 1, resync);
		}
		t->put = 1;
		return;
	}
	/* not (or no longer) a tenant */
	if (t != NULL && t->put) {
		t->put = 0;
		acl_tenant_del(s->a, ns, ns);
	} else if (fin && acl_user_check(user, strlen(user), &why_reason, why, sizeof(why)) < 0) {
		finalizer(s, ns, 0);	/* never provisioned: nothing to delete */
	} else if (fin) {
		/* ours from before a restart: delete the user, then release */
		kt_get(s, ns, 1);
		acl_orphan(s->a, ns, user);
	}
}

/* ---- secrets ---- */

static void
on_secret(void *arg, enum kube_event ev, yajl_val obj, yajl_val old)
{
	struct ksrc *s = arg;
	const char *ns;
	struct kt *t;
	yajl_val n;

	(void)old;
	if (ev == KUBE_SYNCED) {
		if (s->nsi == NULL)
			s->nsi = kube_informer_new(s->k, &kube_namespaces, NULL, NULL, on_ns, s);
		return;
	}
	if (ev != KUBE_DELETED || obj == NULL)
		return;
	ns = kube_obj_ns(obj);
	t = kt_get(s, ns, 0);
	if (t == NULL || !t->put || t->pw_state != PW_LANDED)
		return;
	n = s->nsi != NULL ? kube_informer_get(s->nsi, NULL, ns) : NULL;
	if (n == NULL || json_get(n, "metadata", "deletionTimestamp", NULL) != NULL)
		return;
	log_kv(LOG_INFO, "acl: Secret " SECRET " deleted by hand; writing it again", "ns", ns,
	    NULL);
	t->pw_state = PW_PENDING;
	secret_write(s, t);
}

/* ---- the source ---- */

static void *
k_start(struct acl *a, struct stage *st)
{
	struct ksrc *s = xcalloc(1, sizeof(*s));
	char err[512];

	s->a = a;
	s->st = st;
	if ((s->k = kube_from_conf(stage_conf(st), err, sizeof(err))) == NULL) {
		log_kv(LOG_ERROR, "acl: no Kubernetes client", "error",
		    err[0] ? err : "no kubeconfig setting and not in a cluster", NULL);
		free(s);
		return NULL;
	}
	kube_attach(s->k, st);
	log_kv(LOG_INFO, "acl: tenants from Kubernetes namespaces", "server", kube_server(s->k),
	    NULL);
	/* Secrets first, so a namespace's password is known when it is seen */
	s->seci = kube_informer_new_fs(s->k, &kube_secrets, NULL, NULL,
	    "metadata.name=" SECRET, on_secret, s);
	return s;
}

static int
k_load(void *state)
{
	(void)state;
	return 0;		/* tenants arrive with the informers' events */
}

static void
k_stop(void *state)
{
	struct ksrc *s = state;

	kube_informer_free(s->nsi);
	kube_informer_free(s->seci);
	kube_free(s->k);
	while (s->kts != NULL)
		kt_drop(s, s->kts->ns);
	free(s);
}

static void
k_report(void *state, const char *ns, const char *name, const char *user,
    const char *status, const char *reason, const char *message)
{
	(void)state;
	(void)name;
	log_kv(strcmp(status, "True") == 0 ? LOG_INFO : LOG_WARN, "acl: tenant condition",
	    "ns", ns, "user", user, "provisioned", status, "reason", reason, "message",
	    message, NULL);
}

static int
k_cred_load(void *state, const char *ns, char *user, size_t userlen, char *password,
    size_t pwlen)
{
	struct ksrc *s = state;
	struct kt *t = kt_get(s, ns, 0);
	yajl_val sec;
	const char *u, *p;
	unsigned char *du, *dp;
	size_t lu, lp;

	if (t != NULL && t->pw_state == PW_LANDED) {
		snprintf(user, userlen, "%s", t->user);
		snprintf(password, pwlen, "%s", t->pw);
		return 0;
	}
	if ((sec = kube_informer_get(s->seci, ns, SECRET)) == NULL)
		return 1;
	u = json_get_str(sec, "data", "LOADER_CACHE_REDIS_USERNAME", NULL);
	p = json_get_str(sec, "data", "LOADER_CACHE_REDIS_PASSWORD", NULL);
	if (u == NULL || p == NULL)
		return 1;
	du = base64_decode(u, strlen(u), &lu);
	dp = base64_decode(p, strlen(p), &lp);
	if (du == NULL || dp == NULL || lu >= userlen || lp >= pwlen) {
		free(du);
		if (dp != NULL)
			acl_wipe(dp, lp);
		free(dp);
		return 1;
	}
	memcpy(user, du, lu);
	user[lu] = '\0';
	memcpy(password, dp, lp);
	password[lp] = '\0';
	acl_wipe(dp, lp);
	free(du);
	free(dp);
	if (t != NULL && acl_password_valid(password)) {
		snprintf(t->pw, sizeof(t->pw), "%s", password);
		t->pw_state = PW_LANDED;
	}
	return 0;
}

static int
k_cred_save(void *state, const char *ns, const char *user, const char *password,
    char *err, size_t errlen)
{
	struct ksrc *s = state;
	struct kt *t = kt_get(s, ns, 1);

	(void)err;
	(void)errlen;
	if (t->pw_state == PW_PENDING)
		return 1;
	snprintf(t->user, sizeof(t->user), "%s", user);
	snprintf(t->pw, sizeof(t->pw), "%s", password);
	t->pw_state = PW_PENDING;
	secret_write(s, t);
	return 1;
}

static int
k_cred_remove(void *state, const char *ns)
{
	struct ksrc *s = state;
	yajl_val n = s->nsi != NULL ? kube_informer_get(s->nsi, NULL, ns) : NULL;
	struct kt *t = kt_get(s, ns, 0);
	char *path;

	if (t != NULL && t->put)
		return 0;	/* wanted again meanwhile */
	if (n != NULL && json_get(n, "metadata", "deletionTimestamp", NULL) == NULL &&
	    kube_informer_get(s->seci, ns, SECRET) != NULL) {
		path = kube_path(&kube_secrets, ns, SECRET, NULL, NULL);
		kube_send(s->k, "DELETE", path, NULL, NULL, 0, 0, wr_done,
		    wr_new(s, ns, "secret delete"));
		free(path);
	}
	if (n != NULL && has_finalizer(n)) {
		finalizer(s, ns, 0);
		log_kv(LOG_INFO, "acl: finalizer released", "ns", ns, NULL);
	}
	kt_drop(s, ns);
	return 0;
}

const struct acl_source acl_source_kube = {
	.name = "kubernetes",
	.start = k_start,
	.load = k_load,
	.stop = k_stop,
	.report = k_report,
	.flush = NULL,
	.cred_load = k_cred_load,
	.cred_save = k_cred_save,
	.cred_remove = k_cred_remove,
};
