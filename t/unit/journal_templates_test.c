/*
 * journal_templates_test - DecofileTemplate generations in the journal:
 * a fetch of the same generation and tree records nothing; the newest is
 * found; what each site used is replaced whole per render and listed per
 * template; the spool keeps the newest tree and every one a site uses;
 * pruning drops only old generations nobody uses.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_impl.h"
#include "common/util.h"
#include "t/tap.h"

static void
seen_hash(void *arg, const char *hash)
{
	char *seen = arg;

	strncat(seen, hash, 600 - strlen(seen) - 2);
	strcat(seen, " ");
}

static void
seen_user(void *arg, const char *name, int64_t gen)
{
	char *seen = arg, one[300];

	snprintf(one, sizeof(one), "%s@%lld ", name, (long long)gen);
	strncat(seen, one, 600 - strlen(seen) - 1);
}

int
main(void)
{
	char dir[] = "/tmp/journal_templates_test.XXXXXX", path[256], err[512];
	char seen[600] = "", h[65];
	struct journal_template_use u[2], got;
	struct journal *j;
	int64_t g = 0;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/journal.db", dir);
	if ((j = journal_open(path, err, sizeof(err))) == NULL) {
		ok(0, "journal opens: %s", err);
		return done_testing();
	}
	is_int(journal_template_newest(j, "ns", "base", &g, h), 1, "never fetched: none");
	is_int(journal_template_record(j, "ns", "base", 1, "", "t1"), 1, "generation 1 recorded");
	is_int(journal_template_record(j, "ns", "base", 1, "", "t1"), 0,
	    "the same generation and tree again: nothing");
	is_int(journal_template_record(j, "ns", "base", 2, "", "t2"), 1, "generation 2");
	is_int(journal_template_record(j, "ns", "base", 3, "", "t3"), 1, "generation 3");
	is_int(journal_template_record(j, "ns", "other", 7, "", "o7"), 1, "another template");
	ok(journal_template_newest(j, "ns", "base", &g, h) == 0 && g == 3 && strcmp(h, "t3") == 0,
	    "the newest is generation 3 (t3)");

	/* man pinned at 1, auto on 3, then auto's next render drops the template */
	memset(u, 0, sizeof(u));
	snprintf(u[0].template, sizeof(u[0].template), "base");
	u[0].generation = 1;
	snprintf(u[0].tree_hash, sizeof(u[0].tree_hash), "t1");
	snprintf(u[1].template, sizeof(u[1].template), "other");
	u[1].generation = 7;
	snprintf(u[1].tree_hash, sizeof(u[1].tree_hash), "o7");
	ok(journal_template_uses_set(j, "ns", "man", u, 2) == 0, "man's render used base@1, other@7");
	u[0].generation = 3;
	snprintf(u[0].tree_hash, sizeof(u[0].tree_hash), "t3");
	ok(journal_template_uses_set(j, "ns", "auto", u, 1) == 0, "auto's render used base@3");
	ok(journal_template_used(j, "ns", "man", "base", &got) == 0 && got.generation == 1 &&
	    strcmp(got.tree_hash, "t1") == 0, "man uses base generation 1, tree t1");
	is_int(journal_template_used(j, "ns", "man", "gone", &got), 1, "a template not used: none");
	is_int(journal_template_users(j, "ns", "base", seen_user, seen), 2, "two sites use base");
	is_str(seen, "auto@3 man@1 ", "... by name, with their generations");
	seen[0] = '\0';
	is_int(journal_template_users(j, "other-ns", "base", seen_user, seen), 0,
	    "none in another namespace");

	seen[0] = '\0';
	journal_referenced(j, seen_hash, seen);
	ok(strstr(seen, "t1 ") && strstr(seen, "t3 ") && strstr(seen, "o7 "),
	    "the spool keeps the newest trees and man's pinned t1: %s", seen);
	ok(strstr(seen, "t2 ") == NULL, "generation 2, used by nobody, is not kept");

	/* prune everything older than now: t2 goes, t1 (used) and t3 (newest) stay */
	sqlite3_exec(journal_db(j), "UPDATE template_trees SET at='2000-01-01T00:00:00Z'", NULL,
	    NULL, NULL);
	ok(journal_prune(j, 1000) == 0, "prune");
	{
		sqlite3_stmt *st;
		char rows[200] = "";

		sqlite3_prepare_v2(journal_db(j), "SELECT group_concat(tree_hash, ' ') FROM"
		    " (SELECT tree_hash FROM template_trees ORDER BY id)", -1, &st, NULL);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
			snprintf(rows, sizeof(rows), "%s", sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		is_str(rows, "t1 t3 o7", "pruning keeps the pinned and the newest generations");
	}
	ok(journal_template_uses_set(j, "ns", "man", NULL, 0) == 0 &&
	    journal_template_used(j, "ns", "man", "base", &got) == 1,
	    "a render without templates clears what man used");
	journal_close(j);
	rm_rf(dir);
	return done_testing();
}
