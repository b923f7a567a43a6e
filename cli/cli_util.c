/*
 * cli_util - the helpers every decoctl command file uses: errors, the
 * store and journal handles (a read never creates either), merged status
 * and conditions, redaction, JSON/YAML output and tables.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
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
#include "common/store.h"
#include "common/store_keys.h"
#include "common/view.h"

int
cli_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return CLI_FAIL;
}

int
cli_usage_error(struct cli *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (c->cmd != NULL)
		fprintf(stderr, "\nSee 'decoctl %s --help'.\n", c->cmd);
	else
		fprintf(stderr, "\nSee 'decoctl --help'.\n");
	return CLI_USAGE;
}

int
cli_not_found(const char *plural, const char *name)
{
	fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n", plural, name);
	return CLI_FAIL;
}

const char *
cli_kind_singular(const char *plural)
{
	if (strcmp(plural, "decofiles") == 0)
		return "decofile";
	if (strcmp(plural, "templates") == 0)
		return "decofiletemplate";
	if (strcmp(plural, "tenants") == 0)
		return "tenant";
	if (strcmp(plural, "endpoints") == 0)
		return "endpoint";
	return plural;
}

struct store *
cli_store(struct cli *c)
{
	char err[512];

	if (c->st != NULL)
		return c->st;
	int missing = 0;

	cli_note_config(c);
	keys_set_prefix(conf_get(c->cf, "store_prefix"));
	/* only the writers that need no resource make the store; a read never does */
	if (strcmp(c->cmd, "apply") == 0 || strcmp(c->cmd, "sync") == 0 ||
	    strcmp(c->cmd, "acl") == 0)
		c->st = store_open(conf_get(c->cf, "store"), c->cf, err, sizeof(err));
	else
		c->st = store_open_existing(conf_get(c->cf, "store"), c->cf, &missing, err,
		    sizeof(err));
	if (c->st == NULL && missing)
		cli_error("%s; a read never creates it (is this decod's config? -c FILE)", err);
	else if (c->st == NULL)
		cli_error("cannot open the store %s: %s", conf_get(c->cf, "store"), err);
	return c->st;
}

struct journal *
cli_journal_open(struct cli *c, int quiet)
{
	char err[512];
	char *path;

	if (c->j != NULL)
		return c->j;
	cli_note_config(c);
	path = xasprintf("%s/journal.db", conf_get(c->cf, "state_dir"));
	if (access(path, R_OK) != 0) {
		int e = errno;

		if (quiet)
			;
		else if (e == ENOENT)
			cli_error("no journal at %s (is decod running on this host, and is "
			    "state_dir right?)", path);
		else if (e == EACCES || e == EPERM)
			cli_error("cannot read the journal at %s: %s (it is private to the "
			    "user decod runs as: run decoctl as that user)", path, strerror(e));
		else
			cli_error("cannot read the journal at %s: %s", path, strerror(e));
		free(path);
		return NULL;
	}
	/* readable is not enough: sqlite needs to write its WAL index beside it */
	if (access(path, W_OK) != 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
		if (!quiet)
			cli_error("cannot open the journal at %s: %s (sqlite needs write access "
			    "to it and its folder: run decoctl as the user decod runs as)", path,
			    strerror(errno));
		free(path);
		return NULL;
	}
	c->j = journal_open(path, err, sizeof(err));
	if (c->j == NULL && !quiet)
		cli_error("%s", err);
	free(path);
	return c->j;
}

const char *
cli_short(const char *s, size_t n)
{
	static char ring[8][80];
	static int next;
	char *b = ring[next++ % 8];

	if (s == NULL || *s == '\0')
		return "-";
	if (n >= sizeof(ring[0]))
		n = sizeof(ring[0]) - 1;
	snprintf(b, n + 1, "%s", s);
	return b;
}

void
cli_sql_time(const char *at, char *out, size_t len)
{
	size_t i;

	snprintf(out, len, "%s", at ? at : "");
	for (i = 0; out[i]; i++) {
		if (out[i] == 'T')
			out[i] = ' ';
		if (out[i] == '.' || out[i] == 'Z') {
			out[i] = '\0';
			break;
		}
	}
}

yajl_val
cli_merged_status(struct cli *c, const char *plural, const char *ns, const char *name)
{
	return view_merged_status(c->st, plural, ns, name);
}

yajl_val
cli_resource_with_status(struct cli *c, const char *plural, yajl_val doc)
{
	yajl_val v = view_with_status(c->st, plural, doc);

	if (v == NULL)
		cli_error("internal error: cannot re-read %s/%s", plural,
		    json_get_str(doc, "metadata", "name", NULL) ? json_get_str(doc, "metadata",
		    "name", NULL) : "?");
	return v;
}

yajl_val
cli_condition(yajl_val status, const char *type)
{
	return view_condition(status, type);
}

const char *
cli_condition_status(yajl_val status, const char *type)
{
	return view_condition_status(status, type);
}

void
cli_redact(yajl_val v)
{
	view_redact(v);
}

int
cli_print(struct cli *c, yajl_val v)
{
	int rc;

	view_redact(v);
	if (c->out == OUT_JSONPATH || c->out == OUT_COLUMNS)
		return cli_print_template(c, v);
	rc = c->out == OUT_YAML ? cli_print_yaml(stdout, v) : cli_print_json(stdout, v);

	if (rc < 0)
		return cli_error("cannot write the output");
	return CLI_OK;
}

int
cli_print_text(struct cli *c, const char *json, size_t len)
{
	struct json_error je;
	yajl_val v = json_parse(json, len, &je);
	int rc;

	if (v == NULL)
		return cli_error("internal error: bad JSON output: %s", je.msg);
	rc = cli_print(c, v);
	yajl_tree_free(v);
	return rc;
}

void
table_init(struct table *t, size_t ncols, ...)
{
	va_list ap;

	t->ncols = ncols;
	t->nrows = 0;
	t->cells = NULL;
	t->cells = xcalloc(ncols, sizeof(char *));
	va_start(ap, ncols);
	for (size_t i = 0; i < ncols; i++)
		t->cells[i] = xstrdup(va_arg(ap, const char *));
	va_end(ap);
	t->nrows = 1;
}

void
table_row(struct table *t, ...)
{
	va_list ap;

	t->cells = xrealloc(t->cells, (t->nrows + 1) * t->ncols * sizeof(char *));
	va_start(ap, t);
	for (size_t i = 0; i < t->ncols; i++) {
		const char *s = va_arg(ap, const char *);
		char *cell = xstrdup(s ? s : "");

		for (char *p = cell; *p; p++)	/* one row is one line */
			if (*p == '\n' || *p == '\r' || *p == '\t')
				*p = ' ';
		t->cells[t->nrows * t->ncols + i] = cell;
	}
	va_end(ap);
	t->nrows++;
}

void
table_print(struct table *t, FILE *out)
{
	size_t *w = xcalloc(t->ncols, sizeof(size_t));

	for (size_t r = 0; r < t->nrows; r++)
		for (size_t i = 0; i < t->ncols; i++) {
			size_t n = strlen(t->cells[r * t->ncols + i]);

			if (n > w[i])
				w[i] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t i = 0; i < t->ncols; i++) {
			const char *s = t->cells[r * t->ncols + i];

			if (i + 1 == t->ncols)
				fprintf(out, "%s", s);
			else
				fprintf(out, "%-*s   ", (int)w[i], s);
		}
		fputc('\n', out);
	}
	free(w);
}

void
table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}

