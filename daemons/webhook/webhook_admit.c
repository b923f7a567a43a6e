/*
 * webhook_admit - the envelope of every admission answer: reads an
 * admission.k8s.io/v1 AdmissionReview whole (envelope, kind, operation,
 * object) before using any of it, writes the AdmissionReview response, and
 * decides the three validating paths (Decofiles in use, Service deletes,
 * drift prevention).  The mutating path's JSONPatch is webhook_mutate.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"
#include "daemons/webhook/webhook_admit_int.h"

#define REVIEW_API	"admission.k8s.io/v1"
#define USERS_NAMED	10

void
wh_result_init(struct wh_result *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->body);
	r->http_status = 200;
}

void
wh_result_free(struct wh_result *r)
{
	buf_free(&r->body);
}

int
wh_json_depth_ok(const char *text, size_t len, int max)
{
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c == '"') {
			for (i++; i < len && text[i] != '"'; i++)
				if (text[i] == '\\')
					i++;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				return 0;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 1;
}

/* ---- answers ---- */

/* bad_request - no usable review: HTTP 400 with a text reason */
static int
bad_request(struct wh_result *r, const char *why)
{
	r->http_status = 400;
	r->outcome = WH_INVALID;
	buf_reset(&r->body);
	buf_printf(&r->body, "malformed AdmissionReview: %s\n", why);
	snprintf(r->message, sizeof(r->message), "%s", why);
	return -1;
}

/*
 * wh_answer - the AdmissionReview response.  code 0: allowed; else denied with
 * that status code and msg.  patch (JSON text, may be NULL) is base64'd.
 * msg and warning end on a whole character: the callers snprintf them into
 * fixed buffers, and a user name or object name of multi-byte characters
 * cut in the middle of one made the answer invalid UTF-8 (found by fuzz_admit).
 */
void
wh_answer(struct wh_result *r, const char *uid, int code, const char *msgin,
    const struct buf *patch, const char *warnin)
{
	char *msg = msgin != NULL ? xstrdup(msgin) : NULL;
	char *warning = warnin != NULL ? xstrdup(warnin) : NULL;
	struct jw w;

	if (msg != NULL)
		utf8_cut_tail(msg);
	if (warning != NULL)
		utf8_cut_tail(warning);
	buf_reset(&r->body);
	jw_init(&w, &r->body);
	jw_obj(&w);
	jw_key(&w, "apiVersion");
	jw_str(&w, REVIEW_API);
	jw_key(&w, "kind");
	jw_str(&w, "AdmissionReview");
	jw_key(&w, "response");
	jw_obj(&w);
	jw_key(&w, "uid");
	jw_str(&w, uid);
	jw_key(&w, "allowed");
	jw_bool(&w, code == 0);
	if (code != 0) {
		jw_key(&w, "status");
		jw_obj(&w);
		jw_key(&w, "code");
		jw_int(&w, code);
		jw_key(&w, "message");
		jw_str(&w, msg);
		jw_end_obj(&w);
	}
	if (patch != NULL && patch->len > 0) {
		char *b64 = xmalloc(4 * ((patch->len + 2) / 3) + 1);

		EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)patch->data,
		    (int)patch->len);
		jw_key(&w, "patchType");
		jw_str(&w, "JSONPatch");
		jw_key(&w, "patch");
		jw_str(&w, b64);
		free(b64);
	}
	if (warning != NULL) {
		jw_key(&w, "warnings");
		jw_arr(&w);
		jw_str(&w, warning);
		jw_end_arr(&w);
	}
	jw_end_obj(&w);
	jw_end_obj(&w);
	if (msg != NULL)
		snprintf(r->message, sizeof(r->message), "%s", msg);
	else if (warning != NULL)
		snprintf(r->message, sizeof(r->message), "%s", warning);
	free(msg);
	free(warning);
}

/* wh_answer_invalid - a review we can answer (its uid is known) but cannot act on */
int
wh_answer_invalid(struct wh_result *r, const struct review *rv, const char *why)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "malformed AdmissionReview: %s", why);
	wh_answer(r, rv->uid, 400, msg, NULL, NULL);
	r->outcome = WH_INVALID;
	return -1;
}

/* wh_answer_deny - allowed: false, 403, with msg */
void
wh_answer_deny(struct wh_result *r, const struct review *rv, const char *msg)
{
	wh_answer(r, rv->uid, 403, msg, NULL, NULL);
	r->outcome = WH_DENIED;
}

/* wh_answer_allow - allowed, no patch, an optional warning */
void
wh_answer_allow(struct wh_result *r, const struct review *rv, const char *warning)
{
	wh_answer(r, rv->uid, 0, NULL, NULL, warning);
	r->outcome = WH_ALLOWED;
}

/*
 * wh_review_read - parse and check the envelope; on success the caller frees
 * rv->root.  -1 when the answer (HTTP 400 or allowed: false) is in r.
 */
int
wh_review_read(const char *body, size_t len, struct review *rv, struct wh_result *r)
{
	char err[256];
	yajl_val kind;

	memset(rv, 0, sizeof(*rv));
	if (len == 0)
		return bad_request(r, "empty body");
	if (strlen(body) != len)
		return bad_request(r, "NUL byte in the body");
	if (!wh_json_depth_ok(body, len, json_get_max_depth())) {
		char why[80];

		snprintf(why, sizeof(why), "JSON nested deeper than %d levels (json_max_depth)",
		    json_get_max_depth());
		return bad_request(r, why);
	}
	if ((rv->root = yajl_tree_parse(body, err, sizeof(err))) == NULL) {
		char why[300];

		err[strcspn(err, "\n")] = '\0';
		snprintf(why, sizeof(why), "not JSON (%s)", err[0] ? err : "parse error");
		return bad_request(r, why);
	}
	if (!YAJL_IS_OBJECT(rv->root))
		goto bad;
	if (json_get_str(rv->root, "apiVersion", NULL) == NULL ||
	    strcmp(json_get_str(rv->root, "apiVersion", NULL), REVIEW_API) != 0 ||
	    json_get_str(rv->root, "kind", NULL) == NULL ||
	    strcmp(json_get_str(rv->root, "kind", NULL), "AdmissionReview") != 0) {
		yajl_tree_free(rv->root);
		rv->root = NULL;
		return bad_request(r, "not an admission.k8s.io/v1 AdmissionReview");
	}
	rv->req = json_get(rv->root, "request", NULL);
	if (rv->req == NULL || !YAJL_IS_OBJECT(rv->req))
		goto bad;
	rv->uid = json_get_str(rv->req, "uid", NULL);
	if (rv->uid == NULL || rv->uid[0] == '\0')
		goto bad;
	kind = json_get(rv->req, "kind", NULL);
	rv->group = json_get_str(kind, "group", NULL);
	rv->version = json_get_str(kind, "version", NULL);
	rv->kind = json_get_str(kind, "kind", NULL);
	rv->op = json_get_str(rv->req, "operation", NULL);
	rv->ns = json_get_str(rv->req, "namespace", NULL);
	rv->name = json_get_str(rv->req, "name", NULL);
	rv->obj = json_get(rv->req, "object", NULL);
	rv->old = json_get(rv->req, "oldObject", NULL);
	rv->dry_run = json_get_bool(rv->req, 0, "dryRun", NULL);
	rv->user = json_get_str(rv->req, "userInfo", "username", NULL);
	if (rv->group == NULL || rv->version == NULL || rv->kind == NULL) {
		wh_answer_invalid(r, rv, "request.kind needs group, version and kind");
		goto fail;
	}
	if (rv->op == NULL) {
		wh_answer_invalid(r, rv, "request.operation is missing");
		goto fail;
	}
	if (rv->obj != NULL && YAJL_IS_NULL(rv->obj))
		rv->obj = NULL;
	if (rv->old != NULL && YAJL_IS_NULL(rv->old))
		rv->old = NULL;
	if ((rv->obj != NULL && !YAJL_IS_OBJECT(rv->obj)) ||
	    (rv->old != NULL && !YAJL_IS_OBJECT(rv->old))) {
		wh_answer_invalid(r, rv, "request.object and request.oldObject must be objects");
		goto fail;
	}
	return 0;
bad:
	yajl_tree_free(rv->root);
	rv->root = NULL;
	return bad_request(r, "request.uid is missing (no request to answer)");
fail:
	yajl_tree_free(rv->root);
	rv->root = NULL;
	return -1;
}

/* wh_review_kind_is - whether the review is of group/version, kind */
int
wh_review_kind_is(const struct review *rv, const char *group, const char *version,
    const char *kind)
{
	return strcmp(rv->group, group) == 0 && strcmp(rv->version, version) == 0 &&
	    strcmp(rv->kind, kind) == 0;
}

/* wh_result_track - what the caller should remember about Service ns/svc */
void
wh_result_track(struct wh_result *r, const struct review *rv, enum wh_track t,
    const char *ns, const char *svc, const char *decofile)
{
	if (rv->dry_run || svc == NULL || svc[0] == '\0' || ns == NULL)
		return;
	r->track = t;
	snprintf(r->ns, sizeof(r->ns), "%s", ns);
	snprintf(r->service, sizeof(r->service), "%s", svc);
	snprintf(r->decofile, sizeof(r->decofile), "%s", decofile ? decofile : "");
}

int
wh_validate_decofile(const struct wh_env *env, const char *body, size_t len,
    struct wh_result *r)
{
	struct review rv;
	const char *name, *ns;
	struct buf users, msg;
	size_t n;

	if (wh_review_read(body, len, &rv, r) < 0)
		return -1;
	if (!wh_review_kind_is(&rv, "deco.sites", "v1alpha1", "Decofile")) {
		wh_answer_invalid(r, &rv, "this path takes deco.sites/v1alpha1 Decofiles");
		yajl_tree_free(rv.root);
		return -1;
	}
	if (strcmp(rv.op, "DELETE") != 0) {
		wh_answer_allow(r, &rv, NULL);
		yajl_tree_free(rv.root);
		return 0;
	}
	name = rv.name != NULL && rv.name[0] ? rv.name :
	    json_get_str(rv.old, "metadata", "name", NULL);
	ns = rv.ns != NULL && rv.ns[0] ? rv.ns :
	    json_get_str(rv.old, "metadata", "namespace", NULL);
	if (name == NULL || ns == NULL) {
		wh_answer_invalid(r, &rv, "a DELETE needs request.name and request.namespace");
		yajl_tree_free(rv.root);
		return -1;
	}
	buf_init(&users);
	buf_init(&msg);
	buf_adds(&users, "");
	n = env->users(env->arg, ns, name, &users, USERS_NAMED);
	if (n == 0) {
		wh_answer_allow(r, &rv, NULL);
	} else {
		buf_printf(&msg, "Decofile %s/%s is in use by %zu Knative Service%s it was "
		    "injected into: %s", ns, name, n, n == 1 ? "" : "s", users.data);
		if (n > USERS_NAMED)
			buf_printf(&msg, " and %zu more", n - USERS_NAMED);
		buf_adds(&msg, "; delete them or remove their " WH_ANNOTATION_INJECT
		    " annotation first");
		wh_answer_deny(r, &rv, msg.data);
	}
	buf_free(&users);
	buf_free(&msg);
	yajl_tree_free(rv.root);
	return 0;
}

int
wh_track_service(const struct wh_env *env, const char *body, size_t len,
    struct wh_result *r)
{
	struct review rv;

	(void)env;
	if (wh_review_read(body, len, &rv, r) < 0)
		return -1;
	if (!wh_review_kind_is(&rv, "serving.knative.dev", "v1", "Service")) {
		wh_answer_invalid(r, &rv, "this path takes serving.knative.dev/v1 Services");
		yajl_tree_free(rv.root);
		return -1;
	}
	wh_answer_allow(r, &rv, NULL);
	if (strcmp(rv.op, "DELETE") == 0)
		wh_result_track(r, &rv, WH_TRACK_DROP, rv.ns, rv.name, NULL);
	yajl_tree_free(rv.root);
	return 0;
}

/* word_in - whether w is one of the space-separated words of list */
static int
word_in(const char *list, const char *w)
{
	size_t n = strlen(w);

	while (list != NULL && *list != '\0') {
		size_t len;

		list += strspn(list, " ,");
		len = strcspn(list, " ,");
		if (len == n && len > 0 && strncmp(list, w, n) == 0)
			return 1;
		list += len;
	}
	return 0;
}

int
wh_validate_managed(const struct wh_env *env, const char *body, size_t len,
    struct wh_result *r)
{
	struct review rv;
	yajl_val o;
	const char *by, *kind;
	char msg[512];

	if (wh_review_read(body, len, &rv, r) < 0)
		return -1;
	o = rv.old != NULL ? rv.old : rv.obj;
	by = json_get_str(o, "metadata", "labels", WH_LABEL_MANAGED, NULL);
	kind = rv.kind;
	if (env->managers == NULL || env->managers[0] == '\0' ||
	    (strcmp(rv.op, "UPDATE") != 0 && strcmp(rv.op, "DELETE") != 0) ||
	    by == NULL || strcmp(by, "decod") != 0 ||
	    (rv.user != NULL && word_in(env->managers, rv.user))) {
		wh_answer_allow(r, &rv, NULL);
		yajl_tree_free(rv.root);
		return 0;
	}
	snprintf(msg, sizeof(msg), "%s %s/%s is managed by decod (label %s: decod): change "
	    "its Decofile instead; %s by %s is refused, and decod would put it back",
	    kind, rv.ns ? rv.ns : "", rv.name ? rv.name : "", WH_LABEL_MANAGED,
	    strcmp(rv.op, "DELETE") == 0 ? "deleting it" : "a hand edit",
	    rv.user ? rv.user : "an unknown user");
	wh_answer_deny(r, &rv, msg);
	yajl_tree_free(rv.root);
	return 0;
}
