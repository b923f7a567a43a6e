/*
 * publish_configmap - the `configmap` target (SPEC §4.3, §9): ConfigMap
 * decofile-<name> in the Decofile's namespace holding exactly decofile.bin
 * (standard base64 of brotli) and timestamp.txt, owned by the Decofile CR,
 * written by server-side apply; drift put back from the watch; a ConfigMap
 * that already holds the content (the Go operator's) adopted.  These are
 * its pure parts (unit-tested).
 */
#ifndef DECOD_PUBLISH_CONFIGMAP_H
#define DECOD_PUBLISH_CONFIGMAP_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>


/* the largest data a ConfigMap may hold (keys and values): 1 MiB */
#define PUBLISH_CONFIGMAP_MAX 1048576u
#define PUBLISH_CONFIGMAP_MANAGER "decod-publisher"

/* the target itself is publish_configmap_target (publish_target.h) */

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
