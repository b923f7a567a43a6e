/*
 * acl - the acl stage (SPEC 4.6): tenants, users to delete, and the one round in
 * flight, which sends each node (from Sentinel, VALKEY_URL or an event) one
 * pipeline of ACL GETUSER + SETUSER per tenant and DELUSER per removed user under
 * one deadline; requests arriving meanwhile merge into the next round.  Passwords
 * stay in memory and the source's credentials: never a log, row or condition.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/acl/acl.h"
#include "daemons/acl/acl_cmd.h"
#include "daemons/acl/acl_cred.h"
#include "daemons/acl/acl_redis.h"
#include "daemons/acl/acl_sentinel.h"

#define STAGE "acl"
#define RETRY_MIN 1000
#define RETRY_MAX 30000
#define NAME_MAX_ 254

#define M_PROV "deco_operator_valkey_acl_provisioned_total"
#define M_DEL "deco_operator_valkey_acl_deleted_total"
#define M_ERR "deco_operator_valkey_acl_errors_total"
#define M_HEAL "deco_operator_valkey_acl_self_healed_total"
#define M_TENANTS "deco_operator_valkey_tenants_provisioned"
#define M_FAILOVER "deco_operator_valkey_sentinel_failovers_total"

enum refusal { OK_ = 0, REFUSED, CONFLICT };

struct tenant {
	char ns[NAME_MAX_], name[NAME_MAX_], user[ACL_USER_MAX];
	enum refusal refused;
	char password[ACL_PW_LEN + 1];
	int has_pw;
	int dirty;		/* wants a round */
	int provisioned;	/* the last round left it on every node */
	int seen;		/* put since acl_relist_begin */
	char since[40];		/* metadata.created_at: the older claim wins */
	char **okn;		/* nodes ("host:port") it was provisioned on */
	size_t nokn;
	char last[1024];	/* what was reported last */
	struct tenant *next;
};

/* a user to delete on every node; its credentials go once it is gone */
struct gone {
	char ns[NAME_MAX_], user[ACL_USER_MAX];
	int counted;		/* gone from every reachable node: counted, creds removed */
	struct gone *next;
};

enum { CELL_PENDING = 0, CELL_OK, CELL_FAILED };

struct cell {
	int status;
	int created;		/* GETUSER said nil: SETUSER made it */
	char err[256];
};

struct rop {
	int del;
	char ns[NAME_MAX_], name[NAME_MAX_], user[ACL_USER_MAX];
	char password[ACL_PW_LEN + 1];
	struct cell *cells;	/* one per node */
};

struct round;

struct job {
	struct round *r;
	int idx;
	char host[ACL_HOST_MAX];
	int port;
	char addr[ACL_HOST_MAX + 8];
	struct acl_conn *conn;
	struct acl_resolve *res;	/* the node's name being looked up */
	int pending;
	int replies;		/* answers received: 0 means never reached */
	int maybe_down;		/* Sentinel flags it down or not (yet) connected */
	int down;		/* maybe_down and never reached: skipped, not failed */
	int closed;
	int64_t deadline;
	struct cref *refs;
};

enum { W_GET, W_SET, W_DEL };

struct cref {
	struct job *j;
	int op;
	int what;
};

struct round {
	struct acl *a;
	const char *trigger;
	int node_only;		/* event about one node: no discovery, no conditions */
	struct rop *ops;
	size_t nops;
	struct job *jobs;
	int njobs;
	int jobs_left;
	struct buf skipped;	/* nodes Sentinel says are down */
	char fail_all[768];	/* the round could not reach any node */
	int64_t started;
	int64_t finish_timer;
};

struct acl {
	struct stage *st;
	const struct acl_source *src;
	void *src_state;
	struct acl_sentinel *sentinel;
	int direct;
	char direct_host[ACL_HOST_MAX];
	int direct_port;
	char admin_pw[512];
	char dir[4096];
	int64_t timeout_ms, resync_ms;
	struct tenant *tenants;
	struct gone *gone;
	struct round *round;
	int want_full;
	const char *want_why;
	struct acl_node_addr want_nodes[ACL_MAX_NODES];
	int nwant_nodes;
	int64_t start_timer, retry_timer, resync_timer;
	int64_t retry_ms;
	char last_switch[ACL_HOST_MAX + 8];	/* the newest failover's new master */
	int64_t last_switch_ms;
	struct metrics *m;
};

static void kick(struct acl *a);

/* ---- small helpers ---- */

static void
wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n-- > 0)
		*v++ = 0;
}

static struct tenant *
tenant_find(struct acl *a, const char *ns, const char *name)
{
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		if (strcmp(t->ns, ns) == 0 && strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

static int
tenant_has_node(const struct tenant *t, const char *addr)
{
	for (size_t i = 0; i < t->nokn; i++)
		if (strcmp(t->okn[i], addr) == 0)
			return 1;
	return 0;
}

static void
tenant_add_node(struct tenant *t, const char *addr)
{
	if (tenant_has_node(t, addr))
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
	wipe(t->password, sizeof(t->password));
	free(t);
}

static void
count_err(struct acl *a, const char *op, double n)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "operation=\"%s\"", op);
	metrics_add(a->m, M_ERR, labels, n);
}

static void
update_gauge(struct acl *a)
{
	double n = 0;

	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		n += t->provisioned;
	metrics_set(a->m, M_TENANTS, NULL, n);
}

/* report - the tenant's condition, through the source, only when it changed */
static void
report(struct acl *a, struct tenant *t, const char *status, const char *reason,
    const char *message)
{
	char cur[sizeof(t->last)];

	snprintf(cur, sizeof(cur), "%s|%s|%s|%s", t->user, status, reason, message);
	if (strcmp(cur, t->last) == 0)
		return;
	memcpy(t->last, cur, sizeof(cur));
	a->src->report(a->src_state, t->ns, t->name, t->user, status, reason, message);
}

/* older - does a claim its user and namespace before b (created first, then by name)? */
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
	wipe(t->password, sizeof(t->password));
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
		report(a, o, "False", "Conflict", why);
	}
}

/* evaluate - may t have its user?  Reports a refusal at once. */
static void
evaluate(struct acl *a, struct tenant *t)
{
	const char *reason = NULL;
	char why[600];

	if (acl_user_check(t->user, &reason, why, sizeof(why)) < 0) {
		if (t->refused == OK_)
			forget(t);
		t->refused = REFUSED;
		log_kv(LOG_WARN, "tenant refused", "ns", t->ns, "name", t->name, "reason",
		    reason, "error", why, NULL);
		report(a, t, "False", reason, why);
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

static int
ns_has_tenant(struct acl *a, const char *ns)
{
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		if (strcmp(t->ns, ns) == 0)
			return 1;
	return 0;
}

/* ---- what sources call ---- */

void
acl_tenant_put(struct acl *a, const char *ns, const char *name, const char *user,
    const char *since, int enabled, int resync)
{
	struct tenant *t = tenant_find(a, ns, name);

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
		snprintf(t->user, sizeof(t->user), "%s", user);
		snprintf(t->since, sizeof(t->since), "%s", since != NULL ? since : "");
		t->seen = 1;
		t->refused = CONFLICT;	/* a candidate until evaluated */
		t->next = a->tenants;
		a->tenants = t;
		log_kv(LOG_INFO, "tenant added", "ns", ns, "name", name, "user", user, NULL);
		evaluate(a, t);
	} else if (strcmp(t->user, user) != 0) {
		char old[ACL_USER_MAX];

		log_kv(LOG_INFO, "tenant's user changed", "ns", ns, "name", name, "old",
		    t->user, "user", user, NULL);
		snprintf(old, sizeof(old), "%s", t->user);
		if (t->refused == OK_)
			gone_add(a, t->ns, t->user);
		forget(t);
		snprintf(t->user, sizeof(t->user), "%s", user);
		if (t->refused == OK_)
			t->refused = CONFLICT;
		evaluate(a, t);
		/* someone waiting for the old user may have it now */
		resolve(a, old, "\x01");
	} else if (resync && t->refused == OK_) {
		t->dirty = 1;
	}
	kick(a);
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
	update_gauge(a);
	kick(a);
}

void
acl_orphan(struct acl *a, const char *ns, const char *user)
{
	const char *reason;
	char why[256];

	if (ns_has_tenant(a, ns) || acl_user_check(user, &reason, why, sizeof(why)) < 0)
		return;
	log_kv(LOG_INFO, "credentials without a tenant: deleting the user", "ns", ns, "user",
	    user, NULL);
	gone_add(a, ns, user);
	kick(a);
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
		struct tenant *t = tenant_find(a, ns, name);

		if (t == NULL)
			return;
		log_kv(LOG_INFO, "resync requested", "ns", ns, "name", name, NULL);
		t->dirty = t->refused == OK_;
	}
	kick(a);
}

const char *
acl_state_dir(struct acl *a)
{
	return a->dir;
}

/* ---- rounds ---- */

static void round_finish(struct stage *st, void *arg);

/* job_end - this node is done (why NULL) or failed (every pending cell gets why) */
static void
job_end(struct job *j, const char *why)
{
	struct round *r = j->r;
	struct acl_conn *c = j->conn;

	if (j->closed)
		return;
	j->closed = 1;
	j->conn = NULL;
	acl_resolve_cancel(j->res);
	j->res = NULL;
	if (j->deadline > 0)
		stage_cancel_timer(r->a->st, j->deadline);
	j->deadline = 0;
	for (size_t i = 0; i < r->nops; i++) {
		struct cell *cl = &r->ops[i].cells[j->idx];

		if (cl->status == CELL_PENDING) {
			cl->status = CELL_FAILED;
			snprintf(cl->err, sizeof(cl->err), "%s", why != NULL ? why :
			    "no answer");
		}
	}
	acl_conn_close(c);
	if (--r->jobs_left == 0 && r->finish_timer == 0)
		r->finish_timer = stage_add_timer(r->a->st, 0, round_finish, r);
}

static void
on_reply(redisAsyncContext *ac, void *rp, void *priv)
{
	struct cref *ref = priv;
	struct job *j = ref->j;
	struct rop *op = &j->r->ops[ref->op];
	struct cell *cl = &op->cells[j->idx];
	redisReply *reply = rp;

	if (j->closed || j->conn == NULL || ac->data != (void *)j->conn)
		return;
	if (reply != NULL)
		j->replies++;
	if (reply == NULL) {
		char why[256];

		snprintf(why, sizeof(why), "%.200s", acl_reply_error(ac));
		job_end(j, why);
		return;
	}
	switch (ref->what) {
	case W_GET:
		if (reply->type == REDIS_REPLY_NIL)
			cl->created = 1;
		else if (reply->type == REDIS_REPLY_ERROR)
			count_err(j->r->a, "check", 1);
		break;
	case W_SET:
	case W_DEL:
		if (reply->type == REDIS_REPLY_ERROR) {
			char err[256];

			snprintf(err, sizeof(err), "%.200s", reply->str);
			acl_scrub(err, sizeof(err), op->password);
			cl->status = CELL_FAILED;
			snprintf(cl->err, sizeof(cl->err), "%s", err);
		} else {
			cl->status = CELL_OK;
		}
		break;
	}
	if (--j->pending == 0)
		job_end(j, NULL);
}

static void
job_down(struct acl_conn *c, const char *why, void *arg)
{
	struct job *j = arg;

	if (c != j->conn)
		return;
	if (acl_conn_answered(c))
		j->replies++;	/* refused us, but it is up: a failure, not "down" */
	j->conn = NULL;		/* hiredis frees it */
	job_end(j, why);
}

static void
job_timeout(struct stage *st, void *arg)
{
	struct job *j = arg;
	char why[64];

	(void)st;
	j->deadline = 0;
	snprintf(why, sizeof(why), "no answer within %lld ms", (long long)j->r->a->timeout_ms);
	job_end(j, why);
}

/* job_resolved - the node's address is known: connect and pipeline every op */
static void
job_resolved(struct stage *st, const char *ip, const char *err, void *arg)
{
	struct job *j = arg;
	struct round *r = j->r;
	struct acl *a = r->a;
	char cerr[512];
	size_t k = 0;

	(void)st;
	j->res = NULL;
	if (ip == NULL) {
		job_end(j, err);
		return;
	}
	j->refs = xcalloc(2 * r->nops + 1, sizeof(*j->refs));
	j->conn = acl_conn_open(a->st, ip, j->port, a->admin_pw, job_down, j, cerr,
	    sizeof(cerr));
	if (j->conn == NULL) {
		job_end(j, cerr);
		return;
	}
	for (size_t i = 0; i < r->nops; i++) {
		struct rop *op = &r->ops[i];
		struct acl_argv av;
		int rc = 0;

		if (op->del) {
			acl_deluser_argv(&av, op->user);
			j->refs[k] = (struct cref){ j, (int)i, W_DEL };
			rc |= acl_conn_cmd(j->conn, on_reply, &j->refs[k++], av.argc,
			    (const char **)av.argv, av.len);
			acl_argv_free(&av);
			j->pending += 1;
		} else {
			acl_getuser_argv(&av, op->user);
			j->refs[k] = (struct cref){ j, (int)i, W_GET };
			rc |= acl_conn_cmd(j->conn, on_reply, &j->refs[k++], av.argc,
			    (const char **)av.argv, av.len);
			acl_argv_free(&av);
			acl_setuser_argv(&av, op->user, op->password);
			j->refs[k] = (struct cref){ j, (int)i, W_SET };
			rc |= acl_conn_cmd(j->conn, on_reply, &j->refs[k++], av.argc,
			    (const char **)av.argv, av.len);
			acl_argv_free(&av);
			j->pending += 2;
		}
		if (rc != 0) {
			job_end(j, "cannot queue commands");
			return;
		}
	}
}

/* job_start - under the round's deadline: look the node up, then job_resolved */
static void
job_start(struct job *j)
{
	struct acl *a = j->r->a;

	if (j->r->nops == 0) {
		job_end(j, NULL);	/* nothing to say to it */
		return;
	}
	j->deadline = stage_add_timer(a->st, a->timeout_ms, job_timeout, j);
	j->res = acl_resolve_start(a->st, j->host, job_resolved, j);
}

/* round_nodes - start one job per node (host, port pairs) */
static void
round_nodes(struct round *r, const struct acl_node_addr *nodes, int n)
{
	int k = 0;

	r->jobs = xcalloc((size_t)n + 1, sizeof(*r->jobs));
	for (int i = 0; i < n; i++) {
		/*
		 * a node Sentinel flags down (or has not reconnected to since a
		 * failover reset its list) is still tried: if it answers it is
		 * provisioned; if it cannot be reached it counts as down, not failed
		 */
		r->jobs[k].r = r;
		r->jobs[k].idx = k;
		r->jobs[k].maybe_down = nodes[i].down;
		snprintf(r->jobs[k].host, sizeof(r->jobs[k].host), "%s", nodes[i].host);
		r->jobs[k].port = nodes[i].port;
		snprintf(r->jobs[k].addr, sizeof(r->jobs[k].addr), "%s:%d", nodes[i].host,
		    nodes[i].port);
		k++;
	}
	r->njobs = k;
	r->jobs_left = k;
	for (size_t i = 0; i < r->nops; i++)
		r->ops[i].cells = xcalloc((size_t)k + 1, sizeof(struct cell));
	if (k == 0) {
		snprintf(r->fail_all, sizeof(r->fail_all), "no Valkey node to provision");
		r->finish_timer = stage_add_timer(r->a->st, 0, round_finish, r);
		return;
	}
	for (int i = 0; i < k; i++)
		job_start(&r->jobs[i]);
}

static void
on_topology(struct stage *st, const struct acl_topology *t, const char *err, void *arg)
{
	struct round *r = arg;

	(void)st;
	if (t == NULL) {
		snprintf(r->fail_all, sizeof(r->fail_all), "cannot find the Valkey master "
		    "through Sentinel: %.600s", err);
		count_err(r->a, "discover", 1);
		for (size_t i = 0; i < r->nops; i++)
			r->ops[i].cells = xcalloc(1, sizeof(struct cell));
		r->finish_timer = stage_add_timer(r->a->st, 0, round_finish, r);
		return;
	}
	round_nodes(r, t->node, t->n);
}

/* ensure_password - the tenant's password: in memory, from the source, or new */
static int
ensure_password(struct acl *a, struct tenant *t, char *err, size_t errlen)
{
	char user[ACL_USER_MAX], pw[128];
	int rc;

	if (t->has_pw)
		return 0;
	rc = a->src->cred_load(a->src_state, t->ns, user, sizeof(user), pw, sizeof(pw));
	if (rc == 0 && strcmp(user, t->user) == 0 && acl_password_valid(pw)) {
		memcpy(t->password, pw, ACL_PW_LEN + 1);
		t->has_pw = 1;
		wipe(pw, sizeof(pw));
		return 0;
	}
	wipe(pw, sizeof(pw));
	if (acl_password_new(t->password, sizeof(t->password)) < 0) {
		snprintf(err, errlen, "cannot make a password: no randomness from openssl");
		return -1;
	}
	if (a->src->cred_save(a->src_state, t->ns, t->user, t->password, err, errlen) < 0) {
		wipe(t->password, sizeof(t->password));
		return -1;
	}
	t->has_pw = 1;
	return 0;
}

static struct rop *
round_op(struct round *r)
{
	r->ops = xrealloc(r->ops, (r->nops + 1) * sizeof(*r->ops));
	memset(&r->ops[r->nops], 0, sizeof(r->ops[0]));
	return &r->ops[r->nops++];
}

/* round_start - take what is wanted now into one round and start it */
static void
round_start(struct stage *st, void *arg)
{
	struct acl *a = arg;
	struct round *r;
	int full = a->want_full, node_only = 0, any = 0;
	char err[512];

	a->start_timer = 0;
	if (a->round != NULL)
		return;		/* kicked again when it ends */
	for (struct tenant *t = a->tenants; t != NULL && !any; t = t->next)
		any = t->dirty && t->refused == OK_;
	/* a deletion only waiting for a down node rides along, it starts nothing */
	for (struct gone *g = a->gone; g != NULL && !any; g = g->next)
		any = !g->counted;
	if (!full && !any) {
		if (a->nwant_nodes == 0)
			return;
		node_only = 1;
	}
	r = xcalloc(1, sizeof(*r));
	r->a = a;
	r->started = now_ms();
	r->node_only = node_only;
	r->trigger = full ? (a->want_why ? a->want_why : "resync") :
	    node_only ? "node event" : "tenant change";
	buf_init(&r->skipped);
	a->round = r;
	a->want_full = 0;
	a->want_why = NULL;
	for (struct tenant *t = a->tenants; t != NULL; t = t->next) {
		struct rop *op;

		if (t->refused != OK_ || !(full || node_only || t->dirty))
			continue;
		t->dirty = 0;
		if (ensure_password(a, t, err, sizeof(err)) < 0) {
			log_kv(LOG_ERROR, "cannot keep the tenant's credentials", "ns", t->ns,
			    "name", t->name, "error", err, NULL);
			count_err(a, "credentials", 1);
			report(a, t, "False", "CredentialsError", err);
			continue;
		}
		op = round_op(r);
		snprintf(op->ns, sizeof(op->ns), "%s", t->ns);
		snprintf(op->name, sizeof(op->name), "%s", t->name);
		snprintf(op->user, sizeof(op->user), "%s", t->user);
		memcpy(op->password, t->password, sizeof(op->password));
	}
	{
		for (struct gone *g = a->gone; g != NULL; g = g->next) {
			struct rop *op = round_op(r);

			op->del = 1;
			snprintf(op->ns, sizeof(op->ns), "%s", g->ns);
			snprintf(op->user, sizeof(op->user), "%s", g->user);
		}
	}
	if (a->direct) {
		struct acl_node_addr n;

		memset(&n, 0, sizeof(n));
		snprintf(n.host, sizeof(n.host), "%s", a->direct_host);
		n.port = a->direct_port;
		round_nodes(r, &n, 1);
	} else if (node_only) {
		struct acl_node_addr nodes[ACL_MAX_NODES];
		int n = a->nwant_nodes;

		memcpy(nodes, a->want_nodes, (size_t)n * sizeof(nodes[0]));
		a->nwant_nodes = 0;
		round_nodes(r, nodes, n);
	} else {
		/* a full round covers any node an event named, too */
		a->nwant_nodes = 0;
		acl_sentinel_discover(a->sentinel, on_topology, r);
	}
	(void)st;
}

/* finish_op - apply one upsert's results to its tenant; 1 if it failed somewhere */
static int
finish_upsert(struct acl *a, struct round *r, struct rop *op, struct journal *jn)
{
	struct tenant *t = tenant_find(a, op->ns, op->name);
	struct buf failed;
	char object[600], detail[700], msg[1024];
	int ok = 0, bad = 0;

	if (t == NULL || strcmp(t->user, op->user) != 0 || t->refused != OK_)
		return 0;	/* removed or changed meanwhile: the next round sees to it */
	snprintf(object, sizeof(object), "tenant/%s/%s", op->ns, op->name);
	buf_init(&failed);
	for (int k = 0; k < r->njobs; k++) {
		struct cell *cl = &op->cells[k];
		const char *addr = r->jobs[k].addr;

		if (r->jobs[k].down)
			continue;
		if (cl->status == CELL_OK) {
			ok++;
			if (cl->created) {
				int healed = tenant_has_node(t, addr);

				if (healed) {
					metrics_add(a->m, M_HEAL, NULL, 1);
					log_kv(LOG_WARN, "ACL user was missing; re-created",
					    "ns", op->ns, "name", op->name, "user", op->user,
					    "node", addr, NULL);
				}
				snprintf(detail, sizeof(detail), "user=%s node=%s%s", op->user,
				    addr, healed ? " self_heal=1" : "");
				journal_audit(jn, STAGE, object, "acl-provision", detail);
			}
			tenant_add_node(t, addr);
		} else {
			bad++;
			count_err(a, "upsert", 1);
			buf_printf(&failed, "%s%s (%s)", failed.len ? ", " : "", addr,
			    cl->err[0] ? cl->err : "failed");
		}
	}
	if (r->fail_all[0] != '\0') {
		t->provisioned = 0;
		report(a, t, "False", strstr(r->fail_all, "Sentinel") ?
		    "SentinelUnreachable" : "ProvisionFailed", r->fail_all);
		buf_free(&failed);
		return 1;
	}
	if (bad == 0) {
		metrics_add(a->m, M_PROV, NULL, 1);
		if (!r->node_only) {
			t->provisioned = 1;
			/*
			 * the same words whatever the node count, so a failover or a
			 * node going down rewrites no condition (the round's log line
			 * names the nodes that were down)
			 */
			snprintf(msg, sizeof(msg), "ACL user %s provisioned on the master and "
			    "every replica", op->user);
			report(a, t, "True", "Provisioned", msg);
		}
	} else {
		t->provisioned = 0;
		snprintf(msg, sizeof(msg), "ACL user %s failed on %s; provisioned on %d of %d "
		    "nodes", op->user, failed.data, ok, ok + bad);
		log_kv(LOG_WARN, "provisioning failed on some nodes", "ns", op->ns, "name",
		    op->name, "error", msg, NULL);
		report(a, t, "False", "ProvisionFailed", msg);
	}
	buf_free(&failed);
	return bad > 0;
}

/*
 * finish_delete - apply one deletion's results; 1 if it failed somewhere.
 * A node that was down keeps the deletion pending (every later round,
 * node events included, sends DELUSER again) but is no failure.
 */
static int
finish_delete(struct acl *a, struct round *r, struct rop *op, struct journal *jn)
{
	char object[600], detail[700];
	int bad = r->fail_all[0] != '\0', down = 0;
	struct gone *g, **pp;

	snprintf(object, sizeof(object), "user/%s", op->user);
	for (int k = 0; k < r->njobs; k++) {
		struct cell *cl = &op->cells[k];

		if (r->jobs[k].down) {
			down = 1;
		} else if (cl->status == CELL_OK) {
			snprintf(detail, sizeof(detail), "ns=%s node=%s", op->ns, r->jobs[k].addr);
			journal_audit(jn, STAGE, object, "acl-delete", detail);
		} else {
			bad = 1;
			count_err(a, "delete", 1);
			log_kv(LOG_WARN, "cannot delete ACL user; will retry", "user", op->user,
			    "node", r->jobs[k].addr, "error", cl->err, NULL);
		}
	}
	if (bad || r->node_only)
		return bad;
	/* still wanted (a tenant took the user back meanwhile): keep it */
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		if (strcmp(t->user, op->user) == 0 && t->refused == OK_)
			return 0;
	for (pp = &a->gone; (g = *pp) != NULL; pp = &g->next)
		if (strcmp(g->user, op->user) == 0 && strcmp(g->ns, op->ns) == 0)
			break;
	if (g == NULL)
		return 0;
	if (!g->counted) {
		g->counted = 1;
		metrics_add(a->m, M_DEL, NULL, 1);
		log_kv(LOG_INFO, down ? "ACL user deleted on every reachable node" :
		    "ACL user deleted on every node", "ns", op->ns, "user", op->user, NULL);
		if (!ns_has_tenant(a, op->ns) && a->src->cred_remove(a->src_state, op->ns) < 0)
			log_kv(LOG_WARN, "cannot remove the credentials", "ns", op->ns, NULL);
	}
	if (!down) {
		*pp = g->next;
		free(g);
	}
	return 0;
}

static void
retry_cb(struct stage *st, void *arg)
{
	struct acl *a = arg;

	(void)st;
	a->retry_timer = 0;
	a->want_full = 1;
	a->want_why = "retry";
	kick(a);
}

static void
round_free(struct round *r)
{
	for (size_t i = 0; i < r->nops; i++) {
		wipe(r->ops[i].password, sizeof(r->ops[i].password));
		free(r->ops[i].cells);
	}
	for (int k = 0; k < r->njobs; k++)
		free(r->jobs[k].refs);
	free(r->ops);
	free(r->jobs);
	buf_free(&r->skipped);
	free(r);
}

/* round_finish - every node answered or failed: record, report, count, go on */
static void
round_finish(struct stage *st, void *arg)
{
	struct round *r = arg;
	struct acl *a = r->a;
	struct journal *jn = stage_journal(st);
	int64_t nodes_done = now_ms();
	int failed = 0, began;
	char ms[32], rms[32], nt[32], nn[32];

	for (int k = 0; k < r->njobs; k++) {
		struct job *j = &r->jobs[k];

		if (j->maybe_down && j->replies == 0 && r->nops > 0 &&
		    r->ops[0].cells[k].status == CELL_FAILED) {
			j->down = 1;
			buf_printf(&r->skipped, "%s%s", r->skipped.len ? ", " : "", j->addr);
		}
	}
	began = journal_begin(jn) == 0;
	for (size_t i = 0; i < r->nops; i++)
		failed |= r->ops[i].del ? finish_delete(a, r, &r->ops[i], jn) :
		    finish_upsert(a, r, &r->ops[i], jn);
	if (began && journal_commit(jn) < 0)
		log_kv(LOG_WARN, "journal commit failed", "error", journal_error(jn), NULL);
	if (r->fail_all[0] != '\0') {
		failed = 1;
		log_kv(LOG_ERROR, "round failed", "error", r->fail_all, NULL);
	}
	update_gauge(a);
	/* ms: until every node answered; report_ms: journal, conditions, counters */
	snprintf(ms, sizeof(ms), "%lld", (long long)(nodes_done - r->started));
	snprintf(rms, sizeof(rms), "%lld", (long long)(now_ms() - nodes_done));
	snprintf(nt, sizeof(nt), "%zu", r->nops);
	snprintf(nn, sizeof(nn), "%d", r->njobs);
	log_kv(failed ? LOG_WARN : LOG_INFO, "round done", "trigger", r->trigger, "ops", nt,
	    "nodes", nn, "down", r->skipped.len ? r->skipped.data : "-", "ms", ms,
	    "report_ms", rms, "result", failed ? "failed somewhere" : "ok", NULL);
	if (a->src->flush != NULL)
		a->src->flush(a->src_state);
	a->round = NULL;
	round_free(r);
	if (failed) {
		if (a->retry_timer == 0) {
			a->retry_timer = stage_add_timer(st, a->retry_ms, retry_cb, a);
			a->retry_ms = a->retry_ms * 2 < RETRY_MAX ? a->retry_ms * 2 : RETRY_MAX;
		}
	} else {
		a->retry_ms = RETRY_MIN;
	}
	kick(a);
}

/* kick - start a round soon if one is wanted and none is in flight */
static void
kick(struct acl *a)
{
	if (a->round == NULL && a->start_timer == 0)
		a->start_timer = stage_add_timer(a->st, 0, round_start, a);
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
	kick(a);
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
		kick(a);
	}
}

static void
resync_cb(struct stage *st, void *arg)
{
	struct acl *a = arg;

	a->want_full = 1;
	a->want_why = "periodic resync";
	kick(a);
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
		wipe(text, len);
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
	int port = (int)conf_get_int(cf, "metrics_port");

	stage_set_data(st, a);
	a->st = st;
	a->src = &acl_source_store;
	a->timeout_ms = conf_get_ms(cf, "valkey_timeout");
	a->resync_ms = conf_get_ms(cf, "valkey_acl_resync_period");
	a->retry_ms = RETRY_MIN;
	snprintf(a->dir, sizeof(a->dir), "%s/acl", conf_get(cf, "state_dir"));
	if (mkdir_p(a->dir, 0700) < 0) {
		log_kv(LOG_ERROR, "cannot make the credentials folder", "dir", a->dir, NULL);
		return -1;
	}
	if (admin_password(a, cf) < 0)
		return -1;
	a->m = metrics_new();
	define_metrics(a->m);
	if (metrics_serve(a->m, port, err, sizeof(err)) < 0) {
		log_kv(LOG_ERROR, "metrics", "error", err, NULL);
		return -1;
	}
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
		wipe(pw, sizeof(pw));
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
	a->want_full = 1;
	a->want_why = "start";
	kick(a);
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
	if (a->round != NULL) {
		struct round *r = a->round;

		for (int k = 0; k < r->njobs; k++) {
			struct acl_conn *c = r->jobs[k].conn;

			r->jobs[k].closed = 1;
			r->jobs[k].conn = NULL;
			acl_resolve_cancel(r->jobs[k].res);
			r->jobs[k].res = NULL;
			if (r->jobs[k].deadline > 0)
				stage_cancel_timer(st, r->jobs[k].deadline);
			acl_conn_close(c);
		}
		if (r->finish_timer > 0)
			stage_cancel_timer(st, r->finish_timer);
		round_free(r);
		a->round = NULL;
	}
	acl_sentinel_free(a->sentinel);
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
	metrics_free(a->m);
	wipe(a->admin_pw, sizeof(a->admin_pw));
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
