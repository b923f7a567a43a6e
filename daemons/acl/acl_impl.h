/*
 * acl_impl - what the acl stage's own files share (acl.c: tenants, events,
 * the stage; acl_round.c: rounds): its state and the helpers both use.
 * Not for anything outside daemons/acl.
 */
#ifndef DECOD_ACL_IMPL_H
#define DECOD_ACL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "common/backoff.h"
#include "common/util.h"
#include "daemons/acl/acl.h"
#include "daemons/acl/acl_cmd.h"
#include "daemons/acl/acl_cred.h"
#include "daemons/acl/acl_redis.h"
#include "daemons/acl/acl_sentinel.h"

struct journal;
struct metrics;

#define STAGE "acl"
#define RETRY_MIN 1000
#define RETRY_MAX 30000
/* what a failure's condition says of the retry (RETRY_MIN, RETRY_MAX) */
#define RETRY_WORDS "retrying with backoff (1 s doubling to 30 s)"
#define NAME_MAX_ 254

#define M_PROV "deco_operator_valkey_acl_provisioned_total"
#define M_DEL "deco_operator_valkey_acl_deleted_total"
#define M_ERR "deco_operator_valkey_acl_errors_total"
#define M_HEAL "deco_operator_valkey_acl_self_healed_total"
#define M_TENANTS "deco_operator_valkey_tenants_provisioned"
#define M_FAILOVER "deco_operator_valkey_sentinel_failovers_total"

enum refusal { OK_ = 0, REFUSED, CONFLICT };

struct tenant {
	char ns[NAME_MAX_], name[NAME_MAX_];
	char user[ACL_USER_MAX];	/* as asked; a name refused whole is shown cut */
	const char *bad_reason;	/* the name is refused (acl_user_check), or NULL */
	char bad[256];		/* ... and why */
	enum refusal refused;
	char password[ACL_PW_LEN + 1];
	int has_pw;
	int dirty;		/* wants a round */
	int provisioned;	/* the last round left it on every node */
	int seen;		/* put since acl_relist_begin */
	char since[40];		/* metadata.created_at: the older claim wins */
	int holds;		/* its namespace held this user's credentials when it came */
	char **okn;		/* nodes ("host:port") it was provisioned on */
	size_t nokn;
	char last[1024];	/* what was reported last */
	struct tenant *next;
};

/* a user to delete on every node; its credentials go once it is gone */
struct gone {
	char ns[NAME_MAX_], user[ACL_USER_MAX];
	int fresh;		/* not yet in a round: starts one (a failed one waits for the retry) */
	int counted;		/* gone from every reachable node: counted, creds removed */
	char last[ACL_HOST_MAX + 8 + 260];	/* the failure logged last: logged once */
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
	int superseded;		/* a failover came: results dropped, a full round follows */
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
	struct backoff retry;	/* after a failed round: RETRY_MIN doubling to RETRY_MAX */
	int64_t retry_at;	/* when retry_timer fires (now_ms) */
	char last_fail[768];	/* the round-wide failure logged last, "" after a good round */
	char last_switch[ACL_HOST_MAX + 8];	/* the newest failover's new master */
	int64_t last_switch_ms;
	struct metrics *m;
	struct acl_trigger *trigger;	/* decoctl acl resync (acl_trigger.c) */
};


/* acl.c */
void acl_wipe(void *p, size_t n);
struct tenant *acl_tenant_find(struct acl *a, const char *ns, const char *name);
int acl_tenant_has_node(const struct tenant *t, const char *addr);
void acl_tenant_add_node(struct tenant *t, const char *addr);
int acl_ns_has_tenant(struct acl *a, const char *ns);
/* acl_count_err - errors_total{operation} += n */
void acl_count_err(struct acl *a, const char *op, double n);
/* acl_update_gauge - tenants_provisioned from the tenants' flags */
void acl_update_gauge(struct acl *a);
/*
 * acl_report - the tenant's condition through the source, only when it
 * changed: 1 if it did, 0 if it said so already
 */
int acl_report(struct acl *a, struct tenant *t, const char *status, const char *reason,
    const char *message);
/* acl_kick - start a round soon if one is wanted and none is in flight */
void acl_kick(struct acl *a);

/* acl_trigger.c: the resync triggers decoctl writes, for every source */
struct acl_trigger;
/* acl_trigger_start - watch key_acl_resync_prefix(); NULL on failure (logged) */
struct acl_trigger *acl_trigger_start(struct acl *a, struct stage *st);
void acl_trigger_stop(struct acl_trigger *tr);

/* acl_round.c */
/* acl_round_start - a timer callback (arg: the acl): take what is wanted into one round */
void acl_round_start(struct stage *st, void *arg);
/*
 * acl_round_supersede - a failover came while a round is in flight: end it
 * now (a node that vanished without a reset would hold it until the
 * deadline) and drop its results; the full round wanted next runs at once.
 */
void acl_round_supersede(struct acl *a);
/* acl_round_abort - at shutdown: close the round in flight, free it */
void acl_round_abort(struct acl *a);

#endif
