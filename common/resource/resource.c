/*
 * resource - resources in the store (see resource.h): their kinds, the
 * spec fields each knows, and their reading, checking and writing.
 * Documents are rebuilt field by field on write, so what the store holds
 * always has the same shape whatever a client sent: apiVersion, kind,
 * metadata (name, namespace, generation, annotations, labels, created_at,
 * updated_at) and spec.  Status lives apart, one fragment per stage, and
 * is merged on read: that is resource_status.c's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/resource.h"
#include "common/resource_impl.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

static const struct {
	const char *plural;
	const char *kind;
	const char *names[6];
} kinds[] = {
	{ "decofiles", "Decofile", { "decofile", "decofiles", "df", "dfs", NULL } },
	{ "templates", "DecofileTemplate", { "decofiletemplate", "decofiletemplates",
	  "template", "templates", "dft", NULL } },
	{ "tenants", "Tenant", { "tenant", "tenants", NULL } },
	{ "endpoints", "Endpoint", { "endpoint", "endpoints", "ep", NULL } },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const char *
resource_kind_plural(const char *kind)
{
	char low[64];
	size_t i;

	for (i = 0; kind[i] && i < sizeof(low) - 1; i++)
		low[i] = (kind[i] >= 'A' && kind[i] <= 'Z') ? kind[i] + 32 : kind[i];
	low[i] = '\0';
	for (size_t k = 0; k < NKINDS; k++)
		for (int n = 0; kinds[k].names[n] != NULL; n++)
			if (strcmp(low, kinds[k].names[n]) == 0)
				return kinds[k].plural;
	return NULL;
}

const char *
resource_kind_name(const char *plural)
{
	for (size_t k = 0; k < NKINDS; k++)
		if (strcmp(plural, kinds[k].plural) == 0)
			return kinds[k].kind;
	return NULL;
}

/*
 * The spec fields each kind knows (the CRDs in deploy/ list the same, which
 * t/unit/resource_fields_test checks): a path per line, "x.*" for an object
 * whose members are free (block names).  tanstackKV is the Go operator's:
 * its objects apply unchanged, and the publisher reports the target.
 */
#define SOURCE_FIELDS "source", "inline", "inline.value", "inline.value.*", \
	"github", "github.org", "github.repo", "github.commit", "github.path", \
	"github.period", "github.secret", "git", "git.url", "git.ref", "git.dir", \
	"git.period", "git.secret", "dir", "dir.path", "oci", "oci.image", \
	"oci.dir", "oci.period", "oci.secret"
static const char *const decofile_fields[] = { SOURCE_FIELDS, "deploymentId",
	"target", "tanstackKV", "tanstackKV.kvNamespaceId", "tanstackKV.siteOrigin",
	"templates", "updatePolicy", "updatePolicy.templateChanges",
	"updatePolicy.window", "updatePolicy.duration", "updatePolicy.timeZone", "silent", "notify", "notify.style",
	"notify.concurrency", "endpoints", "suspend", NULL };
static const char *const template_fields[] = { SOURCE_FIELDS, "rollout", "rollout.canary",
	"rollout.waves", "rollout.pause", "rollout.maxFailed", "rollout.waveTimeout", NULL };
static const char *const tenant_fields[] = { "valkeyAcl", "site", NULL };
static const char *const endpoint_fields[] = { "url", "style", "tsFile", "token", NULL };

/* field_known - 2: known with free members, 1: known, 0: unknown */
static int
field_known(const char *const *list, const char *path)
{
	size_t n = strlen(path);
	int found = 0;

	for (int i = 0; list[i] != NULL; i++) {
		if (strcmp(list[i], path) == 0)
			found = 1;
		else if (strncmp(list[i], path, n) == 0 && strcmp(list[i] + n, ".*") == 0)
			return 2;
	}
	return found;
}

static int
unknown_walk(const char *const *list, yajl_val v, struct buf *path, struct buf *out)
{
	size_t mark = path->len;
	int n = 0, known;

	for (size_t i = 0; v != NULL && YAJL_IS_OBJECT(v) && i < v->u.object.len; i++) {
		if (mark > 0)
			buf_addc(path, '.');
		buf_adds(path, v->u.object.keys[i]);
		known = field_known(list, path->data);
		if (known == 0) {
			if (out->len > 0)
				buf_adds(out, ", ");
			buf_printf(out, "\"spec.%s\"", path->data);
			n++;
		} else if (known == 1) {
			n += unknown_walk(list, v->u.object.values[i], path, out);
		}
		path->len = mark;
		path->data[mark] = '\0';
	}
	return n;
}

const char *const *
resource_spec_fields(const char *plural)
{
	if (strcmp(plural, "decofiles") == 0)
		return decofile_fields;
	if (strcmp(plural, "templates") == 0)
		return template_fields;
	if (strcmp(plural, "tenants") == 0)
		return tenant_fields;
	if (strcmp(plural, "endpoints") == 0)
		return endpoint_fields;
	return NULL;
}

int
resource_unknown_fields(yajl_val doc, struct buf *out)
{
	const char *kind = json_get_str(doc, "kind", NULL);
	const char *plural = kind ? resource_kind_plural(kind) : NULL;
	const char *const *list;
	struct buf path;
	int n;

	if (plural == NULL || (list = resource_spec_fields(plural)) == NULL)
		return 0;
	buf_init(&path);
	buf_adds(&path, "");
	n = unknown_walk(list, json_get(doc, "spec", NULL), &path, out);
	buf_free(&path);
	return n;
}

/* resource_get_tree - read key and parse it; 0, 1 absent, -1 error */
int
resource_get_tree(struct store *s, const char *key, yajl_val *doc, char *err, size_t errlen)
{
	struct json_error je;
	char *val;
	size_t len;
	int rc;

	*doc = NULL;
	if ((rc = store_get(s, key, &val, &len)) != 0) {
		if (rc < 0)
			snprintf(err, errlen, "%s", store_error(s));
		return rc;
	}
	*doc = json_parse(val, len, &je);
	free(val);
	if (*doc == NULL) {
		snprintf(err, errlen, "%s: stored value is not JSON (line %d column %d: %s)",
		    key, je.line, je.column, je.msg);
		return -1;
	}
	return 0;
}

int
resource_get(struct store *s, const char *plural, const char *ns, const char *name,
    yajl_val *doc, char *err, size_t errlen)
{
	char *key = key_resource(plural, ns, name);
	int rc = resource_get_tree(s, key, doc, err, errlen);

	free(key);
	return rc;
}

/* spec_text - the spec re-serialised, to tell whether it changed */
static char *
spec_text(yajl_val doc)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, json_get(doc, "spec", NULL));
	return buf_steal(&b, NULL);
}

int
resource_validate(yajl_val doc, const char *plural, const char *name, const char *ns,
    char *err, size_t errlen)
{
	yajl_val v;

	if (name == NULL || !name_valid(name)) {
		snprintf(err, errlen, "metadata.name \"%.80s%s\" is not a valid name (a "
		    "DNS-1123 subdomain: lower case letters, digits, '-' and '.', each "
		    "dot-separated part starting and ending with a letter or digit, at "
		    "most 253)", name ? name : "", name && strlen(name) > 80 ? "..." : "");
		return -1;
	}
	if (strcmp(plural, "decofiles") == 0 && strlen(name) > DECOFILE_NAME_MAX) {
		snprintf(err, errlen, "metadata.name is %zu characters; a Decofile's name "
		    "may have at most %d, so that its ConfigMap decofile-<name> and its "
		    "job lock fit", strlen(name), DECOFILE_NAME_MAX);
		return -1;
	}
	if (!ns_valid(ns)) {
		snprintf(err, errlen, "metadata.namespace \"%.80s\" is not a valid namespace "
		    "(a DNS-1123 label: lower case letters, digits and '-', no '.', at "
		    "most 63)", ns);
		return -1;
	}
	if ((v = json_get(doc, "spec", NULL)) != NULL && !YAJL_IS_OBJECT(v)) {
		snprintf(err, errlen, "spec must be an object");
		return -1;
	}
	if ((strcmp(plural, "decofiles") == 0 || strcmp(plural, "templates") == 0) &&
	    url_has_credentials(json_get_str(doc, "spec", "git", "url", NULL))) {
		snprintf(err, errlen, "spec.git.url carries credentials (user:password@ "
		    "or token@): they would show in ps, logs and decoctl get; put them in "
		    "a file under secrets_dir and name it in spec.git.secret");
		return -1;
	}
	if (strcmp(plural, "decofiles") == 0) {
		const char *dep = json_get_str(doc, "spec", "deploymentId", NULL);

		if (json_get(doc, "spec", "deploymentId", NULL) != NULL && dep == NULL) {
			snprintf(err, errlen, "spec.deploymentId must be a string");
			return -1;
		}
		if (!label_value_valid(dep ? dep : name)) {
			snprintf(err, errlen, "%s \"%.80s\" is not a valid deploymentId (a "
			    "Kubernetes label value: letters, digits, '-', '_' and '.', at "
			    "most 63)%s", dep ? "spec.deploymentId" : "the deploymentId "
			    "(metadata.name)", dep ? dep : name, dep ? "" :
			    "; set spec.deploymentId");
			return -1;
		}
	}
	return 0;
}

enum { PUT_DURABLE, PUT_DRY, PUT_VOLATILE };

static int put(struct store *s, yajl_val doc, int64_t generation, int mode,
    const struct store_kv *known, const char *default_ns, int *changed, char *out_plural,
    char *out_ns, char *out_name, char *err, size_t errlen);

int
resource_put(struct store *s, yajl_val doc, const char *default_ns, int *changed,
    char *out_plural, char *out_ns, char *out_name, char *err, size_t errlen)
{
	return put(s, doc, 0, 0, NULL, default_ns, changed, out_plural, out_ns, out_name, err,
	    errlen);
}

int
resource_put_check(struct store *s, yajl_val doc, const char *default_ns, int *changed,
    char *out_plural, char *out_ns, char *out_name, char *err, size_t errlen)
{
	return put(s, doc, 0, PUT_DRY, NULL, default_ns, changed, out_plural, out_ns, out_name, err,
	    errlen);
}

int
resource_put_gen(struct store *s, yajl_val doc, int64_t generation,
    const char *default_ns, int *changed, char *out_plural, char *out_ns,
    char *out_name, char *err, size_t errlen)
{
	return put(s, doc, generation, 0, NULL, default_ns, changed, out_plural, out_ns,
	    out_name, err, errlen);
}

int
resource_put_gen_known(struct store *s, yajl_val doc, int64_t generation,
    const struct store_kv *known, int *changed, char *out_plural, char *out_ns,
    char *out_name, char *err, size_t errlen)
{
	/* a CR's mirror: the API server's list rebuilds one a power cut lost */
	return put(s, doc, generation, PUT_VOLATILE, known, NULL, changed, out_plural, out_ns,
	    out_name, err, errlen);
}

/*
 * put - resource_put_gen; mode PUT_DRY: every check and the verdict, nothing
 * written; PUT_VOLATILE: written as store_put_volatile (no fsync);
 * known: the stored record as the caller holds it (used when its key is the
 * resource's), else it is read from the store
 */
static int
put(struct store *s, yajl_val doc, int64_t generation, int mode,
    const struct store_kv *known, const char *default_ns, int *changed, char *out_plural,
    char *out_ns, char *out_name, char *err, size_t errlen)
{
	const char *api = json_get_str(doc, "apiVersion", NULL);
	const char *kind = json_get_str(doc, "kind", NULL);
	const char *name = json_get_str(doc, "metadata", "name", NULL);
	const char *ns = json_get_str(doc, "metadata", "namespace", NULL);
	const char *plural, *created = NULL;
	yajl_val old = NULL, v;
	char now[40], *key, *newspec, *oldspec = NULL;
	int64_t gen = 1;
	struct buf b;
	struct jw w;
	int rc, same = 0;

	if (changed != NULL)
		*changed = 0;
	if (doc == NULL || !YAJL_IS_OBJECT(doc)) {
		snprintf(err, errlen, "a resource must be a JSON/YAML object");
		return -1;
	}
	if (api == NULL || strcmp(api, API_VERSION) != 0) {
		snprintf(err, errlen, "apiVersion must be \"%s\" (got \"%s\")", API_VERSION,
		    api ? api : "");
		return -1;
	}
	if (kind == NULL || (plural = resource_kind_plural(kind)) == NULL) {
		snprintf(err, errlen, "unknown kind \"%s\" (Decofile, DecofileTemplate, "
		    "Tenant, Endpoint)", kind ? kind : "");
		return -1;
	}
	if (ns == NULL || *ns == '\0')
		ns = default_ns ? default_ns : "default";
	if (resource_validate(doc, plural, name, ns, err, errlen) < 0)
		return -1;
	key = key_resource(plural, ns, name);
	if (known != NULL && strcmp(known->key, key) == 0) {
		if ((old = json_parse(known->value, known->vlen, NULL)) == NULL)
			rc = resource_get_tree(s, key, &old, err, errlen);	/* as if not known */
		else
			rc = 0;
	} else
		rc = resource_get_tree(s, key, &old, err, errlen);
	if (rc < 0) {
		free(key);
		return -1;
	}
	newspec = spec_text(doc);
	if (old != NULL) {
		oldspec = spec_text(old);
		gen = json_get_int(old, 0, "metadata", "generation", NULL);
		created = json_get_str(old, "metadata", "created_at", NULL);
		same = strcmp(oldspec, newspec) == 0;
		if (!same)
			gen++;
	}
	if (generation > 0) {
		/* the source's own count (a CR's metadata.generation) */
		same = same && gen == generation;
		gen = generation;
	}
	rfc3339_now(now, sizeof(now));
	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, API_VERSION, resource_kind_name(plural), ns, name);
	jw_key(&w, "generation");
	jw_int(&w, gen > 0 ? gen : 1);
	if ((v = json_get(doc, "metadata", "annotations", NULL)) != NULL && YAJL_IS_OBJECT(v)) {
		jw_key(&w, "annotations");
		jw_value(&w, v);
	}
	if ((v = json_get(doc, "metadata", "labels", NULL)) != NULL && YAJL_IS_OBJECT(v)) {
		jw_key(&w, "labels");
		jw_value(&w, v);
	}
	jw_key(&w, "created_at");
	jw_str(&w, created ? created : now);
	jw_key(&w, "updated_at");
	jw_str(&w, now);
	jw_end_obj(&w);
	jw_key(&w, "spec");
	jw_raw(&w, newspec, strlen(newspec));
	jw_end_obj(&w);

	if (b.len > RESOURCE_MAX_SIZE) {
		snprintf(err, errlen, "the resource is %zu bytes, over the limit of %u "
		    "(1 MiB, as Kubernetes objects); keep large blocks in git or a folder",
		    b.len, RESOURCE_MAX_SIZE);
		free(key);
		free(newspec);
		free(oldspec);
		buf_free(&b);
		if (old != NULL)
			yajl_tree_free(old);
		return -1;
	}
	rc = 0;
	/* metadata (annotations, labels) may change without the spec */
	if (old != NULL && same) {
		struct buf ob;
		struct jw ow;

		buf_init(&ob);
		jw_init(&ow, &ob);
		jw_value(&ow, json_get(old, "metadata", "annotations", NULL));
		jw_value(&ow, json_get(old, "metadata", "labels", NULL));
		buf_adds(&ob, "|");
		{
			struct buf nb;
			struct jw nw;

			buf_init(&nb);
			jw_init(&nw, &nb);
			jw_value(&nw, json_get(doc, "metadata", "annotations", NULL));
			jw_value(&nw, json_get(doc, "metadata", "labels", NULL));
			buf_adds(&nb, "|");
			same = strcmp(ob.data, nb.data) == 0;
			buf_free(&nb);
		}
		buf_free(&ob);
	}
	if (mode != PUT_DRY && (old == NULL || !same)) {
		if ((mode == PUT_VOLATILE ? store_put_volatile(s, key, b.data, b.len) :
		    store_put(s, key, b.data, b.len)) < 0) {
			snprintf(err, errlen, "%s", store_error(s));
			rc = -1;
		}
	}
	if (changed != NULL)
		*changed = old == NULL ? 2 : (same ? 0 : 1);
	if (out_plural)
		snprintf(out_plural, 32, "%s", plural);
	if (out_ns)
		snprintf(out_ns, 254, "%s", ns);
	if (out_name)
		snprintf(out_name, 254, "%s", name);
	buf_free(&b);
	free(newspec);
	free(oldspec);
	free(key);
	yajl_tree_free(old);
	return rc;
}

const char *
decofile_source(yajl_val doc)
{
	const char *src = json_get_str(doc, "spec", "source", NULL);

	return src != NULL && *src ? src : "inline";
}

const char *
decofile_deployment_id(yajl_val doc)
{
	const char *d = json_get_str(doc, "spec", "deploymentId", NULL);

	return d != NULL && *d ? d : json_get_str(doc, "metadata", "name", NULL);
}

const char *
decofile_target(yajl_val doc, const char *def)
{
	const char *t = json_get_str(doc, "spec", "target", NULL);

	return t != NULL && *t ? t : def;
}

int64_t
decofile_generation(yajl_val doc)
{
	return json_get_int(doc, 0, "metadata", "generation", NULL);
}
