/*
 * cli_diff_name - `decoctl diff NAME`: the preview of what is pending for
 * a Decofile.  Its document merged from the newest fetched tree of its own
 * source and the newest generation of every template it lists (what a
 * render taking every pending change would publish: Manual and Window
 * sites hold older generations, a source fetched may not be rendered yet)
 * against its last rendered document, block by block and key by key
 * (render_diff, which the render stage also summarises in
 * TemplateUpdateAvailable).  Reads the store, the journal and decod's
 * spool; writes nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_yaml.h"
#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/spool.h"
#include "daemons/renderer/render_diff.h"
#include "daemons/renderer/render_merge.h"
#include "daemons/renderer/render_policy.h"
#include "daemons/renderer/render_tree.h"

/* exit codes, as diff -f's */
#define DIFF_SAME 0
#define DIFF_CHANGED 1
#define DIFF_ERROR 2

/* a template the preview takes at a newer tree than the last render used */
struct pend {
	char name[254];
	int used;		/* the last render used it (from is set) */
	struct journal_template_use from;
	int64_t to_gen;
	char to_hash[65];
};

struct preview {
	struct cli *c;
	const char *name;
	struct spool *sp;
	struct render_policy pol;
	int pol_ok;
	struct pend pend[RENDER_MAX_TEMPLATES];
	int npend;
	char rendered[65];	/* the last render's document, "" none */
	char tree[65];		/* the newest fetched tree of the source */
};

/*
 * newest_doc - the document merged from the newest trees into out.  0, or
 * DIFF_ERROR after printing why.
 */
static int
newest_doc(struct preview *p, yajl_val doc, struct buf *out)
{
	static char names[RENDER_MAX_TEMPLATES][254];
	struct render_tree trees[RENDER_MAX_TEMPLATES + 1];
	struct render_input *all = NULL;
	struct render_error e;
	struct journal *j = p->c->j;
	char why[1200], th[65];
	size_t ntrees = 0, nall = 0;
	int n, rv, missing, rc = DIFF_ERROR;
	int64_t gen;

	if ((n = render_template_names(doc, names, RENDER_MAX_TEMPLATES, why, sizeof(why))) < 0)
		return cli_error("decofile/%s: %s", p->name, why), DIFF_ERROR;
	for (int i = 0; i <= n; i++) {
		struct journal_template_use u;

		if (i < n) {
			if ((rv = journal_template_newest(j, p->c->ns, names[i], &gen, th)) != 0) {
				if (rv < 0)
					cli_error("cannot read the journal: %s", journal_error(j));
				else
					cli_error("decofile/%s: DecofileTemplate '%s' has not been "
					    "fetched yet: there is nothing to compare", p->name, names[i]);
				goto out;
			}
			if ((rv = journal_template_used(j, p->c->ns, p->name, names[i], &u)) < 0) {
				cli_error("cannot read the journal: %s", journal_error(j));
				goto out;
			}
			if (rv == 1 || strcmp(u.tree_hash, th) != 0) {
				struct pend *pd = &p->pend[p->npend++];

				snprintf(pd->name, sizeof(pd->name), "%.253s", names[i]);
				pd->used = rv == 0;
				pd->from = u;
				pd->to_gen = gen;
				snprintf(pd->to_hash, sizeof(pd->to_hash), "%s", th);
			}
		}
		if (render_tree_load(p->sp, i < n ? th : p->tree, i < n ? i : RENDER_LAYER_OWN,
		    &trees[ntrees], &missing, why, sizeof(why)) < 0) {
			cli_error("decofile/%s: %s%s%s: %s", p->name, i < n ? "DecofileTemplate '" :
			    "its source's tree", i < n ? names[i] : "", i < n ? "'" : "", why);
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
		cli_error("decofile/%s: the newest source and template generations would not "
		    "render (ValidationError; the last good version would stay live): %s",
		    p->name, e.msg);
		goto out;
	}
	rc = 0;
out:
	free(all);
	for (size_t i = 0; i < ntrees; i++)
		render_tree_free(&trees[i]);
	return rc;
}

/* print_text - the pending templates, then a line per block and key, then the sums */
static void
print_text(struct preview *p, const struct render_diff *d)
{
	char shown[1100];
	struct buf b;

	printf("decofile/%s: the last render against the newest fetched source and "
	    "template generations\n", p->name);
	for (int i = 0; i < p->npend; i++) {
		if (p->pend[i].used)
			printf("  DecofileTemplate '%s': generation %lld \xe2\x86\x92 %lld%s%s%s\n",
			    p->pend[i].name, (long long)p->pend[i].from.generation,
			    (long long)p->pend[i].to_gen, p->pol_ok ? " (" : "",
			    p->pol_ok ? render_policy_name(&p->pol) : "", p->pol_ok ? ")" : "");
		else
			printf("  DecofileTemplate '%s': generation %lld (not used before)\n",
			    p->pend[i].name, (long long)p->pend[i].to_gen);
	}
	if (p->rendered[0] == '\0')
		printf("  (never rendered: every block is new)\n");
	buf_init(&b);
	for (size_t i = 0; i < d->n; i++) {
		const struct rdiff_block *blk = &d->blocks[i];

		str_show(blk->name, shown, sizeof(shown));
		printf("%c block \"%s\" %s%s\n", blk->op, shown, render_diff_op_name(blk->op),
		    blk->whole ? " (replaced whole)" : "");
		for (size_t k = 0; k < blk->nkeys; k++) {
			b.len = 0;
			render_diff_path(&b, &blk->keys[k]);
			buf_adds(&b, "");
			str_show(b.data, shown, sizeof(shown));
			printf("    %c %s\n", blk->keys[k].op, shown);
		}
	}
	b.len = 0;
	render_diff_summary(&b, d);
	buf_adds(&b, "");
	printf("%s\n", b.data);
	buf_free(&b);
}

/* print_tree - the same as one object, through -o json or yaml; 0 or DIFF_ERROR */
static int
print_tree(struct preview *p, const struct render_diff *d)
{
	struct buf b, s;
	struct jw w;
	yajl_val v;
	int rc;

	buf_init(&b);
	buf_init(&s);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "name");
	jw_str(&w, p->name);
	jw_key(&w, "namespace");
	jw_str(&w, p->c->ns);
	jw_key(&w, "policy");
	jw_str(&w, p->pol_ok ? render_policy_name(&p->pol) : NULL);
	jw_key(&w, "rendered");
	jw_str(&w, p->rendered[0] ? p->rendered : NULL);
	jw_key(&w, "sourceTree");
	jw_str(&w, p->tree);
	jw_key(&w, "templates");
	jw_arr(&w);
	for (int i = 0; i < p->npend; i++) {
		jw_obj(&w);
		jw_key(&w, "name");
		jw_str(&w, p->pend[i].name);
		jw_key(&w, "from");
		if (p->pend[i].used) {
			jw_obj(&w);
			jw_key(&w, "generation");
			jw_int(&w, p->pend[i].from.generation);
			jw_key(&w, "hash");
			jw_str(&w, p->pend[i].from.tree_hash);
			jw_end_obj(&w);
		} else {
			jw_null(&w);
		}
		jw_key(&w, "to");
		jw_obj(&w);
		jw_key(&w, "generation");
		jw_int(&w, p->pend[i].to_gen);
		jw_key(&w, "hash");
		jw_str(&w, p->pend[i].to_hash);
		jw_end_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_key(&w, "blocks");
	render_diff_json(&w, d);
	jw_key(&w, "changed");
	jw_int(&w, (int64_t)d->changed);
	jw_key(&w, "keys");
	jw_int(&w, (int64_t)d->keys);
	jw_key(&w, "added");
	jw_int(&w, (int64_t)d->added);
	jw_key(&w, "removed");
	jw_int(&w, (int64_t)d->removed);
	jw_key(&w, "summary");
	render_diff_summary(&s, d);
	jw_strn(&w, s.data, s.len);
	jw_end_obj(&w);
	v = json_parse(b.data, b.len, NULL);
	if (v == NULL)
		rc = (cli_error("internal error: cannot re-read the preview"), DIFF_ERROR);
	else
		rc = (p->c->out == OUT_YAML ? cli_print_yaml(stdout, v) :
		    cli_print_json(stdout, v)) < 0 ? DIFF_ERROR : 0;
	if (v)
		yajl_tree_free(v);
	buf_free(&b);
	buf_free(&s);
	return rc;
}

int
cli_diff_name(struct cli *c, const char *name)
{
	struct preview *p = xcalloc(1, sizeof(*p));
	struct render_diff d;
	struct buf newdoc;
	yajl_val doc = NULL;
	char err[512], format[8], *old = NULL, *dir;
	size_t oldlen = 0;
	int rv, rc = DIFF_ERROR;

	buf_init(&newdoc);
	memset(&d, 0, sizeof(d));
	p->c = c;
	p->name = name;
	if (c->out != OUT_TABLE && c->out != OUT_JSON && c->out != OUT_YAML) {
		free(p);
		return cli_usage_error(c, "diff NAME: -o takes json or yaml");
	}
	if (cli_store(c) == NULL)
		goto out;
	if ((rv = resource_get(c->st, "decofiles", c->ns, name, &doc, err, sizeof(err))) < 0) {
		cli_error("%s", err);
		goto out;
	}
	if (rv == 1) {
		cli_not_found("decofiles", name);
		goto out;
	}
	p->pol_ok = render_policy_parse(doc, &p->pol, err, sizeof(err)) == 0;
	if (cli_journal_open(c, 0) == NULL)
		goto out;
	if ((rv = journal_last_fetch(c->j, c->ns, name, p->tree)) != 0) {
		if (rv < 0)
			cli_error("cannot read the journal: %s", journal_error(c->j));
		else
			cli_error("decofile/%s: nothing fetched yet: there is nothing to compare",
			    name);
		goto out;
	}
	dir = xasprintf("%s/spool", conf_get(c->cf, "state_dir"));
	if (access(dir, R_OK | X_OK) == 0)
		p->sp = spool_open(dir);
	if (p->sp == NULL) {
		cli_error("cannot open decod's spool %s: %s", dir, strerror(errno ? errno : ENOENT));
		free(dir);
		goto out;
	}
	free(dir);
	if (newest_doc(p, doc, &newdoc) != 0)
		goto out;
	if ((rv = journal_last_render(c->j, c->ns, name, p->rendered, format, NULL)) < 0) {
		cli_error("cannot read the journal: %s", journal_error(c->j));
		goto out;
	}
	if (rv == 1) {
		p->rendered[0] = '\0';
		old = xstrdup("{}");
		oldlen = 2;
	} else if ((old = spool_get(p->sp, p->rendered, &oldlen)) == NULL) {
		cli_error("decofile/%s: its last rendered document %s is not in decod's spool: %s",
		    name, p->rendered, strerror(errno));
		goto out;
	}
	if (render_diff_docs(old, oldlen, newdoc.data, newdoc.len, &d, err, sizeof(err)) < 0) {
		cli_error("decofile/%s: %s", name, err);
		goto out;
	}
	rc = d.n > 0 ? DIFF_CHANGED : DIFF_SAME;
	if (c->out == OUT_JSON || c->out == OUT_YAML) {
		if (print_tree(p, &d) != 0)
			rc = DIFF_ERROR;
	} else if (d.n > 0 || p->npend > 0) {
		print_text(p, &d);
	}
out:
	render_diff_free(&d);
	free(old);
	buf_free(&newdoc);
	if (doc)
		yajl_tree_free(doc);
	spool_close(p->sp);
	free(p);
	return rc;
}
