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
#include "daemons/renderer/render_preview.h"

/* exit codes, as diff -f's */
#define DIFF_SAME 0
#define DIFF_CHANGED 1
#define DIFF_ERROR 2

/* print_text - the pending templates, then a line per block and key, then the sums */
static void
print_text(const char *name, struct render_preview *p, const struct render_diff *d)
{
	char shown[1100];
	struct buf b;

	printf("decofile/%s: the last render against the newest fetched source and "
	    "template generations\n", name);
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
print_tree(struct cli *c, const char *name, const struct render_preview *p)
{
	struct buf b;
	struct jw w;
	yajl_val v;
	int rc;

	buf_init(&b);
	jw_init(&w, &b);
	render_preview_json(&w, c->ns, name, p);
	v = json_parse(b.data, b.len, NULL);
	if (v == NULL)
		rc = (cli_error("internal error: cannot re-read the preview"), DIFF_ERROR);
	else
		rc = (c->out == OUT_YAML ? cli_print_yaml(stdout, v) :
		    cli_print_json(stdout, v)) < 0 ? DIFF_ERROR : 0;
	if (v)
		yajl_tree_free(v);
	buf_free(&b);
	return rc;
}

int
cli_diff_name(struct cli *c, const char *name)
{
	struct render_preview *p = xcalloc(1, sizeof(*p));
	struct spool *sp = NULL;
	yajl_val doc = NULL;
	char err[1600], tree[65], *dir;
	int rv, rc = DIFF_ERROR;

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
	if (cli_journal_open(c, 0) == NULL)
		goto out;
	/* asked first so that a decofile never fetched says so, spool or not */
	if ((rv = journal_last_fetch(c->j, c->ns, name, tree)) != 0) {
		if (rv < 0)
			cli_error("cannot read the journal: %s", journal_error(c->j));
		else
			cli_error("decofile/%s: nothing fetched yet: there is nothing to compare",
			    name);
		goto out;
	}
	dir = xasprintf("%s/spool", conf_get(c->cf, "state_dir"));
	if (access(dir, R_OK | X_OK) == 0)
		sp = spool_open(dir);
	if (sp == NULL) {
		cli_error("cannot open decod's spool %s: %s", dir, strerror(errno ? errno : ENOENT));
		free(dir);
		goto out;
	}
	free(dir);
	if (render_preview(c->j, sp, c->ns, name, doc, p, err, sizeof(err)) != 0) {
		cli_error("%s", err);
		goto out;
	}
	rc = p->d.n > 0 ? DIFF_CHANGED : DIFF_SAME;
	if (c->out == OUT_JSON || c->out == OUT_YAML) {
		if (print_tree(c, name, p) != 0)
			rc = DIFF_ERROR;
	} else if (p->d.n > 0 || p->npend > 0) {
		print_text(name, p, &p->d);
	}
out:
	render_preview_free(p);
	if (doc)
		yajl_tree_free(doc);
	spool_close(sp);
	free(p);
	return rc;
}
