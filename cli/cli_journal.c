/*
 * cli_journal - reading the journal for people: history NAME (fetches,
 * renders, publishes, condition changes, confirmations summarised per
 * content hash, drift, in time order; describe shows its newest rows) and
 * journal (the audit log).  The rows come from journal_history_each and
 * journal_audit_each; this file only lays them out.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"

/* the table and the JSON array a listing fills at once */
struct out {
	struct table *t;
	struct jw *w;
};

static void
history_row(void *arg, const char *at, const char *event, const char *detail)
{
	struct out *o = arg;
	char when[40];

	cli_sql_time(at, when, sizeof(when));
	table_row(o->t, when, event, detail);
	jw_obj(o->w);
	jw_key(o->w, "at");
	jw_str(o->w, at);
	jw_key(o->w, "event");
	jw_str(o->w, event);
	jw_key(o->w, "detail");
	jw_str(o->w, detail);
	jw_end_obj(o->w);
}

int
cli_history_rows(struct journal *j, const char *ns, const char *name, int limit,
    struct table *t, struct jw *w)
{
	struct out o = { t, w };
	int n;

	if ((n = journal_history_each(j, ns, name, limit, history_row, &o)) < 0)
		cli_error("journal: %s", journal_error(j));
	return n;
}

int
cli_history(struct cli *c)
{
	struct journal *j;
	struct table t;
	struct buf b;
	struct jw w;
	int n, rc = CLI_OK;

	if (c->versions)
		return cli_versions(c);
	if ((j = cli_journal_open(c, 0)) == NULL)
		return CLI_FAIL;
	table_init(&t, 3, "TIME", "EVENT", "DETAIL");
	buf_init(&b);
	jw_init(&w, &b);
	jw_arr(&w);
	n = cli_history_rows(j, c->ns, c->argv[0], c->limit > 0 ? c->limit : 200, &t, &w);
	jw_end_arr(&w);
	if (n < 0) {
		rc = CLI_FAIL;
	} else if (n == 0 && cli_store(c) != NULL) {
		yajl_val doc = NULL;
		char err[512];

		/* nothing recorded: say whether the decofile exists at all */
		if (resource_get(c->st, "decofiles", c->ns, c->argv[0], &doc, err,
		    sizeof(err)) == 1) {
			rc = cli_not_found("decofiles", c->argv[0]);
		} else {
			if (doc)
				yajl_tree_free(doc);
			if (c->out == OUT_JSON || c->out == OUT_YAML)
				rc = cli_print_text(c, b.data, b.len);
			else
				fprintf(stderr, "No history for decofile %s/%s yet.\n", c->ns,
				    c->argv[0]);
		}
	} else if (n == 0) {
		rc = CLI_FAIL;
	} else if (c->out == OUT_JSON || c->out == OUT_YAML) {
		rc = cli_print_text(c, b.data, b.len);
	} else {
		table_print(&t, stdout);
	}
	table_free(&t);
	buf_free(&b);
	return rc;
}

static void
audit_row(void *arg, const struct journal_audit_row *r)
{
	struct out *o = arg;
	char when[40];

	cli_sql_time(r->at, when, sizeof(when));
	table_row(o->t, when, r->stage, r->object, r->action, r->detail);
	jw_obj(o->w);
	jw_key(o->w, "at");
	jw_str(o->w, r->at);
	jw_key(o->w, "stage");
	jw_str(o->w, r->stage);
	jw_key(o->w, "object");
	jw_str(o->w, r->object);
	jw_key(o->w, "action");
	jw_str(o->w, r->action);
	jw_key(o->w, "detail");
	jw_str(o->w, r->detail);
	jw_end_obj(o->w);
}

int
cli_journal(struct cli *c)
{
	struct journal *j;
	struct table t;
	struct buf b;
	struct jw w;
	struct out o = { &t, &w };
	char since[40] = "", obj[JOURNAL_OBJ_MAX] = "";
	int n, rc;

	if ((j = cli_journal_open(c, 0)) == NULL)
		return CLI_FAIL;
	if (c->since_ms >= 0) {
		time_t t0 = (time_t)((wall_ms() - c->since_ms) / 1000);
		struct tm tm;

		gmtime_r(&t0, &tm);
		strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%S", &tm);
	}
	if (c->decofile != NULL)
		journal_obj(obj, sizeof(obj), "decofile", c->ns, c->decofile);
	table_init(&t, 5, "TIME", "STAGE", "OBJECT", "ACTION", "DETAIL");
	buf_init(&b);
	jw_init(&w, &b);
	jw_arr(&w);
	n = journal_audit_each(j, since, c->decofile != NULL ? obj : NULL,
	    c->limit > 0 ? c->limit : 500, audit_row, &o);
	jw_end_arr(&w);
	if (n < 0) {
		rc = cli_error("journal: %s", journal_error(j));
	} else if (c->out == OUT_JSON || c->out == OUT_YAML) {
		rc = cli_print_text(c, b.data, b.len);
	} else {
		if (n == 0)
			fprintf(stderr, "No journal entries%s.\n", since[0] || obj[0] ?
			    " match" : "");
		else
			table_print(&t, stdout);
		rc = CLI_OK;
	}
	table_free(&t);
	buf_free(&b);
	return rc;
}
