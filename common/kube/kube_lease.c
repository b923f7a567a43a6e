/*
 * kube_lease - leader election on a coordination.k8s.io/v1 Lease, as
 * client-go and controller-runtime do it: one GET per retry period, then a
 * create, a renew or a takeover by PUT with the resourceVersion just read.
 * It owns the lease's last observed record and the one call in flight.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <unistd.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/kube_impl.h"
#include "common/log.h"
#include "common/util.h"

struct kube_lease {
	struct kube *k;
	char *ns, *name, *id;
	struct kube_lease_params p;
	kube_lease_changed_fn changed;
	void *arg;
	struct kube_call *call;
	int leading;
	int64_t last_renew;	/* monotonic ms of our last successful write */
	char holder[256];	/* holderIdentity as last read or written */
	char seen_rv[64];	/* the record as last observed ... */
	int64_t seen_at;	/* ... and when it last changed (monotonic) */
};

static void tick(struct kube_lease *l, int64_t delay);

static void
microtime(char *out, size_t len)
{
	struct timeval tv;
	struct tm tm;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour % 24, tm.tm_min % 60, tm.tm_sec % 61,
	    (int)(tv.tv_usec % 1000000));
}

static void
set_leading(struct kube_lease *l, int v)
{
	if (l->leading == v)
		return;
	l->leading = v;
	log_kv(v ? LOG_INFO : LOG_WARN, v ? "leader election: leading" :
	    "leader election: lost the lease", "lease", l->name, "identity", l->id, NULL);
	if (l->changed != NULL)
		l->changed(l->arg, v);
}

/* body - the Lease with us as holder; rv "" for a create */
static char *
body(struct kube_lease *l, const char *rv, const char *acquire, int64_t transitions,
    const char *holder, size_t *len)
{
	char now[64];
	struct buf b;
	struct jw w;

	microtime(now, sizeof(now));
	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, "coordination.k8s.io/v1", "Lease", l->ns, l->name);
	if (*rv != '\0') {
		jw_key(&w, "resourceVersion");
		jw_str(&w, rv);
	}
	jw_end_obj(&w);
	jw_key(&w, "spec");
	jw_obj(&w);
	jw_key(&w, "holderIdentity");
	jw_str(&w, holder);
	jw_key(&w, "leaseDurationSeconds");
	jw_int(&w, (l->p.duration_ms + 999) / 1000);
	jw_key(&w, "acquireTime");
	jw_str(&w, acquire != NULL ? acquire : now);
	jw_key(&w, "renewTime");
	jw_str(&w, now);
	jw_key(&w, "leaseTransitions");
	jw_int(&w, transitions);
	jw_end_obj(&w);
	jw_end_obj(&w);
	return buf_steal(&b, len);
}

static void
on_write(void *arg, const struct kube_resp *r)
{
	struct kube_lease *l = arg;

	l->call = NULL;
	if (kube_ok(r)) {
		l->last_renew = now_ms();
		snprintf(l->seen_rv, sizeof(l->seen_rv), "%s", kube_obj_rv(r->json));
		l->seen_at = now_ms();
		set_leading(l, 1);
	} else if (r->status != 409)
		log_kv(LOG_WARN, "leader election: cannot write the lease", "error", r->err, NULL);
	if (l->leading && now_ms() - l->last_renew > l->p.renew_deadline_ms)
		set_leading(l, 0);
	tick(l, l->p.retry_ms);
}

static void
write_lease(struct kube_lease *l, const char *method, const char *rv, const char *acquire,
    int64_t transitions)
{
	char *path = kube_path(&kube_leases, l->ns, strcmp(method, "POST") == 0 ? NULL : l->name,
	    NULL, NULL);
	size_t len;
	char *b = body(l, rv, acquire, transitions, l->id, &len);

	l->call = kube_send(l->k, method, path, NULL, b, len,
	    l->p.retry_ms < l->p.renew_deadline_ms ? l->p.retry_ms : l->p.renew_deadline_ms,
	    on_write, l);
	free(b);
	free(path);
}

static void
on_read(void *arg, const struct kube_resp *r)
{
	struct kube_lease *l = arg;
	const char *holder, *rv, *acquire;
	int64_t dur_ms, trans;

	l->call = NULL;
	if (r->status == 404) {
		write_lease(l, "POST", "", NULL, 0);
		return;
	}
	if (!kube_ok(r) || r->json == NULL) {
		log_kv(LOG_WARN, "leader election: cannot read the lease", "error", r->err, NULL);
		if (l->leading && now_ms() - l->last_renew > l->p.renew_deadline_ms)
			set_leading(l, 0);
		tick(l, l->p.retry_ms);
		return;
	}
	holder = json_get_str(r->json, "spec", "holderIdentity", NULL);
	snprintf(l->holder, sizeof(l->holder), "%s", holder != NULL ? holder : "");
	rv = kube_obj_rv(r->json);
	acquire = json_get_str(r->json, "spec", "acquireTime", NULL);
	trans = json_get_int(r->json, 0, "spec", "leaseTransitions", NULL);
	dur_ms = json_get_int(r->json, (l->p.duration_ms + 999) / 1000, "spec",
	    "leaseDurationSeconds", NULL) * 1000;
	if (strcmp(rv, l->seen_rv) != 0) {
		snprintf(l->seen_rv, sizeof(l->seen_rv), "%s", rv);
		l->seen_at = now_ms();
	}
	if (holder != NULL && strcmp(holder, l->id) == 0) {
		write_lease(l, "PUT", rv, acquire, trans);	/* renew */
		return;
	}
	if (l->leading)
		set_leading(l, 0);	/* someone else holds it now */
	if (holder == NULL || *holder == '\0' || now_ms() - l->seen_at > dur_ms) {
		log_kv(LOG_INFO, "leader election: taking over the lease", "lease", l->name,
		    "from", holder != NULL && *holder ? holder : "(nobody)", NULL);
		write_lease(l, "PUT", rv, NULL, trans + 1);
		return;
	}
	tick(l, l->p.retry_ms);
}

static void
tick(struct kube_lease *l, int64_t delay)
{
	char *path = kube_path(&kube_leases, l->ns, l->name, NULL, NULL);

	l->call = kube_send_later(l->k, "GET", path, NULL, delay, on_read, l);
	free(path);
}

const char *
kube_lease_holder(const struct kube_lease *l)
{
	return l->leading ? l->id : l->holder;
}

int
kube_lease_wanted(const struct conf *cf)
{
	return conf_get_bool(cf, "leader_elect") && strncmp(conf_get(cf, "store"), "local:", 6) == 0;
}

void
kube_lease_identity(char *out, size_t len)
{
	const char *pod = getenv("POD_NAME");
	char host[256];

	if (pod != NULL && *pod != '\0') {
		snprintf(out, len, "%s", pod);
		return;
	}
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "decod");
	host[sizeof(host) - 1] = '\0';
	snprintf(out, len, "%s:%ld", host, (long)getpid());
}

struct kube_lease *
kube_lease_from_conf(struct kube *k, const struct conf *cf, kube_lease_changed_fn changed,
    void *arg)
{
	struct kube_lease_params p;
	char id[300];

	kube_lease_identity(id, sizeof(id));
	p.duration_ms = conf_get_ms(cf, "leader_lease_duration");
	p.renew_deadline_ms = conf_get_ms(cf, "leader_renew_deadline");
	p.retry_ms = conf_get_ms(cf, "leader_retry_period");
	log_kv(LOG_INFO, "leader election: contending", "lease", conf_get(cf, "leader_lease_name"),
	    "namespace", kube_namespace(k), "identity", id, NULL);
	return kube_lease_new(k, kube_namespace(k), conf_get(cf, "leader_lease_name"), id, &p,
	    changed, arg);
}

struct kube_lease *
kube_lease_new(struct kube *k, const char *ns, const char *name, const char *identity,
    const struct kube_lease_params *p, kube_lease_changed_fn changed, void *arg)
{
	struct kube_lease *l = xcalloc(1, sizeof(*l));

	l->k = k;
	l->ns = xstrdup(ns);
	l->name = xstrdup(name);
	l->id = xstrdup(identity);
	l->p.duration_ms = p != NULL && p->duration_ms > 0 ? p->duration_ms : 15000;
	l->p.renew_deadline_ms = p != NULL && p->renew_deadline_ms > 0 ? p->renew_deadline_ms : 10000;
	l->p.retry_ms = p != NULL && p->retry_ms > 0 ? p->retry_ms : 2000;
	l->changed = changed;
	l->arg = arg;
	l->seen_at = now_ms();
	tick(l, 0);
	return l;
}

int
kube_lease_leading(const struct kube_lease *l)
{
	return l->leading;
}

void
kube_lease_free(struct kube_lease *l)
{
	if (l == NULL)
		return;
	kube_cancel(l->call);
	if (l->leading) {
		/* hand it over at once rather than after the lease duration */
		char *path = kube_path(&kube_leases, l->ns, l->name, NULL, NULL);
		struct kube_resp *r = kube_do(l->k, "GET", path, NULL, NULL, 0, 2000);

		if (kube_ok(r) && r->json != NULL) {
			size_t len;
			char *b = body(l, kube_obj_rv(r->json), json_get_str(r->json, "spec",
			    "acquireTime", NULL), json_get_int(r->json, 0, "spec",
			    "leaseTransitions", NULL), "", &len);

			kube_resp_free(kube_do(l->k, "PUT", path, NULL, b, len, 2000));
			free(b);
		}
		kube_resp_free(r);
		free(path);
	}
	free(l->ns);
	free(l->name);
	free(l->id);
	free(l);
}
