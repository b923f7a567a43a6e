/*
 * kube_objects - the parts of the Kubernetes client that need no loop:
 * the kinds decod uses, their paths (escaped, server-side apply's query),
 * metadata accessors, and kube_list_all, a paged list (limit/continue,
 * restarted once when the continue token expires) run with kube_do.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/kube.h"
#include "common/util.h"

/* ---- kinds and paths ---- */

const struct kube_kind kube_configmaps = { "", "v1", "configmaps", "ConfigMap", 1 };
const struct kube_kind kube_pods = { "", "v1", "pods", "Pod", 1 };
const struct kube_kind kube_secrets = { "", "v1", "secrets", "Secret", 1 };
const struct kube_kind kube_namespaces = { "", "v1", "namespaces", "Namespace", 0 };
const struct kube_kind kube_services = { "", "v1", "services", "Service", 1 };
const struct kube_kind kube_leases = { "coordination.k8s.io", "v1", "leases", "Lease", 1 };
const struct kube_kind kube_decofiles = { "deco.sites", "v1alpha1", "decofiles", "Decofile", 1 };
const struct kube_kind kube_decofiletemplates = { "deco.sites", "v1alpha1",
	"decofiletemplates", "DecofileTemplate", 1 };

char *
kube_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct buf b;

	buf_init(&b);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~')
			buf_addc(&b, (char)c);
		else {
			buf_addc(&b, '%');
			buf_addc(&b, hex[c >> 4]);
			buf_addc(&b, hex[c & 15]);
		}
	}
	if (b.data == NULL)
		buf_adds(&b, "");
	return buf_steal(&b, NULL);
}

char *
kube_path(const struct kube_kind *kd, const char *ns, const char *name,
    const char *sub, const char *query)
{
	struct buf b;

	buf_init(&b);
	if (*kd->group == '\0')
		buf_printf(&b, "/api/%s", kd->version);
	else
		buf_printf(&b, "/apis/%s/%s", kd->group, kd->version);
	if (kd->namespaced && ns != NULL && *ns != '\0')
		buf_printf(&b, "/namespaces/%s", ns);
	buf_printf(&b, "/%s", kd->resource);
	if (name != NULL)
		buf_printf(&b, "/%s", name);
	if (sub != NULL && *sub != '\0')
		buf_printf(&b, "/%s", sub);
	if (query != NULL && *query != '\0')
		buf_printf(&b, "?%s", query);
	return buf_steal(&b, NULL);
}

char *
kube_apply_path(const struct kube_kind *kd, const char *ns, const char *name,
    const char *sub, const char *manager, int force)
{
	char *m = kube_escape(manager), *q, *p;

	q = xasprintf("fieldManager=%s%s", m, force ? "&force=true" : "");
	p = kube_path(kd, ns, name, sub, q);
	free(q);
	free(m);
	return p;
}

/* ---- object helpers ---- */

static const char *
meta(yajl_val obj, const char *field)
{
	const char *s = json_get_str(obj, "metadata", field, NULL);

	return s != NULL ? s : "";
}

const char *kube_obj_ns(yajl_val obj) { return meta(obj, "namespace"); }
const char *kube_obj_name(yajl_val obj) { return meta(obj, "name"); }
const char *kube_obj_rv(yajl_val obj) { return meta(obj, "resourceVersion"); }
const char *kube_obj_uid(yajl_val obj) { return meta(obj, "uid"); }

/* ---- lists ---- */

static void
array_push(yajl_val a, yajl_val v)
{
	a->u.array.values = xrealloc(a->u.array.values,
	    (a->u.array.len + 1) * sizeof(*a->u.array.values));
	a->u.array.values[a->u.array.len++] = v;
}

int
kube_list_all(struct kube *k, const struct kube_kind *kd, const char *ns,
    const char *label_selector, size_t page, yajl_val *items, char *rv,
    size_t rvlen, char *err, size_t errlen)
{
	char *cont = NULL, *sel = label_selector != NULL && *label_selector != '\0' ?
	    kube_escape(label_selector) : NULL;
	yajl_val all = xcalloc(1, sizeof(*all));
	int restarted = 0, rc = -1;

	all->type = yajl_t_array;
	if (page == 0)
		page = 500;
	for (;;) {
		struct buf q;
		struct kube_resp *r;
		yajl_val arr;
		const char *c, *v;
		char *path;

		buf_init(&q);
		buf_printf(&q, "limit=%zu", page);
		if (sel != NULL)
			buf_printf(&q, "&labelSelector=%s", sel);
		if (cont != NULL)
			buf_printf(&q, "&continue=%s", cont);
		path = kube_path(kd, ns, NULL, NULL, q.data);
		buf_free(&q);
		r = kube_do(k, "GET", path, NULL, NULL, 0, 0);
		free(path);
		if (r->status == 410 && cont != NULL && !restarted) {
			/* the continue token expired: start over, once */
			restarted = 1;
			free(cont);
			cont = NULL;
			for (size_t i = 0; i < all->u.array.len; i++)
				yajl_tree_free(all->u.array.values[i]);
			all->u.array.len = 0;
			kube_resp_free(r);
			continue;
		}
		if (!kube_ok(r) || r->json == NULL) {
			snprintf(err, errlen, "%s", r->err[0] != '\0' ? r->err : "list: not JSON");
			kube_resp_free(r);
			goto out;
		}
		if ((arr = json_get(r->json, "items", NULL)) != NULL && YAJL_IS_ARRAY(arr)) {
			for (size_t i = 0; i < arr->u.array.len; i++) {
				array_push(all, arr->u.array.values[i]);
				arr->u.array.values[i] = NULL;	/* now ours */
			}
		}
		v = json_get_str(r->json, "metadata", "resourceVersion", NULL);
		if (rv != NULL && rvlen > 0)
			snprintf(rv, rvlen, "%s", v != NULL ? v : "");
		c = json_get_str(r->json, "metadata", "continue", NULL);
		free(cont);
		cont = c != NULL && *c != '\0' ? kube_escape(c) : NULL;
		kube_resp_free(r);
		if (cont == NULL)
			break;
	}
	*items = all;
	all = NULL;
	rc = 0;
out:
	yajl_tree_free(all);
	free(cont);
	free(sel);
	return rc;
}

