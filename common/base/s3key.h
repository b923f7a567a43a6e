/*
 * s3key - the one function that names a Decofile's S3 object, and the
 * names of its ConfigMap and of the volume pods mount it as.  The
 * publisher uploads to it and the webhook points DECO_RELEASE at it, so the
 * two can never disagree (SPEC §9: [<prefix>/]<namespace>/<deploymentId>/decofile.json).
 */
#ifndef DECOD_S3KEY_H
#define DECOD_S3KEY_H

#include <stddef.h>

/*
 * The ConfigMap that holds a Decofile's rendered document is
 * DECOFILE_CM_PREFIX + the Decofile's name, in its namespace; pods mount it
 * as the volume DECOFILE_VOLUME (SPEC §9).  The publisher writes it, the
 * webhook mounts it, the notifier finds the mount: one spelling for all.
 */
#define DECOFILE_CM_PREFIX	"decofile-"
#define DECOFILE_VOLUME		"decofile-config"

/*
 * s3key_build - the object key for namespace ns and deployment id dep, under
 * prefix (NULL or "" for none; leading and trailing '/' of the prefix are
 * dropped, as the Go operator does).  Writes into out; returns 0, or -1 when
 * it does not fit or ns or dep is empty.
 */
int s3key_build(const char *prefix, const char *ns, const char *dep, char *out, size_t len);

/*
 * configmap_name - the name of the ConfigMap that holds Decofile name's
 * document (DECOFILE_CM_PREFIX + name).  Writes into out; returns 0, or -1
 * when it does not fit or name is empty.
 */
int configmap_name(const char *name, char *out, size_t len);

/*
 * configmap_decofile - the Decofile a ConfigMap named cm holds, the reverse
 * of configmap_name(): a pointer into cm past the prefix, or NULL when cm is
 * not a Decofile's ConfigMap.
 */
const char *configmap_decofile(const char *cm);

#endif
