/*
 * cli_habits - what decoctl does the way kubectl does: version (with the
 * git commit it was built from), -o jsonpath=... and -o custom-columns=...
 * output, the one notice that no config file was read, and whether the
 * terminal may be sent escapes (decoctl prints no colour at all).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_jsonpath.h"
#include "cli/decoctl_version.h"
#include "common/conf.h"
#include "common/json.h"

int
cli_version(struct cli *c)
{
	struct buf b;
	struct jw w;
	int rc;

	if (c->out != OUT_JSON && c->out != OUT_YAML) {
		printf("decoctl %s (commit %s, %s)\n", DECOCTL_VERSION, DECOCTL_GIT_COMMIT,
		    DECOCTL_GIT_TREE_STATE);
		return CLI_OK;
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "clientVersion");
	jw_obj(&w);
	jw_key(&w, "version");
	jw_str(&w, DECOCTL_VERSION);
	jw_key(&w, "gitCommit");
	jw_str(&w, DECOCTL_GIT_COMMIT);
	jw_key(&w, "gitTreeState");
	jw_str(&w, DECOCTL_GIT_TREE_STATE);
	jw_end_obj(&w);
	jw_end_obj(&w);
	rc = cli_print_text(c, b.data, b.len);
	buf_free(&b);
	return rc;
}

void
cli_note_config(struct cli *c)
{
	static int said;

	if (said || c->cf == NULL || *conf_path(c->cf) != '\0')
		return;
	said = 1;
	fprintf(stderr, "decoctl: no config file (%s/decod/decod.conf does not exist; name "
	    "one with -c FILE or DECOD_CONFIG); using the defaults: store %s, state_dir %s\n",
	    DECOD_SYSCONFDIR, conf_get(c->cf, "store"), conf_get(c->cf, "state_dir"));
}

/* print_columns - one row per item of v, one column per NAME:EXPR */
static int
print_columns(struct cli *c, yajl_val v)
{
	char err[512];
	struct cli_jsonpath_columns *cols = cli_jsonpath_columns_parse(c->out_arg, err,
	    sizeof(err));
	struct table t;
	struct buf cell;
	yajl_val *items;
	size_t n;

	if (cols == NULL)
		return cli_error("%s", err);
	items = cli_jsonpath_items(v, &n);
	t.ncols = cols->n;
	t.nrows = 1;
	t.cells = xcalloc(cols->n, sizeof(char *));
	for (size_t i = 0; i < cols->n; i++)
		t.cells[i] = xstrdup(cols->headers[i]);
	buf_init(&cell);
	for (size_t r = 0; r < n; r++) {
		t.cells = xrealloc(t.cells, (t.nrows + 1) * t.ncols * sizeof(char *));
		for (size_t i = 0; i < cols->n; i++) {
			cli_jsonpath_cell(cols, i, items[r], &cell);
			for (char *p = cell.data; *p; p++)	/* one row is one line */
				if (*p == '\n' || *p == '\r' || *p == '\t')
					*p = ' ';
			t.cells[t.nrows * t.ncols + i] = xstrdup(cell.data);
		}
		t.nrows++;
	}
	if (c->watch)
		cli_watch_table(c, &t);
	else
		table_print(&t, stdout);
	buf_free(&cell);
	table_free(&t);
	free(items);
	cli_jsonpath_columns_free(cols);
	return CLI_OK;
}

int
cli_print_template(struct cli *c, yajl_val v)
{
	struct cli_jsonpath *p;
	char err[512];
	struct buf out;

	if (c->out == OUT_COLUMNS)
		return print_columns(c, v);
	if ((p = cli_jsonpath_parse(c->out_arg, err, sizeof(err))) == NULL)
		return cli_error("jsonpath: %s", err);
	buf_init(&out);
	cli_jsonpath_exec(p, v, &out);
	fwrite(out.data, 1, out.len, stdout);
	buf_free(&out);
	cli_jsonpath_free(p);
	if (fflush(stdout) != 0)
		return cli_error("cannot write the output");
	return CLI_OK;
}

int
cli_escapes_ok(void)
{
	const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (no_color != NULL && *no_color != '\0')
		return 0;
	return term == NULL || strcmp(term, "dumb") != 0;
}
