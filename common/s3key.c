/*
 * s3key - the S3 object key of a Decofile, shared by the publisher (upload)
 * and the webhook (DECO_RELEASE), so there is one place that says it.
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
