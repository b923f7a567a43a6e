/*
 * journal_templates - the DecofileTemplate generations the journal keeps:
 * template_trees (each generation's fetched tree, history) and
 * template_uses (what each decofile's last valid render used, state), so
 * the renderer can keep a site on the generation its update policy pins
 * and the fetcher can wake only the sites that use a changed template.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_impl.h"

int
journal_template_record(struct journal *j, const char *ns, const char *name,
    int64_t generation, const char *commit, const char *tree_hash)
{
	int64_t g;
	char h[65];
	int rc = journal_template_newest(j, ns, name, &g, h);

	if (rc < 0)
		return -1;
	if (rc == 0 && g == generation && strcmp(h, tree_hash) == 0)
		return 0;
	if (journal_run(j, NULL, "INSERT INTO template_trees (ns, name, generation, commit_id,"
	    " tree_hash) VALUES (?, ?, ?, ?, ?)", "ssiss", ns, name, generation,
	    commit ? commit : "", tree_hash) < 0)
		return -1;
	return 1;
}

int
journal_template_newest(struct journal *j, const char *ns, const char *name,
    int64_t *generation, char *tree_hash)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT generation, tree_hash FROM template_trees"
	    " WHERE ns=? AND name=? ORDER BY id DESC LIMIT 1", "ss", ns, name)) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		*generation = sqlite3_column_int64(st, 0);
		journal_copy_col(st, 1, tree_hash, 65);
	}
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_template_uses_set(struct journal *j, const char *ns, const char *name,
    const struct journal_template_use *u, size_t n)
{
	if (journal_savepoint(j, "template_uses") < 0)
		return -1;
	if (journal_run(j, NULL, "DELETE FROM template_uses WHERE ns=? AND name=?", "ss", ns,
	    name) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (journal_run(j, NULL, "INSERT OR REPLACE INTO template_uses (ns, name,"
		    " template, position, generation, tree_hash) VALUES (?, ?, ?, ?, ?, ?)",
		    "sssiis", ns, name, u[i].template, (int64_t)i, u[i].generation,
		    u[i].tree_hash) < 0)
			goto fail;
	return journal_savepoint_release(j, "template_uses");
fail:
	journal_savepoint_rollback(j, "template_uses");
	return -1;
}

int
journal_template_used(struct journal *j, const char *ns, const char *name,
    const char *tpl, struct journal_template_use *u)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT generation, tree_hash FROM template_uses"
	    " WHERE ns=? AND name=? AND template=?", "sss", ns, name, tpl)) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		snprintf(u->template, sizeof(u->template), "%s", tpl);
		u->generation = sqlite3_column_int64(st, 0);
		journal_copy_col(st, 1, u->tree_hash, sizeof(u->tree_hash));
	}
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_template_users(struct journal *j, const char *ns, const char *tpl,
    void (*fn)(void *arg, const char *name, int64_t generation), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT name, generation FROM template_uses"
	    " WHERE ns=? AND template=? ORDER BY name", "ss", ns, tpl)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		const unsigned char *nm = sqlite3_column_text(st, 0);

		fn(arg, nm ? (const char *)nm : "", sqlite3_column_int64(st, 1));
		n++;
		rc = sqlite3_step(st);
	}
	return journal_rows_done(j, st, rc, "step", n);
}

int
journal_template_waiting(struct journal *j,
    void (*fn)(void *arg, const char *ns, const char *name), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT ns, name FROM conditions WHERE id IN"
	    " (SELECT MAX(id) FROM conditions WHERE kind='decofiles' AND"
	    " type='TemplateUpdateAvailable' GROUP BY ns, name)"
	    " AND reason IN ('WaitingForWindow', 'PinnedTreeMissing') ORDER BY ns, name",
	    "")) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		const unsigned char *ns = sqlite3_column_text(st, 0), *nm = sqlite3_column_text(st, 1);

		fn(arg, ns ? (const char *)ns : "", nm ? (const char *)nm : "");
		n++;
		rc = sqlite3_step(st);
	}
	return journal_rows_done(j, st, rc, "step", n);
}
