/*
 * journal_rollout - a DecofileTemplate generation's rollout in waves, as
 * the journal keeps it: template_rollouts (the newest row per template is
 * the one in force) and template_rollout_sites (each Auto site's wave and
 * how far the generation got there).  The renderer drives it; decoctl
 * reads it and asks for a rollback here.  All of it survives a restart.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_impl.h"

#define ROLLOUT_COLS "id, ns, name, generation, tree_hash, prev_generation, prev_hash," \
	" waves, wave, pause_ms, max_failed, max_failed_pct, state, reason, confirmed_ms," \
	" wave_timeout_ms"
#define SITE_COLS "rollout, site, wave, state, mark, reason, queued_ms, rendered_ms"
#define NOW_MS "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"

static void
row_rollout(sqlite3_stmt *st, struct journal_rollout *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(st, 0);
	journal_copy_col(st, 1, r->ns, sizeof(r->ns));
	journal_copy_col(st, 2, r->name, sizeof(r->name));
	r->generation = sqlite3_column_int64(st, 3);
	journal_copy_col(st, 4, r->tree_hash, sizeof(r->tree_hash));
	r->prev_generation = sqlite3_column_int64(st, 5);
	journal_copy_col(st, 6, r->prev_hash, sizeof(r->prev_hash));
	r->waves = sqlite3_column_int(st, 7);
	r->wave = sqlite3_column_int(st, 8);
	r->pause_ms = sqlite3_column_int64(st, 9);
	r->max_failed = sqlite3_column_int(st, 10);
	r->max_failed_pct = sqlite3_column_int(st, 11);
	journal_copy_col(st, 12, r->state, sizeof(r->state));
	journal_copy_col(st, 13, r->reason, sizeof(r->reason));
	r->confirmed_ms = sqlite3_column_int64(st, 14);
	r->wave_timeout_ms = sqlite3_column_int64(st, 15);
}

static void
row_site(sqlite3_stmt *st, struct journal_rollout_site *s)
{
	memset(s, 0, sizeof(*s));
	s->rollout = sqlite3_column_int64(st, 0);
	journal_copy_col(st, 1, s->site, sizeof(s->site));
	s->wave = sqlite3_column_int(st, 2);
	journal_copy_col(st, 3, s->state, sizeof(s->state));
	s->mark = sqlite3_column_int64(st, 4);
	journal_copy_col(st, 5, s->reason, sizeof(s->reason));
	s->queued_ms = sqlite3_column_int64(st, 6);
	s->rendered_ms = sqlite3_column_int64(st, 7);
}

int64_t
journal_rollout_start(struct journal *j, const struct journal_rollout *r,
    const struct journal_rollout_site *sites, size_t n)
{
	int64_t id;

	if (journal_savepoint(j, "rollout_start") < 0)
		return -1;
	if (journal_run(j, NULL, "UPDATE template_rollouts SET state='superseded', updated_at="
	    NOW " WHERE ns=? AND name=? AND state IN ('running','halted')", "ss", r->ns,
	    r->name) < 0)
		goto fail;
	if (journal_run(j, NULL, "INSERT INTO template_rollouts (ns, name, generation, tree_hash,"
	    " prev_generation, prev_hash, waves, pause_ms, max_failed, max_failed_pct,"
	    " wave_timeout_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "ssisisiiiii", r->ns,
	    r->name, r->generation, r->tree_hash, r->prev_generation, r->prev_hash,
	    (int64_t)r->waves, r->pause_ms, (int64_t)r->max_failed,
	    (int64_t)r->max_failed_pct, r->wave_timeout_ms) < 0)
		goto fail;
	id = sqlite3_last_insert_rowid(j->db);
	for (size_t i = 0; i < n; i++)
		if (journal_run(j, NULL, "INSERT OR REPLACE INTO template_rollout_sites (rollout,"
		    " site, wave) VALUES (?, ?, ?)", "isi", id, sites[i].site,
		    (int64_t)sites[i].wave) < 0)
			goto fail;
	if (journal_savepoint_release(j, "rollout_start") < 0)
		goto fail;
	return id;
fail:
	journal_savepoint_rollback(j, "rollout_start");
	return -1;
}

int
journal_rollout_newest(struct journal *j, const char *ns, const char *tpl,
    struct journal_rollout *r)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT " ROLLOUT_COLS " FROM template_rollouts"
	    " WHERE ns=? AND name=? ORDER BY id DESC LIMIT 1", "ss", ns, tpl)) < 0)
		return -1;
	if (rc == SQLITE_ROW)
		row_rollout(st, r);
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_rollout_active(struct journal *j,
    void (*fn)(void *arg, const struct journal_rollout *r), void *arg)
{
	struct journal_rollout r;
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT " ROLLOUT_COLS " FROM template_rollouts t"
	    " WHERE state IN ('running','rolledback') AND id = (SELECT MAX(id) FROM"
	    " template_rollouts u WHERE u.ns=t.ns AND u.name=t.name) ORDER BY id", "")) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		row_rollout(st, &r);
		fn(arg, &r);
		n++;
		rc = sqlite3_step(st);
	}
	return journal_rows_done(j, st, rc, "step", n);
}

int
journal_rollout_update(struct journal *j, const struct journal_rollout *r)
{
	return journal_run(j, NULL, "UPDATE template_rollouts SET wave=?, state=?, reason=?,"
	    " confirmed_ms=?, updated_at=" NOW " WHERE id=?", "issii", (int64_t)r->wave,
	    r->state, r->reason, r->confirmed_ms, r->id) < 0 ? -1 : 0;
}

int
journal_rollout_sites(struct journal *j, int64_t id, int wave, const char *state, int limit,
    void (*fn)(void *arg, const struct journal_rollout_site *s), void *arg)
{
	struct journal_rollout_site s;
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT " SITE_COLS " FROM template_rollout_sites"
	    " WHERE rollout=?1 AND (?2 = -1000 OR wave=?2) AND (?3 = '' OR state=?3)"
	    " ORDER BY wave, site LIMIT ?4", "iisi", id, (int64_t)wave, state ? state : "",
	    (int64_t)(limit > 0 ? limit : -1))) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		row_site(st, &s);
		fn(arg, &s);
		n++;
		rc = sqlite3_step(st);
	}
	return journal_rows_done(j, st, rc, "step", n);
}

int
journal_rollout_site_get(struct journal *j, int64_t id, const char *site,
    struct journal_rollout_site *s)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT " SITE_COLS " FROM template_rollout_sites"
	    " WHERE rollout=? AND site=?", "is", id, site)) < 0)
		return -1;
	if (rc == SQLITE_ROW)
		row_site(st, s);
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_rollout_site_set(struct journal *j, int64_t id, const char *site, const char *state,
    int64_t mark, const char *reason)
{
	return journal_run(j, NULL, "UPDATE template_rollout_sites SET state=?3,"
	    " mark=CASE WHEN ?4 < 0 THEN mark ELSE ?4 END, reason=CASE WHEN ?6 THEN ?5 ELSE reason END,"
	    " queued_ms=CASE WHEN ?3 IN ('queued','reverting') THEN " NOW_MS " ELSE queued_ms END,"
	    " rendered_ms=CASE WHEN ?3 = 'rendered' THEN " NOW_MS " ELSE rendered_ms END"
	    " WHERE rollout=?1 AND site=?2", "issisi", id, site, state, mark, reason,
	    (int64_t)(reason != NULL)) < 0 ?
	    -1 : 0;
}

int
journal_rollout_rollback(struct journal *j, const char *ns, const char *tpl, char *why,
    size_t whylen)
{
	struct journal_rollout r;
	sqlite3_stmt *st;
	int rc, n;

	if ((rc = journal_rollout_newest(j, ns, tpl, &r)) < 0)
		return -1;
	if (rc == 1 || r.prev_hash[0] == '\0') {
		snprintf(why, whylen, "DecofileTemplate %s/%s has no rollout to roll back", ns,
		    tpl);
		return -2;
	}
	if (strcmp(r.state, "rolledback") == 0 || strcmp(r.state, "superseded") == 0) {
		snprintf(why, whylen, "DecofileTemplate %s/%s: the rollout of generation %lld is"
		    " already %s", ns, tpl, (long long)r.generation, r.state);
		return -2;
	}
	if (journal_begin(j) < 0)
		return -1;
	if (journal_run(j, NULL, "UPDATE template_rollouts SET state='rolledback', reason=?,"
	    " updated_at=" NOW " WHERE id=?", "si", "rolled back by request", r.id) < 0)
		goto fail;
	/* every site on the rolled-out tree, a row of the rollout or not (Manual, Window) */
	if (journal_run(j, NULL, "INSERT OR IGNORE INTO template_rollout_sites (rollout, site,"
	    " wave) SELECT ?1, name, -1 FROM template_uses WHERE ns=?2 AND template=?3 AND"
	    " tree_hash=?4", "isss", r.id, ns, tpl, r.tree_hash) < 0)
		goto fail;
	if (journal_run(j, NULL, "UPDATE template_rollout_sites SET state='revert' WHERE"
	    " rollout=?1 AND site IN (SELECT name FROM template_uses WHERE ns=?2 AND"
	    " template=?3 AND tree_hash=?4)", "isss", r.id, ns, tpl, r.tree_hash) < 0)
		goto fail;
	if ((rc = journal_run(j, &st, "SELECT COUNT(*) FROM template_rollout_sites WHERE"
	    " rollout=? AND state='revert'", "i", r.id)) < 0)
		goto fail;
	n = sqlite3_column_int(st, 0);
	journal_done(j, st);
	if (journal_commit(j) < 0)
		goto fail;
	return n;
fail:
	journal_rollback(j);
	return -1;
}

int
journal_items_pending(struct journal *j, const char *stage, const char *kind)
{
	sqlite3_stmt *st;
	int n;

	if (journal_run(j, &st, "SELECT COUNT(*) FROM items WHERE stage=? AND state='pending'"
	    " AND kind=?", "ss", stage, kind) < 0)
		return -1;
	n = sqlite3_column_int(st, 0);
	journal_done(j, st);
	return n;
}

int64_t
journal_items_mark(struct journal *j)
{
	sqlite3_stmt *st;
	int64_t id;

	if (journal_run(j, &st, "SELECT COALESCE(MAX(id), 0) FROM items", "") < 0)
		return -1;
	id = sqlite3_column_int64(st, 0);
	journal_done(j, st);
	return id;
}

int
journal_notify_after(struct journal *j, const char *ns, const char *name, int64_t mark,
    char *detail, size_t len)
{
	char state[16], result[400];
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT state, result FROM items WHERE stage='notifier'"
	    " AND ns=? AND name=? AND id>? AND state IN ('done','failed')"
	    " ORDER BY id DESC LIMIT 1", "ssi", ns, name, mark)) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		journal_copy_col(st, 0, state, sizeof(state));
		journal_copy_col(st, 1, result, sizeof(result));
		snprintf(detail, len, "%s%s", strcmp(state, "failed") == 0 ? "failed: " : "",
		    result);
	}
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_rollout_settle(struct journal *j, const char *ns, const char *site)
{
	return journal_run(j, NULL, "UPDATE template_rollout_sites SET state='confirmed',"
	    " reason='nothing to adopt' WHERE site=?2 AND state='queued' AND rollout IN"
	    " (SELECT id FROM template_rollouts WHERE ns=?1 AND state='running')", "ss", ns,
	    site) < 0 ? -1 : 0;
}

int
journal_template_before(struct journal *j, const char *ns, const char *tpl,
    const char *hash, int64_t *generation, char *prev)
{
	sqlite3_stmt *st;
	int rc;

	*generation = 0;
	prev[0] = '\0';
	if ((rc = journal_run(j, &st, "SELECT generation, tree_hash FROM template_trees WHERE"
	    " ns=? AND name=? AND tree_hash<>? ORDER BY id DESC LIMIT 1", "sss", ns, tpl,
	    hash)) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		*generation = sqlite3_column_int64(st, 0);
		journal_copy_col(st, 1, prev, 65);
	}
	journal_done(j, st);
	return 0;
}
