/*
 * publish_configmap - the `configmap` target (SPEC §4.3, §9): ConfigMap
 * decofile-<name> in the Decofile's namespace holding exactly decofile.bin
 * (standard base64 of brotli) and timestamp.txt, owned by the Decofile CR,
 * written by server-side apply; drift put back from the watch; a ConfigMap
 * that already holds the content (the Go operator's) adopted.
 */
#ifndef DECOD_PUBLISH_CONFIGMAP_H
#define DECOD_PUBLISH_CONFIGMAP_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/journal.h"
#include "common/stage.h"

/* the largest data a ConfigMap may hold (keys and values): 1 MiB */
#define PUBLISH_CONFIGMAP_MAX 1048576u
#define PUBLISH_CONFIGMAP_MANAGER "decod-publisher"

struct pcm;

/*
 * publish_configmap_new - the target for stage st when decod works against a
 * cluster (kubeconfig set, or in a pod); starts its caches of ConfigMaps and
 * Decofile CRs.  NULL with err "" when no cluster is configured (the target
 * is then refused per item), NULL with err set when the configuration is
 * broken.
 */
struct pcm *publish_configmap_new(struct stage *st, char *err, size_t errlen);
/* publish_configmap_free - stop; NULL is a no-op */
void publish_configmap_free(struct pcm *c);

/*
 * publish_configmap_item - publish item it (content hash it->hash, bin blob
 * hash bin in the spool) for Decofile doc.  STAGE_ASYNC: the item is
 * settled later with stage_finish; STAGE_DONE: nothing to write; otherwise
 * why says what went wrong (Ready is already set where it applies).
 */
enum stage_result publish_configmap_item(struct pcm *c, const struct journal_item *it,
    yajl_val doc, const char *bin, const char *commit, char *why, size_t whylen);

/*
 * publish_configmap_decofile - the store's Decofile ns/name changed (doc) or
 * was deleted (doc NULL): follow its deletion policy, remove what it owned.
 */
void publish_configmap_decofile(struct pcm *c, const char *ns, const char *name,
    yajl_val doc);

/*
 * publish_configmap_body - the server-side apply body: ConfigMap
 * decofile-<name> with owner uid (NULL or "": no owner reference), data
 * decofile.bin = b64 and timestamp.txt = ts.  Caller frees.
 */
char *publish_configmap_body(const char *ns, const char *name, const char *owner_uid,
    const char *b64, size_t len, int64_t ts, size_t *outlen);

/*
 * publish_configmap_size - bytes the data map takes (keys and values), to
 * compare with PUBLISH_CONFIGMAP_MAX.
 */
size_t publish_configmap_size(size_t b64len, int64_t ts);

/*
 * publish_configmap_holds - compare a ConfigMap object with what was
 * published: 1 when data is exactly {decofile.bin with sha256 bin_sha,
 * timestamp.txt == ts}, else 0.  *extra (may be NULL) gets the number of
 * other keys.
 */
int publish_configmap_holds(yajl_val cm, const char *bin_sha, int64_t ts, int *extra);

/*
 * publish_configmap_content - the sha256 of the JSON inside a ConfigMap's
 * decofile.bin (base64, then brotli), into out (65 bytes).  0, or -1 when
 * absent or not decodable.
 */
int publish_configmap_content(yajl_val cm, char *out);

#endif
