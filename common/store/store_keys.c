/*
 * store_keys - the one place that knows how store keys are laid out.  Each
 * kind of key has its own builder; prefixes for listing and watching end
 * in "/" so that ".../ns/a" never matches ".../ns/ab" on any backend.
 * Owns the process-wide key prefix (default "/decod").
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/store_keys.h"
#include "common/util.h"

#define KEYS_DEFAULT_PREFIX "/decod"
#define KEYS_PART_MAX 254	/* buffer size of key_parse_resource's outputs */

static char *keys_prefix_cur;

static const char *const resource_kinds[] = { "decofiles", "templates", "tenants" };

/*
 * keys_set_prefix - set the prefix every key starts with.  NULL restores the
 * default; a missing leading "/" is added and trailing "/" are dropped, so
 * "decod/", "/decod" and "/decod/" are the same prefix; "/" or "" mean none.
 */
void
keys_set_prefix(const char *prefix)
{
	size_t len;

	free(keys_prefix_cur);
	keys_prefix_cur = NULL;
	if (prefix == NULL)
		return;
	while (*prefix == '/')
		prefix++;
	len = strlen(prefix);
	while (len > 0 && prefix[len - 1] == '/')
		len--;
	keys_prefix_cur = len == 0 ? xstrdup("") :
	    xasprintf("/%.*s", (int)len, prefix);
}

/* keys_prefix - the current prefix, without a trailing "/" ("" for none) */
const char *
keys_prefix(void)
{
	return keys_prefix_cur != NULL ? keys_prefix_cur : KEYS_DEFAULT_PREFIX;
}

char *
key_resource(const char *kind, const char *ns, const char *name)
{
	return xasprintf("%s/%s/%s/%s", keys_prefix(), kind, ns, name);
}

char *
key_resource_prefix(const char *kind, const char *ns)
{
	if (ns == NULL)
		return xasprintf("%s/%s/", keys_prefix(), kind);
	return xasprintf("%s/%s/%s/", keys_prefix(), kind, ns);
}

char *
key_status(const char *kind, const char *ns, const char *name, const char *stage)
{
	return xasprintf("%s/status/%s/%s/%s/%s", keys_prefix(), kind, ns, name, stage);
}

char *
key_status_prefix(const char *kind, const char *ns, const char *name)
{
	return xasprintf("%s/status/%s/%s/%s/", keys_prefix(), kind, ns, name);
}

char *
key_status_kind_prefix(const char *kind)
{
	return xasprintf("%s/status/%s/", keys_prefix(), kind);
}

char *
key_endpoint(const char *ns, const char *deployment, const char *id)
{
	return xasprintf("%s/endpoints/%s/%s/%s", keys_prefix(), ns, deployment, id);
}

char *
key_endpoint_prefix(const char *ns, const char *deployment)
{
	return xasprintf("%s/endpoints/%s/%s/", keys_prefix(), ns, deployment);
}

char *
key_sync(const char *ns, const char *name)
{
	return xasprintf("%s/sync/%s/%s", keys_prefix(), ns, name);
}

char *
key_acl_resync(const char *ns, const char *name)
{
	if (ns == NULL)
		return xasprintf("%s/aclresync/_all", keys_prefix());
	return xasprintf("%s/aclresync/%s/%s", keys_prefix(), ns, name);
}

char *
key_acl_resync_prefix(void)
{
	return xasprintf("%s/aclresync/", keys_prefix());
}

char *
key_lock(const char *ns, const char *name)
{
	return xasprintf("%s/locks/%s/%s", keys_prefix(), ns, name);
}

char *
key_instance(const char *id)
{
	return xasprintf("%s/instances/%s", keys_prefix(), id);
}

char *
key_injected(const char *ns, const char *service)
{
	return xasprintf("%s/injected/%s/%s", keys_prefix(), ns, service);
}

char *
key_injected_prefix(void)
{
	return xasprintf("%s/injected/", keys_prefix());
}

/* copy_part - copy the n bytes at p into out (KEYS_PART_MAX); 0 or -1 */
static int
copy_part(const char *p, size_t n, char *out)
{
	if (n == 0 || n >= KEYS_PART_MAX)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/*
 * key_parse_resource - split "{prefix}/{kind}/{ns}/{name}" where kind is a
 * resource kind (decofiles, templates, tenants).  Each part must be
 * non-empty and shorter than 254 bytes.  Outputs are untouched on -1.
 */
int
key_parse_resource(const char *key, char *kind, char *ns, char *name)
{
	const char *pfx = keys_prefix(), *p, *s1, *s2;
	char k[KEYS_PART_MAX], n1[KEYS_PART_MAX], n2[KEYS_PART_MAX];
	size_t plen = strlen(pfx), i;
	int known = 0;

	if (key == NULL || strncmp(key, pfx, plen) != 0 || key[plen] != '/')
		return -1;
	p = key + plen + 1;
	if ((s1 = strchr(p, '/')) == NULL || (s2 = strchr(s1 + 1, '/')) == NULL ||
	    strchr(s2 + 1, '/') != NULL)
		return -1;
	if (copy_part(p, (size_t)(s1 - p), k) < 0 ||
	    copy_part(s1 + 1, (size_t)(s2 - s1 - 1), n1) < 0 ||
	    copy_part(s2 + 1, strlen(s2 + 1), n2) < 0)
		return -1;
	for (i = 0; i < sizeof(resource_kinds) / sizeof(resource_kinds[0]); i++)
		if (strcmp(k, resource_kinds[i]) == 0)
			known = 1;
	if (!known)
		return -1;
	memcpy(kind, k, strlen(k) + 1);
	memcpy(ns, n1, strlen(n1) + 1);
	memcpy(name, n2, strlen(n2) + 1);
	return 0;
}

/* name_valid - 1 if s is a Kubernetes-style name, else 0 */
int
name_valid(const char *s)
{
	size_t len, i;

	if (s == NULL || (len = strlen(s)) == 0 || len > 253)
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		int edge = i == 0 || i == len - 1 || s[i - 1] == '.' || s[i + 1] == '.';

		if (alnum)
			continue;
		if (c == '-' && !edge)
			continue;
		if (c == '.' && i != 0 && i != len - 1 && s[i - 1] != '.' &&
		    s[i - 1] != '-' && s[i + 1] != '-')
			continue;
		return 0;
	}
	return 1;
}

int
ns_valid(const char *s)
{
	return s != NULL && strlen(s) <= 63 && strchr(s, '.') == NULL && name_valid(s);
}

int
label_value_valid(const char *s)
{
	size_t len, i;

	if (s == NULL || (len = strlen(s)) == 0 || len > 63)
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9');

		if (!alnum && ((c != '-' && c != '_' && c != '.') || i == 0 || i == len - 1))
			return 0;
	}
	return 1;
}
