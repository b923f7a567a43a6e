/*
 * render_preview - the pending change of a Decofile (see the header):
 * the newest trees merged as the render stage merges them, compared with
 * the last rendered document by render_diff.  Moved here from decoctl
 * diff NAME so that the web stage's page shows the same preview.  Also a
 * site's row for one template (render_tpl_site), the one `decoctl
 * template status` and the web's GET .../templates both print.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/renderer/render_merge.h"
#include "daemons/renderer/render_preview.h"

/* newest_doc - the document merged from the newest trees into out; 0, 1 or -1 (err) */
static int
newest_doc(struct journal *j, struct spool *sp, const char *ns, const char *name,
    yajl_val doc, struct render_preview *p, struct buf *out, char *err, size_t errlen)
{
	char (*names)[254] = xcalloc(RENDER_MAX_TEMPLATES, sizeof(*names));
	struct render_tree trees[RENDER_MAX_TEMPLATES + 1];
	struct render_input *all = NULL;
	struct render_error e;
	char why[1200], th[65];
	size_t ntrees = 0, nall = 0;
	int n, rv, missing, rc = -1;
	int64_t gen;

	if ((n = render_template_names(doc, names, RENDER_MAX_TEMPLATES, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "decofile/%s: %s", name, why);
		goto out;
	}
	for (int i = 0; i <= n; i++) {
		struct journal_template_use u;

		if (i < n) {
			if ((rv = journal_template_newest(j, ns, names[i], &gen, th)) != 0) {
				if (rv < 0)
					snprintf(err, errlen, "cannot read the journal: %s",
					    journal_error(j));
				else {
					snprintf(err, errlen, "decofile/%s: DecofileTemplate '%s' has "
					    "not been fetched yet: there is nothing to compare", name,
					    names[i]);
					rc = 1;
				}
				goto out;
			}
			if ((rv = journal_template_used(j, ns, name, names[i], &u)) < 0) {
				snprintf(err, errlen, "cannot read the journal: %s", journal_error(j));
				goto out;
			}
			if (rv == 1 || strcmp(u.tree_hash, th) != 0) {
				struct render_pend *pd = &p->pend[p->npend++];

				snprintf(pd->name, sizeof(pd->name), "%.253s", names[i]);
				pd->used = rv == 0;
				pd->from = u;
				pd->to_gen = gen;
				snprintf(pd->to_hash, sizeof(pd->to_hash), "%s", th);
			}
		}
		if (render_tree_load(sp, i < n ? th : p->tree, i < n ? i : RENDER_LAYER_OWN,
		    &trees[ntrees], &missing, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "decofile/%s: %s%s%s: %s", name, i < n ?
			    "DecofileTemplate '" : "its source's tree", i < n ? names[i] : "",
			    i < n ? "'" : "", why);
			goto out;
		}
		nall += trees[ntrees++].n;
	}
	all = xcalloc(nall ? nall : 1, sizeof(*all));
	nall = 0;
	for (size_t i = 0; i < ntrees; i++) {
		memcpy(all + nall, trees[i].in, trees[i].n * sizeof(*all));
		nall += trees[i].n;
	}
	if (render_merge(all, nall, out, NULL, &e) < 0) {
		snprintf(err, errlen, "decofile/%s: the newest source and template generations "
		    "would not render (ValidationError; the last good version would stay live): "
		    "%s", name, e.msg);
		goto out;
	}
	rc = 0;
out:
	free(all);
	for (size_t i = 0; i < ntrees; i++)
		render_tree_free(&trees[i]);
	free(names);
	return rc;
}

int
render_preview(struct journal *j, struct spool *sp, const char *ns, const char *name,
    yajl_val doc, struct render_preview *p, char *err, size_t errlen)
{
	struct buf newdoc;
	char format[8], why[512], *old = NULL;
	size_t oldlen = 0;
	int rv, rc = -1;

	memset(p, 0, sizeof(*p));
	buf_init(&newdoc);
	p->pol_ok = render_policy_parse(doc, &p->pol, why, sizeof(why)) == 0;
	if ((rv = journal_last_fetch(j, ns, name, p->tree)) != 0) {
		if (rv < 0)
			snprintf(err, errlen, "cannot read the journal: %s", journal_error(j));
		else
			snprintf(err, errlen, "decofile/%s: nothing fetched yet: there is "
			    "nothing to compare", name);
		return rv < 0 ? -1 : 1;
	}
	if ((rv = newest_doc(j, sp, ns, name, doc, p, &newdoc, err, errlen)) != 0) {
		buf_free(&newdoc);
		return rv;
	}
	if ((rv = journal_last_render(j, ns, name, p->rendered, format, NULL)) < 0) {
		snprintf(err, errlen, "cannot read the journal: %s", journal_error(j));
		goto out;
	}
	if (rv == 1) {
		p->rendered[0] = '\0';
		old = xstrdup("{}");
		oldlen = 2;
	} else if ((old = spool_get(sp, p->rendered, &oldlen)) == NULL) {
		snprintf(err, errlen, "decofile/%s: its last rendered document %s is not in "
		    "decod's spool: %s", name, p->rendered, strerror(errno));
		goto out;
	}
	if (render_diff_docs(old, oldlen, newdoc.data, newdoc.len, &p->d, why,
	    sizeof(why)) < 0) {
		snprintf(err, errlen, "decofile/%s: %s", name, why);
		goto out;
	}
	rc = 0;
out:
	free(old);
	buf_free(&newdoc);
	return rc;
}

void
render_preview_free(struct render_preview *p)
{
	render_diff_free(&p->d);
}

void
render_preview_json(struct jw *w, const char *ns, const char *name,
    const struct render_preview *p)
{
	const struct render_diff *d = &p->d;
	struct buf s;

	buf_init(&s);
	jw_obj(w);
	jw_key(w, "name");
	jw_str(w, name);
	jw_key(w, "namespace");
	jw_str(w, ns);
	jw_key(w, "policy");
	jw_str(w, p->pol_ok ? render_policy_name(&p->pol) : NULL);
	jw_key(w, "rendered");
	jw_str(w, p->rendered[0] ? p->rendered : NULL);
	jw_key(w, "sourceTree");
	jw_str(w, p->tree);
	jw_key(w, "templates");
	jw_arr(w);
	for (int i = 0; i < p->npend; i++) {
		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, p->pend[i].name);
		jw_key(w, "from");
		if (p->pend[i].used) {
			jw_obj(w);
			jw_key(w, "generation");
			jw_int(w, p->pend[i].from.generation);
			jw_key(w, "hash");
			jw_str(w, p->pend[i].from.tree_hash);
			jw_end_obj(w);
		} else {
			jw_null(w);
		}
		jw_key(w, "to");
		jw_obj(w);
		jw_key(w, "generation");
		jw_int(w, p->pend[i].to_gen);
		jw_key(w, "hash");
		jw_str(w, p->pend[i].to_hash);
		jw_end_obj(w);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_key(w, "blocks");
	render_diff_json(w, d);
	jw_key(w, "changed");
	jw_int(w, (int64_t)d->changed);
	jw_key(w, "keys");
	jw_int(w, (int64_t)d->keys);
	jw_key(w, "added");
	jw_int(w, (int64_t)d->added);
	jw_key(w, "removed");
	jw_int(w, (int64_t)d->removed);
	jw_key(w, "summary");
	render_diff_summary(&s, d);
	jw_strn(w, s.data, s.len);
	jw_end_obj(w);
	buf_free(&s);
}

/* render_preview_resolved - see render_preview.h */
int
render_preview_resolved(yajl_val status, const char *tpl, int64_t *gen, const char **hash)
{
	yajl_val rt = json_get(status, "resolvedTemplates", NULL);

	for (size_t i = 0; rt != NULL && YAJL_IS_ARRAY(rt) && i < rt->u.array.len; i++) {
		yajl_val e = rt->u.array.values[i];
		const char *n = json_get_str(e, "name", NULL);
		yajl_val g = json_get(e, "generation", NULL);

		if (n != NULL && strcmp(n, tpl) == 0) {
			*gen = g != NULL && YAJL_IS_INTEGER(g) ? YAJL_GET_INTEGER(g) : 0;
			*hash = json_get_str(e, "hash", NULL);
			return 0;
		}
	}
	return 1;
}

/* render_tpl_load - see render_preview.h */
int
render_tpl_load(struct journal *j, const char *ns, const char *tpl, struct render_tpl *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	snprintf(t->ns, sizeof(t->ns), "%s", ns);
	snprintf(t->name, sizeof(t->name), "%s", tpl);
	if ((rc = journal_template_newest(j, ns, tpl, &t->fetched, t->tree)) != 0) {
		t->fetched = -1;
		t->tree[0] = '\0';
		if (rc < 0)
			return -1;
	}
	if ((rc = journal_rollout_newest(j, ns, tpl, &t->ro)) < 0)
		return -1;
	t->have_ro = rc == 0;
	/* a rollout of an older tree says nothing of the newest (not begun yet) */
	t->ro_current = t->have_ro && t->tree[0] != '\0' && strcmp(t->ro.tree_hash, t->tree) == 0;
	return 0;
}

/* tpl_state - row's state and tally */
static void
tpl_state(struct render_tpl_row *row, const char *state, int count)
{
	row->state = state;
	row->count = count;
}

/*
 * render_tpl_site - see render_preview.h.  The order of the tests is the
 * order of the states' table in doc/templates.md: a rollback decides
 * first, then a failure in the site's wave, then what it renders, then
 * the policy, then where the rollout is.
 */
int
render_tpl_site(struct journal *j, const struct render_tpl *t, const char *site,
    yajl_val doc, yajl_val status, struct render_tpl_row *row)
{
	struct render_policy pol;
	struct journal_rollout_site rs;
	const struct journal_rollout *ro = &t->ro;
	const char *hash = NULL;
	char why[512];
	int rc = 1, failed = 0, adopted, is_auto;

	memset(row, 0, sizeof(*row));
	row->generation = -1;
	row->fetched = t->fetched;
	row->wave = -1;
	row->next_window = -1;
	if (render_policy_parse(doc, &pol, why, sizeof(why)) < 0) {
		tpl_state(row, "invalid-policy", RENDER_TPL_OTHER);
		return 0;
	}
	row->policy = render_policy_name(&pol);
	if (render_preview_resolved(status, t->name, &row->generation, &hash) != 0) {
		tpl_state(row, "not-rendered", RENDER_TPL_OTHER);
		return 0;
	}
	if (t->ro_current && (rc = journal_rollout_site_get(j, ro->id, site, &rs)) < 0) {
		failed = 1;	/* the state as if it had no rollout row */
		rc = 1;
	}
	if (rc == 0 && rs.wave >= 0)
		row->wave = rs.wave;
	adopted = t->tree[0] == '\0' || (hash != NULL && strcmp(hash, t->tree) == 0);
	is_auto = pol.mode == RENDER_AUTO;
	if (t->ro_current && strcmp(ro->state, "rolledback") == 0) {
		/* the rollback's target is the previous tree, whatever the policy */
		if (rc == 0 && (strcmp(rs.state, "revert") == 0 ||
		    strcmp(rs.state, "reverting") == 0))
			tpl_state(row, "reverting", RENDER_TPL_OTHER);
		else if (!adopted || (rc == 0 && strcmp(rs.state, "reverted") == 0))
			tpl_state(row, "reverted", RENDER_TPL_OTHER);
		else
			tpl_state(row, "adopted", RENDER_TPL_ADOPTED);
	} else if (rc == 0 && strcmp(rs.state, "failed") == 0) {
		tpl_state(row, "failed", RENDER_TPL_FAILED);
		snprintf(row->reason, sizeof(row->reason), "%s", rs.reason);
	} else if (adopted)
		tpl_state(row, "adopted", RENDER_TPL_ADOPTED);
	else if (!is_auto) {
		render_policy_adopt(&pol, render_policy_now(), 0, &row->next_window);
		tpl_state(row, "pending", RENDER_TPL_PENDING);
	} else if (t->ro_current && strcmp(ro->state, "halted") == 0)
		tpl_state(row, "halted", RENDER_TPL_OTHER);
	else if (t->ro_current && strcmp(ro->state, "running") == 0 && rc == 0 &&
	    rs.wave > ro->wave)
		tpl_state(row, "waiting", RENDER_TPL_OTHER);
	else
		tpl_state(row, "updating", RENDER_TPL_OTHER);
	return failed ? -1 : 0;
}

/* render_tpl_row_json - see render_preview.h */
void
render_tpl_row_json(struct jw *w, const char *name, const struct render_tpl_row *row)
{
	char when[40];

	jw_obj(w);
	jw_key(w, "name");
	jw_str(w, name);
	jw_key(w, "policy");
	jw_str(w, row->policy);
	jw_key(w, "generation");
	if (row->generation >= 0)
		jw_int(w, row->generation);
	else
		jw_null(w);
	jw_key(w, "fetchedGeneration");
	if (row->fetched >= 0)
		jw_int(w, row->fetched);
	else
		jw_null(w);
	jw_key(w, "state");
	jw_str(w, row->state);
	if (row->wave >= 0) {
		jw_key(w, "wave");
		jw_int(w, row->wave);
	}
	if (row->reason[0] != '\0') {
		jw_key(w, "reason");
		jw_str(w, row->reason);
	}
	if (row->next_window >= 0) {
		rfc3339_from(row->next_window, when, sizeof(when));
		jw_key(w, "nextWindow");
		jw_str(w, when);
	}
	jw_end_obj(w);
}

/* render_preview_rollout_json - see render_preview.h */
void
render_preview_rollout_json(struct jw *w, struct journal *j, const char *ns,
    const char *site, yajl_val doc, yajl_val status)
{
	char (*names)[254] = xcalloc(RENDER_MAX_TEMPLATES, sizeof(*names));
	char why[512];
	int n = render_template_names(doc, names, RENDER_MAX_TEMPLATES, why, sizeof(why));

	jw_arr(w);
	for (int i = 0; i < n; i++) {
		struct render_tpl t;
		struct render_tpl_row row;

		/* a journal error leaves the row as far as known: still one per template */
		render_tpl_load(j, ns, names[i], &t);
		render_tpl_site(j, &t, site, doc, status, &row);
		render_tpl_row_json(w, names[i], &row);
	}
	jw_end_arr(w);
	free(names);
}
