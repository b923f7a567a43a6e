/*
 * web_api - /api/v1: the JSON of `decoctl status -o json` and `decoctl
 * describe -o json` (common/view.c makes both), a decofile's pending
 * change (`decoctl diff NAME -o json`, render_preview) and its templates'
 * rollout, and the two actions, sync and template-apply (what `decoctl
 * template apply NAME` does), which need the bearer token of
 * web_token_file.  Read-only without it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/view.h"
#include "daemons/renderer/render_preview.h"
#include "daemons/web/web.h"

#define PREFIX_DF "/api/v1/decofiles/"

static enum MHD_Result
error_json(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	struct buf b;
	struct jw jw;

	buf_init(&b);
	jw_init(&jw, &b);
	jw_obj(&jw);
	jw_key(&jw, "error");
	jw_str(&jw, msg);
	jw_end_obj(&jw);
	return web_reply_json(c, status, &b);
}

/* status_list - every row, by key, from the rows kept in memory (web_rows) */
static enum MHD_Result
status_list(struct web *w, struct MHD_Connection *c)
{
	struct web_text *v;
	struct buf b;
	size_t n;

	if (!web_rows_ready(w->rows))
		return error_json(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the decofiles cannot be "
		    "read from the store yet (see the web stage's log)");
	n = web_rows_texts(w->rows, 0, &v);
	buf_init(&b);
	buf_addc(&b, '[');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			buf_addc(&b, ',');
		buf_add(&b, v[i].json, v[i].len);
	}
	buf_addc(&b, ']');
	free(v);
	return web_reply_json(c, MHD_HTTP_OK, &b);
}

/* authorized - the request carries "Authorization: Bearer <web_token_file's token>" */
static int
authorized(struct web *w, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);

	if (w->token == NULL || h == NULL || strncmp(h, "Bearer ", 7) != 0)
		return 0;
	/* the GitLab rule is a constant-time compare of two tokens */
	return web_hook_verify(WEB_GITLAB, w->token, strlen(w->token), h + 7, "", 0);
}

/* diff - GET .../diff: the object of `decoctl diff NAME -o json` */
static enum MHD_Result
diff_answer(struct web *w, struct MHD_Connection *c, const char *ns, const char *name,
    yajl_val doc)
{
	struct render_preview *p = xcalloc(1, sizeof(*p));
	struct spool *sp = stage_spool(w->st);
	struct journal *j = stage_journal(w->st);
	char err[1600];
	struct buf b;
	struct jw jw;
	int rv;

	if (j == NULL || sp == NULL) {
		free(p);
		return error_json(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no journal or spool here");
	}
	rv = render_preview(j, sp, ns, name, doc, p, err, sizeof(err));
	if (rv != 0) {
		render_preview_free(p);
		free(p);
		/* nothing to compare yet is a state, not a failure: 409 with why */
		return error_json(c, rv > 0 ? MHD_HTTP_CONFLICT : MHD_HTTP_INTERNAL_SERVER_ERROR,
		    err);
	}
	buf_init(&b);
	jw_init(&jw, &b);
	render_preview_json(&jw, ns, name, p);
	render_preview_free(p);
	free(p);
	return web_reply_json(c, MHD_HTTP_OK, &b);
}

/* templates - GET .../templates: each listed template's rollout for this site */
static enum MHD_Result
templates_answer(struct web *w, struct MHD_Connection *c, const char *ns, const char *name,
    yajl_val doc)
{
	struct store *s = stage_store(w->st);
	struct journal *j = stage_journal(w->st);
	yajl_val status;
	struct buf b;
	struct jw jw;

	if (j == NULL)
		return error_json(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no journal here");
	status = view_merged_status(s, "decofiles", ns, name);
	buf_init(&b);
	jw_init(&jw, &b);
	render_preview_rollout_json(&jw, j, ns, name, doc, status);
	if (status != NULL)
		yajl_tree_free(status);
	return web_reply_json(c, MHD_HTTP_OK, &b);
}

/*
 * template_apply - POST .../template-apply: the annotation `decoctl
 * template apply NAME` sets (deco.sites/apply-template-update: "true");
 * the render stage takes the pending generations and removes it.  A
 * decofile mirroring a Kubernetes CR is annotated on the CR, not here.
 */
static enum MHD_Result
template_apply(struct web *w, struct MHD_Connection *c, const char *ns, const char *name,
    yajl_val doc)
{
	struct store *s = stage_store(w->st);
	char err[512];
	struct buf b;
	yajl_val out;
	int rc;

	if (resource_mirror_uid(doc) != NULL)
		return error_json(c, MHD_HTTP_CONFLICT, "this decofile mirrors a Decofile CR: "
		    "annotate the CR with kubectl (" DECOFILE_APPLY_ANNOTATION "=true)");
	if ((out = resource_annotation_doc(doc, DECOFILE_APPLY_ANNOTATION, "true")) == NULL)
		return error_json(c, MHD_HTTP_CONFLICT, "this decofile has no metadata object");
	rc = resource_put(s, out, ns, NULL, NULL, NULL, NULL, err, sizeof(err));
	yajl_tree_free(out);
	if (rc < 0)
		return error_json(c, MHD_HTTP_SERVICE_UNAVAILABLE, err);
	log_kv(LOG_INFO, "template update requested over the web", "ns", ns, "name", name,
	    NULL);
	buf_init(&b);
	buf_adds(&b, "{\"result\":\"template update requested\"}");
	return web_reply_json(c, MHD_HTTP_ACCEPTED, &b);
}

enum MHD_Result
web_api_answer(struct web *w, struct MHD_Connection *c, const char *url, const char *method,
    struct web_req *q)
{
	struct store *s = stage_store(w->st);
	char ns[254], name[254], action[32] = "", err[512];
	yajl_val doc = NULL;
	int got, view;

	(void)q;
	if (strcmp(url, "/api/v1/status") == 0) {
		if (strcmp(method, "GET") != 0)
			return error_json(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET");
		return status_list(w, c);
	}
	if (strncmp(url, PREFIX_DF, strlen(PREFIX_DF)) != 0 ||
	    sscanf(url + strlen(PREFIX_DF), "%253[^/]/%253[^/]/%31s", ns, name, action) < 2 ||
	    !name_valid(ns) || !name_valid(name))
		return error_json(c, MHD_HTTP_NOT_FOUND, "not found");
	view = action[0] == '\0' || strcmp(action, "diff") == 0 ||
	    strcmp(action, "templates") == 0;
	if (!view && strcmp(action, "sync") != 0 && strcmp(action, "template-apply") != 0)
		return error_json(c, MHD_HTTP_NOT_FOUND, "not found");
	if (!view && strcmp(method, "POST") != 0)
		return error_json(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use POST");
	if (view && strcmp(method, "GET") != 0)
		return error_json(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET");
	if (!view && !authorized(w, c)) {
		log_kv(LOG_WARN, "action refused: no valid bearer token", "action", action,
		    "ns", ns, "name", name, NULL);
		return error_json(c, w->token ? MHD_HTTP_UNAUTHORIZED : MHD_HTTP_FORBIDDEN,
		    w->token ? "a bearer token is needed" : "actions are off (web_token_file)");
	}
	got = resource_get(s, "decofiles", ns, name, &doc, err, sizeof(err));
	if (got < 0)
		return error_json(c, MHD_HTTP_SERVICE_UNAVAILABLE, err);
	if (got == 1)
		return error_json(c, MHD_HTTP_NOT_FOUND, "no such decofile");
	if (strcmp(action, "diff") == 0 || strcmp(action, "templates") == 0 ||
	    strcmp(action, "template-apply") == 0) {
		enum MHD_Result r = action[0] == 'd' ? diff_answer(w, c, ns, name, doc) :
		    strcmp(action, "templates") == 0 ? templates_answer(w, c, ns, name, doc) :
		    template_apply(w, c, ns, name, doc);

		yajl_tree_free(doc);
		return r;
	}
	if (action[0] != '\0') {
		yajl_tree_free(doc);
		if (decofile_request_sync(s, ns, name) < 0)
			return error_json(c, MHD_HTTP_SERVICE_UNAVAILABLE, store_error(s));
		log_kv(LOG_INFO, "sync requested over the web", "ns", ns, "name", name, NULL);
		{
			struct buf b;

			buf_init(&b);
			buf_adds(&b, "{\"result\":\"sync requested\"}");
			return web_reply_json(c, MHD_HTTP_ACCEPTED, &b);
		}
	}
	{
		struct buf b;
		struct jw jw;

		buf_init(&b);
		jw_init(&jw, &b);
		got = view_describe_json(s, stage_journal(w->st), doc, 10, &jw);
		yajl_tree_free(doc);
		if (got < 0) {
			buf_free(&b);
			return error_json(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot re-read it");
		}
		return web_reply_json(c, MHD_HTTP_OK, &b);
	}
}
