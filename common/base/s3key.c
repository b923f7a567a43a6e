/*
 * s3key - the S3 object key and the ConfigMap name of a Decofile, shared by
 * the publisher (upload, apply) and the webhook (DECO_RELEASE, the pod's
 * volume), so there is one place that says each.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/s3key.h"

int
s3key_build(const char *prefix, const char *ns, const char *dep, char *out, size_t len)
{
	size_t plen;
	int n;

	if (ns == NULL || *ns == '\0' || dep == NULL || *dep == '\0')
		return -1;
	if (prefix == NULL)
		prefix = "";
	while (*prefix == '/')
		prefix++;
	plen = strlen(prefix);
	while (plen > 0 && prefix[plen - 1] == '/')
		plen--;
	if (plen > 0)
		n = snprintf(out, len, "%.*s/%s/%s/decofile.json", (int)plen, prefix, ns, dep);
	else
		n = snprintf(out, len, "%s/%s/decofile.json", ns, dep);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
configmap_name(const char *name, char *out, size_t len)
{
	int n;

	if (name == NULL || *name == '\0')
		return -1;
	n = snprintf(out, len, DECOFILE_CM_PREFIX "%s", name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

const char *
configmap_decofile(const char *cm)
{
	size_t plen = strlen(DECOFILE_CM_PREFIX);

	if (cm == NULL || strncmp(cm, DECOFILE_CM_PREFIX, plen) != 0 || cm[plen] == '\0')
		return NULL;
	return cm + plen;
}
