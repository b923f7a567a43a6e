/*
 * resource - decod's resources (Decofile, DecofileTemplate, Tenant,
 * Endpoint) in the store, and their status.
 *
 * A resource's spec and metadata live at key_resource(); decoctl writes
 * them.  Its status is written only by decod, and each stage writes its
 * own fragment at key_status(kind, ns, name, stage): a JSON object of the
 * status fields that stage owns plus its "conditions" list.  Readers merge
 * the fragments (resource_status_merged), so stages never race on one key
 * and each condition type keeps exactly one writer per stage.  Where two
 * stages report the same type (Syncing: fetch errors in the fetcher,
 * validation errors in the renderer), the merged view shows a False one
 * before a True one, the newest first.
 */
#ifndef DECOD_RESOURCE_H
#define DECOD_RESOURCE_H

#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/util.h"

struct store_kv;

struct store;
struct journal;

#define API_VERSION "deco.sites/v1alpha1"

/*
 * resource_kind_plural - "Decofile"/"decofile"/"decofiles"/"df" ->
 * "decofiles"; "DecofileTemplate"/"template(s)"/"dft" -> "templates";
 * "Tenant"/"tenant(s)" -> "tenants"; "Endpoint(s)"/"ep" -> "endpoints".
 * NULL if unknown.  resource_kind_name gives "Decofile" etc. back.
 */
const char *resource_kind_plural(const char *kind);
const char *resource_kind_name(const char *plural);

/*
 * resource_get - read and parse the resource; 0 (*doc set, free with
 * yajl_tree_free), 1 absent, -1 error (store or JSON; message in err).
 */
int resource_get(struct store *s, const char *plural, const char *ns,
    const char *name, yajl_val *doc, char *err, size_t errlen);

/* the largest resource resource_put writes: Kubernetes' own object limit */
#define RESOURCE_MAX_SIZE (1u << 20)

/*
 * resource_unknown_fields - the spec fields of doc that its kind does not
 * know (a typo like "targett" would otherwise pass silently), appended to
 * out as "\"spec.a.b\", ..."; returns how many.
 */
int resource_unknown_fields(yajl_val doc, struct buf *out);

/*
 * resource_spec_fields - the spec fields a kind (by plural) knows, a
 * NULL-terminated list of dotted paths, "x.*" where the members of x are
 * free; static, not to be freed.  NULL for an unknown plural.
 */
const char *const *resource_spec_fields(const char *plural);

/*
 * resource_validate - the checks resource_put makes on names before it
 * touches the store (so a name too long for a key is reported as a bad
 * name): name a DNS-1123 subdomain, ns a DNS-1123 label, a Decofile's
 * derived names fitting (name <= DECOFILE_NAME_MAX, deploymentId a label
 * value), spec an object.  0, or -1 with err.
 */
int resource_validate(yajl_val doc, const char *plural, const char *name,
    const char *ns, char *err, size_t errlen);

/*
 * resource_put - write a resource from a client (decoctl apply): checks
 * apiVersion/kind/metadata.name, fills namespace, keeps created_at from the
 * stored record, stamps updated_at, raises metadata.generation by one when
 * spec changed (1 for a new one), and drops any client-written status.
 * *changed (if non-NULL) gets 2 for a new resource, 1 when spec or
 * metadata changed, 0 when nothing did (nothing is written then).  Refuses
 * (-1 with err) names that are not DNS-1123 subdomains, namespaces that are
 * not DNS-1123 labels, a Decofile whose derived names would not fit (name
 * over DECOFILE_NAME_MAX, deploymentId not a label value), and a resource
 * over RESOURCE_MAX_SIZE.  0 or -1 with err.
 */
int resource_put(struct store *s, yajl_val doc, const char *default_ns,
    int *changed, char *out_plural, char *out_ns, char *out_name,
    char *err, size_t errlen);

/*
 * resource_put_check - resource_put's every check against the stored
 * record and its verdict in *changed, writing nothing (apply --dry-run).
 */
int resource_put_check(struct store *s, yajl_val doc, const char *default_ns,
    int *changed, char *out_plural, char *out_ns, char *out_name,
    char *err, size_t errlen);

/*
 * resource_put_gen - resource_put for a mirror of an object that counts its
 * own generations (a Kubernetes CR): generation > 0 is stored as
 * metadata.generation as given, and a generation that differs from the
 * stored one is a change even when the spec is the same (edited away and
 * back), so status.observedGeneration can name the CR's own generation.
 * generation 0: resource_put.
 */
int resource_put_gen(struct store *s, yajl_val doc, int64_t generation,
    const char *default_ns, int *changed, char *out_plural, char *out_ns,
    char *out_name, char *err, size_t errlen);
/*
 * resource_put_gen_known - resource_put_gen against the stored record the
 * caller already holds (known: its key and value as the store has them
 * now, e.g. from a watch's opening list) instead of reading it again; a
 * known of another key, or NULL, is read from the store as before.  For
 * the mirror of a CR: written without an fsync (store_put_volatile), as
 * the API server's next list rebuilds one a power cut lost.
 */
int resource_put_gen_known(struct store *s, yajl_val doc, int64_t generation,
    const struct store_kv *known, int *changed, char *out_plural, char *out_ns,
    char *out_name, char *err, size_t errlen);

/*
 * status_set_condition - in stage's status fragment, set condition type.
 * lastTransitionTime moves only when status or message changes; when it
 * does, the transition is recorded in the journal (j may be NULL).
 * Returns 1 if it changed, 0 if not, -1 on error.
 */
int status_set_condition(struct store *s, struct journal *j, const char *plural,
    const char *ns, const char *name, const char *stage, const char *type,
    const char *status, const char *reason, const char *message);

/*
 * status_set_fields - merge top-level fields into stage's fragment.
 * fields_json is a JSON object text, e.g. {"contentHash":"...","timestamp":1}.
 * Returns 0 or -1.
 */
int status_set_fields(struct store *s, const char *plural, const char *ns,
    const char *name, const char *stage, const char *fields_json);

/* one condition of status_set */
struct status_cond {
	const char *type, *status, *reason, *message;
};

/*
 * status_set - fields (NULL: none) and n conditions into stage's fragment
 * with one store write, made only when the fragment changes: a stage that
 * reports several things at once (Ready and its fields, PodsNotified and
 * notifiedHash) writes them together, so a reader never sees half of it
 * and the CR mirror gets one status write instead of several.  Each
 * condition follows status_set_condition's rule.  Returns 1 if written, 0
 * if nothing changed, -1 on error.
 */
int status_set(struct store *s, struct journal *j, const char *plural, const char *ns,
    const char *name, const char *stage, const char *fields_json,
    const struct status_cond *conds, size_t n);

/*
 * status_fragment_build - a stage's new fragment from the one the caller
 * already holds, without touching the store, so the caller can batch the
 * writes (store_put_many at key_status()).  old/oldlen is the fragment's
 * text (NULL or unparsable: none).  The top-level fields of fields_json
 * (NULL: none) are merged over it and, when type is not NULL, condition
 * type is set by status_set_condition's rule (lastTransitionTime moves
 * only when status or message changes).  Returns the new text (caller
 * frees), or NULL when fields_json is not a JSON object.  *changed (if
 * non-NULL) is 1 when the text says something old did not (0: no write
 * needed); *moved (if non-NULL) is 1 when the condition's status or
 * message changed: record that with journal_record_condition, as
 * status_set_condition does once it has written.
 */
char *status_fragment_build(const char *old, size_t oldlen, const char *fields_json,
    const char *type, const char *status, const char *reason, const char *message,
    int *changed, int *moved);

/* status_get_fragment - this stage's fragment as a tree (NULL if none) */
yajl_val status_get_fragment(struct store *s, const char *plural, const char *ns,
    const char *name, const char *stage);

/*
 * resource_status_merged - every stage's fragment merged into one status
 * object, appended to out as JSON.  0 (out may be "{}") or -1.
 */
int resource_status_merged(struct store *s, const char *plural, const char *ns,
    const char *name, struct buf *out);
/*
 * resource_status_merge_kvs - the same merge of the n fragments kvs (one
 * resource's, sorted by key as store_list gives them) into out
 */
void resource_status_merge_kvs(const struct store_kv *kvs, size_t n, struct buf *out);

/* status_delete - remove every fragment of the resource; 0 or -1 */
int status_delete(struct store *s, const char *plural, const char *ns, const char *name);

/* decofile accessors on a parsed Decofile document (defaults applied) */
const char *decofile_source(yajl_val doc);		/* spec.source, "inline" default */
const char *decofile_deployment_id(yajl_val doc);	/* spec.deploymentId or metadata.name */
const char *decofile_target(yajl_val doc, const char *def);	/* spec.target or def */
int64_t decofile_generation(yajl_val doc);

/* ---- a Decofile's hold (resource_hold.c) ---- */

/* annotations under this prefix are decod's own: only the front door writes them */
#define RESOURCE_OWN_PREFIX "decod.deco.sites/"
/* the annotation that marks a store resource as a CR's mirror (value: its uid) */
#define RESOURCE_MIRROR_ANNOTATION RESOURCE_OWN_PREFIX "kube-uid"
/* resource_mirror_uid - the uid of the CR doc mirrors, or NULL: not a mirror */
const char *resource_mirror_uid(yajl_val doc);
/* resource_own_annotation - doc's first annotation under RESOURCE_OWN_PREFIX, or NULL */
const char *resource_own_annotation(yajl_val doc);
/* the annotation that asks decod to publish an earlier version again */
#define DECOFILE_ROLLBACK_ANNOTATION "deco.sites/rollback-to"
/* the owner's "take the new template generations now"; decod removes it once taken */
#define DECOFILE_APPLY_ANNOTATION "deco.sites/apply-template-update"
/* decofile_template_apply - the apply annotation is set to "true" */
int decofile_template_apply(yajl_val doc);
/* decofile_suspended - spec.suspend is true */
int decofile_suspended(yajl_val doc);
/* decofile_rollback_to - the rollback annotation's value, or NULL */
const char *decofile_rollback_to(yajl_val doc);
/*
 * resource_hold_doc - a copy of doc with spec.suspend set (suspend) or
 * removed, and the rollback annotation set to rollback_to or removed
 * (NULL); everything else as it was.  New tree (yajl_tree_free), or NULL
 * when doc has no metadata or spec object.
 */
yajl_val resource_hold_doc(yajl_val doc, int suspend, const char *rollback_to);

/*
 * decofile_request_sync - ask the fetcher to fetch ns/name now (the trigger
 * key_sync() it watches gets a new nonce, the wall-clock ms, which `decoctl
 * wait --for synced` compares with what the fetcher handled).  Does not
 * check that the Decofile exists.  0, or -1 (store_error).
 */
int decofile_request_sync(struct store *s, const char *ns, const char *name);

/*
 * resource_annotation_doc - a copy of doc with annotation key set to value,
 * or removed (value NULL); everything else as it was.  New tree
 * (yajl_tree_free), or NULL when doc has no metadata object.
 */
yajl_val resource_annotation_doc(yajl_val doc, const char *key, const char *value);

#endif
