/*
 * cli_template - `decoctl template status TEMPLATE` (the template's
 * generation, its rollout, and each site that lists it: the row
 * render_tpl_site makes, the web stage's too) and `decoctl template apply DECOFILE` (the site's owner takes
 * the pending generations: decoctl sets the annotation
 * deco.sites/apply-template-update: "true" on the Decofile, which is what
 * kubectl users do; decod removes it once taken).  apply names the site,
 * not the template: the site's owner decides for the site.  `decoctl
 * template rollback TEMPLATE` stops the template's rollout and sends the
 * sites that took its generation back (the renderer does it, at the
 * rollout's rate, from what this records in the journal).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "daemons/renderer/render_preview.h"
#include "daemons/renderer/render_tree.h"

/* lists - the template names of doc's spec.templates include tpl */
static int
lists(yajl_val doc, const char *tpl)
{
	static char names[RENDER_MAX_TEMPLATES][254];
	char why[256];
	int n = render_template_names(doc, names, RENDER_MAX_TEMPLATES, why, sizeof(why));

	for (int i = 0; i < n; i++)
		if (strcmp(names[i], tpl) == 0)
			return 1;
	return 0;
}

static int
template_status(struct cli *c, const char *tpl)
{
	char err[512];
	char *prefix;
	struct store_list l;
	struct buf b;
	struct jw w;
	yajl_val tdoc = NULL;
	int rc, tally[RENDER_TPL_OTHER + 1] = { 0 };
	struct render_tpl t;
	const struct journal_rollout *ro = &t.ro;

	if (cli_store(c) == NULL)
		return CLI_FAIL;
	rc = resource_get(c->st, "templates", c->ns, tpl, &tdoc, err, sizeof(err));
	if (rc < 0)
		return cli_error("%s", err);
	if (rc == 1)
		return cli_not_found("templates", tpl);
	memset(&t, 0, sizeof(t));
	t.fetched = -1;
	if (cli_journal_open(c, 1) != NULL && render_tpl_load(c->j, c->ns, tpl, &t) < 0) {
		yajl_tree_free(tdoc);
		return cli_error("journal: %s", journal_error(c->j));
	}
	prefix = key_resource_prefix("decofiles", c->ns);
	if (store_list(c->st, prefix, &l) < 0) {
		free(prefix);
		yajl_tree_free(tdoc);
		return cli_error("cannot list decofiles: %s", store_error(c->st));
	}
	free(prefix);
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "name");
	jw_str(&w, tpl);
	jw_key(&w, "namespace");
	jw_str(&w, c->ns);
	jw_key(&w, "generation");
	jw_int(&w, decofile_generation(tdoc));
	jw_key(&w, "fetchedGeneration");
	if (t.fetched >= 0)
		jw_int(&w, t.fetched);
	else
		jw_null(&w);
	jw_key(&w, "hash");
	jw_str(&w, t.tree);
	if (t.have_ro) {
		jw_key(&w, "rollout");
		jw_obj(&w);
		jw_key(&w, "generation");
		jw_int(&w, ro->generation);
		jw_key(&w, "previousGeneration");
		jw_int(&w, ro->prev_generation);
		jw_key(&w, "wave");
		jw_int(&w, ro->wave);
		jw_key(&w, "waves");
		jw_int(&w, ro->waves - 1);
		jw_key(&w, "state");
		jw_str(&w, ro->state);
		jw_key(&w, "reason");
		jw_str(&w, ro->reason);
		jw_end_obj(&w);
	}
	jw_key(&w, "sites");
	jw_arr(&w);
	for (size_t i = 0; i < l.n; i++) {
		char kind[254], ns[254], name[254];
		struct render_tpl_row row;
		yajl_val doc, status;

		if (key_parse_resource(l.kvs[i].key, kind, ns, name) < 0 ||
		    (doc = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL)) == NULL)
			continue;
		if (!lists(doc, tpl)) {
			yajl_tree_free(doc);
			continue;
		}
		status = cli_merged_status(c, "decofiles", ns, name);
		/* the same row as the web stage's GET .../templates (render_preview.c) */
		render_tpl_site(c->j, &t, name, doc, status, &row);
		tally[row.count]++;
		render_tpl_row_json(&w, name, &row);
		yajl_tree_free(status);
		yajl_tree_free(doc);
	}
	jw_end_arr(&w);
	jw_key(&w, "adopted");
	jw_int(&w, tally[RENDER_TPL_ADOPTED]);
	jw_key(&w, "pending");
	jw_int(&w, tally[RENDER_TPL_PENDING]);
	jw_key(&w, "failed");
	jw_int(&w, tally[RENDER_TPL_FAILED]);
	jw_key(&w, "other");
	jw_int(&w, tally[RENDER_TPL_OTHER]);
	jw_end_obj(&w);
	store_list_free(&l);
	yajl_tree_free(tdoc);
	if (c->out == OUT_JSON || c->out == OUT_YAML)
		rc = cli_print_text(c, b.data, b.len);
	else {
		yajl_val v = json_parse(b.data, b.len, NULL), sites;
		struct table tb;

		printf("DecofileTemplate %s/%s: generation %lld", c->ns, tpl,
		    (long long)json_get_int(v, -1, "generation", NULL));
		if (t.fetched >= 0)
			printf(", fetched generation %lld (tree %.12s)", (long long)t.fetched, t.tree);
		else
			printf(", not fetched yet");
		printf("\n");
		if (t.have_ro) {
			printf("rollout: generation %lld, wave %d of %d%s, %s",
			    (long long)ro->generation, ro->wave, ro->waves - 1, ro->wave == 0 ?
			    " (canary)" : "", ro->state);
			if (ro->reason[0] != '\0')
				printf(": %s", ro->reason);
			printf("\n");
		}
		printf("sites: %lld adopted, %lld pending, %lld failed\n",
		    (long long)json_get_int(v, 0, "adopted", NULL),
		    (long long)json_get_int(v, 0, "pending", NULL),
		    (long long)json_get_int(v, 0, "failed", NULL));
		table_init(&tb, 6, "SITE", "POLICY", "GENERATION", "STATE", "WAVE", "NEXT WINDOW");
		sites = json_get(v, "sites", NULL);
		for (size_t i = 0; sites != NULL && i < sites->u.array.len; i++) {
			yajl_val s = sites->u.array.values[i];
			char g[32] = "-", wv[16] = "-";

			if (json_get(s, "generation", NULL) != NULL &&
			    YAJL_IS_INTEGER(json_get(s, "generation", NULL)))
				snprintf(g, sizeof(g), "%lld",
				    (long long)json_get_int(s, 0, "generation", NULL));
			if (json_get(s, "wave", NULL) != NULL)
				snprintf(wv, sizeof(wv), "%lld",
				    (long long)json_get_int(s, 0, "wave", NULL));
			table_row(&tb, json_get_str(s, "name", NULL), json_get_str(s, "policy", NULL),
			    g, json_get_str(s, "state", NULL), wv, json_get_str(s, "nextWindow", NULL));
		}
		table_print(&tb, stdout);
		table_free(&tb);
		yajl_tree_free(v);
		rc = CLI_OK;
	}
	buf_free(&b);
	return rc;
}

static int
template_apply(struct cli *c, const char *name)
{
	yajl_val doc = NULL, out;
	char err[512];
	int rc;

	if (cli_store(c) == NULL)
		return CLI_FAIL;
	rc = resource_get(c->st, "decofiles", c->ns, name, &doc, err, sizeof(err));
	if (rc < 0)
		return cli_error("%s", err);
	if (rc == 1)
		return cli_not_found("decofiles", name);
	if (resource_mirror_uid(doc) != NULL) {
		yajl_tree_free(doc);
		return cli_error("decofile %s mirrors the Decofile CR %s/%s: annotate the CR "
		    "with kubectl (%s=true)", name, c->ns, name, DECOFILE_APPLY_ANNOTATION);
	}
	if ((out = resource_annotation_doc(doc, DECOFILE_APPLY_ANNOTATION, "true")) == NULL) {
		yajl_tree_free(doc);
		return cli_error("decofile %s has no metadata object", name);
	}
	rc = resource_put(c->st, out, c->ns, NULL, NULL, NULL, NULL, err, sizeof(err));
	yajl_tree_free(out);
	yajl_tree_free(doc);
	if (rc < 0)
		return cli_error("%s", err);
	printf("decofile/%s template update requested\n", name);
	return CLI_OK;
}

static int
template_rollback(struct cli *c, const char *tpl)
{
	char why[600];
	int rc, n;

	if (cli_journal_open(c, 0) == NULL)
		return CLI_FAIL;
	if ((n = journal_rollout_rollback(c->j, c->ns, tpl, why, sizeof(why))) == -2)
		return cli_error("%s", why);
	if (n < 0)
		return cli_error("journal: %s", journal_error(c->j));
	rc = printf("template/%s rollout stopped; %d site%s going back to the previous "
	    "generation\n", tpl, n, n == 1 ? "" : "s");
	return rc < 0 ? CLI_FAIL : CLI_OK;
}

int
cli_template(struct cli *c)
{
	if (strcmp(c->argv[0], "status") == 0)
		return template_status(c, c->argv[1]);
	if (strcmp(c->argv[0], "apply") == 0)
		return template_apply(c, c->argv[1]);
	if (strcmp(c->argv[0], "rollback") == 0)
		return template_rollback(c, c->argv[1]);
	return cli_usage_error(c, "unknown template command \"%s\" (status, apply, rollback)",
	    c->argv[0]);
}
