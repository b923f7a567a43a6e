/*
 * webhook_admit_test - the webhook's decisions, table-driven: each row is a
 * review and what must come back.  A returned JSONPatch is applied (with
 * t/unit/jsonpatch.c) to the object sent and the result is checked field
 * by field; every patched object is then sent again as an UPDATE, which
 * must come back with no patch (re-admission changes nothing).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"
#include "daemons/webhook/webhook_index.h"
#include "t/tap.h"
#include "t/unit/jsonpatch.h"

#define KSVC	"{\"group\":\"serving.knative.dev\",\"version\":\"v1\",\"kind\":\"Service\"}"
#define KDF	"{\"group\":\"deco.sites\",\"version\":\"v1alpha1\",\"kind\":\"Decofile\"}"
#define KDEP	"{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"}"
#define INJECT	"\"deco.sites/decofile-inject\":\"true\""
#define LABEL	"\"app.deco/deploymentId\":\"loja\""
#define C_APP	"{\"name\":\"app\",\"image\":\"site:1\"}"
/* a Knative Service in sites-x: annotations, labels, template spec fields */
#define SVCT(ann, labels, tlabels, tspec) \
	"{\"apiVersion\":\"serving.knative.dev/v1\",\"kind\":\"Service\"," \
	"\"metadata\":{\"name\":\"web\",\"namespace\":\"sites-x\",\"annotations\":{" ann "}," \
	"\"labels\":{" labels "}},\"spec\":{\"template\":{\"metadata\":{\"labels\":{" \
	tlabels "}},\"spec\":{" tspec "}}}}"
#define SVC(ann, labels, tspec) SVCT(ann, labels, "", tspec)
#define SVC_CM	SVC(INJECT, LABEL, "\"containers\":[" C_APP "]")
#define RELEASE_CM "{\"name\":\"DECO_RELEASE\",\"value\":\"file:///app/decofile/decofile.bin\"}"
#define TOKEN_OLD "{\"name\":\"DECO_RELEASE_RELOAD_TOKEN\",\"value\":\"kept-token\"}"
#define ENVFROM	"[{\"secretRef\":{\"name\":\"valkey-acl\",\"optional\":true}}]"
#define VOLUMES "[{\"name\":\"decofile-config\",\"configMap\":{\"name\":\"decofile-loja\"}}]"
#define MOUNTS	"[{\"name\":\"decofile-config\",\"mountPath\":\"/app/decofile\",\"readOnly\":true}]"
#define C0	"spec.template.spec.containers.0."
#define ABSENT	"<absent>"

static struct wh_index *ix;
static int tokens;

static const struct wh_decofile *
t_find(void *arg, const char *ns, const char *dep)
{
	(void)arg;
	return wh_index_find(ix, ns, dep);
}

static size_t
t_users(void *arg, const char *ns, const char *name, struct buf *out, size_t max)
{
	(void)arg;
	return wh_index_users(ix, ns, name, out, max);
}

static void
t_token(void *arg, char *out, size_t len)
{
	(void)arg;
	snprintf(out, len, "fresh-%d", ++tokens);
}

struct check {
	const char *path, *want;	/* want: compact JSON, or ABSENT */
};

struct row {
	const char *label;
	const char *op;			/* CREATE, UPDATE, DELETE */
	const char *kind;		/* request.kind JSON */
	const char *obj, *old;		/* JSON or NULL */
	int allowed;
	int code;			/* status.code when denied */
	int patched;
	const char *msg_has;		/* status.message (or warning) contains */
	struct check checks[10];
};

static char *
review(const char *op, const char *kind, const char *obj, const char *old, int dry)
{
	return xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	    "\"request\":{\"uid\":\"uid-1\",\"kind\":%s,\"resource\":{},\"namespace\":\"sites-x\","
	    "\"name\":\"web\",\"operation\":\"%s\",\"userInfo\":{},\"object\":%s,"
	    "\"oldObject\":%s,\"dryRun\":%s}}", kind, op, obj ? obj : "null",
	    old ? old : "null", dry ? "true" : "false");
}

static char *
compact(yajl_val v)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, v);
	return buf_steal(&b, NULL);
}

/* decode_patch - the response's base64 patch as text (caller frees), or NULL */
static char *
decode_patch(yajl_val resp, size_t *len)
{
	const char *b64 = json_get_str(resp, "response", "patch", NULL);
	size_t n;
	char *out;
	int k;

	if (b64 == NULL)
		return NULL;
	n = strlen(b64);
	out = xcalloc(1, n + 1);
	if ((k = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)b64, (int)n)) < 0) {
		free(out);
		return NULL;
	}
	while (n > 0 && b64[n - 1] == '=') {
		k--;
		n--;
	}
	out[k] = '\0';
	*len = (size_t)k;
	return out;
}

static const struct wh_env env = {
	.s3_public_host = "cdn.example",
	.s3_prefix = "pfx",
	.find = t_find,
	.users = t_users,
	.token = t_token,
};

/* run - one admission; the parsed answer (caller frees) */
static yajl_val
run(int (*fn)(const struct wh_env *, const char *, size_t, struct wh_result *),
    const char *body, struct wh_result *r)
{
	wh_result_init(r);
	fn(&env, body, strlen(body), r);
	return r->http_status == 200 ? json_parse(r->body.data, r->body.len, NULL) : NULL;
}

static void
run_row(const struct row *row)
{
	char *body = review(row->op, row->kind, row->obj, row->old, 0);
	struct wh_result r;
	yajl_val resp = run(wh_mutate, body, &r), doc;
	const char *msg;
	char *patch, err[256];
	size_t plen = 0;

	free(body);
	if (!ok(resp != NULL, "%s: an AdmissionReview answer", row->label)) {
		wh_result_free(&r);
		return;
	}
	is_str(json_get_str(resp, "response", "uid", NULL), "uid-1", "%s: uid echoed",
	    row->label);
	is_int(json_get_bool(resp, -1, "response", "allowed", NULL), row->allowed,
	    "%s: allowed", row->label);
	if (!row->allowed)
		is_int(json_get_int(resp, 0, "response", "status", "code", NULL), row->code,
		    "%s: status code", row->label);
	msg = json_get_str(resp, "response", "status", "message", NULL);
	if (msg == NULL && json_get(resp, "response", "warnings", NULL) != NULL)
		msg = json_get_str(json_get(resp, "response", "warnings", NULL)->u.array.values[0],
		    NULL);
	if (row->msg_has != NULL)
		ok(msg != NULL && strstr(msg, row->msg_has) != NULL, "%s: message says \"%s\" (%s)",
		    row->label, row->msg_has, msg ? msg : "none");
	patch = decode_patch(resp, &plen);
	is_int(patch != NULL, row->patched, "%s: %s", row->label,
	    row->patched ? "a patch" : "no patch");
	if (patch != NULL) {
		is_str(json_get_str(resp, "response", "patchType", NULL), "JSONPatch",
		    "%s: patchType", row->label);
		doc = json_parse(row->obj, strlen(row->obj), NULL);
		if (!ok(jsonpatch_apply(&doc, patch, plen, err, sizeof(err)) == 0,
		    "%s: the patch applies (%s)", row->label, err)) {
			diag("patch: %s", patch);
		} else {
			for (const struct check *c = row->checks; c->path != NULL; c++) {
				yajl_val v = jsonpatch_at(doc, c->path);
				char *got = v != NULL ? compact(v) : xstrdup(ABSENT);

				is_str(got, c->want, "%s: %s", row->label, c->path);
				free(got);
			}
			/* re-admission of what we made: nothing more to do */
			{
				char *again = compact(doc), *body2 = review("UPDATE", KSVC, again,
				    again, 0);
				struct wh_result r2;
				yajl_val resp2 = run(wh_mutate, body2, &r2);

				ok(resp2 != NULL && json_get_bool(resp2, 0, "response", "allowed",
				    NULL) && json_get(resp2, "response", "patch", NULL) == NULL,
				    "%s: the patched Service admitted again gets no patch", row->label);
				yajl_tree_free(resp2);
				wh_result_free(&r2);
				free(body2);
				free(again);
			}
		}
		yajl_tree_free(doc);
		free(patch);
	}
	yajl_tree_free(resp);
	wh_result_free(&r);
}

static const struct row rows[] = {
	{ "configmap: create", "CREATE", KSVC, SVC_CM, NULL, 1, 0, 1, NULL, {
		{ "spec.template.spec.volumes", VOLUMES },
		{ C0 "volumeMounts", MOUNTS },
		{ C0 "env.0", RELEASE_CM },
		{ C0 "env.1", "{\"name\":\"DECO_RELEASE_RELOAD_TOKEN\",\"value\":\"fresh-1\"}" },
		{ C0 "env.2", ABSENT },
		{ C0 "envFrom", ENVFROM },
		{ "spec.template.metadata.labels", "{\"app.deco/deploymentId\":\"loja\"}" },
		{ C0 "image", "\"site:1\"" },
	} },
	{ "s3: create", "CREATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"shop\"", "\"containers\":[" C_APP "]"),
	  NULL, 1, 0, 1, NULL, {
		{ C0 "env.0", "{\"name\":\"DECO_RELEASE\",\"value\":"
		  "\"https://cdn.example/pfx/sites-x/shop/decofile.json\"}" },
		{ C0 "env.1", "{\"name\":\"DECO_ALLOWED_AUTHORITIES\",\"value\":"
		  "\"configs.decocdn.com,configs.deco.cx,admin.deco.cx,localhost,cdn.example\"}" },
		{ C0 "env.2.name", "\"DECO_RELEASE_RELOAD_TOKEN\"" },
		{ C0 "volumeMounts", ABSENT },
		{ "spec.template.spec.volumes", ABSENT },
		{ C0 "envFrom", ENVFROM },
		{ "spec.template.metadata.labels", "{\"app.deco/deploymentId\":\"shop\"}" },
	} },
	{ "s3: existing DECO_ALLOWED_AUTHORITIES merged in place", "CREATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"shop\"", "\"containers\":[{\"name\":\"app\","
	  "\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"DECO_ALLOWED_AUTHORITIES\","
	  "\"value\":\" a.com , cdn.example,b.com,,a.com \"}]}]"), NULL, 1, 0, 1, NULL, {
		{ C0 "env.0", "{\"name\":\"X\",\"value\":\"1\"}" },
		{ C0 "env.1", "{\"name\":\"DECO_ALLOWED_AUTHORITIES\",\"value\":"
		  "\"a.com,b.com,cdn.example\"}" },
		{ C0 "env.2.name", "\"DECO_RELEASE\"" },
		{ C0 "env.3.name", "\"DECO_RELEASE_RELOAD_TOKEN\"" },
		{ C0 "env.4", ABSENT },
	} },
	{ "s3: a Service moved from configmap loses the volume", "UPDATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"shop\"", "\"containers\":[{\"name\":\"app\","
	  "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/d\"},{\"name\":\"decofile-config\","
	  "\"mountPath\":\"/app/decofile\",\"readOnly\":true}],\"env\":[" TOKEN_OLD "]}],"
	  "\"volumes\":[{\"name\":\"decofile-config\",\"configMap\":{\"name\":\"decofile-shop\"}},"
	  "{\"name\":\"data\",\"emptyDir\":{}}]"), NULL, 1, 0, 1, NULL, {
		{ C0 "volumeMounts", "[{\"name\":\"data\",\"mountPath\":\"/d\"}]" },
		{ "spec.template.spec.volumes", "[{\"name\":\"data\",\"emptyDir\":{}}]" },
		{ C0 "env.0", TOKEN_OLD },
	} },
	{ "no annotation: untouched", "CREATE", KSVC,
	  SVC("", LABEL, "\"containers\":[" C_APP "]"), NULL, 1, 0, 0, NULL, { { 0 } } },
	{ "annotation not \"true\": untouched", "CREATE", KSVC,
	  SVC("\"deco.sites/decofile-inject\":\"True\"", LABEL, "\"containers\":[" C_APP "]"),
	  NULL, 1, 0, 0, NULL, { { 0 } } },
	{ "missing label: denied naming it", "CREATE", KSVC,
	  SVC(INJECT, "", "\"containers\":[" C_APP "]"), NULL, 0, 403, 0,
	  "app.deco/deploymentId", { { 0 } } },
	{ "unknown deploymentId: allowed unchanged", "CREATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"nobody\"", "\"containers\":[" C_APP "]"),
	  NULL, 1, 0, 0, "nobody", { { 0 } } },
	{ "UPDATE re-invocation: no patch", "UPDATE", KSVC,
	  SVCT(INJECT, LABEL, LABEL, "\"containers\":[{\"name\":\"app\",\"env\":[" RELEASE_CM ","
	  TOKEN_OLD "],\"envFrom\":" ENVFROM ",\"volumeMounts\":" MOUNTS "}],\"volumes\":"
	  VOLUMES), NULL, 1, 0, 0, NULL, { { 0 } } },
	{ "UPDATE without the token takes it from oldObject", "UPDATE", KSVC, SVC_CM,
	  SVC(INJECT, LABEL, "\"containers\":[{\"name\":\"app\",\"env\":[" RELEASE_CM ","
	  TOKEN_OLD "]}]"), 1, 0, 1, NULL, {
		{ C0 "env.1", TOKEN_OLD },
		{ C0 "env.2", ABSENT },
	} },
	{ "app is not the first container", "CREATE", KSVC,
	  SVC(INJECT, LABEL, "\"containers\":[{\"name\":\"proxy\"}," C_APP "]"), NULL, 1, 0, 1,
	  NULL, {
		{ "spec.template.spec.containers.0", "{\"name\":\"proxy\"}" },
		{ "spec.template.spec.containers.1.volumeMounts", MOUNTS },
		{ "spec.template.spec.containers.1.env.0", RELEASE_CM },
		{ "spec.template.spec.containers.1.envFrom", ENVFROM },
	} },
	{ "no container named app: the first one", "CREATE", KSVC,
	  SVC(INJECT, LABEL, "\"containers\":[{\"name\":\"web\"},{\"name\":\"proxy\"}]"), NULL,
	  1, 0, 1, NULL, {
		{ C0 "env.0", RELEASE_CM },
		{ "spec.template.spec.containers.1", "{\"name\":\"proxy\"}" },
	} },
	{ "custom mount path", "CREATE", KSVC,
	  SVC(INJECT ",\"deco.sites/decofile-mount-path\":\"/data/cfg/\"", LABEL,
	  "\"containers\":[" C_APP "]"), NULL, 1, 0, 1, NULL, {
		{ C0 "volumeMounts.0.mountPath", "\"/data/cfg\"" },
		{ C0 "env.0", "{\"name\":\"DECO_RELEASE\",\"value\":\"file:///data/cfg/decofile.bin\"}" },
	} },
	{ "relative mount path: denied", "CREATE", KSVC,
	  SVC(INJECT ",\"deco.sites/decofile-mount-path\":\"data\"", LABEL,
	  "\"containers\":[" C_APP "]"), NULL, 0, 403, 0, "absolute", { { 0 } } },
	{ "deploymentId differs from the Decofile's name", "CREATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"blog\"", "\"containers\":[" C_APP "]"), NULL,
	  1, 0, 1, NULL, {
		{ "spec.template.spec.volumes.0.configMap.name", "\"decofile-site-blog\"" },
		{ "spec.template.metadata.labels", "{\"app.deco/deploymentId\":\"blog\"}" },
	} },
	{ "stale DECO_RELEASE replaced, token and envFrom kept", "UPDATE", KSVC,
	  SVC(INJECT, LABEL, "\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":"
	  "\"DECO_RELEASE\",\"value\":\"file:///old/decofile.json\"}," TOKEN_OLD "],"
	  "\"envFrom\":[{\"configMapRef\":{\"name\":\"x\"}},{\"secretRef\":{\"name\":"
	  "\"valkey-acl\"}}]}]"), NULL, 1, 0, 1, NULL, {
		{ C0 "env", "[" RELEASE_CM "," TOKEN_OLD "]" },
		{ C0 "envFrom", "[{\"configMapRef\":{\"name\":\"x\"}},{\"secretRef\":{\"name\":"
		  "\"valkey-acl\"}}]" },
	} },
	{ "duplicates of our variables are removed (the last would win)", "UPDATE", KSVC,
	  SVC(INJECT, LABEL, "\"containers\":[{\"name\":\"app\",\"env\":[" TOKEN_OLD ","
	  "{\"name\":\"DECO_RELEASE\",\"value\":\"x\"},{\"name\":\"KEEP\",\"value\":\"1\"},"
	  "{\"name\":\"DECO_RELEASE\",\"value\":\"y\"},{\"name\":\"DECO_RELEASE_RELOAD_TOKEN\","
	  "\"value\":\"other\"}]}]"), NULL, 1, 0, 1, NULL, {
		{ C0 "env", "[" TOKEN_OLD "," RELEASE_CM ",{\"name\":\"KEEP\",\"value\":\"1\"}]" },
	} },
	{ "template without metadata gets the label", "CREATE", KSVC,
	  "{\"metadata\":{\"name\":\"web\",\"annotations\":{" INJECT "},\"labels\":{" LABEL "}},"
	  "\"spec\":{\"template\":{\"spec\":{\"containers\":[" C_APP "]}}}}", NULL, 1, 0, 1,
	  NULL, {
		{ "spec.template.metadata", "{\"labels\":{\"app.deco/deploymentId\":\"loja\"}}" },
	} },
	{ "s3 target without s3_public_host: denied", "CREATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"nohost\"", "\"containers\":[" C_APP "]"),
	  NULL, 0, 403, 0, "s3_public_host", { { 0 } } },
	{ "file target: nothing a Service can read", "CREATE", KSVC,
	  SVC(INJECT, "\"app.deco/deploymentId\":\"local\"", "\"containers\":[" C_APP "]"),
	  NULL, 1, 0, 0, "target file", { { 0 } } },
	{ "env that is not a list: refused as malformed", "CREATE", KSVC,
	  SVC(INJECT, LABEL, "\"containers\":[{\"name\":\"app\",\"env\":{}}]"), NULL, 0, 400, 0,
	  "env is not a list", { { 0 } } },
	{ "request.object not an object", "CREATE", KSVC, "\"a string\"", NULL, 0, 400, 0,
	  "must be objects", { { 0 } } },
	{ "wrong kind on the mutating path", "CREATE", KDEP, SVC_CM, NULL, 0, 400, 0,
	  "serving.knative.dev/v1 Services", { { 0 } } },
	{ "DELETE on the mutating path: allowed", "DELETE", KSVC, NULL, SVC_CM, 1, 0, 0, NULL,
	  { { 0 } } },
};

static void
malformed(void)
{
	static const struct { const char *label, *body; } bad[] = {
		{ "empty body", "" },
		{ "truncated JSON", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Adm" },
		{ "not an object", "[1,2,3]" },
		{ "not an AdmissionReview", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}" },
		{ "v1beta1 review", "{\"apiVersion\":\"admission.k8s.io/v1beta1\","
		  "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}" },
		{ "no request", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}" },
		{ "request without uid", "{\"apiVersion\":\"admission.k8s.io/v1\","
		  "\"kind\":\"AdmissionReview\",\"request\":{\"kind\":" KSVC "}}" },
	};
	struct wh_result r;
	char *deep;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wh_result_init(&r);
		is_int(wh_mutate(&env, bad[i].body, strlen(bad[i].body), &r), -1, "%s: refused",
		    bad[i].label);
		is_int(r.http_status, 400, "%s: HTTP 400", bad[i].label);
		r.body.data[strcspn(r.body.data, "\n")] = '\0';
		ok(strstr(r.body.data, "malformed AdmissionReview") != NULL, "%s: says why (%s)",
		    bad[i].label, r.body.data);
		wh_result_free(&r);
	}
	deep = xmalloc(2 * 600 + 1);
	memset(deep, '[', 600);
	memset(deep + 600, ']', 600);
	deep[1200] = '\0';
	wh_result_init(&r);
	wh_mutate(&env, deep, 1200, &r);
	r.body.data[strcspn(r.body.data, "\n")] = '\0';
	ok(r.http_status == 400 && strstr(r.body.data, "deeper than 512") != NULL,
	    "JSON nested 600 deep: refused before parsing (%s)", r.body.data);
	wh_result_free(&r);
	free(deep);
	ok(wh_json_depth_ok("{\"a\":\"[[[[[\"}", 13, 2), "brackets inside strings do not count");
	ok(!wh_json_depth_ok("[[[]]]", 6, 2), "depth 3 over a limit of 2");
}

static void
validate(void)
{
	struct wh_result r;
	yajl_val resp;
	char *body;
	const char *msg;

	wh_index_set_service(ix, "sites-x", "web", "loja");
	wh_index_set_service(ix, "sites-x", "api", "loja");
	wh_index_set_service(ix, "sites-y", "web", "loja");
	body = review("DELETE", KDF, NULL, "{\"metadata\":{\"name\":\"loja\"}}", 0);
	/* the review names "web" as request.name: use a Decofile review instead */
	free(body);
	body = xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	    "\"request\":{\"uid\":\"u2\",\"kind\":" KDF ",\"namespace\":\"sites-x\","
	    "\"name\":\"loja\",\"operation\":\"DELETE\",\"oldObject\":{}}}");
	resp = run(wh_validate_decofile, body, &r);
	is_int(json_get_bool(resp, -1, "response", "allowed", NULL), 0,
	    "deleting a Decofile two Services use: refused");
	msg = json_get_str(resp, "response", "status", "message", NULL);
	ok(msg != NULL && strstr(msg, "api, web") != NULL && strstr(msg, "2 Knative") != NULL,
	    "the message lists them (%s)", msg ? msg : "none");
	yajl_tree_free(resp);
	wh_result_free(&r);
	free(body);

	wh_index_drop_service(ix, "sites-x", "web");
	wh_index_drop_service(ix, "sites-x", "api");
	body = xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	    "\"request\":{\"uid\":\"u3\",\"kind\":" KDF ",\"namespace\":\"sites-x\","
	    "\"name\":\"loja\",\"operation\":\"DELETE\",\"oldObject\":{}}}");
	resp = run(wh_validate_decofile, body, &r);
	is_int(json_get_bool(resp, -1, "response", "allowed", NULL), 1,
	    "once no Service of its namespace uses it, the delete is allowed");
	yajl_tree_free(resp);
	wh_result_free(&r);
	free(body);

	body = review("CREATE", KDF, "{}", NULL, 0);
	resp = run(wh_validate_decofile, body, &r);
	is_int(json_get_bool(resp, -1, "response", "allowed", NULL), 1, "CREATE of a Decofile allowed");
	yajl_tree_free(resp);
	wh_result_free(&r);
	free(body);

	body = review("DELETE", KSVC, NULL, SVC_CM, 0);
	resp = run(wh_track_service, body, &r);
	ok(json_get_bool(resp, 0, "response", "allowed", NULL) && r.track == WH_TRACK_DROP &&
	    strcmp(r.service, "web") == 0, "a deleted Service is forgotten");
	yajl_tree_free(resp);
	wh_result_free(&r);
	free(body);

	body = review("CREATE", KSVC, SVC_CM, NULL, 0);
	resp = run(wh_mutate, body, &r);
	ok(r.track == WH_TRACK_SET && strcmp(r.decofile, "loja") == 0,
	    "an injected Service is remembered with its Decofile");
	yajl_tree_free(resp);
	wh_result_free(&r);
	free(body);

	body = review("CREATE", KSVC, SVC_CM, NULL, 1);
	resp = run(wh_mutate, body, &r);
	ok(r.track == WH_TRACK_NONE && json_get(resp, "response", "patch", NULL) != NULL,
	    "a dry run is patched but not remembered");
	yajl_tree_free(resp);
	wh_result_free(&r);
	free(body);
}

/* managed - drift prevention: hand edits of decod's objects refused */
static void
managed(void)
{
	static const struct {
		const char *label, *op, *user, *labels, *managers;
		int allowed;
	} m[] = {
		{ "hand edit of a managed ConfigMap", "UPDATE", "alice",
		  "\"app.kubernetes.io/managed-by\":\"decod\"", "system:serviceaccount:d:decod", 0 },
		{ "hand delete of a managed ConfigMap", "DELETE", "alice",
		  "\"app.kubernetes.io/managed-by\":\"decod\"", "system:serviceaccount:d:decod", 0 },
		{ "decod's own account", "UPDATE", "system:serviceaccount:d:decod",
		  "\"app.kubernetes.io/managed-by\":\"decod\"",
		  "gc system:serviceaccount:d:decod", 1 },
		{ "the garbage collector (listed)", "DELETE", "gc",
		  "\"app.kubernetes.io/managed-by\":\"decod\"",
		  "gc, system:serviceaccount:d:decod", 1 },
		{ "an object decod does not manage", "UPDATE", "alice",
		  "\"app.kubernetes.io/managed-by\":\"helm\"", "system:serviceaccount:d:decod", 1 },
		{ "a prefix of a manager is not a manager", "UPDATE", "system:serviceaccount:d:deco",
		  "\"app.kubernetes.io/managed-by\":\"decod\"", "system:serviceaccount:d:decod", 0 },
		{ "drift prevention off", "UPDATE", "alice",
		  "\"app.kubernetes.io/managed-by\":\"decod\"", "", 1 },
		{ "CREATE is never refused", "CREATE", "alice",
		  "\"app.kubernetes.io/managed-by\":\"decod\"", "system:serviceaccount:d:decod", 1 },
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct wh_env e = env;
		struct wh_result r;
		yajl_val resp;
		char *cm = xasprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
		    "{\"name\":\"decofile-loja\",\"labels\":{%s}},\"data\":{}}", m[i].labels);
		char *body = xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
		    "\"AdmissionReview\",\"request\":{\"uid\":\"m\",\"kind\":{\"group\":\"\","
		    "\"version\":\"v1\",\"kind\":\"ConfigMap\"},\"namespace\":\"sites-x\","
		    "\"name\":\"decofile-loja\",\"operation\":\"%s\",\"userInfo\":{\"username\":"
		    "\"%s\"},\"object\":%s,\"oldObject\":%s}}", m[i].op, m[i].user,
		    strcmp(m[i].op, "DELETE") == 0 ? "null" : cm,
		    strcmp(m[i].op, "CREATE") == 0 ? "null" : cm);

		e.managers = m[i].managers;
		wh_result_init(&r);
		wh_validate_managed(&e, body, strlen(body), &r);
		resp = json_parse(r.body.data, r.body.len, NULL);
		is_int(json_get_bool(resp, -1, "response", "allowed", NULL), m[i].allowed,
		    "drift prevention: %s", m[i].label);
		if (!m[i].allowed)
			ok(strstr(r.body.data, "ConfigMap sites-x/decofile-loja is managed by decod") &&
			    strstr(r.body.data, m[i].user), "... the refusal says what and who");
		yajl_tree_free(resp);
		wh_result_free(&r);
		free(body);
		free(cm);
	}
}

static void
authorities(void)
{
	static const struct { const char *in, *host, *want; } m[] = {
		{ NULL, "h.example", WH_DEFAULT_AUTHORITIES ",h.example" },
		{ "", "h", "h" },
		{ "h", "h", "h" },
		{ " h , a ,a,, b ", "h", "a,b,h" },
		{ "ab,a", "a", "ab,a" },
	};
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		wh_merge_authorities(m[i].in, m[i].host, &b);
		is_str(b.data, m[i].want, "authorities \"%s\" + %s", m[i].in ? m[i].in : "(unset)",
		    m[i].host);
	}
	buf_free(&b);
}

int
main(void)
{
	static const char *const dfs[][3] = {
		{ "loja", "{\"metadata\":{\"name\":\"loja\"},\"spec\":{\"target\":\"configmap\"}}" },
		{ "shop", "{\"metadata\":{\"name\":\"shop\"},\"spec\":{\"target\":\"s3\"}}" },
		{ "site-blog", "{\"metadata\":{\"name\":\"site-blog\"},\"spec\":{\"deploymentId\":"
		  "\"blog\"}}" },
		{ "zz-blog", "{\"metadata\":{\"name\":\"zz-blog\"},\"spec\":{\"deploymentId\":"
		  "\"blog\",\"target\":\"s3\"}}" },
		{ "local", "{\"metadata\":{\"name\":\"local\"},\"spec\":{\"target\":\"file\"}}" },
		{ "nohost", "{\"metadata\":{\"name\":\"nohost\"},\"spec\":{\"target\":\"s3\"}}" },
	};

	ix = wh_index_new();
	for (size_t i = 0; i < sizeof(dfs) / sizeof(dfs[0]); i++)
		wh_index_put_decofile(ix, "sites-x", dfs[i][0], dfs[i][1], strlen(dfs[i][1]),
		    "configmap");
	ok(wh_index_find(ix, "sites-y", "loja") == NULL, "a Decofile is found only in its namespace");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (strcmp(rows[i].label, "s3 target without s3_public_host: denied") == 0) {
			struct wh_env e = env;
			struct wh_result r;
			char *body = review("CREATE", KSVC, rows[i].obj, NULL, 0);
			yajl_val resp;

			e.s3_public_host = "";
			wh_result_init(&r);
			wh_mutate(&e, body, strlen(body), &r);
			resp = json_parse(r.body.data, r.body.len, NULL);
			ok(!json_get_bool(resp, 1, "response", "allowed", NULL) &&
			    strstr(r.body.data, rows[i].msg_has) != NULL, "%s", rows[i].label);
			yajl_tree_free(resp);
			wh_result_free(&r);
			free(body);
			continue;
		}
		run_row(&rows[i]);
	}
	malformed();
	validate();
	managed();
	authorities();
	wh_index_del_decofile(ix, "sites-x", "loja");
	ok(wh_index_find(ix, "sites-x", "loja") == NULL, "a deleted Decofile is gone from the index");
	wh_index_free(ix);
	return done_testing();
}
