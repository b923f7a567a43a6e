/*
 * webhook_mutate - the mutating answer: the JSONPatch that injects a
 * Decofile into a Knative Service (label, volume, mount, env, envFrom),
 * computed against the object exactly as received: arrays that are missing
 * are created before anything is appended to them, and an object that
 * already carries every injection gets no patch at all, so re-admission
 * changes nothing.  The review it answers is read by webhook_admit.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/s3key.h"
#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"
#include "daemons/webhook/webhook_admit_int.h"

#define ENV_RELEASE	"DECO_RELEASE"
#define ENV_TOKEN	"DECO_RELEASE_RELOAD_TOKEN"
#define ENV_AUTHORITIES	"DECO_ALLOWED_AUTHORITIES"

/* a JSONPatch being written: ops appended to one array */
struct patch {
	struct buf b;
	struct jw w;
	int n;
};

void
wh_merge_authorities(const char *existing, const char *host, struct buf *out)
{
	const char *p = existing != NULL ? existing : WH_DEFAULT_AUTHORITIES;
	size_t hlen = strlen(host);

	buf_reset(out);
	while (*p != '\0') {
		size_t n = strcspn(p, ","), s = 0, e = n;
		int dup = 0;

		while (s < e && (p[s] == ' ' || p[s] == '\t'))
			s++;
		while (e > s && (p[e - 1] == ' ' || p[e - 1] == '\t'))
			e--;
		if (e > s && !(e - s == hlen && strncmp(p + s, host, hlen) == 0)) {
			/* already kept?  look for it between commas of out */
			const char *q = out->data != NULL ? out->data : "";

			while (*q != '\0' && !dup) {
				size_t m = strcspn(q, ",");

				dup = m == e - s && strncmp(q, p + s, m) == 0;
				q += m;
				if (*q == ',')
					q++;
			}
			if (!dup) {
				if (out->len > 0)
					buf_addc(out, ',');
				buf_add(out, p + s, e - s);
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (out->len > 0)
		buf_addc(out, ',');
	buf_adds(out, host);
}

/* ---- the patch ---- */

static void
patch_init(struct patch *p)
{
	buf_init(&p->b);
	jw_init(&p->w, &p->b);
	p->n = 0;
}

/* op - start one operation; the caller writes its value (if any) and ends it */
static void
op(struct patch *p, const char *what, const char *path)
{
	if (p->n++ == 0)
		jw_arr(&p->w);
	jw_obj(&p->w);
	jw_key(&p->w, "op");
	jw_str(&p->w, what);
	jw_key(&p->w, "path");
	jw_str(&p->w, path);
	if (strcmp(what, "remove") != 0)
		jw_key(&p->w, "value");
}

static void
op_end(struct patch *p)
{
	jw_end_obj(&p->w);
}

static void
patch_finish(struct patch *p)
{
	if (p->n > 0)
		jw_end_arr(&p->w);
}

/* named - index of the first object in arr whose "name" is name, or -1 */
static int
named(yajl_val arr, const char *name)
{
	if (arr == NULL || !YAJL_IS_ARRAY(arr))
		return -1;
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const char *n = json_get_str(arr->u.array.values[i], "name", NULL);

		if (n != NULL && strcmp(n, name) == 0)
			return (int)i;
	}
	return -1;
}

/* pick_container - index of the container named app, else 0; -1 if none */
static int
pick_container(yajl_val containers, const char *prefer)
{
	int i;

	if (containers == NULL || !YAJL_IS_ARRAY(containers) || containers->u.array.len == 0)
		return -1;
	if (prefer != NULL && (i = named(containers, prefer)) >= 0)
		return i;
	if ((i = named(containers, "app")) >= 0)
		return i;
	return 0;
}

/*
 * list_append - start an "add" that appends to the array at path; the
 * first time (*made 0) an array that does not exist is created first.
 */
static void
list_append(struct patch *p, const char *path, yajl_val arr, int *made)
{
	char full[600];

	if (arr == NULL && !*made) {
		op(p, "add", path);
		jw_arr(&p->w);
		jw_end_arr(&p->w);
		op_end(p);
	}
	*made = 1;
	snprintf(full, sizeof(full), "%s/-", path);
	op(p, "add", full);
}

/* env_value - the literal value of env var name in env (NULL if none or valueFrom) */
static const char *
env_value(yajl_val env, const char *name, int *present)
{
	int i = named(env, name);

	*present = i >= 0;
	if (i < 0)
		return NULL;
	return json_get_str(env->u.array.values[i], "value", NULL);
}

struct container_patch {
	struct patch *p;
	char base[128];		/* /spec/template/spec/containers/N */
	yajl_val c;
	int env_made, mounts_made, from_made;
};

/* set_env - make env var name hold value (replace the entry if it differs) */
static void
set_env(struct container_patch *cp, const char *name, const char *value)
{
	yajl_val env = json_get(cp->c, "env", NULL);
	char path[600];
	int i = named(env, name);

	if (i >= 0) {
		yajl_val e = env->u.array.values[i];
		const char *v = json_get_str(e, "value", NULL);

		if (v != NULL && strcmp(v, value) == 0 && json_get(e, "valueFrom", NULL) == NULL)
			return;
		snprintf(path, sizeof(path), "%s/env/%d", cp->base, i);
		op(cp->p, "replace", path);
	} else {
		snprintf(path, sizeof(path), "%s/env", cp->base);
		list_append(cp->p, path, env, &cp->env_made);
	}
	jw_obj(&cp->p->w);
	jw_key(&cp->p->w, "name");
	jw_str(&cp->p->w, name);
	jw_key(&cp->p->w, "value");
	jw_str(&cp->p->w, value);
	jw_end_obj(&cp->p->w);
	op_end(cp->p);
}

/*
 * set_token - keep a reload token the container has; on UPDATE take the one
 * the same container had in oldObject (a sync of the site's own manifest
 * replaces the containers whole); only else mint one.
 */
static void
set_token(const struct wh_env *env, const struct review *rv, struct container_patch *cp)
{
	yajl_val cenv = json_get(cp->c, "env", NULL), old_cs, old_env = NULL;
	const char *cname = json_get_str(cp->c, "name", NULL);
	char path[600], tok[128];
	int i;

	if (named(cenv, ENV_TOKEN) >= 0)
		return;
	old_cs = json_get(rv->old, "spec", "template", "spec", "containers", NULL);
	if (rv->old != NULL && (i = pick_container(old_cs, cname)) >= 0)
		old_env = json_get(old_cs->u.array.values[i], "env", NULL);
	snprintf(path, sizeof(path), "%s/env", cp->base);
	if ((i = named(old_env, ENV_TOKEN)) >= 0) {
		list_append(cp->p, path, cenv, &cp->env_made);
		jw_value(&cp->p->w, old_env->u.array.values[i]);
		op_end(cp->p);
		return;
	}
	env->token(env->arg, tok, sizeof(tok));
	list_append(cp->p, path, cenv, &cp->env_made);
	jw_obj(&cp->p->w);
	jw_key(&cp->p->w, "name");
	jw_str(&cp->p->w, ENV_TOKEN);
	jw_key(&cp->p->w, "value");
	jw_str(&cp->p->w, tok);
	jw_end_obj(&cp->p->w);
	op_end(cp->p);
	explicit_bzero(tok, sizeof(tok));
}

/*
 * drop_env_dups - remove later entries of the variables we set (the last
 * one wins in a container, so a duplicate would undo the injection).  Run
 * after every replace and append: the removes go last, highest index first,
 * so no index written before them moves.
 */
static void
drop_env_dups(struct container_patch *cp, const char *const *names)
{
	yajl_val env = json_get(cp->c, "env", NULL);
	char path[600];

	if (env == NULL || !YAJL_IS_ARRAY(env))
		return;
	for (size_t i = env->u.array.len; i-- > 0;) {
		const char *n = json_get_str(env->u.array.values[i], "name", NULL);

		for (size_t k = 0; n != NULL && names[k] != NULL; k++) {
			if (strcmp(n, names[k]) == 0 && named(env, n) != (int)i) {
				snprintf(path, sizeof(path), "%s/env/%zu", cp->base, i);
				op(cp->p, "remove", path);
				op_end(cp->p);
				break;
			}
		}
	}
}

/* set_env_from - the Secret valkey-acl, optional, once */
static void
set_env_from(struct container_patch *cp)
{
	yajl_val from = json_get(cp->c, "envFrom", NULL);
	char path[600];

	if (from != NULL && YAJL_IS_ARRAY(from)) {
		for (size_t i = 0; i < from->u.array.len; i++) {
			const char *n = json_get_str(from->u.array.values[i], "secretRef", "name",
			    NULL);

			if (n != NULL && strcmp(n, WH_ACL_SECRET) == 0)
				return;
		}
	}
	snprintf(path, sizeof(path), "%s/envFrom", cp->base);
	list_append(cp->p, path, from, &cp->from_made);
	jw_obj(&cp->p->w);
	jw_key(&cp->p->w, "secretRef");
	jw_obj(&cp->p->w);
	jw_key(&cp->p->w, "name");
	jw_str(&cp->p->w, WH_ACL_SECRET);
	jw_key(&cp->p->w, "optional");
	jw_bool(&cp->p->w, 1);
	jw_end_obj(&cp->p->w);
	jw_end_obj(&cp->p->w);
	op_end(cp->p);
}

/* set_mount - the decofile volume read-only at dir, no subPath */
static void
set_mount(struct container_patch *cp, const char *dir)
{
	yajl_val mounts = json_get(cp->c, "volumeMounts", NULL);
	char path[600];
	int i = named(mounts, DECOFILE_VOLUME);

	if (i >= 0) {
		yajl_val m = mounts->u.array.values[i];
		const char *mp = json_get_str(m, "mountPath", NULL);

		if (mp != NULL && strcmp(mp, dir) == 0 && json_get_bool(m, 0, "readOnly", NULL) &&
		    json_get(m, "subPath", NULL) == NULL && json_get(m, "subPathExpr", NULL) == NULL)
			return;
		snprintf(path, sizeof(path), "%s/volumeMounts/%d", cp->base, i);
		op(cp->p, "replace", path);
	} else {
		snprintf(path, sizeof(path), "%s/volumeMounts", cp->base);
		list_append(cp->p, path, mounts, &cp->mounts_made);
	}
	jw_obj(&cp->p->w);
	jw_key(&cp->p->w, "name");
	jw_str(&cp->p->w, DECOFILE_VOLUME);
	jw_key(&cp->p->w, "mountPath");
	jw_str(&cp->p->w, dir);
	jw_key(&cp->p->w, "readOnly");
	jw_bool(&cp->p->w, 1);
	jw_end_obj(&cp->p->w);
	op_end(cp->p);
}

/* set_volume - pod volume decofile-config from ConfigMap cm */
static void
set_volume(struct patch *p, yajl_val pod, const char *cm)
{
	yajl_val vols = json_get(pod, "volumes", NULL);
	int i = named(vols, DECOFILE_VOLUME), made = 0;
	char path[128];

	if (i >= 0) {
		yajl_val v = vols->u.array.values[i];
		const char *n = json_get_str(v, "configMap", "name", NULL);

		if (n != NULL && strcmp(n, cm) == 0 && v->u.object.len == 2)
			return;
		snprintf(path, sizeof(path), "/spec/template/spec/volumes/%d", i);
		op(p, "replace", path);
	} else {
		list_append(p, "/spec/template/spec/volumes", vols, &made);
	}
	jw_obj(&p->w);
	jw_key(&p->w, "name");
	jw_str(&p->w, DECOFILE_VOLUME);
	jw_key(&p->w, "configMap");
	jw_obj(&p->w);
	jw_key(&p->w, "name");
	jw_str(&p->w, cm);
	jw_end_obj(&p->w);
	jw_end_obj(&p->w);
	op_end(p);
}

/* drop_named - remove every entry named name from the array at path (s3 target) */
static void
drop_named(struct patch *p, yajl_val arr, const char *path, const char *name)
{
	char full[600];

	if (arr == NULL || !YAJL_IS_ARRAY(arr))
		return;
	for (size_t i = arr->u.array.len; i-- > 0;) {
		const char *n = json_get_str(arr->u.array.values[i], "name", NULL);

		if (n != NULL && strcmp(n, name) == 0) {
			snprintf(full, sizeof(full), "%s/%zu", path, i);
			op(p, "remove", full);
			op_end(p);
		}
	}
}

/* set_label - the template label app.deco/deploymentId */
static void
set_label(struct patch *p, yajl_val tmpl, const char *dep)
{
	yajl_val meta = json_get(tmpl, "metadata", NULL);
	yajl_val labels = json_get(meta, "labels", NULL);
	const char *cur = json_get_str(labels, WH_LABEL_DEPLOYMENT, NULL);

	if (cur != NULL && strcmp(cur, dep) == 0)
		return;
	if (meta == NULL) {
		op(p, "add", "/spec/template/metadata");
		jw_obj(&p->w);
		jw_key(&p->w, "labels");
		jw_obj(&p->w);
		jw_key(&p->w, WH_LABEL_DEPLOYMENT);
		jw_str(&p->w, dep);
		jw_end_obj(&p->w);
		jw_end_obj(&p->w);
	} else if (labels == NULL) {
		op(p, "add", "/spec/template/metadata/labels");
		jw_obj(&p->w);
		jw_key(&p->w, WH_LABEL_DEPLOYMENT);
		jw_str(&p->w, dep);
		jw_end_obj(&p->w);
	} else {
		/* "/" in a member name is "~1" in a JSON pointer */
		op(p, "add", "/spec/template/metadata/labels/app.deco~1deploymentId");
		jw_str(&p->w, dep);
	}
	op_end(p);
}

/* shape_error - a field the patch would touch has the wrong type */
static const char *
shape_error(yajl_val tmpl, yajl_val c)
{
	yajl_val v;

	if ((v = json_get(tmpl, "metadata", NULL)) != NULL && !YAJL_IS_OBJECT(v))
		return "spec.template.metadata is not an object";
	if ((v = json_get(tmpl, "metadata", "labels", NULL)) != NULL && !YAJL_IS_OBJECT(v))
		return "spec.template.metadata.labels is not an object";
	if ((v = json_get(tmpl, "spec", "volumes", NULL)) != NULL && !YAJL_IS_ARRAY(v))
		return "spec.template.spec.volumes is not a list";
	if (!YAJL_IS_OBJECT(c))
		return "a container is not an object";
	if ((v = json_get(c, "env", NULL)) != NULL && !YAJL_IS_ARRAY(v))
		return "the container's env is not a list";
	if ((v = json_get(c, "envFrom", NULL)) != NULL && !YAJL_IS_ARRAY(v))
		return "the container's envFrom is not a list";
	if ((v = json_get(c, "volumeMounts", NULL)) != NULL && !YAJL_IS_ARRAY(v))
		return "the container's volumeMounts is not a list";
	return NULL;
}

/* mount_dir - the annotation's folder without trailing "/"; -1 if not absolute */
static int
mount_dir(yajl_val ann, char *dir, size_t len)
{
	const char *m = json_get_str(ann, WH_ANNOTATION_MOUNT, NULL);
	size_t n;

	if (m == NULL || m[0] == '\0')
		m = WH_DEFAULT_MOUNT;
	if (m[0] != '/' || strstr(m, "..") != NULL || strlen(m) >= len)
		return -1;
	n = strlen(m);
	while (n > 1 && m[n - 1] == '/')
		n--;
	snprintf(dir, len, "%.*s", (int)n, m);
	return 0;
}

static int
mutate(const struct wh_env *env, const struct review *rv, struct wh_result *r)
{
	yajl_val obj = rv->obj, tmpl, cs, ann;
	const char *ns, *svc, *inject, *dep, *target;
	const struct wh_decofile *df;
	struct container_patch cp;
	struct patch p;
	char msg[512], dir[256], release[1200], key[1024], cm[300];
	const char *why;
	int ci;

	if (!wh_review_kind_is(rv, "serving.knative.dev", "v1", "Service"))
		return wh_answer_invalid(r, rv, "this path takes serving.knative.dev/v1 Services");
	if (strcmp(rv->op, "CREATE") != 0 && strcmp(rv->op, "UPDATE") != 0) {
		wh_answer_allow(r, rv, NULL);
		return 0;
	}
	if (obj == NULL)
		return wh_answer_invalid(r, rv, "request.object is missing");
	ns = rv->ns != NULL && rv->ns[0] ? rv->ns : json_get_str(obj, "metadata", "namespace", NULL);
	svc = json_get_str(obj, "metadata", "name", NULL);
	if (svc == NULL || svc[0] == '\0')
		svc = rv->name;
	if (ns == NULL || ns[0] == '\0')
		return wh_answer_invalid(r, rv, "the Service has no namespace");
	ann = json_get(obj, "metadata", "annotations", NULL);
	inject = json_get_str(ann, WH_ANNOTATION_INJECT, NULL);
	if (inject == NULL || strcmp(inject, "true") != 0) {
		wh_answer_allow(r, rv, NULL);
		wh_result_track(r, rv, WH_TRACK_DROP, ns, svc, NULL);
		return 0;
	}
	dep = json_get_str(obj, "metadata", "labels", WH_LABEL_DEPLOYMENT, NULL);
	if (dep == NULL || dep[0] == '\0') {
		snprintf(msg, sizeof(msg), "Service %s/%s is annotated %s: \"true\" but has no "
		    "label %s: set it to the deploymentId of the Decofile to inject",
		    ns, svc ? svc : "(unnamed)", WH_ANNOTATION_INJECT, WH_LABEL_DEPLOYMENT);
		wh_answer_deny(r, rv, msg);
		return 0;
	}
	if ((df = env->find(env->arg, ns, dep)) == NULL) {
		snprintf(msg, sizeof(msg), "no Decofile in namespace %s has deploymentId %s: "
		    "Service left unchanged", ns, dep);
		wh_answer_allow(r, rv, msg);
		wh_result_track(r, rv, WH_TRACK_DROP, ns, svc, NULL);
		return 0;
	}
	target = df->target != NULL ? df->target : "";
	tmpl = json_get(obj, "spec", "template", NULL);
	cs = json_get(tmpl, "spec", "containers", NULL);
	if ((ci = pick_container(cs, NULL)) < 0) {
		wh_answer_allow(r, rv, "the Service has no container to inject the Decofile into");
		return 0;
	}
	if ((why = shape_error(tmpl, cs->u.array.values[ci])) != NULL)
		return wh_answer_invalid(r, rv, why);
	if (strcmp(target, "configmap") != 0 && strcmp(target, "s3") != 0) {
		snprintf(msg, sizeof(msg), "Decofile %s/%s has target %s, which a Service cannot "
		    "read: Service left unchanged", ns, df->name, target);
		wh_answer_allow(r, rv, msg);
		return 0;
	}
	if (strcmp(target, "configmap") == 0) {
		if (mount_dir(ann, dir, sizeof(dir)) < 0) {
			snprintf(msg, sizeof(msg), "annotation %s must be an absolute path "
			    "without \"..\"", WH_ANNOTATION_MOUNT);
			wh_answer_deny(r, rv, msg);
			return 0;
		}
		snprintf(release, sizeof(release), "file://%s/decofile.bin",
		    strcmp(dir, "/") == 0 ? "" : dir);
	} else {
		if (env->s3_public_host == NULL || env->s3_public_host[0] == '\0') {
			snprintf(msg, sizeof(msg), "Decofile %s/%s has target s3 but decod has no "
			    "s3_public_host (DECOFILE_S3_PUBLIC_HOST) to point the Service at",
			    ns, df->name);
			wh_answer_deny(r, rv, msg);
			return 0;
		}
		if (s3key_build(env->s3_prefix, ns, dep, key, sizeof(key)) < 0)
			return wh_answer_invalid(r, rv, "cannot build the S3 key");
		snprintf(release, sizeof(release), "https://%s/%s", env->s3_public_host, key);
	}

	patch_init(&p);
	memset(&cp, 0, sizeof(cp));
	cp.p = &p;
	cp.c = cs->u.array.values[ci];
	snprintf(cp.base, sizeof(cp.base), "/spec/template/spec/containers/%d", ci);
	set_label(&p, tmpl, dep);
	if (strcmp(target, "configmap") == 0) {
		configmap_name(df->name, cm, sizeof(cm));
		set_volume(&p, json_get(tmpl, "spec", NULL), cm);
		set_mount(&cp, dir);
		set_env(&cp, ENV_RELEASE, release);
	} else {
		struct buf auth;
		int present;
		const char *cur = env_value(json_get(cp.c, "env", NULL), ENV_AUTHORITIES, &present);
		char path[600];

		snprintf(path, sizeof(path), "%s/volumeMounts", cp.base);
		drop_named(&p, json_get(cp.c, "volumeMounts", NULL), path, DECOFILE_VOLUME);
		drop_named(&p, json_get(tmpl, "spec", "volumes", NULL),
		    "/spec/template/spec/volumes", DECOFILE_VOLUME);
		set_env(&cp, ENV_RELEASE, release);
		buf_init(&auth);
		wh_merge_authorities(present && cur != NULL ? cur : NULL, env->s3_public_host,
		    &auth);
		set_env(&cp, ENV_AUTHORITIES, auth.data);
		buf_free(&auth);
	}
	set_token(env, rv, &cp);
	set_env_from(&cp);
	{
		static const char *const ours[] = { ENV_RELEASE, ENV_AUTHORITIES, ENV_TOKEN, NULL };

		drop_env_dups(&cp, ours);
	}
	patch_finish(&p);
	if (p.n > 0) {
		wh_answer(r, rv->uid, 0, NULL, &p.b, NULL);
		r->outcome = WH_PATCHED;
		snprintf(r->message, sizeof(r->message), "injected Decofile %s (%d operations)",
		    df->name, p.n);
	} else {
		wh_answer_allow(r, rv, NULL);
		snprintf(r->message, sizeof(r->message), "Decofile %s already injected",
		    df->name);
	}
	buf_free(&p.b);
	wh_result_track(r, rv, WH_TRACK_SET, ns, svc, df->name);
	return 0;
}

int
wh_mutate(const struct wh_env *env, const char *body, size_t len, struct wh_result *r)
{
	struct review rv;
	int rc;

	if (wh_review_read(body, len, &rv, r) < 0)
		return -1;
	rc = mutate(env, &rv, r);
	yajl_tree_free(rv.root);
	return rc;
}
