/*
 * kube - a Kubernetes API client for decod's stages and tools: libcurl multi
 * (no thread per request, a deadline on every call) and yajl.
 *
 * Three layers:
 *  - kube_config: where the API server is and who we are, from a kubeconfig
 *    file (--kubeconfig / KUBECONFIG) or from inside a pod (service-account
 *    token, CA and namespace files, KUBERNETES_SERVICE_HOST/PORT);
 *  - kube: calls (get, list pages, create, server-side apply, delete, the
 *    status subresource) on one curl multi handle driven by the caller's
 *    loop, retried on 429/5xx honouring Retry-After until the call's deadline;
 *  - kube_informer: a cache of one kind (list, then watch from its
 *    resourceVersion with bookmarks; re-list on 410 Gone; reconnect with
 *    backoff) so lookups never cost an API call.
 *
 * Threads: none.  Everything, callbacks included, runs on the thread that
 * calls kube_dispatch() (or kube_do()/kube_run()).  Tokens are never logged.
 */
#ifndef DECOD_KUBE_H
#define DECOD_KUBE_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

struct conf;
struct stage;

/* ---- configuration ---- */

struct kube_config {
	char *server;		/* "https://HOST:PORT", no trailing slash */
	char *ca_file;		/* PEM file, or */
	char *ca_data;		/* PEM bytes (ca_len) */
	size_t ca_len;
	char *cert_file, *cert_data;	/* client certificate, PEM */
	size_t cert_len;
	char *key_file, *key_data;	/* its key, PEM */
	size_t key_len;
	char *token;		/* bearer token given inline, or */
	char *token_file;	/* a file holding it, re-read when it changes */
	char *namespace;	/* the default namespace ("default" if none) */
	int insecure;		/* insecure-skip-tls-verify */
};

/*
 * kube_config_parse - read kubeconfig text (YAML or JSON) for context
 * (NULL or "": current-context).  Relative file names are taken from
 * base_dir (the kubeconfig's folder; NULL: as given).  Fields: server,
 * certificate-authority(-data), insecure-skip-tls-verify, token, tokenFile,
 * client-certificate(-data), client-key(-data), the context's namespace.
 * Returns 0, or -1 with err naming what is wrong; c is then empty.
 * Free with kube_config_free.
 */
int kube_config_parse(struct kube_config *c, const char *text, size_t len,
    const char *base_dir, const char *context, char *err, size_t errlen);

/* kube_config_load - kube_config_parse of a file; 0 or -1 with err */
int kube_config_load(struct kube_config *c, const char *path,
    const char *context, char *err, size_t errlen);

/*
 * kube_config_in_cluster - the pod's own identity: server from
 * KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT (IPv6 bracketed), token
 * file, ca.crt and namespace from sa_dir (NULL: the standard
 * /var/run/secrets/kubernetes.io/serviceaccount).  -1 with err when the
 * environment or the files are missing.
 */
int kube_config_in_cluster(struct kube_config *c, const char *sa_dir,
    char *err, size_t errlen);

/*
 * kube_config_from_conf - the settings' choice: kubeconfig (KUBECONFIG)
 * when set, else in-cluster when KUBERNETES_SERVICE_HOST is set.
 * Returns 0 (configured), 1 (no cluster configured: not an error, decod
 * then runs without Kubernetes) or -1 with err.
 */
int kube_config_from_conf(struct kube_config *c, const struct conf *cf,
    char *err, size_t errlen);

/*
 * kube_from_conf - a client from the settings in one call: the choice of
 * kube_config_from_conf, then kube_new with kube_timeout.  NULL with err ""
 * when no cluster is configured (not an error), NULL with err on a failure.
 */
struct kube *kube_from_conf(const struct conf *cf, char *err, size_t errlen);

/*
 * kube_configured - whether the settings name a cluster (kubeconfig, or in
 * a pod), read as kube_from_conf reads them but without a client: 1 yes,
 * 0 no, -1 with err when the configuration is bad.
 */
int kube_configured(const struct conf *cf, char *err, size_t errlen);

/* kube_config_free - free the strings; c is left empty; NULL is a no-op */
void kube_config_free(struct kube_config *c);

/* ---- kinds and paths ---- */

struct kube_kind {
	const char *group;	/* "" for the core group */
	const char *version;	/* "v1" */
	const char *resource;	/* plural: "configmaps" */
	const char *kind;	/* "ConfigMap" */
	int namespaced;
};

extern const struct kube_kind kube_configmaps, kube_pods, kube_secrets,
    kube_namespaces, kube_services, kube_leases, kube_decofiles,
    kube_decofiletemplates;

/*
 * kube_path - "/api/v1/namespaces/NS/configmaps/NAME[/SUB][?QUERY]".
 * ns NULL or "" for a cluster-wide list of a namespaced kind; name NULL
 * for the collection; sub ("status") and query (already escaped) optional.
 * Caller frees.
 */
char *kube_path(const struct kube_kind *kd, const char *ns, const char *name,
    const char *sub, const char *query);

/* kube_escape - percent-encode s for a query value; caller frees */
char *kube_escape(const char *s);

/* ---- the client ---- */

struct kube;
struct kube_call;

/* one answer; owned by the client (callback) or by the caller (kube_do) */
struct kube_resp {
	long status;		/* HTTP status; 0: no answer (err says why) */
	char *body;		/* NUL-terminated */
	size_t len;
	yajl_val json;		/* body parsed, NULL when not JSON */
	const char *reason;	/* a Status object's reason ("Conflict", "Expired"...) or "" */
	int attempts;		/* tries made (retries on 429/5xx/transport errors) */
	int64_t ms;		/* first try to answer */
	char err[512];		/* transport error or the Status message ("" when 2xx) */
};

/* kube_ok - the call answered 2xx */
#define kube_ok(r) ((r)->status >= 200 && (r)->status < 300)

typedef void (*kube_done_fn)(void *arg, const struct kube_resp *r);

/*
 * kube_resp_take_json - the parsed answer, now the caller's to free (from
 * a done callback: r->json and r->reason read NULL and "" after), so a
 * callback that keeps the object does not parse the body a second time
 */
yajl_val kube_resp_take_json(const struct kube_resp *r);

struct kube_stats {
	uint64_t calls, retries, errors;	/* errors: ended without 2xx */
	uint64_t throttled;			/* 429 answers seen */
	uint64_t token_reloads;			/* token file re-read after a change */
};

/*
 * kube_new - a client for c (copied: c may be freed at once).  timeout_ms
 * is the default deadline of a call, retries included (0: 30 s).  NULL
 * with err when the configuration cannot be used.
 */
struct kube *kube_new(const struct kube_config *c, int64_t timeout_ms,
    char *err, size_t errlen);
/* kube_free - cancels every call and informer still open; NULL: no-op */
void kube_free(struct kube *k);

/* kube_namespace - the configuration's default namespace */
const char *kube_namespace(const struct kube *k);
/* kube_server - the API server URL */
const char *kube_server(const struct kube *k);
void kube_get_stats(const struct kube *k, struct kube_stats *s);

/*
 * Loop integration, as notify_engine: poll kube_fd() for POLLIN, wake after
 * kube_timeout() ms at the latest (-1: nothing due), then kube_dispatch(),
 * which never blocks and runs every callback.  kube_attach() does this on a
 * stage's loop.  kube_run() is a standalone loop for tools and tests: it
 * dispatches until max_ms passes (or until *stop becomes nonzero).
 */
int kube_fd(const struct kube *k);
int64_t kube_timeout(const struct kube *k);
void kube_dispatch(struct kube *k);
void kube_run(struct kube *k, int64_t max_ms, const volatile int *stop);
/*
 * kube_progress - kube_dispatch's transfers (sockets, timers, retries due)
 * without running any callback but those of early calls, never blocking:
 * for a caller whose loop is not running yet (a stage's start-up), so the
 * requests it queued are on the wire meanwhile (a list's next pages too);
 * kube_dispatch delivers what finished
 */
void kube_progress(struct kube *k);
/*
 * kube_call_early - c's done may also run from kube_progress (before the
 * caller's loop runs): for a callback that only keeps what came and sends
 * the next request, never one that acts on it (an informer's list pages)
 */
void kube_call_early(struct kube_call *c);
void kube_attach(struct kube *k, struct stage *st);

/*
 * kube_send - start a call: method ("GET", "POST", "PUT", "PATCH",
 * "DELETE"), path (from kube_path), body (copied; NULL for none) with
 * content type ctype (NULL: application/json).  timeout_ms 0: the client's.
 * done runs once, from kube_dispatch, with the answer (valid only during
 * the callback).  Retried: 429 always (Retry-After honoured), 5xx and
 * transport errors unless the method is POST, each after a backoff, while
 * the deadline allows.  Returns the call (for kube_cancel), never NULL.
 */
struct kube_call *kube_send(struct kube *k, const char *method,
    const char *path, const char *ctype, const char *body, size_t len,
    int64_t timeout_ms, kube_done_fn done, void *arg);

/* kube_cancel - drop a call that has not finished; done is not called */
void kube_cancel(struct kube_call *c);

/*
 * kube_do - the same call, waiting for its answer (at most its deadline).
 * Other calls and watches progress meanwhile, but their callbacks wait for
 * the next kube_dispatch, so nothing runs re-entrantly.  Returns the answer,
 * never NULL; the caller frees it with kube_resp_free.
 */
struct kube_resp *kube_do(struct kube *k, const char *method, const char *path,
    const char *ctype, const char *body, size_t len, int64_t timeout_ms);
void kube_resp_free(struct kube_resp *r);

/*
 * kube_apply_path - the path of a server-side apply of object ns/name
 * (sub "status" for the status subresource) by field manager `manager`;
 * force takes over fields another manager set, so pass it only for
 * fields decod owns.  Caller frees.  Send it with method "PATCH" and
 * KUBE_APPLY_CTYPE; the body is the JSON object with apiVersion, kind and
 * metadata.name (JSON is YAML).  409 Conflict means another manager owns
 * a field and force was off: the answer's err names the fields.
 */
char *kube_apply_path(const struct kube_kind *kd, const char *ns,
    const char *name, const char *sub, const char *manager, int force);
#define KUBE_APPLY_CTYPE "application/apply-patch+yaml"

/* kube_apply - kube_send of a server-side apply (see kube_apply_path) */
struct kube_call *kube_apply(struct kube *k, const struct kube_kind *kd,
    const char *ns, const char *name, const char *sub, const char *manager,
    int force, const char *body, size_t len, kube_done_fn done, void *arg);
#define KUBE_MERGE_PATCH_CTYPE "application/merge-patch+json"
/*
 * kube_merge_patch - kube_send of a JSON merge patch (RFC 7386: a null
 * removes the field) of object ns/name, under field manager `manager`
 * (NULL: the server's default); the client's timeout
 */
struct kube_call *kube_merge_patch(struct kube *k, const struct kube_kind *kd,
    const char *ns, const char *name, const char *manager, const char *body, size_t len,
    kube_done_fn done, void *arg);

/*
 * kube_list_all - every object of a kind (optionally in namespace ns and
 * matching label_selector), page by page (limit `page`, 0: 500, following
 * continue), waiting.  *items gets a new yajl array holding the objects
 * (free with yajl_tree_free) and rv the list's resourceVersion (rvlen
 * bytes).  A 410 Gone on a later page (the continue token expired)
 * restarts the list once from the beginning.  0, or -1 with err.
 */
int kube_list_all(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *label_selector, size_t page, yajl_val *items, char *rv,
    size_t rvlen, char *err, size_t errlen);

/* ---- informers ---- */

struct kube_informer;

enum kube_event { KUBE_ADDED, KUBE_MODIFIED, KUBE_DELETED, KUBE_SYNCED };

/*
 * kube_event_fn - a change the cache took in.  obj is the object now (for
 * DELETED: its last known state), old the previous one (MODIFIED) or NULL;
 * both are owned by the cache and valid only during the call.  KUBE_SYNCED
 * (obj NULL) follows each complete list: the cache then holds everything.
 * A re-list (start, 410 Gone) delivers the differences it finds, so a
 * caller never misses a change, only intermediate states.
 */
typedef void (*kube_event_fn)(void *arg, enum kube_event ev, yajl_val obj,
    yajl_val old);

struct kube_informer_stats {
	uint64_t lists, watches, events, bookmarks, gone, reconnects;
};

/*
 * kube_informer_new - cache kind kd (in namespace ns, NULL or "": all)
 * objects matching label_selector (NULL: all) and call fn on each change
 * from kube_dispatch.  Starts listing at once.  Never NULL.
 */
struct kube_informer *kube_informer_new(struct kube *k,
    const struct kube_kind *kd, const char *ns, const char *label_selector,
    kube_event_fn fn, void *arg);
/*
 * kube_informer_new_fs - the same with a field selector too (NULL: none),
 * e.g. "metadata.name=valkey-acl": RBAC then authorizes the list and the
 * watch against that resource name.
 */
struct kube_informer *kube_informer_new_fs(struct kube *k,
    const struct kube_kind *kd, const char *ns, const char *label_selector,
    const char *field_selector, kube_event_fn fn, void *arg);
/*
 * kube_informer_new_meta - the same, metadata only: the cached objects are
 * PartialObjectMetadata (apiVersion meta.k8s.io/v1, kind, metadata), for a
 * consumer that needs names, uids, labels or owners and not spec or status;
 * the server sends a fraction of the bytes.
 */
struct kube_informer *kube_informer_new_meta(struct kube *k,
    const struct kube_kind *kd, const char *ns, const char *label_selector,
    kube_event_fn fn, void *arg);
/* kube_informer_free - stop watching and drop the cache; NULL: no-op */
void kube_informer_free(struct kube_informer *inf);

/* kube_informer_synced - nonzero once the first list is complete */
int kube_informer_synced(const struct kube_informer *inf);
/* kube_informer_get - the cached object (borrowed; valid until the next dispatch) or NULL */
yajl_val kube_informer_get(const struct kube_informer *inf, const char *ns,
    const char *name);
/* kube_informer_count - objects in the cache */
size_t kube_informer_count(const struct kube_informer *inf);
/* kube_informer_foreach - fn on every cached object; fn must not change the cache */
void kube_informer_foreach(const struct kube_informer *inf,
    void (*fn)(void *arg, yajl_val obj), void *arg);
/* kube_informer_rv - the last resourceVersion seen (list, event or bookmark) */
const char *kube_informer_rv(const struct kube_informer *inf);
void kube_informer_get_stats(const struct kube_informer *inf,
    struct kube_informer_stats *s);

/* ---- leader election (kube_lease.c) ---- */

struct kube_lease;

struct kube_lease_params {
	int64_t duration_ms;	/* a holder silent this long is replaced (15 s) */
	int64_t renew_deadline_ms;	/* the holder gives up if it cannot renew within (10 s) */
	int64_t retry_ms;	/* how often to try to acquire or renew (2 s) */
};

/*
 * kube_lease_holder - who holds the Lease as this contender last saw it:
 * its own identity while leading, "" before the first read or when nobody
 */
struct kube_lease;
const char *kube_lease_holder(const struct kube_lease *l);
/* kube_lease_changed_fn - leadership gained (1) or lost (0) */
typedef void (*kube_lease_changed_fn)(void *arg, int leading);

/*
 * kube_lease_new - contend for coordination.k8s.io/v1 Lease ns/name as
 * identity, the way client-go's leader election does: create it or take
 * it over once its holder has not renewed for the lease duration (timed
 * by our own clock from when we last saw it change), renew it every retry
 * period while leading, and report the loss when renewing fails for the
 * renew deadline.  Updates carry the resourceVersion read, so two
 * contenders never both win.  Runs on k's dispatch.  Never NULL.
 */
struct kube_lease *kube_lease_new(struct kube *k, const char *ns, const char *name,
    const char *identity, const struct kube_lease_params *p,
    kube_lease_changed_fn changed, void *arg);
/*
 * kube_lease_wanted - whether the settings ask for leader election
 * (leader_elect, and a local store: etcd has its own locks)
 */
int kube_lease_wanted(const struct conf *cf);
/*
 * kube_lease_from_conf - kube_lease_new for the Lease the settings name
 * (leader_lease_name in k's namespace, leader_lease_duration,
 * leader_renew_deadline, leader_retry_period) under decod's one identity
 * rule: POD_NAME when set (the pod is the unit, so a restarted container
 * takes its Lease back at once), else HOST:PID (two instances on one host
 * differ).  Logs the identity it contends as.
 */
struct kube_lease *kube_lease_from_conf(struct kube *k, const struct conf *cf,
    kube_lease_changed_fn changed, void *arg);
/*
 * kube_lease_identity - decod's one identity rule, into out: POD_NAME when
 * set, else HOST:PID.  Every contender (the supervisor's decod_lease.c, a
 * supervisor-less front door in deploy/'s pod) takes it from here.
 */
void kube_lease_identity(char *out, size_t len);
/* kube_lease_free - stop; a leader releases the lease (holder emptied) first, waiting at most 2 s */
void kube_lease_free(struct kube_lease *l);
int kube_lease_leading(const struct kube_lease *l);

/* ---- object helpers ---- */

/* kube_obj_ns, kube_obj_name, kube_obj_rv, kube_obj_uid - metadata strings or "" */
const char *kube_obj_ns(yajl_val obj);
const char *kube_obj_name(yajl_val obj);
const char *kube_obj_rv(yajl_val obj);
const char *kube_obj_uid(yajl_val obj);

#endif
