/*
 * kube_front - Decofile and DecofileTemplate CRs as a front door (SPEC §10):
 * run by the fetcher, it lists and watches them, mirrors them into the store
 * (decod's truth stays the store), and is the one writer of the CRs'
 * status: every stage's fragment, merged, by one server-side apply per CR
 * per change under the one field manager `decod`.
 */
#ifndef DECOD_KUBE_FRONT_H
#define DECOD_KUBE_FRONT_H

#include <yajl/yajl_tree.h>

#include "common/resource.h"
#include "common/store.h"
#include "common/util.h"

struct stage;
struct kube_front;
struct kube_resp;

/* the annotation that marks a store resource as a CR's mirror (value: the CR's uid) */
#define KUBE_FRONT_UID_ANNOTATION RESOURCE_MIRROR_ANNOTATION

/*
 * kube_front_new - start mirroring when decod works against a cluster.
 * NULL with err "" when no cluster is configured, NULL with err set when
 * the configuration is broken (fatal for the stage).
 */
struct kube_front *kube_front_new(struct stage *st, char *err, size_t errlen);
void kube_front_free(struct kube_front *fk);

/*
 * kube_front_progress - move the front door's requests on (its first
 * lists) without running a callback, between the blocking steps of a
 * stage's start-up, so the API server prepares the first pages meanwhile;
 * fk may be NULL
 */
void kube_front_progress(struct kube_front *fk);

/*
 * kube_front_preload - l (taken; freed here) holds every Decofile status
 * fragment as the front door's watch of them saw it at its opening
 * (kube_front_new does this itself): the first comparison of each CR with
 * its merged status reads its fragments from l instead of listing the
 * store again (a restart compares 10,000 CRs), until any fragment changes
 * or every CR has been compared
 */
void kube_front_preload(struct kube_front *fk, struct store_list *l);
/*
 * kube_front_preloaded - the preload while it is the store (every status
 * fragment, sorted by key: the fetcher's start-up reads its own from it
 * instead of listing them again), else NULL; fk may be NULL.  Borrowed:
 * valid until the next loop turn or store write of the caller.
 */
const struct store_list *kube_front_preloaded(const struct kube_front *fk);
/* kube_front_preload_drop - the preload no longer the store (fk may be NULL) */
void kube_front_preload_drop(struct kube_front *fk);
/*
 * kube_front_mirrors - l (taken; freed here) holds every Decofile in the
 * store as the fetcher's watch of them read it at its opening: each CR's
 * first mirror compares with its entry, and the sweep after the first list
 * takes its keys from l, instead of reading each again from the store (a
 * restart mirrors 10,000 CRs, all unchanged), until the caller says a
 * Decofile changed in the store (kube_front_mirrors_drop) or every CR has
 * been compared.  fk may be NULL.
 */
void kube_front_mirrors(struct kube_front *fk, struct store_list *l);
/* kube_front_mirrors_drop - the mirrors' preload no longer the store (fk may be NULL) */
void kube_front_mirrors_drop(struct kube_front *fk);

/*
 * kube_front_patch - a JSON merge patch (body) of Decofile CR ns/name,
 * sent on the loop; done gets the answer.  The mirror follows through the
 * informer.  0 sent, -1 no cluster (fk NULL).
 */
int kube_front_patch(struct kube_front *fk, const char *ns, const char *name,
    const char *body, void (*done)(void *arg, const struct kube_resp *r), void *arg);

/*
 * kube_front_mirror_doc - the store's form of a CR: apiVersion, kind,
 * metadata (name, namespace, labels, annotations plus the uid annotation)
 * and spec; NULL when obj is not a usable CR.  Free with yajl_tree_free.
 */
yajl_val kube_front_mirror_doc(yajl_val obj);

/*
 * kube_front_status_body - the status apply body for a status (a JSON
 * object: fields and conditions; the merge of every stage's fragments),
 * for kind/ns/name; *same is set when cur (the CR as cached; may be NULL)
 * already shows every field and condition of it, so no write is needed;
 * else diff (may be NULL) names the first that differs ("contentHash",
 * "conditions/Ready").  Caller frees.
 */
char *kube_front_status_body(const char *kind, const char *ns, const char *name,
    yajl_val fragment, yajl_val cur, int *same, char *diff, size_t difflen, size_t *len);

/*
 * kube_front_failing - a condition of a Decofile's merged status says a
 * stage failed (False, other than Drifted and TemplateUpdateAvailable,
 * whose False is good news): shown at once, never held
 */
int kube_front_failing(yajl_val merged);

/*
 * kube_front_settling - a Decofile's merged status (every stage's
 * fragments) speaks of a change the pipeline is still carrying: fetched
 * or rendered but not yet published (no Ready, or Ready Unknown), or
 * published but not yet rolled out (PodsNotified missing, Unknown, or of
 * another hash than contentHash).  Never when kube_front_failing: a
 * failure is shown at once.  The front door holds such a CR's write
 * (bounded), so one change is one apply.  publisher, notifier: that stage
 * runs (the `stages` setting names it); a stage that does not run is not
 * waited for.
 */
int kube_front_settling(yajl_val merged, int publisher, int notifier);

/*
 * kube_front_adopt_patch - the JSON patch (RFC 6902) that adopts CR cur:
 * a test of its metadata.resourceVersion, then metadata.managedFields
 * without the status entries of the writers decod replaces (its old
 * per-stage managers decod-<stage>, the Go operator's `manager`); NULL
 * when cur has none.  Sent to the CR itself (its status subresource
 * ignores a request's managedFields).  Caller frees.
 */
char *kube_front_adopt_patch(yajl_val cur, size_t *len);

#endif
