/*
 * cli_journal - reading the journal for people: history NAME (fetches,
 * renders, publishes, condition changes, confirmations summarised per
 * content hash, drift, in time order; describe shows its newest rows) and
 * journal (the audit log).  Read-only SQL against the schema in journal.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "cli/cli.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"

/* what counts as a replica's confirmation in acks.result */
#define ACK_OK "(result IN ('ok','confirmed') OR result GLOB '2[0-9][0-9]')"

static const char history_sql[] =
    "SELECT at, ev, detail FROM ("
    " SELECT at, id, 'fetch' AS ev, source || ' commit ' ||"
    "  CASE commit_id WHEN '' THEN '-' ELSE substr(commit_id, 1, 12) END ||"
    "  ' tree ' || substr(tree_hash, 1, 12) AS detail"
    "  FROM fetches WHERE ns=?1 AND name=?2"
    " UNION ALL SELECT at, id, 'render', 'hash ' || substr(content_hash, 1, 12) ||"
    "  ' format ' || format || ' size ' || size FROM renders WHERE ns=?1 AND name=?2"
    " UNION ALL SELECT at, id, 'publish', target || ' ' || location || ' hash ' ||"
    "  substr(content_hash, 1, 12) || ' timestamp ' || timestamp"
    "  FROM publishes WHERE ns=?1 AND name=?2"
    " UNION ALL SELECT at, id, 'condition', type || '=' || status || ' ' || reason ||"
    "  CASE message WHEN '' THEN '' ELSE ': ' || message END"
    "  FROM conditions WHERE ns=?1 AND name=?2"
    "  AND kind IN ('decofiles', 'decofile', 'Decofile')"
    " UNION ALL SELECT MAX(at), MAX(id), 'acks', 'hash ' || substr(content_hash, 1, 12) ||"
    "  ': ' || COUNT(DISTINCT CASE WHEN " ACK_OK " THEN replica END) || ' of ' ||"
    "  COUNT(DISTINCT replica) || ' replicas confirmed' ||"
    "  CASE WHEN SUM(NOT " ACK_OK ") > 0 THEN ', ' || SUM(NOT " ACK_OK ") ||"
    "  ' failed answers' ELSE '' END"
    "  FROM acks WHERE ns=?1 AND name=?2 GROUP BY content_hash"
    " UNION ALL SELECT at, id, 'drift', location || ': ' || detail"
    "  FROM drift WHERE ns=?1 AND name=?2"
    " ORDER BY at DESC, id DESC LIMIT ?3"
    ") ORDER BY at, id";

static const char *
col(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? (const char *)s : "";
}

int
cli_history_rows(struct journal *j, const char *ns, const char *name, int limit,
    struct table *t, struct jw *w)
{
	sqlite3_stmt *st;
	int n = 0, rc;

	if (sqlite3_prepare_v2(journal_db(j), history_sql, -1, &st, NULL) != SQLITE_OK) {
		cli_error("journal: %s", sqlite3_errmsg(journal_db(j)));
		return -1;
	}
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, limit);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char when[40];

		cli_sql_time(col(st, 0), when, sizeof(when));
		table_row(t, when, col(st, 1), col(st, 2));
		jw_obj(w);
		jw_key(w, "at");
		jw_str(w, col(st, 0));
		jw_key(w, "event");
		jw_str(w, col(st, 1));
		jw_key(w, "detail");
		jw_str(w, col(st, 2));
		jw_end_obj(w);
		n++;
	}
	if (rc != SQLITE_DONE) {
		cli_error("journal: %s", sqlite3_errmsg(journal_db(j)));
		n = -1;
	}
	sqlite3_finalize(st);
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

int
cli_journal(struct cli *c)
{
	struct journal *j;
	sqlite3_stmt *st;
	struct table t;
	struct buf b;
	struct jw w;
	char since[40] = "", obj1[600] = "", obj2[600] = "";
	int n = 0, rc;

	if ((j = cli_journal_open(c, 0)) == NULL)
		return CLI_FAIL;
	if (c->since_ms >= 0) {
		time_t t0 = (time_t)((wall_ms() - c->since_ms) / 1000);
		struct tm tm;

		gmtime_r(&t0, &tm);
		strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%S", &tm);
	}
	if (c->decofile != NULL) {
		snprintf(obj1, sizeof(obj1), "decofile/%s/%s", c->ns, c->decofile);
		snprintf(obj2, sizeof(obj2), "%s/%s", c->ns, c->decofile);
	}
	if (sqlite3_prepare_v2(journal_db(j), "SELECT at, stage, object, action, detail FROM"
	    " (SELECT * FROM audit WHERE at >= ?1 AND (?2 = '' OR object IN (?2, ?3, ?4))"
	    " ORDER BY id DESC LIMIT ?5) ORDER BY id", -1, &st, NULL) != SQLITE_OK)
		return cli_error("journal: %s", sqlite3_errmsg(journal_db(j)));
	sqlite3_bind_text(st, 1, since, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, obj1, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, obj2, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, c->decofile ? c->decofile : "", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, c->limit > 0 ? c->limit : 500);
	table_init(&t, 5, "TIME", "STAGE", "OBJECT", "ACTION", "DETAIL");
	buf_init(&b);
	jw_init(&w, &b);
	jw_arr(&w);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char when[40];

		cli_sql_time(col(st, 0), when, sizeof(when));
		table_row(&t, when, col(st, 1), col(st, 2), col(st, 3), col(st, 4));
		jw_obj(&w);
		jw_key(&w, "at");
		jw_str(&w, col(st, 0));
		jw_key(&w, "stage");
		jw_str(&w, col(st, 1));
		jw_key(&w, "object");
		jw_str(&w, col(st, 2));
		jw_key(&w, "action");
		jw_str(&w, col(st, 3));
		jw_key(&w, "detail");
		jw_str(&w, col(st, 4));
		jw_end_obj(&w);
		n++;
	}
	jw_end_arr(&w);
	if (rc != SQLITE_DONE) {
		rc = cli_error("journal: %s", sqlite3_errmsg(journal_db(j)));
	} else if (c->out == OUT_JSON || c->out == OUT_YAML) {
		rc = cli_print_text(c, b.data, b.len);
	} else {
		if (n == 0)
			fprintf(stderr, "No journal entries%s.\n", since[0] || obj1[0] ?
			    " match" : "");
		else
			table_print(&t, stdout);
		rc = CLI_OK;
	}
	sqlite3_finalize(st);
	table_free(&t);
	buf_free(&b);
	return rc;
}
