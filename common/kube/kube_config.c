/*
 * kube_config - where the Kubernetes API server is and how decod proves who
 * it is: a kubeconfig file (clusters, users, contexts; data inline or in
 * files), or the pod's own service account (token file, CA bundle and
 * namespace file, KUBERNETES_SERVICE_HOST/PORT).  It only reads; the token
 * file is re-read by the client when it rotates (kube.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/util.h"
#include "common/yaml.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBECONFIG_MAX (4u << 20)

void
kube_config_free(struct kube_config *c)
{
	if (c == NULL)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->ca_data);
	free(c->cert_file);
	free(c->cert_data);
	free(c->key_file);
	free(c->key_data);
	if (c->token != NULL)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	free(c->token_file);
	free(c->namespace);
	memset(c, 0, sizeof(*c));
}

/*
 * kube_config_json - the kubeconfig's one YAML document as JSON, by the
 * common reader with the kubeconfig's own cap (inline certificates make
 * kubeconfigs larger than any resource).  Core-schema scalars, so
 * insecure-skip-tls-verify: true is a boolean, but plain numbers stay the
 * text they were written as: every other field read here is a string, and
 * `namespace: 123` or a token of digits (kubectl would quote them; people
 * and other tools do not) is that string, not a number to drop, and
 * "0123" or "0x1F" not 123 or 31.  0, or -1 with err naming the line and
 * column, the size or the count.
 */
static int
kube_config_json(const char *text, size_t len, char **json, char *err, size_t errlen)
{
	static const struct yaml_opts opts = { KUBECONFIG_MAX, 1 };
	struct yaml_docs docs = { 0 };
	struct yaml_error e;
	int rc = -1;

	if (len > KUBECONFIG_MAX)
		seterr(err, errlen, "%zu bytes, larger than the %u MiB a kubeconfig may be",
		    len, KUBECONFIG_MAX >> 20);
	else if (yaml_to_json_docs(text, len, &opts, &docs, &e) < 0)
		seterr(err, errlen, "line %d column %d: %s", e.line, e.column, e.msg);
	else if (docs.n != 1)
		seterr(err, errlen, "not a kubeconfig (%zu YAML documents, want one)", docs.n);
	else {
		*json = docs.v[0].json;
		docs.v[0].json = NULL;
		rc = 0;
	}
	yaml_docs_free(&docs);
	return rc;
}

/* named - the element of a kubeconfig list (clusters, users, contexts) named name */
static yajl_val
named(yajl_val root, const char *list, const char *name, const char *field)
{
	yajl_val a = json_get(root, list, NULL);

	if (a == NULL || !YAJL_IS_ARRAY(a))
		return NULL;
	for (size_t i = 0; i < a->u.array.len; i++) {
		const char *n = json_get_str(a->u.array.values[i], "name", NULL);

		if (n != NULL && strcmp(n, name) == 0)
			return json_get(a->u.array.values[i], field, NULL);
	}
	return NULL;
}

static char *
path_in(const char *base_dir, const char *p)
{
	if (p[0] == '/' || base_dir == NULL || *base_dir == '\0')
		return xstrdup(p);
	return xasprintf("%s/%s", base_dir, p);
}

/* take_data - base64 field d, or file field f relative to base_dir */
static int
take_data(yajl_val obj, const char *d, const char *f, const char *base_dir,
    char **data, size_t *dlen, char **file, char *err, size_t errlen)
{
	const char *v = json_get_str(obj, d, NULL);

	if (v != NULL && *v != '\0') {
		unsigned char *raw = base64_decode(v, strlen(v), dlen);

		if (raw == NULL) {
			seterr(err, errlen, "%s is not base64", d);
			return -1;
		}
		*data = (char *)raw;
		return 0;
	}
	if ((v = json_get_str(obj, f, NULL)) != NULL && *v != '\0') {
		*file = path_in(base_dir, v);
		if (access(*file, R_OK) < 0) {
			seterr(err, errlen, "%s %s: %s", f, *file, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int
kube_config_parse(struct kube_config *c, const char *text, size_t len,
    const char *base_dir, const char *context, char *err, size_t errlen)
{
	char *js = NULL;
	struct json_error je;
	yajl_val root = NULL, ctx, cl, us;
	const char *cur, *cname, *uname, *v;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (kube_config_json(text, len, &js, err, errlen) < 0)
		goto out;
	if ((root = json_parse(js, strlen(js), &je)) == NULL || !YAJL_IS_OBJECT(root)) {
		seterr(err, errlen, "not a kubeconfig (no mapping at the top)");
		goto out;
	}
	cur = context != NULL && *context != '\0' ? context :
	    json_get_str(root, "current-context", NULL);
	if (cur == NULL || *cur == '\0') {
		seterr(err, errlen, "no current-context and no context given");
		goto out;
	}
	if ((ctx = named(root, "contexts", cur, "context")) == NULL) {
		seterr(err, errlen, "context \"%s\" not found", cur);
		goto out;
	}
	cname = json_get_str(ctx, "cluster", NULL);
	uname = json_get_str(ctx, "user", NULL);
	if (cname == NULL || (cl = named(root, "clusters", cname, "cluster")) == NULL) {
		seterr(err, errlen, "context \"%s\": cluster \"%s\" not found", cur,
		    cname != NULL ? cname : "");
		goto out;
	}
	if ((v = json_get_str(cl, "server", NULL)) == NULL || *v == '\0') {
		seterr(err, errlen, "cluster \"%s\" has no server", cname);
		goto out;
	}
	if (strncmp(v, "https://", 8) != 0 && strncmp(v, "http://", 7) != 0) {
		seterr(err, errlen, "cluster \"%s\": server \"%s\" is not an http(s) URL", cname, v);
		goto out;
	}
	c->server = xstrdup(v);
	while (strlen(c->server) > 8 && c->server[strlen(c->server) - 1] == '/')
		c->server[strlen(c->server) - 1] = '\0';
	if (take_data(cl, "certificate-authority-data", "certificate-authority",
	    base_dir, &c->ca_data, &c->ca_len, &c->ca_file, err, errlen) < 0)
		goto out;
	v = json_get_str(cl, "insecure-skip-tls-verify", NULL);
	c->insecure = json_get_bool(cl, 0, "insecure-skip-tls-verify", NULL) ||
	    (v != NULL && strcmp(v, "true") == 0);
	if (uname != NULL && *uname != '\0') {
		if ((us = named(root, "users", uname, "user")) == NULL) {
			seterr(err, errlen, "context \"%s\": user \"%s\" not found", cur, uname);
			goto out;
		}
		if (json_get(us, "exec", NULL) != NULL || json_get(us, "auth-provider", NULL) != NULL) {
			seterr(err, errlen, "user \"%s\": exec and auth-provider plugins are not supported; use a token or a client certificate", uname);
			goto out;
		}
		if ((v = json_get_str(us, "token", NULL)) != NULL && *v != '\0')
			c->token = xstrdup(v);
		else if ((v = json_get_str(us, "tokenFile", NULL)) != NULL && *v != '\0')
			c->token_file = path_in(base_dir, v);
		if (take_data(us, "client-certificate-data", "client-certificate",
		    base_dir, &c->cert_data, &c->cert_len, &c->cert_file, err, errlen) < 0)
			goto out;
		if (take_data(us, "client-key-data", "client-key",
		    base_dir, &c->key_data, &c->key_len, &c->key_file, err, errlen) < 0)
			goto out;
		if ((c->cert_data != NULL || c->cert_file != NULL) !=
		    (c->key_data != NULL || c->key_file != NULL)) {
			seterr(err, errlen, "user \"%s\": a client certificate needs its key and the other way round", uname);
			goto out;
		}
	}
	v = json_get_str(ctx, "namespace", NULL);
	c->namespace = xstrdup(v != NULL && *v != '\0' ? v : "default");
	rc = 0;
out:
	if (rc < 0)
		kube_config_free(c);
	yajl_tree_free(root);
	free(js);
	return rc;
}

int
kube_config_load(struct kube_config *c, const char *path, const char *context,
    char *err, size_t errlen)
{
	size_t len;
	char *text, *dir, *slash;
	int rc;

	memset(c, 0, sizeof(*c));
	if ((text = read_file(path, &len, KUBECONFIG_MAX)) == NULL) {
		if (errno == EFBIG)
			seterr(err, errlen, "kubeconfig %s: larger than the %u MiB a "
			    "kubeconfig may be", path, KUBECONFIG_MAX >> 20);
		else
			seterr(err, errlen, "kubeconfig %s: %s", path, strerror(errno));
		return -1;
	}
	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	else
		strcpy(dir, ".");
	rc = kube_config_parse(c, text, len, dir, context, err, errlen);
	if (rc < 0 && err != NULL) {
		char *e = xstrdup(err);

		seterr(err, errlen, "kubeconfig %s: %s", path, e);
		free(e);
	}
	free(dir);
	free(text);
	return rc;
}

int
kube_config_in_cluster(struct kube_config *c, const char *sa_dir, char *err,
    size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *p, *ns;
	size_t n;

	memset(c, 0, sizeof(*c));
	if (sa_dir == NULL || *sa_dir == '\0')
		sa_dir = KUBE_SA_DIR;
	if (host == NULL || *host == '\0' || port == NULL || *port == '\0') {
		seterr(err, errlen, "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
		return -1;
	}
	c->server = strchr(host, ':') != NULL ? xasprintf("https://[%s]:%s", host, port) :
	    xasprintf("https://%s:%s", host, port);
	c->token_file = xasprintf("%s/token", sa_dir);
	if (access(c->token_file, R_OK) < 0) {
		seterr(err, errlen, "service-account token %s: %s", c->token_file, strerror(errno));
		kube_config_free(c);
		return -1;
	}
	p = xasprintf("%s/ca.crt", sa_dir);
	if (access(p, R_OK) == 0)
		c->ca_file = p;
	else
		free(p);
	p = xasprintf("%s/namespace", sa_dir);
	if ((ns = read_file(p, &n, 4096)) != NULL) {
		while (n > 0 && (ns[n - 1] == '\n' || ns[n - 1] == ' '))
			ns[--n] = '\0';
	}
	free(p);
	c->namespace = ns != NULL && *ns != '\0' ? ns : xstrdup("default");
	if (c->namespace != ns)
		free(ns);
	return 0;
}

int
kube_config_from_conf(struct kube_config *c, const struct conf *cf, char *err,
    size_t errlen)
{
	const char *path = conf_get(cf, "kubeconfig");
	const char *ctx = conf_get(cf, "kube_context");
	const char *ns = conf_get(cf, "kube_namespace");
	int rc;

	memset(c, 0, sizeof(*c));
	if (*path != '\0')
		rc = kube_config_load(c, path, ctx, err, errlen);
	else if (getenv("KUBERNETES_SERVICE_HOST") != NULL &&
	    *getenv("KUBERNETES_SERVICE_HOST") != '\0')
		rc = kube_config_in_cluster(c, conf_get(cf, "kube_sa_dir"), err, errlen);
	else
		return 1;
	if (rc == 0 && *ns != '\0') {
		free(c->namespace);
		c->namespace = xstrdup(ns);
	}
	return rc;
}

struct kube *
kube_from_conf(const struct conf *cf, char *err, size_t errlen)
{
	struct kube_config kc;
	struct kube *k;
	int rc;

	err[0] = '\0';
	if ((rc = kube_config_from_conf(&kc, cf, err, errlen)) != 0) {
		if (rc > 0)
			err[0] = '\0';
		return NULL;
	}
	k = kube_new(&kc, conf_get_ms(cf, "kube_timeout"), err, errlen);
	kube_config_free(&kc);
	return k;
}

int
kube_configured(const struct conf *cf, char *err, size_t errlen)
{
	struct kube_config kc;
	int rc = kube_config_from_conf(&kc, cf, err, errlen);

	if (rc < 0)
		return -1;
	if (rc == 0)
		kube_config_free(&kc);
	return rc == 0;
}
