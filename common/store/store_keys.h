/*
 * store_keys - the whole key layout of the store, one function per kind of
 * key, so it lives in exactly one file.  Every function returns a new
 * string (caller frees).  prefix defaults to "/decod".
 *
 *   {prefix}/decofiles/{ns}/{name}              Decofile (spec, metadata)
 *   {prefix}/templates/{ns}/{name}              DecofileTemplate
 *   {prefix}/tenants/{ns}/{name}                Tenant
 *   {prefix}/status/{kind}/{ns}/{name}/{stage}  status fragment a stage owns
 *   {prefix}/endpoints/{ns}/{deploymentId}/{id} Endpoint (with TTL)
 *   {prefix}/sync/{ns}/{name}                   "fetch now" trigger
 *   {prefix}/aclresync/{ns}/{name}              "check this tenant's ACL user now"
 *   {prefix}/aclresync/_all                     "check every tenant now"
 *   {prefix}/locks/{ns}/{name}                  job lock
 *   {prefix}/instances/{id}                     running decod instances
 *   {prefix}/injected/{ns}/{service}            Knative Service the webhook injected
 */
#ifndef DECOD_STORE_KEYS_H
#define DECOD_STORE_KEYS_H

void keys_set_prefix(const char *prefix);
const char *keys_prefix(void);

/* kind is "decofiles", "templates" or "tenants" */
char *key_resource(const char *kind, const char *ns, const char *name);
/* key_resource_prefix - every resource of kind (ns NULL: all namespaces) */
char *key_resource_prefix(const char *kind, const char *ns);
char *key_status(const char *kind, const char *ns, const char *name, const char *stage);
char *key_status_prefix(const char *kind, const char *ns, const char *name);
/* key_status_kind_prefix - every status fragment of every resource of kind */
char *key_status_kind_prefix(const char *kind);
char *key_endpoint(const char *ns, const char *deployment, const char *id);
char *key_endpoint_prefix(const char *ns, const char *deployment);
char *key_sync(const char *ns, const char *name);
/*
 * key_acl_resync - the acl stage's resync trigger for Tenant ns/name, or
 * for every tenant when ns is NULL; key_acl_resync_prefix - all of them
 */
char *key_acl_resync(const char *ns, const char *name);
char *key_acl_resync_prefix(void);
char *key_lock(const char *ns, const char *name);
char *key_instance(const char *id);
/*
 * key_injected - the record of a Knative Service the webhook injected with
 * a Decofile (so a Decofile in use is not deleted); key_injected_prefix
 * lists them all.
 */
char *key_injected(const char *ns, const char *service);
char *key_injected_prefix(void);

/*
 * key_parse_resource - split "{prefix}/{kind}/{ns}/{name}" into its parts
 * (each copied into buffers of 254 bytes); 0 or -1 if not of that form.
 */
int key_parse_resource(const char *key, char *kind, char *ns, char *name);

/*
 * name_valid - a DNS-1123 subdomain, as Kubernetes checks object names:
 * at most 253 bytes of dot-separated labels, each [a-z0-9]([-a-z0-9]*[a-z0-9])?
 * (so no "..", no "-" next to a ".").
 */
int name_valid(const char *s);

/* ns_valid - a DNS-1123 label, as Kubernetes checks namespaces: <= 63, no dots */
int ns_valid(const char *s);

/*
 * label_value_valid - a Kubernetes label value that is not empty: <= 63,
 * [A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?  (a deploymentId is one).
 */
int label_value_valid(const char *s);

/*
 * The longest Decofile name whose derived names all fit: the ConfigMap
 * "decofile-<name>" (253), the local store's job-lock file "<name>.lock"
 * (255 bytes a file name).
 */
#define DECOFILE_NAME_MAX 244

#endif
