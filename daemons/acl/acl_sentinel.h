/*
 * acl_sentinel - what the acl stage asks Sentinel: the topology (the
 * master from SENTINEL get-master-addr-by-name, the replicas from SENTINEL
 * replicas, trying each sentinel in turn) and subscriptions to the events
 * that change it (+switch-master, +reboot, -sdown, +convert-to-slave) on
 * every reachable sentinel, each reconnecting with backoff.  The same event
 * may come from several sentinels: the caller merges them.
 */
#ifndef DECOD_ACL_SENTINEL_H
#define DECOD_ACL_SENTINEL_H

#include <stdint.h>

#include "daemons/acl/acl_cmd.h"

#define ACL_MAX_NODES 64

struct stage;
struct acl_sentinel;

struct acl_node_addr {
	char host[ACL_HOST_MAX];
	int port;
	int down;		/* Sentinel flags it s_down, o_down or disconnected */
};

/* the master first, then the replicas */
struct acl_topology {
	struct acl_node_addr node[ACL_MAX_NODES];
	int n;
};

/* discover_cb - t is the topology, or NULL with the reason in err */
typedef void (*acl_discover_cb)(struct stage *st, const struct acl_topology *t,
    const char *err, void *arg);

struct acl_sentinel_cbs {
	/* a parsed event about our master (see acl_event_parse) */
	void (*event)(struct stage *st, const struct acl_event *ev, void *arg);
	/* subscribed to one sentinel (again=1: after losing it, events may be missed) */
	void (*subscribed)(struct stage *st, const char *sentinel, int again, void *arg);
};

/*
 * acl_sentinel_new - sentinels from urls (list, see acl_parse_addr), the
 * master's name, the deadline of one call.  Starts the subscription at
 * once.  NULL with err when the list is empty or malformed.
 */
struct acl_sentinel *acl_sentinel_new(struct stage *st, const char *urls,
    const char *master_name, int64_t timeout_ms, const struct acl_sentinel_cbs *cbs,
    void *arg, char *err, size_t errlen);
void acl_sentinel_free(struct acl_sentinel *s);

/*
 * acl_sentinel_discover - ask for the topology; cb runs later on the loop
 * (never inside this call), exactly once, unless the sentinel object is
 * freed first.
 */
void acl_sentinel_discover(struct acl_sentinel *s, acl_discover_cb cb, void *arg);

/* acl_sentinel_subscribed - 1 while at least one subscription is up */
int acl_sentinel_subscribed(const struct acl_sentinel *s);

#endif
