/*
 * fuzz_admit - the webhook's admission code (daemons/webhook/webhook_admit.c
 * and webhook_mutate.c) on arbitrary bodies: the first byte picks the path,
 * the rest is the AdmissionReview.  Invariants: the answer is HTTP 200 (a JSON review with
 * the request's uid and a boolean allowed) or 400 (text); a patch is a JSON
 * array that applies to the object sent (t/unit/jsonpatch.c); and the
 * patched object, admitted again as an UPDATE, gets no patch.
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
#include "t/fuzz/fuzz.h"
#include "t/unit/jsonpatch.h"

static struct wh_index *ix;

static const struct wh_decofile *
f_find(void *arg, const char *ns, const char *dep)
{
	(void)arg;
	return wh_index_find(ix, ns, dep);
}

static size_t
f_users(void *arg, const char *ns, const char *name, struct buf *out, size_t max)
{
	(void)arg;
	return wh_index_users(ix, ns, name, out, max);
}

static void
f_token(void *arg, char *out, size_t len)
{
	(void)arg;
	snprintf(out, len, "fuzz-token");
}

static const struct wh_env env = {
	.s3_public_host = "cdn.example", .s3_prefix = "p", .managers = "decod",
	.find = f_find, .users = f_users, .token = f_token,
};

static void
setup(void)
{
	static const char *const dfs[][3] = {
		{ "sites-x", "loja", "{\"spec\":{\"target\":\"configmap\"}}" },
		{ "sites-x", "shop", "{\"spec\":{\"target\":\"s3\"}}" },
		{ "sites-x", "b", "{\"spec\":{\"deploymentId\":\"blog\",\"target\":\"configmap\"}}" },
	};

	ix = wh_index_new();
	for (size_t i = 0; i < sizeof(dfs) / sizeof(dfs[0]); i++)
		wh_index_put_decofile(ix, dfs[i][0], dfs[i][1], dfs[i][2], strlen(dfs[i][2]),
		    "configmap");
	wh_index_set_service(ix, "sites-x", "web", "loja");
}

/* check_patch - the patch applies to the object, and the result needs none */
static void
check_patch(yajl_val req, const char *b64)
{
	size_t n = strlen(b64);
	char *patch = xcalloc(1, n + 1), err[256], *again, *body;
	yajl_val obj = json_get(req, "object", NULL), doc, a;
	struct wh_result r;
	struct buf b;
	struct jw w;
	int k;

	fuzz_check((k = EVP_DecodeBlock((unsigned char *)patch, (const unsigned char *)b64,
	    (int)n)) >= 0, "the patch is base64");
	while (n > 0 && b64[n - 1] == '=') {
		k--;
		n--;
	}
	fuzz_check(obj != NULL && YAJL_IS_OBJECT(obj), "a patch only for an object");
	buf_init(&b);
	jw_init(&w, &b);
	jw_value(&w, obj);
	doc = json_parse(b.data, b.len, NULL);
	fuzz_check(doc != NULL, "the object re-parses");
	fuzz_check(jsonpatch_apply(&doc, patch, (size_t)k, err, sizeof(err)) == 0,
	    "the patch applies to the object");
	buf_reset(&b);
	jw_init(&w, &b);
	jw_value(&w, doc);
	again = buf_steal(&b, NULL);
	body = xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	    "\"request\":{\"uid\":\"again\",\"kind\":{\"group\":\"serving.knative.dev\","
	    "\"version\":\"v1\",\"kind\":\"Service\"},\"namespace\":\"sites-x\","
	    "\"operation\":\"UPDATE\",\"object\":%s,\"oldObject\":%s}}", again, again);
	wh_result_init(&r);
	wh_mutate(&env, body, strlen(body), &r);
	a = json_parse(r.body.data, r.body.len, NULL);
	fuzz_check(r.http_status == 200 && a != NULL &&
	    json_get(a, "response", "patch", NULL) == NULL,
	    "a patched object admitted again gets no patch");
	yajl_tree_free(a);
	wh_result_free(&r);
	yajl_tree_free(doc);
	free(body);
	free(again);
	free(patch);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wh_result r;
	yajl_val ans, req;
	char *body;
	int which;

	if (ix == NULL)
		setup();
	if (size == 0)
		return 0;
	which = data[0] % 4;
	body = xstrndup((const char *)data + 1, size - 1);
	wh_result_init(&r);
	if (which == 0)
		wh_mutate(&env, body, strlen(body), &r);
	else if (which == 1)
		wh_validate_decofile(&env, body, strlen(body), &r);
	else if (which == 2)
		wh_track_service(&env, body, strlen(body), &r);
	else
		wh_validate_managed(&env, body, strlen(body), &r);
	fuzz_check(r.http_status == 200 || r.http_status == 400, "HTTP 200 or 400");
	fuzz_check(r.body.len > 0, "an answer has a body");
	if (r.http_status == 200) {
		ans = json_parse(r.body.data, r.body.len, NULL);
		fuzz_check(ans != NULL, "a 200 answer is JSON");
		fuzz_check(json_get_str(ans, "response", "uid", NULL) != NULL, "it has the uid");
		fuzz_check(json_get_bool(ans, -1, "response", "allowed", NULL) != -1,
		    "it says allowed or not");
		if (json_get_str(ans, "response", "patch", NULL) != NULL) {
			req = yajl_tree_parse(body, NULL, 0);
			fuzz_check(req != NULL, "a patched review parses");
			check_patch(json_get(req, "request", NULL),
			    json_get_str(ans, "response", "patch", NULL));
			yajl_tree_free(req);
		}
		yajl_tree_free(ans);
	}
	wh_result_free(&r);
	free(body);
	return 0;
}
