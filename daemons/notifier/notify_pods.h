/*
 * notify_pods - the replicas that are Kubernetes pods (SPEC §4.4): pods
 * labelled app.deco/deploymentId=<deploymentId> that are Running with an
 * IP, from a watch cache, so finding and re-checking them costs no API call.
 */
#ifndef DECOD_NOTIFY_PODS_H
#define DECOD_NOTIFY_PODS_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "daemons/notifier/notify_engine.h"

#define NOTIFY_PODS_LABEL "app.deco/deploymentId"
#define NOTIFY_PODS_TOKEN_ENV "DECO_RELEASE_RELOAD_TOKEN"
#define NOTIFY_PODS_DEFAULT_PORT 8000
#define NOTIFY_PODS_TS_FILE "/app/decofile/timestamp.txt"

struct stage;
struct notify_pods;

/*
 * notify_pods_new - watch the labelled pods when decod works against a
 * cluster.  NULL with err "" when none is configured, NULL with err set
 * when the configuration is broken.
 */
struct notify_pods *notify_pods_new(struct stage *st, char *err, size_t errlen);
void notify_pods_free(struct notify_pods *np);

/* notify_pods_synced - nonzero once the pods were listed */
int notify_pods_synced(const struct notify_pods *np);

/* notify_pods_count - how many replicas notify_pods_fill would give */
size_t notify_pods_count(struct notify_pods *np, const char *ns, const char *deployment);

/*
 * notify_pods_fill - up to max replicas of deployment in ns into t (id
 * "pod/<name>", url http://<ip>:<port>, the token of the container `app`,
 * style; poll-style replicas get NOTIFY_PODS_TS_FILE).  The strings stay
 * valid until the next notify_pods_* call.  Returns the count.
 */
size_t notify_pods_fill(struct notify_pods *np, const char *ns, const char *deployment,
    enum notify_style style, struct notify_target *t, size_t max);

/*
 * notify_pods_resolve - before a try: 1 the pod is still a Running replica
 * (t's url and token updated), 0 it went away (or stopped running), -1 not
 * a pod's id.
 */
int notify_pods_resolve(struct notify_pods *np, const char *ns, struct notify_target *t);

/*
 * notify_pods_replica - what a pod object gives (pure, for tests): 1 when
 * it is a Running replica with an IP (url "http://ip:port" into url, token
 * pointer into the object or NULL, and the poll tsFile into ts: the
 * timestamp.txt where the webhook mounted the decofile in container app --
 * volume decofile-config, else DECO_RELEASE=file://<dir>/... -- else
 * NOTIFY_PODS_TS_FILE), else 0.
 */
int notify_pods_replica(yajl_val pod, char *url, size_t urllen, const char **token,
    char *ts, size_t tslen);

#endif
