/*
 * acl_sentinel - discovery tries the sentinels in turn (the last one that answered
 * first), both questions pipelined under one deadline.  Every sentinel gets its
 * own subscription, reconnected after 100 ms doubling to 5 s: their events differ
 * (often only a follower sees an old master come back).  Hiredis calls in here
 * from its own code, so new work always starts from a zero-delay timer.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "common/backoff.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/acl/acl_redis.h"
#include "daemons/acl/acl_sentinel.h"

#define BACKOFF_MIN 100
#define BACKOFF_MAX 5000

struct saddr {
	char host[ACL_HOST_MAX];
	int port;
	char password[256];
};

struct disc {
	struct acl_sentinel *s;
	acl_discover_cb cb;
	void *arg;
	int tried;
	struct acl_conn *conn;	/* this attempt's connection, NULL between */
	struct acl_resolve *res;	/* this attempt's name lookup */
	struct saddr *sa;	/* this attempt's sentinel */
	char who[300];
	int64_t deadline;	/* timer id */
	int64_t next;		/* timer id of the next step */
	int have_master, have_replicas;
	struct acl_topology topo;
	struct buf errs;
	int done;		/* finished: only the final timer is left */
	struct disc *prev, *nextd;
};

struct sub {
	struct acl_sentinel *s;
	struct saddr *sa;
	struct acl_conn *conn;
	struct acl_resolve *res;
	int up;
	int confirmed;		/* this connection's first confirmation seen */
	int ever_up;
	struct backoff backoff;	/* reconnects: BACKOFF_MIN doubling to BACKOFF_MAX */
	int64_t timer;		/* reconnect, or the connect deadline */
};

struct acl_sentinel {
	struct stage *st;
	struct saddr *a;
	int n;
	char master[ACL_HOST_MAX];
	int64_t timeout_ms;
	struct acl_sentinel_cbs cbs;
	void *arg;
	int preferred;		/* the one that answered last */
	struct disc *discs;
	struct sub *subs;	/* one per sentinel */
};

static void disc_step(struct stage *st, void *arg);
static void sub_start(struct stage *st, void *arg);

/* ---- discovery ---- */

static void
disc_unlink(struct disc *d)
{
	if (d->prev != NULL)
		d->prev->nextd = d->nextd;
	else
		d->s->discs = d->nextd;
	if (d->nextd != NULL)
		d->nextd->prev = d->prev;
}

/* disc_report - the final timer: hand the result over, free the request */
static void
disc_report(struct stage *st, void *arg)
{
	struct disc *d = arg;

	disc_unlink(d);
	if (d->have_master && d->have_replicas)
		d->cb(st, &d->topo, NULL, d->arg);
	else
		d->cb(st, NULL, d->errs.data != NULL ? d->errs.data : "no sentinel configured",
		    d->arg);
	buf_free(&d->errs);
	free(d);
}

/* disc_end_attempt - drop this attempt's connection and deadline */
static void
disc_end_attempt(struct disc *d)
{
	struct acl_conn *c = d->conn;

	d->conn = NULL;
	acl_resolve_cancel(d->res);
	d->res = NULL;
	if (d->deadline > 0)
		stage_cancel_timer(d->s->st, d->deadline);
	d->deadline = 0;
	acl_conn_close(c);
}

/* disc_fail - this sentinel did not answer: note why, try the next one */
static void
disc_fail(struct disc *d, const char *who, const char *why)
{
	if (d->done)
		return;
	disc_end_attempt(d);
	if (d->errs.len > 0)
		buf_adds(&d->errs, "; ");
	buf_printf(&d->errs, "%s: %s", who, why);
	d->have_master = d->have_replicas = 0;
	d->topo.n = 0;
	d->next = stage_add_timer(d->s->st, 0, disc_step, d);
}

static void
disc_maybe_done(struct disc *d, int idx)
{
	if (!d->have_master || !d->have_replicas)
		return;
	disc_end_attempt(d);
	d->s->preferred = idx;
	d->done = 1;
	d->next = stage_add_timer(d->s->st, 0, disc_report, d);
}

/* the index of the sentinel a discovery attempt is talking to */
static int
disc_idx(const struct disc *d)
{
	return (d->s->preferred + d->tried - 1) % d->s->n;
}

static void
on_master(redisAsyncContext *ac, void *r, void *priv)
{
	struct disc *d = priv;
	redisReply *reply = r;
	char who[300], why[300];
	long port;

	if (d->done || d->conn == NULL || ac->data != (void *)d->conn)
		return;
	snprintf(who, sizeof(who), "%s", d->who);
	if (reply == NULL) {
		disc_fail(d, who, acl_reply_error(ac));
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "%.200s", reply->str);
		disc_fail(d, who, why);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    reply->element[1]->type != REDIS_REPLY_STRING) {
		snprintf(why, sizeof(why), "does not know master \"%s\"", d->s->master);
		disc_fail(d, who, why);
		return;
	}
	port = strtol(reply->element[1]->str, NULL, 10);
	if (port < 1 || port > 65535 || reply->element[0]->len >= ACL_HOST_MAX) {
		disc_fail(d, who, "gave a malformed master address");
		return;
	}
	/* the master goes first; replicas may already be there */
	if (d->topo.n > 0)
		memmove(&d->topo.node[1], &d->topo.node[0],
		    (size_t)(d->topo.n < ACL_MAX_NODES ? d->topo.n : ACL_MAX_NODES - 1) *
		    sizeof(d->topo.node[0]));
	snprintf(d->topo.node[0].host, ACL_HOST_MAX, "%s", reply->element[0]->str);
	d->topo.node[0].port = (int)port;
	d->topo.node[0].down = 0;
	if (d->topo.n < ACL_MAX_NODES)
		d->topo.n++;
	d->have_master = 1;
	disc_maybe_done(d, disc_idx(d));
}

/* field - the value of key in a flat key/value array reply, or NULL */
static const char *
field(const redisReply *r, const char *key)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, key) == 0 &&
		    r->element[i + 1]->type == REDIS_REPLY_STRING)
			return r->element[i + 1]->str;
	return NULL;
}

static void
on_replicas(redisAsyncContext *ac, void *r, void *priv)
{
	struct disc *d = priv;
	redisReply *reply = r;
	char who[300], why[300];

	if (d->done || d->conn == NULL || ac->data != (void *)d->conn)
		return;
	snprintf(who, sizeof(who), "%s", d->who);
	if (reply == NULL) {
		disc_fail(d, who, acl_reply_error(ac));
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "%.200s", reply->str);
		disc_fail(d, who, why);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY) {
		disc_fail(d, who, "gave a malformed replica list");
		return;
	}
	for (size_t i = 0; i < reply->elements && d->topo.n < ACL_MAX_NODES; i++) {
		const redisReply *e = reply->element[i];
		const char *ip, *port, *flags;
		struct acl_node_addr *na;

		if (e->type != REDIS_REPLY_ARRAY || (ip = field(e, "ip")) == NULL ||
		    (port = field(e, "port")) == NULL || strlen(ip) >= ACL_HOST_MAX)
			continue;
		flags = field(e, "flags");
		na = &d->topo.node[d->topo.n++];
		snprintf(na->host, sizeof(na->host), "%s", ip);
		na->port = atoi(port);
		na->down = flags != NULL && (strstr(flags, "s_down") != NULL ||
		    strstr(flags, "o_down") != NULL || strstr(flags, "disconnected") != NULL);
	}
	d->have_replicas = 1;
	disc_maybe_done(d, disc_idx(d));
}

static void
disc_down(struct acl_conn *c, const char *why, void *arg)
{
	struct disc *d = arg;
	char who[300];

	if (d->done || c != d->conn)
		return;
	snprintf(who, sizeof(who), "%s", acl_conn_name(c));
	d->conn = NULL;		/* hiredis frees it */
	disc_fail(d, who, why);
}

static void
disc_timeout(struct stage *st, void *arg)
{
	struct disc *d = arg;
	char who[300], why[64];

	(void)st;
	d->deadline = 0;
	if (d->done || (d->conn == NULL && d->res == NULL))
		return;
	snprintf(who, sizeof(who), "%s", d->who);
	snprintf(why, sizeof(why), "no answer within %lld ms", (long long)d->s->timeout_ms);
	disc_fail(d, who, why);
}

/* disc_resolved - the sentinel's address is known: connect and ask */
static void
disc_resolved(struct stage *st, const char *ip, const char *err, void *arg)
{
	struct disc *d = arg;
	struct acl_sentinel *s = d->s;
	const char *a1[3] = { "SENTINEL", "get-master-addr-by-name", s->master };
	const char *a2[3] = { "SENTINEL", "replicas", s->master };
	size_t l1[3] = { 8, 23, strlen(s->master) }, l2[3] = { 8, 8, strlen(s->master) };
	char cerr[512];

	d->res = NULL;
	if (ip == NULL) {
		disc_fail(d, d->who, err);
		return;
	}
	d->conn = acl_conn_open(st, ip, d->sa->port, d->sa->password, disc_down, d, cerr,
	    sizeof(cerr));
	if (d->conn == NULL) {
		disc_fail(d, d->who, cerr);
		return;
	}
	if (acl_conn_cmd(d->conn, on_master, d, 3, a1, l1) < 0 ||
	    acl_conn_cmd(d->conn, on_replicas, d, 3, a2, l2) < 0)
		disc_fail(d, d->who, "cannot queue the question");
}

/* disc_step - ask the next sentinel, or report failure when all were asked */
static void
disc_step(struct stage *st, void *arg)
{
	struct disc *d = arg;
	struct acl_sentinel *s = d->s;

	d->next = 0;
	if (d->tried >= s->n) {
		d->done = 1;
		disc_report(st, d);
		return;
	}
	d->sa = &s->a[(s->preferred + d->tried) % s->n];
	d->tried++;
	snprintf(d->who, sizeof(d->who), "%s:%d", d->sa->host, d->sa->port);
	d->deadline = stage_add_timer(st, s->timeout_ms, disc_timeout, d);
	d->res = acl_resolve_start(st, d->sa->host, disc_resolved, d);
}

void
acl_sentinel_discover(struct acl_sentinel *s, acl_discover_cb cb, void *arg)
{
	struct disc *d = xcalloc(1, sizeof(*d));

	d->s = s;
	d->cb = cb;
	d->arg = arg;
	buf_init(&d->errs);
	d->nextd = s->discs;
	if (s->discs != NULL)
		s->discs->prev = d;
	s->discs = d;
	d->next = stage_add_timer(s->st, 0, disc_step, d);
}

/* ---- subscriptions ---- */

static const char *const channels[] = { "+switch-master", "+reboot", "-sdown",
	"+convert-to-slave" };

static void
sub_retry(struct sub *u)
{
	if (u->timer > 0)
		stage_cancel_timer(u->s->st, u->timer);
	u->timer = stage_add_timer(u->s->st, backoff_next(&u->backoff), sub_start, u);
}

static void
sub_down(struct acl_conn *c, const char *why, void *arg)
{
	struct sub *u = arg;

	if (c != u->conn)
		return;
	/* an unreachable sentinel says so once, not at every retry */
	if (u->up || backoff_peek(&u->backoff) <= BACKOFF_MIN)
		log_kv(LOG_WARN, u->up ? "sentinel subscription lost; reconnecting" :
		    "cannot subscribe to sentinel events; retrying", "sentinel",
		    acl_conn_name(c), "error", why, NULL);
	u->conn = NULL;
	u->up = 0;
	sub_retry(u);
}

static void
on_sub_msg(redisAsyncContext *ac, void *r, void *priv)
{
	struct sub *u = priv;
	struct acl_sentinel *s = u->s;
	redisReply *reply = r;
	const char *type;

	if (reply == NULL || u->conn == NULL || ac->data != (void *)u->conn)
		return;
	if (reply->type == REDIS_REPLY_ERROR) {
		struct acl_conn *c = u->conn;

		log_kv(LOG_WARN, "sentinel refused the subscription", "sentinel",
		    acl_conn_name(c), "error", reply->str, NULL);
		u->conn = NULL;
		u->up = 0;
		acl_conn_close(c);
		sub_retry(u);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    reply->element[1]->type != REDIS_REPLY_STRING)
		return;
	type = reply->element[0]->str;
	if (strcmp(type, "subscribe") == 0) {
		if (u->confirmed)
			return;
		u->confirmed = 1;
		u->up = 1;
		backoff_reset(&u->backoff);
		if (u->timer > 0)
			stage_cancel_timer(s->st, u->timer);
		u->timer = 0;
		log_kv(LOG_INFO, "subscribed to sentinel events", "sentinel",
		    acl_conn_name(u->conn), NULL);
		if (s->cbs.subscribed != NULL)
			s->cbs.subscribed(s->st, acl_conn_name(u->conn), u->ever_up, s->arg);
		u->ever_up = 1;
	} else if (strcmp(type, "message") == 0 &&
	    reply->element[2]->type == REDIS_REPLY_STRING) {
		struct acl_event ev;
		const char *ch = reply->element[1]->str, *msg = reply->element[2]->str;
		int rc = acl_event_parse(ch, msg, s->master, &ev);

		log_kv(LOG_INFO, "sentinel event", "sentinel", acl_conn_name(u->conn),
		    "channel", ch, "message", msg, NULL);
		if (rc < 0)
			log_kv(LOG_WARN, "malformed sentinel event ignored", "channel", ch, NULL);
		else if (rc == 1 && s->cbs.event != NULL)
			s->cbs.event(s->st, &ev, s->arg);
	}
}

/* sub_connect_deadline - still not subscribed: give this attempt up */
static void
sub_connect_deadline(struct stage *st, void *arg)
{
	struct sub *u = arg;
	struct acl_conn *c = u->conn;

	(void)st;
	u->timer = 0;
	if (u->up || (c == NULL && u->res == NULL))
		return;
	log_kv(LOG_WARN, "sentinel did not confirm the subscription in time", "sentinel",
	    u->sa->host, NULL);
	acl_resolve_cancel(u->res);
	u->res = NULL;
	u->conn = NULL;
	acl_conn_close(c);
	sub_retry(u);
}

/* sub_resolved - the sentinel's address is known: connect and subscribe */
static void
sub_resolved(struct stage *st, const char *ip, const char *err, void *arg)
{
	struct sub *u = arg;
	const char *argv[5] = { "SUBSCRIBE", channels[0], channels[1], channels[2],
		channels[3] };
	size_t lens[5];
	char cerr[512];

	u->res = NULL;
	if (ip == NULL) {
		if (backoff_peek(&u->backoff) <= BACKOFF_MIN)
			log_kv(LOG_WARN, "cannot find sentinel", "error", err, NULL);
		sub_retry(u);
		return;
	}
	for (int i = 0; i < 5; i++)
		lens[i] = strlen(argv[i]);
	u->confirmed = 0;
	u->conn = acl_conn_open(st, ip, u->sa->port, u->sa->password, sub_down, u, cerr,
	    sizeof(cerr));
	if (u->conn == NULL) {
		if (backoff_peek(&u->backoff) <= BACKOFF_MIN)
			log_kv(LOG_WARN, "cannot connect to sentinel", "error", cerr, NULL);
		sub_retry(u);
		return;
	}
	acl_conn_keepalive(u->conn);
	if (acl_conn_cmd(u->conn, on_sub_msg, u, 5, argv, lens) < 0) {
		struct acl_conn *c = u->conn;

		u->conn = NULL;
		acl_conn_close(c);
		sub_retry(u);
	}
}

/* sub_start - look the sentinel up, connect, subscribe; all under one deadline */
static void
sub_start(struct stage *st, void *arg)
{
	struct sub *u = arg;

	u->timer = stage_add_timer(st, u->s->timeout_ms, sub_connect_deadline, u);
	u->res = acl_resolve_start(st, u->sa->host, sub_resolved, u);
}

int
acl_sentinel_subscribed(const struct acl_sentinel *s)
{
	for (int i = 0; s != NULL && i < s->n; i++)
		if (s->subs[i].up)
			return 1;
	return 0;
}

struct acl_sentinel *
acl_sentinel_new(struct stage *st, const char *urls, const char *master_name,
    int64_t timeout_ms, const struct acl_sentinel_cbs *cbs, void *arg, char *err,
    size_t errlen)
{
	struct acl_sentinel *s = xcalloc(1, sizeof(*s));
	char *list = xstrdup(urls), *save = NULL;

	for (char *u = strtok_r(list, " ,\t\n", &save); u; u = strtok_r(NULL, " ,\t\n", &save)) {
		struct saddr sa;

		memset(&sa, 0, sizeof(sa));
		if (acl_parse_addr(u, 1, sa.host, sizeof(sa.host), &sa.port, sa.password,
		    sizeof(sa.password)) < 0) {
			/* the URL may hold a password: name its position, not its text */
			snprintf(err, errlen, "valkey_sentinel_urls: entry %d is not host:port or "
			    "redis://host:port", s->n + 1);
			free(list);
			free(s->a);
			free(s);
			return NULL;
		}
		s->a = xrealloc(s->a, (size_t)(s->n + 1) * sizeof(*s->a));
		s->a[s->n++] = sa;
	}
	free(list);
	if (s->n == 0) {
		snprintf(err, errlen, "valkey_sentinel_urls is empty");
		free(s);
		return NULL;
	}
	s->st = st;
	snprintf(s->master, sizeof(s->master), "%s", master_name);
	s->timeout_ms = timeout_ms;
	s->cbs = *cbs;
	s->arg = arg;
	s->subs = xcalloc((size_t)s->n, sizeof(*s->subs));
	for (int i = 0; i < s->n; i++) {
		s->subs[i].s = s;
		s->subs[i].sa = &s->a[i];
		backoff_init(&s->subs[i].backoff, BACKOFF_MIN, BACKOFF_MAX);
		s->subs[i].timer = stage_add_timer(st, 0, sub_start, &s->subs[i]);
	}
	return s;
}

void
acl_sentinel_free(struct acl_sentinel *s)
{
	if (s == NULL)
		return;
	while (s->discs != NULL) {
		struct disc *d = s->discs;

		d->done = 1;
		disc_end_attempt(d);
		if (d->next > 0)
			stage_cancel_timer(s->st, d->next);
		disc_unlink(d);
		buf_free(&d->errs);
		free(d);
	}
	for (int i = 0; i < s->n; i++) {
		struct sub *u = &s->subs[i];
		struct acl_conn *c = u->conn;

		if (u->timer > 0)
			stage_cancel_timer(s->st, u->timer);
		acl_resolve_cancel(u->res);
		u->conn = NULL;
		acl_conn_close(c);
	}
	free(s->subs);
	free(s->a);
	free(s);
}
