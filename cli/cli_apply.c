/*
 * cli_apply - the commands that write to the store: apply (YAML or JSON,
 * one or many documents, each through resource_put; --dry-run checks and
 * writes nothing), delete, sync
 * (the "fetch now" trigger the fetcher watches) and acl resync (the
 * "check ACL users now" trigger the acl stage watches).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemons/renderer/render_policy.h"
#include "daemons/renderer/render_rollout.h"
#include "cli/cli_yaml.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"

#define APPLY_MAX_INPUT (64u << 20)

/* read_input - the whole of path, or standard input for "-"; NULL after printing why */
static char *
read_input(const char *path, size_t *len)
{
	struct buf b;
	char chunk[65536];
	size_t n;
	char *text;

	if (strcmp(path, "-") != 0) {
		if ((text = read_file(path, len, APPLY_MAX_INPUT)) == NULL)
			cli_error("cannot read %s: %s", path, errno == EFBIG ?
			    "larger than 64 MiB" : strerror(errno));
		return text;
	}
	buf_init(&b);
	buf_adds(&b, "");
	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
		buf_add(&b, chunk, n);
		if (b.len > APPLY_MAX_INPUT) {
			buf_free(&b);
			cli_error("standard input is larger than 64 MiB");
			return NULL;
		}
	}
	if (ferror(stdin)) {
		buf_free(&b);
		cli_error("cannot read standard input: %s", strerror(errno));
		return NULL;
	}
	return buf_steal(&b, len);
}

/* same_json - the two values (either may be NULL) have the same compact JSON */
static int
same_json(yajl_val a, yajl_val b)
{
	struct buf x, y;
	struct jw w;
	int same;

	if (a == NULL || b == NULL)
		return a == b;
	buf_init(&x);
	buf_init(&y);
	jw_init(&w, &x);
	jw_value(&w, a);
	jw_init(&w, &y);
	jw_value(&w, b);
	same = x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
	buf_free(&x);
	buf_free(&y);
	return same;
}

yajl_val
cli_apply_doc(struct cli *c, const char *fname, const struct yaml_doc *d, int idx,
    const char **plural_out, const char **ns_out, const char **name_out)
{
	struct json_error je;
	yajl_val doc = json_parse(d->json, strlen(d->json), &je);
	const char *kind, *name, *ns, *plural, *own;
	struct render_policy policy;
	struct rollout_spec rollout;
	char err[512];

	if (doc == NULL || !YAJL_IS_OBJECT(doc)) {
		cli_error("%s:%d: document %d is not an object", fname, d->line, idx);
		goto bad;
	}
	kind = json_get_str(doc, "kind", NULL);
	name = json_get_str(doc, "metadata", "name", NULL);
	ns = json_get_str(doc, "metadata", "namespace", NULL);
	if (kind == NULL) {
		cli_error("%s:%d: document %d has no kind", fname, d->line, idx);
		goto bad;
	}
	if ((plural = resource_kind_plural(kind)) == NULL ||
	    strcmp(plural, "endpoints") == 0) {
		cli_error("%s:%d: unknown kind \"%s\" (Decofile, DecofileTemplate or Tenant)",
		    fname, d->line, kind);
		goto bad;
	}
	if (name == NULL || *name == '\0') {
		cli_error("%s:%d: %s has no metadata.name", fname, d->line, kind);
		goto bad;
	}
	if (ns != NULL && c->ns_set && strcmp(ns, c->ns) != 0) {
		cli_error("%s:%d: the namespace from the provided object \"%s\" does not "
		    "match the namespace \"%s\"; drop one of them", fname, d->line, ns, c->ns);
		goto bad;
	}
	if (ns == NULL)
		ns = c->ns;
	if (resource_validate(doc, plural, name, ns, err, sizeof(err)) < 0 ||
	    (strcmp(plural, "decofiles") == 0 &&
	    render_policy_parse(doc, &policy, err, sizeof(err)) < 0) ||
	    (strcmp(plural, "templates") == 0 &&
	    render_rollout_parse(doc, &rollout, err, sizeof(err)) < 0)) {
		cli_error("%s:%d: %s/%s: %s", fname, d->line, cli_kind_singular(plural),
		    strlen(name) > 80 ? "(name)" : name, err);
		goto bad;
	}
	if ((own = resource_own_annotation(doc)) != NULL) {
		cli_error("%s:%d: %s/%s: the annotation %s is decod's own (the Kubernetes "
		    "front door marks a CR's mirror with it): remove it", fname, d->line,
		    cli_kind_singular(plural), strlen(name) > 80 ? "(name)" : name,
		    strlen(own) > 80 ? RESOURCE_OWN_PREFIX "..." : own);
		goto bad;
	}
	{
		struct buf unk;
		int n;

		buf_init(&unk);
		buf_adds(&unk, "");
		if ((n = resource_unknown_fields(doc, &unk)) > 0 && c->strict) {
			cli_error("%s:%d: %s/%s: unknown field%s %s (--strict)", fname, d->line,
			    cli_kind_singular(plural), name, n > 1 ? "s" : "", unk.data);
			buf_free(&unk);
			goto bad;
		}
		if (n > 0)
			fprintf(stderr, "Warning: %s:%d: %s/%s: unknown field%s %s\n", fname,
			    d->line, cli_kind_singular(plural), name, n > 1 ? "s" : "", unk.data);
		buf_free(&unk);
	}
	*plural_out = plural;
	*ns_out = ns;
	*name_out = name;
	return doc;
bad:
	if (doc)
		yajl_tree_free(doc);
	return NULL;
}

/*
 * apply_one - put one document (--dry-run=server: every check against the
 * store, nothing written; client: the checks that need no store); prints
 * its outcome; CLI_OK or CLI_FAIL
 */
static int
apply_one(struct cli *c, const char *fname, const struct yaml_doc *d, int idx)
{
	yajl_val doc, old = NULL;
	const char *name, *ns, *plural, *verb, *dry = "";
	char err[512], oplural[256], ons[256], oname[256];
	int changed = 0, had, rc = CLI_FAIL;

	if ((doc = cli_apply_doc(c, fname, d, idx, &plural, &ns, &name)) == NULL)
		return CLI_FAIL;
	if (c->dry_run != NULL && strcmp(c->dry_run, "client") == 0) {
		printf("%s/%s valid (dry run: client, the store not read)\n",
		    cli_kind_singular(plural), name);
		yajl_tree_free(doc);
		return CLI_OK;
	}
	had = resource_get(c->st, plural, ns, name, &old, err, sizeof(err));
	if (had < 0) {
		cli_error("%s:%d: %s", fname, d->line, err);
		goto out;
	}
	if (had == 0 && resource_mirror_uid(old) != NULL) {
		const char *kind = json_get_str(old, "kind", NULL);

		cli_error("%s:%d: %s/%s mirrors the %s CR %s/%s: change the CR with kubectl "
		    "(the front door would write its mirror back)", fname, d->line,
		    cli_kind_singular(plural), name, kind ? kind : "Kubernetes", ns, name);
		goto out;
	}
	oplural[0] = ons[0] = oname[0] = '\0';
	if (c->dry_run != NULL) {
		dry = " (server dry run)";
		rc = resource_put_check(c->st, doc, c->ns, &changed, oplural, ons, oname, err,
		    sizeof(err));
	} else {
		rc = resource_put(c->st, doc, c->ns, &changed, oplural, ons, oname, err,
		    sizeof(err));
	}
	if (rc < 0) {
		cli_error("%s:%d: %s/%s: %s", fname, d->line, cli_kind_singular(plural), name, err);
		rc = CLI_FAIL;
		goto out;
	}
	if (had == 1)
		verb = "created";
	else if (changed || !same_json(json_get(old, "metadata", "labels", NULL),
	    json_get(doc, "metadata", "labels", NULL)) ||
	    !same_json(json_get(old, "metadata", "annotations", NULL),
	    json_get(doc, "metadata", "annotations", NULL)))
		verb = "configured";
	else
		verb = "unchanged";
	printf("%s/%s %s%s\n", cli_kind_singular(oplural[0] ? oplural : plural),
	    oname[0] ? oname : name, verb, dry);
	rc = CLI_OK;
out:
	if (old)
		yajl_tree_free(old);
	yajl_tree_free(doc);
	return rc;
}

int
cli_load_docs(struct cli *c, struct yaml_docs *docs, const char **fname)
{
	/* no resource is over 1 MiB: neither is a document */
	static const struct yaml_opts opts = { RESOURCE_MAX_SIZE, 0 };
	struct yaml_error e;
	char *text;
	size_t len = 0;

	docs->v = NULL;
	docs->n = 0;
	if (c->file == NULL)
		return cli_usage_error(c, "%s needs -f FILE (or -f - for standard input)",
		    c->cmd);
	*fname = strcmp(c->file, "-") == 0 ? "<stdin>" : c->file;
	if ((text = read_input(c->file, &len)) == NULL)
		return CLI_FAIL;
	memset(&e, 0, sizeof(e));
	if (yaml_read_docs(c->file, text, len, &opts, docs, &e) < 0) {
		free(text);
		if (e.column > 0)
			return cli_error("%s:%d:%d: %s", *fname, e.line, e.column, e.msg);
		return cli_error("%s:%d: %s", *fname, e.line, e.msg);
	}
	free(text);
	if (docs->n == 0) {
		yaml_docs_free(docs);
		return cli_error("%s: no objects passed to %s", *fname, c->cmd);
	}
	return CLI_OK;
}

int
cli_apply(struct cli *c)
{
	struct yaml_docs docs;
	const char *fname;
	int rc;

	if (c->dry_run != NULL && strcmp(c->dry_run, "none") == 0)
		c->dry_run = NULL;
	if (c->dry_run != NULL && strcmp(c->dry_run, "server") != 0 &&
	    strcmp(c->dry_run, "client") != 0)
		return cli_usage_error(c, "bad --dry-run \"%s\" (server, client or none)",
		    c->dry_run);
	if ((rc = cli_load_docs(c, &docs, &fname)) != CLI_OK)
		return rc;
	if ((c->dry_run == NULL || strcmp(c->dry_run, "client") != 0) &&
	    cli_store(c) == NULL) {
		yaml_docs_free(&docs);
		return CLI_FAIL;
	}
	for (size_t i = 0; i < docs.n; i++)
		if (apply_one(c, fname, &docs.v[i], (int)i + 1) != CLI_OK)
			rc = CLI_FAIL;
	yaml_docs_free(&docs);
	return rc;
}

int
cli_delete(struct cli *c)
{
	const char *plural = resource_kind_plural(c->argv[0]), *name = c->argv[1];
	yajl_val doc = NULL;
	char err[512], *key;
	int rc;

	if (plural == NULL)
		return cli_usage_error(c, "unknown kind \"%s\" (decofile, template, tenant)",
		    c->argv[0]);
	if (strcmp(plural, "endpoints") == 0)
		return cli_error("endpoints go away by themselves when their replica stops "
		    "heart-beating");
	if (cli_store(c) == NULL)
		return CLI_FAIL;
	rc = resource_get(c->st, plural, c->ns, name, &doc, err, sizeof(err));
	if (rc < 0)
		return cli_error("%s", err);
	if (rc == 1)
		return cli_not_found(plural, name);
	yajl_tree_free(doc);
	key = key_resource(plural, c->ns, name);
	rc = store_delete(c->st, key);
	free(key);
	if (rc < 0)
		return cli_error("cannot delete %s/%s: %s", cli_kind_singular(plural), name,
		    store_error(c->st));
	printf("%s \"%s\" deleted\n", cli_kind_singular(plural), name);
	return CLI_OK;
}

int
cli_sync(struct cli *c)
{
	const char *name = c->argv[0];
	yajl_val doc = NULL;
	char err[512];
	int rc;

	if (cli_store(c) == NULL)
		return CLI_FAIL;
	rc = resource_get(c->st, "decofiles", c->ns, name, &doc, err, sizeof(err));
	if (rc < 0)
		return cli_error("%s", err);
	if (rc == 1)
		return cli_not_found("decofiles", name);
	yajl_tree_free(doc);
	if (decofile_request_sync(c->st, c->ns, name) < 0)
		return cli_error("cannot write the sync trigger: %s", store_error(c->st));
	printf("decofile/%s sync requested\n", name);
	return CLI_OK;
}

/*
 * cli_acl - "acl resync [TENANT]": the acl stage's resync trigger.  Against
 * a cluster (the stage's own choice: kubeconfig, or in a pod) the tenants
 * are annotated namespaces, keyed (ns, ns) by the stage's Kubernetes
 * source: TENANT is then the namespace, -n does not apply, and the trigger
 * is "<ns>/<ns>" (the namespace is not looked up: decoctl needs no API
 * access; the stage ignores a trigger for a tenant it does not have).
 */
int
cli_acl(struct cli *c)
{
	const char *name = c->argc > 1 ? c->argv[1] : NULL;
	yajl_val doc = NULL;
	char err[512], nonce[32], *key;
	int rc, cluster = 0;

	if (strcmp(c->argv[0], "resync") != 0)
		return cli_usage_error(c, "unknown acl command \"%s\" (resync)", c->argv[0]);
	if (name != NULL &&
	    (cluster = kube_configured(c->cf, err, sizeof(err))) < 0)
		return cli_error("bad Kubernetes configuration: %s", err);
	if (cli_store(c) == NULL)
		return CLI_FAIL;
	if (name != NULL && !cluster) {
		rc = resource_get(c->st, "tenants", c->ns, name, &doc, err, sizeof(err));
		if (rc < 0)
			return cli_error("%s", err);
		if (rc == 1)
			return cli_not_found("tenants", name);
		yajl_tree_free(doc);
	}
	snprintf(nonce, sizeof(nonce), "%lld", (long long)wall_ms());
	if (name == NULL)
		key = key_acl_resync(NULL, NULL);
	else
		key = key_acl_resync(cluster ? name : c->ns, name);
	rc = store_put(c->st, key, nonce, strlen(nonce));
	free(key);
	if (rc < 0)
		return cli_error("cannot write the resync trigger: %s", store_error(c->st));
	if (name != NULL)
		printf("%s/%s resync requested\n", cluster ? "namespace" : "tenant", name);
	else
		printf("resync of every tenant requested\n");
	return CLI_OK;
}
