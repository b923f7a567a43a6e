/*
 * acl - the acl stage (SPEC 4.6): its main, the tenant table and its rules
 * (reserved names; of two claims on one user or namespace the older wins),
 * the users still to delete, Sentinel's events and the resync timer, which
 * all turn into wishes that acl_round.c carries out one round at a time.
 * Passwords stay in memory and the source's credentials, nowhere else.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/acl/acl_impl.h"


/* ---- small helpers ---- */

void
acl_wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n-- > 0)
		*v++ = 0;
}

struct tenant *
acl_tenant_find(struct acl *a, const char *ns, const char *name)
{
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		if (strcmp(t->ns, ns) == 0 && strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

int
acl_tenant_has_node(const struct tenant *t, const char *addr)
{
	for (size_t i = 0; i < t->nokn; i++)
		if (strcmp(t->okn[i], addr) == 0)
			return 1;
	return 0;
}

void
acl_tenant_add_node(struct tenant *t, const char *addr)
{
	if (acl_tenant_has_node(t, addr))
		return;
	t->okn = xrealloc(t->okn, (t->nokn + 1) * sizeof(*t->okn));
	t->okn[t->nokn++] = xstrdup(addr);
}

static void
tenant_free(struct tenant *t)
{
	for (size_t i = 0; i < t->nokn; i++)
		free(t->okn[i]);
	free(t->okn);
	acl_wipe(t->password, sizeof(t->password));
	free(t);
}

void
acl_count_err(struct acl *a, const char *op, double n)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "operation=\"%s\"", op);
	metrics_add(a->m, M_ERR, labels, n);
}

void
acl_update_gauge(struct acl *a)
{
	double n = 0;

	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		n += t->provisioned;
	metrics_set(a->m, M_TENANTS, NULL, n);
}

int
acl_report(struct acl *a, struct tenant *t, const char *status, const char *reason,
    const char *message)
{
	char cur[sizeof(t->last)];

	snprintf(cur, sizeof(cur), "%s|%s|%s|%s", t->user, status, reason, message);
	if (strcmp(cur, t->last) == 0)
		return 0;
	memcpy(t->last, cur, sizeof(cur));
	a->src->report(a->src_state, t->ns, t->name, t->user, status, reason, message);
	return 1;
}

/*
 * older - does a claim its user and namespace before b?  Created first;
 * in the same second, the one already holding the user; then by name.
 */
static int
older(const struct tenant *a, const struct tenant *b)
{
	int c;

	if (a->since[0] != '\0' && b->since[0] != '\0' && (c = strcmp(a->since, b->since)) != 0)
		return c < 0;
	if (a->since[0] == '\0' && b->since[0] != '\0')
		return 0;
	if (a->since[0] != '\0' && b->since[0] == '\0')
		return 1;
	/*
	 * created in the same second (created_at has no finer grain): the
	 * tenant that already has the user, here or in its saved credentials
	 * (so also after a restart), keeps it; a newcomer does not take it
	 * because its namespace sorts first
	 */
	if ((a->holds || a->provisioned) != (b->holds || b->provisioned))
		return a->holds || a->provisioned;
	if ((c = strcmp(a->ns, b->ns)) != 0)
		return c < 0;
	return strcmp(a->name, b->name) < 0;
}

static void gone_add(struct acl *a, const char *ns, const char *user);
static void gone_drop(struct acl *a, const char *user);

/* forget - t loses its user: nothing provisioned, no password kept */
static void
forget(struct tenant *t)
{
	acl_wipe(t->password, sizeof(t->password));
	t->has_pw = 0;
	t->provisioned = 0;
	t->dirty = 0;
	for (size_t i = 0; i < t->nokn; i++)
		free(t->okn[i]);
	t->nokn = 0;
}

/*
 * resolve - among the tenants that want user or live in namespace ns, the
 * one that asked first (metadata.created_at, then namespace and name) has
 * them; the others are refused with Conflict.  The same answer whatever
 * order tenants arrive in, so a restart never hands a user to another
 * tenant (and a new password).  A tenant that loses its user to a
 * different one gives its old user up for deletion.
 */
static void
resolve(struct acl *a, const char *user, const char *ns)
{
	struct tenant *win = NULL;
	char why[600];

	for (struct tenant *o = a->tenants; o != NULL; o = o->next)
		if (o->refused != REFUSED && (strcmp(o->user, user) == 0 ||
		    strcmp(o->ns, ns) == 0) && (win == NULL || older(o, win)))
			win = o;
	for (struct tenant *o = a->tenants; o != NULL; o = o->next) {
		if (o->refused == REFUSED || (strcmp(o->user, user) != 0 && strcmp(o->ns, ns) != 0))
			continue;
		if (o == win) {
			if (o->refused == CONFLICT) {
				o->refused = OK_;
				o->dirty = 1;
				gone_drop(a, o->user);
			}
			continue;
		}
		if (o->refused == OK_) {
			log_kv(LOG_WARN, "tenant loses its user to an older tenant", "ns", o->ns,
			    "name", o->name, "user", o->user, NULL);
			if (strcmp(o->user, win->user) != 0)
				gone_add(a, o->ns, o->user);
			forget(o);
		}
		o->refused = CONFLICT;
		if (strcmp(o->user, win->user) == 0)
			snprintf(why, sizeof(why), "user \"%.63s\" already belongs to tenant "
			    "%.200s/%.200s", o->user, win->ns, win->name);
		else
			snprintf(why, sizeof(why), "namespace %.200s already has tenant %.200s, "
			    "with its own credentials", win->ns, win->name);
		acl_report(a, o, "False", "Conflict", why);
	}
}

/* evaluate - may t have its user?  Reports a refusal at once. */
static void
evaluate(struct acl *a, struct tenant *t)
{
	if (t->bad_reason != NULL) {
		if (t->refused == OK_)
			forget(t);
		t->refused = REFUSED;
		log_kv(LOG_WARN, "tenant refused", "ns", t->ns, "name", t->name, "reason",
		    t->bad_reason, "error", t->bad, NULL);
		acl_report(a, t, "False", t->bad_reason, t->bad);
		return;
	}
	if (t->refused == REFUSED)
		t->refused = CONFLICT;	/* a candidate: resolve decides */
	resolve(a, t->user, t->ns);
}

static void
gone_add(struct acl *a, const char *ns, const char *user)
{
	struct gone *g;

	for (g = a->gone; g != NULL; g = g->next)
		if (strcmp(g->ns, ns) == 0 && strcmp(g->user, user) == 0)
			return;
	g = xcalloc(1, sizeof(*g));
	snprintf(g->ns, sizeof(g->ns), "%s", ns);
	snprintf(g->user, sizeof(g->user), "%s", user);
	g->fresh = 1;
	g->next = a->gone;
	a->gone = g;
}

/* gone_drop - user is wanted again (or deleted everywhere): no deletion pending */
static void
gone_drop(struct acl *a, const char *user)
{
	for (struct gone **pp = &a->gone; *pp != NULL;) {
		if (strcmp((*pp)->user, user) == 0) {
			struct gone *g = *pp;

			*pp = g->next;
			free(g);
		} else {
			pp = &(*pp)->next;
		}
	}
}

int
acl_ns_has_tenant(struct acl *a, const char *ns)
{
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		if (strcmp(t->ns, ns) == 0)
			return 1;
	return 0;
}

/* ---- what sources call ---- */

/* holds_user - ns's saved credentials are for user (cred_load: file or Secret cache) */
static int
holds_user(struct acl *a, const char *ns, const char *user)
{
	char u[ACL_USER_MAX], pw[128];
	int rc = a->src->cred_load(a->src_state, ns, u, sizeof(u), pw, sizeof(pw));

	acl_wipe(pw, sizeof(pw));
	return rc == 0 && strcmp(u, user) == 0;
}

/* a user name as a source gave it, judged whole (acl_user_check) */
struct judged {
	char user[ACL_USER_MAX];	/* the name, or how a refused one is shown */
	const char *reason;		/* refused: why in bad; NULL: allowed */
	char bad[256];
};

/*
 * judge - the len bytes at user, judged whole.  A name that is no C string
 * of at most 63 bytes is refused and kept only to be shown: NULs as '?',
 * cut with "..." (neither is valid in a user, so the shown form can never
 * be provisioned, nor taken for another tenant's user).
 */
static void
judge(struct judged *j, const char *user, size_t len)
{
	size_t n = len < sizeof(j->user) - 1 ? len : sizeof(j->user) - 4;

	j->reason = NULL;
	if (acl_user_check(user, len, &j->reason, j->bad, sizeof(j->bad)) == 0) {
		j->reason = NULL;
		j->bad[0] = '\0';
	}
	for (size_t i = 0; i < n; i++)
		j->user[i] = user[i] != '\0' ? user[i] : '?';
	j->user[n] = '\0';
	if (n < len)
		memcpy(j->user + n, "...", 4);
}

/* judged_set - t asks for j's user */
static void
judged_set(struct tenant *t, const struct judged *j)
{
	memcpy(t->user, j->user, sizeof(t->user));
	memcpy(t->bad, j->bad, sizeof(t->bad));
	t->bad_reason = j->reason;
}

void
acl_tenant_put(struct acl *a, const char *ns, const char *name, const char *user,
    size_t userlen, const char *since, int enabled, int resync)
{
	struct tenant *t = acl_tenant_find(a, ns, name);
	struct judged j;

	judge(&j, user, userlen);
	if (t != NULL)
		t->seen = 1;
	if (!enabled) {
		if (t != NULL)
			acl_tenant_del(a, ns, name);
		return;
	}
	if (t == NULL) {
		t = xcalloc(1, sizeof(*t));
		snprintf(t->ns, sizeof(t->ns), "%s", ns);
		snprintf(t->name, sizeof(t->name), "%s", name);
		judged_set(t, &j);
		snprintf(t->since, sizeof(t->since), "%s", since != NULL ? since : "");
		t->holds = t->bad_reason == NULL && holds_user(a, ns, t->user);
		t->seen = 1;
		t->refused = CONFLICT;	/* a candidate until evaluated */
		t->next = a->tenants;
		a->tenants = t;
		log_kv(LOG_INFO, "tenant added", "ns", ns, "name", name, "user", t->user, NULL);
		evaluate(a, t);
	} else if (strcmp(t->user, j.user) != 0 || strcmp(t->bad, j.bad) != 0) {
		char old[ACL_USER_MAX];

		log_kv(LOG_INFO, "tenant's user changed", "ns", ns, "name", name, "old",
		    t->user, "user", j.user, NULL);
		snprintf(old, sizeof(old), "%s", t->user);
		if (t->refused == OK_)
			gone_add(a, t->ns, t->user);
		forget(t);
		judged_set(t, &j);
		if (t->refused == OK_)
			t->refused = CONFLICT;
		evaluate(a, t);
		/* someone waiting for the old user may have it now */
		resolve(a, old, "\x01");
	} else if (resync && t->refused == OK_) {
		t->dirty = 1;
	}
	acl_kick(a);
}

void
acl_tenant_del(struct acl *a, const char *ns, const char *name)
{
	struct tenant **pp, *t = NULL;

	for (pp = &a->tenants; *pp != NULL; pp = &(*pp)->next) {
		if (strcmp((*pp)->ns, ns) == 0 && strcmp((*pp)->name, name) == 0) {
			t = *pp;
			*pp = t->next;
			break;
		}
	}
	if (t == NULL)
		return;
	log_kv(LOG_INFO, "tenant removed", "ns", ns, "name", name, "user", t->user, NULL);
	if (t->refused == OK_)
		gone_add(a, t->ns, t->user);
	{
		char user[ACL_USER_MAX], tns[NAME_MAX_];

		snprintf(user, sizeof(user), "%s", t->user);
		snprintf(tns, sizeof(tns), "%s", t->ns);
		tenant_free(t);
		/* a tenant refused for a conflict with this one may have its turn now */
		resolve(a, user, tns);
	}
	acl_update_gauge(a);
	acl_kick(a);
}

void
acl_orphan(struct acl *a, const char *ns, const char *user)
{
	const char *reason;
	char why[256];

	if (acl_ns_has_tenant(a, ns) ||
	    acl_user_check(user, strlen(user), &reason, why, sizeof(why)) < 0)
		return;
	log_kv(LOG_INFO, "credentials without a tenant: deleting the user", "ns", ns, "user",
	    user, NULL);
	gone_add(a, ns, user);
	acl_kick(a);
}

void
acl_relist_begin(struct acl *a)
{
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		t->seen = 0;
}

void
acl_relist_end(struct acl *a)
{
	struct tenant *t;

	do {
		for (t = a->tenants; t != NULL && t->seen; t = t->next)
			;
		if (t != NULL) {
			char ns[NAME_MAX_], name[NAME_MAX_];

			snprintf(ns, sizeof(ns), "%s", t->ns);
			snprintf(name, sizeof(name), "%s", t->name);
			acl_tenant_del(a, ns, name);
		}
	} while (t != NULL);
}

void
acl_resync(struct acl *a, const char *ns, const char *name)
{
	if (ns == NULL) {
		log_kv(LOG_INFO, "resync of every tenant requested", NULL);
		a->want_full = 1;
		a->want_why = "requested";
	} else {
		struct tenant *t = acl_tenant_find(a, ns, name);

		if (t == NULL)
			return;
		log_kv(LOG_INFO, "resync requested", "ns", ns, "name", name, NULL);
		t->dirty = t->refused == OK_;
	}
	acl_kick(a);
}

const char *
acl_state_dir(struct acl *a)
{
	return a->dir;
}

/* kick - start a round soon if one is wanted and none is in flight */
void
acl_kick(struct acl *a)
{
	if (a->round == NULL && a->start_timer == 0)
		a->start_timer = stage_add_timer(a->st, 0, acl_round_start, a);
}

/* ---- Sentinel events ---- */

static void
on_event(struct stage *st, const struct acl_event *ev, void *arg)
{
	struct acl *a = arg;
	char port[16];

	(void)st;
	snprintf(port, sizeof(port), "%d", ev->port);
	if (ev->kind == ACL_EV_SWITCH_MASTER) {
		char target[sizeof(a->last_switch)];

		/* every sentinel announces the same failover: act on it once */
		snprintf(target, sizeof(target), "%s:%d", ev->host, ev->port);
		if (strcmp(target, a->last_switch) == 0 && now_ms() - a->last_switch_ms < 60000)
			return;
		memcpy(a->last_switch, target, sizeof(target));
		a->last_switch_ms = now_ms();
		metrics_add(a->m, M_FAILOVER, NULL, 1);
		acl_round_supersede(a);
		log_kv(LOG_WARN, "sentinel failover: re-provisioning every tenant",
		    "master", ev->master_name, "host", ev->host, "port", port, NULL);
		a->want_full = 1;
		a->want_why = "failover";
	} else if (ev->kind == ACL_EV_NODE) {
		int i;

		log_kv(LOG_INFO, "node back: re-provisioning it", "role", ev->role, "host",
		    ev->host, "port", port, NULL);
		for (i = 0; i < a->nwant_nodes; i++)
			if (strcmp(a->want_nodes[i].host, ev->host) == 0 &&
			    a->want_nodes[i].port == ev->port)
				break;
		if (i == a->nwant_nodes && a->nwant_nodes < ACL_MAX_NODES) {
			memset(&a->want_nodes[i], 0, sizeof(a->want_nodes[i]));
			snprintf(a->want_nodes[i].host, ACL_HOST_MAX, "%s", ev->host);
			a->want_nodes[i].port = ev->port;
			a->nwant_nodes++;
		}
	}
	acl_kick(a);
}

static void
on_subscribed(struct stage *st, const char *sentinel, int again, void *arg)
{
	struct acl *a = arg;

	(void)st;
	(void)sentinel;
	if (again) {
		/* events may have been missed while no sentinel listened */
		a->want_full = 1;
		a->want_why = "resubscribed";
		acl_kick(a);
	}
}

static void
resync_cb(struct stage *st, void *arg)
{
	struct acl *a = arg;

	a->want_full = 1;
	a->want_why = "periodic resync";
	acl_kick(a);
	a->resync_timer = stage_add_timer(st, a->resync_ms, resync_cb, a);
}

/* ---- the stage ---- */

/* admin_password - from valkey_admin_password_file, else valkey_admin_password */
static int
admin_password(struct acl *a, struct conf *cf)
{
	const char *file = conf_get(cf, "valkey_admin_password_file");

	if (*file != '\0') {
		size_t len;
		char *text = read_file(file, &len, sizeof(a->admin_pw) - 1);

		if (text == NULL) {
			log_kv(LOG_ERROR, "cannot read valkey_admin_password_file", "file", file,
			    NULL);
			return -1;
		}
		text[strcspn(text, "\r\n")] = '\0';
		snprintf(a->admin_pw, sizeof(a->admin_pw), "%s", text);
		acl_wipe(text, len);
		free(text);
		return 0;
	}
	snprintf(a->admin_pw, sizeof(a->admin_pw), "%s", conf_get(cf, "valkey_admin_password"));
	return 0;
}

static void
define_metrics(struct metrics *m)
{
	metrics_define(m, M_PROV, METRIC_COUNTER, "ACL users provisioned");
	metrics_define(m, M_DEL, METRIC_COUNTER, "ACL users deleted on tenant removal");
	metrics_define(m, M_ERR, METRIC_COUNTER,
	    "ACL errors by operation (upsert, delete, check, discover, credentials)");
	metrics_define(m, M_HEAL, METRIC_COUNTER, "Re-provisions after ACL loss");
	metrics_define(m, M_TENANTS, METRIC_GAUGE, "Current provisioned tenants");
	metrics_define(m, M_FAILOVER, METRIC_COUNTER, "Sentinel +switch-master events detected");
	for (const char *const *op = (const char *const[]){ "upsert", "delete", "check",
	    "discover", "credentials", NULL }; *op != NULL; op++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "operation=\"%s\"", *op);
		metrics_add(m, M_ERR, labels, 0);
	}
	metrics_set(m, M_TENANTS, NULL, 0);
	metrics_add(m, M_PROV, NULL, 0);
	metrics_add(m, M_DEL, NULL, 0);
	metrics_add(m, M_HEAL, NULL, 0);
	metrics_add(m, M_FAILOVER, NULL, 0);
}

static int
acl_init(struct stage *st)
{
	struct acl *a = xcalloc(1, sizeof(*a));
	struct conf *cf = stage_conf(st);
	const char *url = conf_get(cf, "valkey_url"), *sentinels;
	char err[512], pw[256];
	int cluster;

	stage_set_data(st, a);
	a->st = st;
	if ((cluster = kube_configured(cf, err, sizeof(err))) < 0) {
		log_kv(LOG_ERROR, "bad Kubernetes configuration", "error", err, NULL);
		return -1;
	}
	/* against a cluster (kubeconfig, or in a pod): namespaces are the tenants */
	a->src = cluster ? &acl_source_kube : &acl_source_store;
	a->timeout_ms = conf_get_ms(cf, "valkey_timeout");
	a->resync_ms = conf_get_ms(cf, "valkey_acl_resync_period");
	backoff_init(&a->retry, RETRY_MIN, RETRY_MAX);
	snprintf(a->dir, sizeof(a->dir), "%s/acl", conf_get(cf, "state_dir"));
	if (mkdir_p(a->dir, 0700) < 0) {
		log_kv(LOG_ERROR, "cannot make the credentials folder", "dir", a->dir, NULL);
		return -1;
	}
	if (admin_password(a, cf) < 0)
		return -1;
	/* the skeleton serves the process registry on metrics_port or metrics_listen */
	a->m = metrics_proc();
	define_metrics(a->m);
	sentinels = conf_get(cf, "valkey_sentinel_urls");
	if (*url != '\0') {
		a->direct = 1;
		if (acl_parse_addr(url, 0, a->direct_host, sizeof(a->direct_host),
		    &a->direct_port, pw, sizeof(pw)) < 0) {
			log_kv(LOG_ERROR, "valkey_url is not redis://host:port", NULL);
			return -1;
		}
		/* a password in the URL stands for the admin password */
		if (pw[0] != '\0' && a->admin_pw[0] == '\0')
			snprintf(a->admin_pw, sizeof(a->admin_pw), "%s", pw);
		acl_wipe(pw, sizeof(pw));
	} else if (*sentinels != '\0') {
		static const struct acl_sentinel_cbs cbs = { on_event, on_subscribed };

		a->sentinel = acl_sentinel_new(st, sentinels,
		    conf_get(cf, "valkey_sentinel_master_name"), a->timeout_ms, &cbs, a, err,
		    sizeof(err));
		if (a->sentinel == NULL) {
			log_kv(LOG_ERROR, "bad Sentinel configuration", "error", err, NULL);
			return -1;
		}
	} else {
		log_kv(LOG_ERROR, "set valkey_sentinel_urls (VALKEY_SENTINEL_URLS) or "
		    "valkey_url (VALKEY_URL)", NULL);
		return -1;
	}
	if ((a->src_state = a->src->start(a, st)) == NULL || a->src->load(a->src_state) < 0)
		return -1;
	/* decoctl acl resync, whichever source: after load, so the tenants are known */
	if ((a->trigger = acl_trigger_start(a, st)) == NULL)
		return -1;
	a->want_full = 1;
	a->want_why = "start";
	acl_kick(a);
	a->resync_timer = stage_add_timer(st, a->resync_ms, resync_cb, a);
	{
		/* never the URL itself: it may carry a password */
		char nodes[ACL_HOST_MAX + 16];

		snprintf(nodes, sizeof(nodes), "%s:%d", a->direct_host, a->direct_port);
		log_kv(LOG_INFO, "acl ready", "source", a->src->name, "nodes", a->direct ?
		    nodes : "sentinel", NULL);
	}
	return 0;
}

static void
acl_shutdown(struct stage *st)
{
	struct acl *a = stage_data(st);

	if (a == NULL)
		return;
	acl_round_abort(a);
	acl_sentinel_free(a->sentinel);
	acl_trigger_stop(a->trigger);
	if (a->src_state != NULL)
		a->src->stop(a->src_state);
	while (a->tenants != NULL) {
		struct tenant *t = a->tenants;

		a->tenants = t->next;
		tenant_free(t);
	}
	while (a->gone != NULL) {
		struct gone *g = a->gone;

		a->gone = g->next;
		free(g);
	}
	/* a->m is the process registry: not ours to free */
	acl_wipe(a->admin_pw, sizeof(a->admin_pw));
	free(a);
	stage_set_data(st, NULL);
}

static const struct stage_ops ops = {
	.name = STAGE,
	.use_store = 1,
	.init = acl_init,
	.shutdown = acl_shutdown,
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
