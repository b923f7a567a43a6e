/*
 * journal_query - the journal's read side for stages and decoctl: each
 * question a stage or a command asks of another stage's records is one
 * function here, so the schema stays the journal's own business.  Rows
 * are handed to callbacks and valid only during the call.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_impl.h"

/* what counts as a replica's confirmation in acks.result */
#define ACK_OK "(result IN ('ok','confirmed') OR result GLOB '2[0-9][0-9]')"

static const char *
col(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? (const char *)s : "";
}

/* finish - finalize st after stepping: the count, or -1 if the steps broke */
static int
finish(struct journal *j, sqlite3_stmt *st, int rc, int n, const char *what)
{
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		journal_jerr(j, what);
		n = -1;
	}
	journal_done(j, st);
	return n;
}

int
journal_last_item(struct journal *j, const char *stage, const char *kind, const char *ns,
    const char *name, struct journal_item *it)
{
	sqlite3_stmt *st = NULL;
	int rc = journal_run(j, &st, "SELECT " ITEM_COLS " FROM items WHERE stage=? AND"
	    " kind=? AND ns=? AND name=? ORDER BY id DESC LIMIT 1", "ssss", stage, kind, ns,
	    name);

	return journal_item_first(j, rc, st, it);
}

int
journal_last_items(struct journal *j, const char *stage, const char *kind,
    void (*fn)(void *arg, const struct journal_item *it), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT " ITEM_COLS " FROM items WHERE id IN"
	    " (SELECT max(id) FROM items WHERE stage=?1 AND kind=?2 GROUP BY ns, name)"
	    " ORDER BY id",
	    "ss", stage, kind)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		struct journal_item it;

		journal_row_to_item(st, &it);
		fn(arg, &it);
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "last items");
}

int
journal_pending_for(struct journal *j, const char *stage, const char *ns, const char *name)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT 1 FROM items WHERE state='pending' AND"
	    " (?1 = '' OR stage=?1) AND ns=?2 AND name=?3 LIMIT 1", "sss",
	    stage ? stage : "", ns, name)) < 0)
		return -1;
	journal_done(j, st);
	return rc == SQLITE_ROW;
}

int
journal_pending_unlike(struct journal *j, const char *stage, const char *ns, const char *name,
    const char *hash)
{
	sqlite3_stmt *st;
	int rc;

	/* the object's index: items_order would walk every pending item of the stage */
	if ((rc = journal_run(j, &st, "SELECT 1 FROM items INDEXED BY items_object WHERE"
	    " state='pending' AND stage=?1 AND ns=?2 AND name=?3 AND hash<>?4 LIMIT 1", "ssss", stage, ns, name,
	    hash ? hash : "")) < 0)
		return -1;
	journal_done(j, st);
	return rc == SQLITE_ROW;
}

int
journal_last_fetch(struct journal *j, const char *ns, const char *name, char *tree_hash)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT tree_hash FROM fetches WHERE ns=? AND name=?"
	    " ORDER BY id DESC LIMIT 1", "ss", ns, name)) < 0)
		return -1;
	if (rc == SQLITE_ROW)
		journal_copy_col(st, 0, tree_hash, 65);
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_render_bin(struct journal *j, const char *ns, const char *name,
    const char *content_hash, char *bin_hash)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT bin_hash FROM renders WHERE ns=? AND name=?"
	    " AND content_hash=? AND bin_hash<>'' ORDER BY id DESC LIMIT 1", "sss", ns, name,
	    content_hash)) < 0)
		return -1;
	if (rc == SQLITE_ROW)
		journal_copy_col(st, 0, bin_hash, 65);
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_inventory_each(struct journal *j, const char *target, const char *ns,
    const char *name, void (*fn)(void *arg, const struct journal_inventory_row *r),
    void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT ns, name, target, location, content_hash,"
	    " deletion, updated_at FROM inventory WHERE (?1 = '' OR target=?1) AND"
	    " (?2 = '' OR (ns=?2 AND name=?3)) ORDER BY ns, name, location", "sss",
	    target ? target : "", ns && name ? ns : "", name ? name : "")) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		struct journal_inventory_row r = { col(st, 0), col(st, 1), col(st, 2),
			col(st, 3), col(st, 4), col(st, 5), col(st, 6) };

		fn(arg, &r);
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "inventory");
}

int
journal_inventory_set_deletion(struct journal *j, const char *ns, const char *name,
    const char *policy)
{
	if (policy == NULL || (strcmp(policy, "delete") != 0 && strcmp(policy, "detach") != 0)) {
		snprintf(j->err, sizeof(j->err), "deletion policy must be delete or detach");
		return -1;
	}
	return journal_run(j, NULL, "UPDATE inventory SET deletion=? WHERE ns=? AND name=?",
	    "sss", policy, ns, name) < 0 ? -1 : 0;
}

int
journal_inventory_deletion(struct journal *j, const char *ns, const char *name)
{
	sqlite3_stmt *st;
	char v[16] = "";
	int rc;

	if ((rc = journal_run(j, &st, "SELECT deletion FROM inventory WHERE ns=? AND name=?"
	    " AND deletion<>'' ORDER BY updated_at DESC LIMIT 1", "ss", ns, name)) < 0)
		return -1;
	if (rc == SQLITE_ROW)
		journal_copy_col(st, 0, v, sizeof(v));
	journal_done(j, st);
	return strcmp(v, "detach") == 0 ? 1 : strcmp(v, "delete") == 0 ? 0 : -1;
}

int
journal_acks_count(struct journal *j, const char *ns, const char *name,
    const char *content_hash, int *done, int *total)
{
	sqlite3_stmt *st;
	int rc;

	*done = *total = 0;
	if ((rc = journal_run(j, &st, "SELECT COUNT(DISTINCT CASE WHEN content_hash=?3 AND "
	    ACK_OK " THEN replica END), COUNT(DISTINCT replica) FROM acks WHERE ns=?1 AND"
	    " name=?2 AND (content_hash=?3 OR at >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now',"
	    " '-1 day'))", "sss", ns, name, content_hash ? content_hash : "")) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		*done = sqlite3_column_int(st, 0);
		*total = sqlite3_column_int(st, 1);
	}
	journal_done(j, st);
	return 0;
}

int
journal_acks_each(struct journal *j, const char *ns, const char *name,
    void (*fn)(void *arg, const struct journal_ack_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT replica, content_hash, result, at, timestamp, "
	    ACK_OK " FROM acks a WHERE ns=? AND name=? AND id=(SELECT MAX(id) FROM acks b"
	    " WHERE b.ns=a.ns AND b.name=a.name AND b.replica=a.replica) ORDER BY replica",
	    "ss", ns, name)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		struct journal_ack_row r = { col(st, 0), col(st, 1), col(st, 2), col(st, 3),
			sqlite3_column_int64(st, 4), sqlite3_column_int(st, 5) };

		fn(arg, &r);
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "acks");
}

int
journal_acks_all(struct journal *j,
    void (*fn)(void *arg, const char *ns, const char *name, const struct journal_ack_row *r),
    void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT ns, name, replica, content_hash, result, at, "
	    "timestamp, " ACK_OK " FROM acks a WHERE id=(SELECT MAX(id) FROM acks b"
	    " WHERE b.ns=a.ns AND b.name=a.name AND b.replica=a.replica)"
	    " ORDER BY ns, name, replica", "")) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		struct journal_ack_row r = { col(st, 2), col(st, 3), col(st, 4), col(st, 5),
			sqlite3_column_int64(st, 6), sqlite3_column_int(st, 7) };

		fn(arg, col(st, 0), col(st, 1), &r);
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "acks");
}

int
journal_acks_since(struct journal *j, int64_t *last_id,
    void (*fn)(void *arg, const char *ns, const char *name), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if (fn == NULL) {
		if ((rc = journal_run(j, &st, "SELECT COALESCE(MAX(id), 0) FROM acks", "")) < 0)
			return -1;
		if (rc == SQLITE_ROW)
			*last_id = sqlite3_column_int64(st, 0);
		return finish(j, st, rc, 0, "acks");
	}
	/* the rowid range: an index walk of the new rows only */
	if ((rc = journal_run(j, &st, "SELECT ns, name, MAX(id) FROM acks WHERE id > ?"
	    " GROUP BY ns, name", "i", *last_id)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 2);

		fn(arg, col(st, 0), col(st, 1));
		if (id > *last_id)
			*last_id = id;
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "acks");
}

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

int
journal_history_each(struct journal *j, const char *ns, const char *name, int limit,
    void (*fn)(void *arg, const char *at, const char *event, const char *detail),
    void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, history_sql, "ssi", ns, name, (int64_t)limit)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		fn(arg, col(st, 0), col(st, 1), col(st, 2));
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "history");
}

int
journal_audit_each(struct journal *j, const char *since, const char *object, int limit,
    void (*fn)(void *arg, const struct journal_audit_row *r), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT at, stage, object, action, detail FROM"
	    " (SELECT * FROM audit WHERE at >= ?1 AND (?2 = 0 OR object = ?3)"
	    " ORDER BY id DESC LIMIT ?4) ORDER BY id", "sisi", since ? since : "",
	    (int64_t)(object != NULL), object, (int64_t)limit)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		struct journal_audit_row r = { col(st, 0), col(st, 1), col(st, 2), col(st, 3),
			col(st, 4) };

		fn(arg, &r);
		n++;
		rc = sqlite3_step(st);
	}
	return finish(j, st, rc, n, "audit");
}
