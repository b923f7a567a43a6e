/*
 * acl - the acl stage's core as its tenant sources see it.  A source (the
 * store's Tenant resources, or Kubernetes namespaces) tells the
 * core which tenants exist (acl_tenant_put / acl_tenant_del), asks for
 * resyncs, and is asked back to report a tenant's condition and to keep
 * its credentials (env file, or a Secret).  Every call happens on the
 * stage's loop thread.
 */
#ifndef DECOD_ACL_H
#define DECOD_ACL_H

#include <stddef.h>

struct stage;
struct acl;

struct acl_source {
	const char *name;
	/* start watching; NULL state on failure (fatal at start-up) */
	void *(*start)(struct acl *a, struct stage *st);
	/* then deliver every tenant there is now, and the orphans; 0 or -1 */
	int (*load)(void *state);
	void (*stop)(void *state);
	/*
	 * the tenant's Provisioned condition (and its user) changed; the source
	 * may hold the write back until flush (end of a round), NULL: none
	 */
	void (*report)(void *state, const char *ns, const char *name, const char *user,
	    const char *status, const char *reason, const char *message);
	void (*flush)(void *state);
	/* credentials of ns: 0 found (user, password filled), 1 none, -1 error */
	int (*cred_load)(void *state, const char *ns, char *user, size_t userlen,
	    char *password, size_t pwlen);
	/*
	 * keep them durably before they are used; 0, or -1 with err, or 1:
	 * pending (an asynchronous write, the Secret in Kubernetes): the tenant
	 * is skipped for now and the source calls acl_resync once the write
	 * has landed, cred_load then finding them
	 */
	int (*cred_save)(void *state, const char *ns, const char *user, const char *password,
	    char *err, size_t errlen);
	/* the user is gone from every node: forget the credentials; 0 or -1 */
	int (*cred_remove)(void *state, const char *ns);
};

/* the store's Tenant resources (acl_store.c) */
extern const struct acl_source acl_source_store;
/* namespaces annotated deco.sites/valkey-acl, Secrets valkey-acl (acl_kube.c) */
extern const struct acl_source acl_source_kube;

/*
 * acl_tenant_put - tenant ns/name asks for the userlen bytes at user
 * (enabled=0: it no longer wants one, as if deleted).  The bytes are judged
 * whole: a NUL inside or a name too long is refused (InvalidName), never
 * cut short.  since (RFC 3339, may be NULL) is when it was created: of two
 * tenants wanting one user or one namespace the older wins.  Provisioning
 * starts soon when it is new or its user changed; resync=1 asks for a
 * check even when nothing changed.
 */
void acl_tenant_put(struct acl *a, const char *ns, const char *name, const char *user,
    size_t userlen, const char *since, int enabled, int resync);

/* acl_tenant_del - the tenant is gone: its user is deleted on every node */
void acl_tenant_del(struct acl *a, const char *ns, const char *name);

/*
 * acl_orphan - credentials of ns for user exist but no tenant claims them
 * (found at start-up): the user is deleted on every node, then
 * cred_remove.  Ignored when a tenant of ns exists by then.
 */
void acl_orphan(struct acl *a, const char *ns, const char *user);

/*
 * acl_relist_begin / acl_relist_end - around a full re-list by the source:
 * every tenant not put in between is removed (as acl_tenant_del), so a
 * source that lost its watch history misses no deletion.
 */
void acl_relist_begin(struct acl *a);
void acl_relist_end(struct acl *a);

/* acl_resync - check tenant ns/name (NULL, NULL: every tenant) on every node now */
void acl_resync(struct acl *a, const char *ns, const char *name);

/* acl_state_dir - <state_dir>/acl, where the store source keeps env files */
const char *acl_state_dir(struct acl *a);

#endif
