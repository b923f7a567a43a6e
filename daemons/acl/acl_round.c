/*
 * acl_round - the acl stage's rounds: what is wanted now (tenants, users to
 * delete, a full resync, nodes named by events) becomes one pipeline per node
 * (ACL GETUSER + SETUSER per tenant, DELUSER per removed user) under one
 * deadline; the answers become conditions, journal rows, counters and retries.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "common/journal.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/acl/acl_impl.h"

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

		if (acl_conn_answered(j->conn))
			j->replies++;	/* it is up (a reply too large): failed, not down */
		snprintf(why, sizeof(why), "%.200s", acl_reply_error(ac));
		job_end(j, why);
		return;
	}
	switch (ref->what) {
	case W_GET:
		if (reply->type == REDIS_REPLY_NIL)
			cl->created = 1;
		else if (reply->type == REDIS_REPLY_ERROR)
			acl_count_err(j->r->a, "check", 1);
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
	if (r->superseded) {
		r->finish_timer = stage_add_timer(r->a->st, 0, round_finish, r);
		return;
	}
	if (t == NULL) {
		snprintf(r->fail_all, sizeof(r->fail_all), "cannot find the Valkey master "
		    "through Sentinel: %.600s", err);
		acl_count_err(r->a, "discover", 1);
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
		acl_wipe(pw, sizeof(pw));
		return 0;
	}
	acl_wipe(pw, sizeof(pw));
	if (acl_password_new(t->password, sizeof(t->password)) < 0) {
		snprintf(err, errlen, "cannot make a password: no randomness from openssl");
		return -1;
	}
	rc = a->src->cred_save(a->src_state, t->ns, t->user, t->password, err, errlen);
	if (rc != 0) {
		acl_wipe(t->password, sizeof(t->password));
		return rc;	/* 1: pending, the source resyncs the tenant when kept */
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
void
acl_round_start(struct stage *st, void *arg)
{
	struct acl *a = arg;
	struct round *r;
	int full = a->want_full, node_only = 0, any = 0, rc;
	char err[512];

	a->start_timer = 0;
	if (a->round != NULL)
		return;		/* kicked again when it ends */
	for (struct tenant *t = a->tenants; t != NULL && !any; t = t->next)
		any = t->dirty && t->refused == OK_;
	/*
	 * a new deletion starts a round; one that failed waits for the retry
	 * (else a node refusing us would be asked again at once, for ever), and
	 * one waiting only for a down node rides along with other rounds
	 */
	for (struct gone *g = a->gone; g != NULL && !any; g = g->next)
		any = g->fresh;
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
		if ((rc = ensure_password(a, t, err, sizeof(err))) > 0)
			continue;
		if (rc < 0) {
			log_kv(LOG_ERROR, "cannot keep the tenant's credentials", "ns", t->ns,
			    "name", t->name, "error", err, NULL);
			acl_count_err(a, "credentials", 1);
			acl_report(a, t, "False", "CredentialsError", err);
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

			g->fresh = 0;
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
	struct tenant *t = acl_tenant_find(a, op->ns, op->name);
	struct buf failed;
	char object[600], detail[700], msg[1024];
	int ok = 0, bad = 0;

	if (t == NULL || strcmp(t->user, op->user) != 0 || t->refused != OK_)
		return 0;	/* removed or changed meanwhile: the next round sees to it */
	journal_obj(object, sizeof(object), "tenant", op->ns, op->name);
	buf_init(&failed);
	for (int k = 0; k < r->njobs; k++) {
		struct cell *cl = &op->cells[k];
		const char *addr = r->jobs[k].addr;

		if (r->jobs[k].down)
			continue;
		if (cl->status == CELL_OK) {
			ok++;
			if (cl->created) {
				int healed = acl_tenant_has_node(t, addr);

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
			acl_tenant_add_node(t, addr);
		} else {
			bad++;
			acl_count_err(a, "upsert", 1);
			buf_printf(&failed, "%s%s (%s)", failed.len ? ", " : "", addr,
			    cl->err[0] ? cl->err : "failed");
		}
	}
	if (r->fail_all[0] != '\0') {
		t->provisioned = 0;
		snprintf(msg, sizeof(msg), "%s; %s", r->fail_all, RETRY_WORDS);
		acl_report(a, t, "False", strstr(r->fail_all, "Sentinel") ?
		    "SentinelUnreachable" : "ProvisionFailed", msg);
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
			acl_report(a, t, "True", "Provisioned", msg);
		}
	} else {
		t->provisioned = 0;
		snprintf(msg, sizeof(msg), "ACL user %s failed on %s; provisioned on %d of %d "
		    "nodes; %s", op->user, failed.data, ok, ok + bad, RETRY_WORDS);
		/* said once: the same failure again is only counted */
		if (acl_report(a, t, "False", "ProvisionFailed", msg))
			log_kv(LOG_WARN, "provisioning failed on some nodes", "ns", op->ns,
			    "name", op->name, "error", msg, NULL);
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

	for (pp = &a->gone; (g = *pp) != NULL; pp = &g->next)
		if (strcmp(g->user, op->user) == 0 && strcmp(g->ns, op->ns) == 0)
			break;
	snprintf(object, sizeof(object), "user/%s", op->user);
	for (int k = 0; k < r->njobs; k++) {
		struct cell *cl = &op->cells[k];

		if (r->jobs[k].down) {
			down = 1;
		} else if (cl->status == CELL_OK) {
			snprintf(detail, sizeof(detail), "ns=%s node=%s", op->ns, r->jobs[k].addr);
			journal_audit(jn, STAGE, object, "acl-delete", detail);
		} else {
			char why[sizeof(g->last)];

			bad = 1;
			acl_count_err(a, "delete", 1);
			snprintf(why, sizeof(why), "%s: %s", r->jobs[k].addr, cl->err);
			/* said once: the same failure again is only counted */
			if (g != NULL && strcmp(g->last, why) != 0) {
				memcpy(g->last, why, sizeof(why));
				log_kv(LOG_WARN, "cannot delete ACL user; retrying with backoff",
				    "user", op->user, "node", r->jobs[k].addr, "error", cl->err,
				    NULL);
			}
		}
	}
	if (bad || r->node_only)
		return bad;
	/* still wanted (a tenant took the user back meanwhile): keep it */
	for (struct tenant *t = a->tenants; t != NULL; t = t->next)
		if (strcmp(t->user, op->user) == 0 && t->refused == OK_)
			return 0;
	if (g == NULL)
		return 0;
	if (!g->counted) {
		g->counted = 1;
		metrics_add(a->m, M_DEL, NULL, 1);
		log_kv(LOG_INFO, down ? "ACL user deleted on every reachable node" :
		    "ACL user deleted on every node", "ns", op->ns, "user", op->user, NULL);
		if (!acl_ns_has_tenant(a, op->ns) && a->src->cred_remove(a->src_state, op->ns) < 0)
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
	acl_kick(a);
}

static void
round_free(struct round *r)
{
	for (size_t i = 0; i < r->nops; i++) {
		acl_wipe(r->ops[i].password, sizeof(r->ops[i].password));
		free(r->ops[i].cells);
	}
	for (int k = 0; k < r->njobs; k++)
		free(r->jobs[k].refs);
	free(r->ops);
	free(r->jobs);
	buf_free(&r->skipped);
	free(r);
}

/* round_finish - every node answered or failed: record, acl_report, count, go on */
static void
round_finish(struct stage *st, void *arg)
{
	struct round *r = arg;
	struct acl *a = r->a;
	struct journal *jn = stage_journal(st);
	int64_t nodes_done = now_ms();
	int failed = 0, began;
	char ms[32], rms[32], nt[32], nn[32], retry[32];

	if (r->superseded) {
		log_kv(LOG_INFO, "round superseded by a failover", "trigger", r->trigger, NULL);
		a->round = NULL;
		round_free(r);
		acl_kick(a);
		return;
	}

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
	if (r->fail_all[0] != '\0')
		failed = 1;
	if (failed && a->retry_timer == 0) {
		/* the next full round after a pause that doubles: never at once */
		int64_t wait = backoff_next(&a->retry);

		a->retry_at = now_ms() + wait;
		a->retry_timer = stage_add_timer(st, wait, retry_cb, a);
	} else if (!failed) {
		backoff_reset(&a->retry);
		a->last_fail[0] = '\0';
	}
	if (failed)
		snprintf(retry, sizeof(retry), "%lld", (long long)(a->retry_at - now_ms()));
	else
		snprintf(retry, sizeof(retry), "-");
	if (r->fail_all[0] != '\0' && strcmp(r->fail_all, a->last_fail) != 0) {
		/* said once: the same failure again shows only in "round done" */
		snprintf(a->last_fail, sizeof(a->last_fail), "%s", r->fail_all);
		log_kv(LOG_ERROR, "round failed; retrying with backoff", "error", r->fail_all,
		    "retry_in_ms", retry, NULL);
	}
	acl_update_gauge(a);
	/* ms: until every node answered; report_ms: journal, conditions, counters */
	snprintf(ms, sizeof(ms), "%lld", (long long)(nodes_done - r->started));
	snprintf(rms, sizeof(rms), "%lld", (long long)(now_ms() - nodes_done));
	snprintf(nt, sizeof(nt), "%zu", r->nops);
	snprintf(nn, sizeof(nn), "%d", r->njobs);
	log_kv(failed ? LOG_WARN : LOG_INFO, "round done", "trigger", r->trigger, "ops", nt,
	    "nodes", nn, "down", r->skipped.len ? r->skipped.data : "-", "ms", ms,
	    "report_ms", rms, "result", failed ? "failed somewhere" : "ok",
	    "retry_in_ms", retry, NULL);
	if (a->src->flush != NULL)
		a->src->flush(a->src_state);
	a->round = NULL;
	round_free(r);
	acl_kick(a);
}

void
acl_round_abort(struct acl *a)
{
	struct round *r = a->round;

	if (r == NULL)
		return;
	for (int k = 0; k < r->njobs; k++) {
		struct acl_conn *c = r->jobs[k].conn;

		r->jobs[k].closed = 1;
		r->jobs[k].conn = NULL;
		acl_resolve_cancel(r->jobs[k].res);
		r->jobs[k].res = NULL;
		if (r->jobs[k].deadline > 0)
			stage_cancel_timer(a->st, r->jobs[k].deadline);
		acl_conn_close(c);
	}
	if (r->finish_timer > 0)
		stage_cancel_timer(a->st, r->finish_timer);
	round_free(r);
	a->round = NULL;
}

void
acl_round_supersede(struct acl *a)
{
	struct round *r = a->round;

	if (r == NULL || r->superseded)
		return;
	r->superseded = 1;
	/* the last job to end schedules round_finish; discovery does in on_topology */
	for (int k = 0; k < r->njobs; k++)
		job_end(&r->jobs[k], "superseded by a failover");
}
