/*
 * journal_items - the work items a stage hands to the next: added (a newer
 * one supersedes the object's pending one), settled, retried, and read
 * back when due.  The rest of the journal is in journal.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/journal.h"
#include "common/journal_impl.h"
#include "common/util.h"

int64_t
journal_item_add(struct journal *j, const char *stage, const char *kind, const char *ns,
    const char *name, const char *hash, const char *detail)
{
	/*
	 * by the object's index: the planner's choice, items_order (stage,
	 * state), walked every pending item of the stage, and a cold start
	 * has thousands pending (a push cost the renderer 28 % of its CPU)
	 */
	if (journal_run(j, NULL, "UPDATE items INDEXED BY items_object SET state='superseded',"
	    " updated_at=" NOW " WHERE stage=? AND kind=? AND ns=? AND name=? AND state='pending'",
	    "ssss", stage, kind, ns, name) < 0)
		return -1;
	if (journal_run(j, NULL, "INSERT INTO items (stage, kind, ns, name, hash, detail, created_ms)"
	    " VALUES (?, ?, ?, ?, ?, ?, ?)", "ssssssi", stage, kind, ns, name, hash,
	    detail, wall_ms()) < 0)
		return -1;
	return sqlite3_last_insert_rowid(j->db);
}

static int
item_set(struct journal *j, int64_t id, const char *state, const char *result)
{
	return journal_run(j, NULL, "UPDATE items SET state=?, result=?, updated_at=" NOW
	    " WHERE id=?", "ssi", state, result, id) < 0 ? -1 : 0;
}

int
journal_item_done(struct journal *j, int64_t id, const char *result)
{
	return item_set(j, id, "done", result ? result : "");
}

int
journal_item_fail(struct journal *j, int64_t id, const char *error)
{
	return item_set(j, id, "failed", error ? error : "");
}

int
journal_item_retry(struct journal *j, int64_t id, int64_t delay_ms, const char *error)
{
	return journal_run(j, NULL, "UPDATE items SET attempts=attempts+1, not_before=?, result=?,"
	    " updated_at=" NOW " WHERE id=? AND state='pending'", "isi",
	    wall_ms() + delay_ms, error ? error : "", id) < 0 ? -1 : 0;
}


void
journal_copy_col(sqlite3_stmt *st, int col, char *dst, size_t len)
{
	const unsigned char *s = sqlite3_column_text(st, col);
	size_t n = s != NULL ? (size_t)sqlite3_column_bytes(st, col) : 0;

	if (len == 0)
		return;
	if (n >= len)
		n = len - 1;	/* truncated, as snprintf would */
	if (n > 0)
		memcpy(dst, s, n);
	dst[n] = '\0';
}

void
journal_row_to_item(sqlite3_stmt *st, struct journal_item *it)
{
	const char *state;

	memset(it, 0, sizeof(*it));
	it->id = sqlite3_column_int64(st, 0);
	journal_copy_col(st, 1, it->stage, sizeof(it->stage));
	journal_copy_col(st, 2, it->kind, sizeof(it->kind));
	journal_copy_col(st, 3, it->ns, sizeof(it->ns));
	journal_copy_col(st, 4, it->name, sizeof(it->name));
	journal_copy_col(st, 5, it->hash, sizeof(it->hash));
	journal_copy_col(st, 6, it->detail, sizeof(it->detail));
	it->attempts = sqlite3_column_int(st, 7);
	it->not_before = sqlite3_column_int64(st, 8);
	it->created = sqlite3_column_int64(st, 9);
	state = (const char *)sqlite3_column_text(st, 10);
	if (state == NULL || strcmp(state, "pending") == 0)
		it->state = ITEM_PENDING;
	else if (strcmp(state, "done") == 0)
		it->state = ITEM_DONE;
	else if (strcmp(state, "failed") == 0)
		it->state = ITEM_FAILED;
	else
		it->state = ITEM_SUPERSEDED;
}

int
journal_item_first(struct journal *j, int rc, sqlite3_stmt *st, struct journal_item *it)
{
	if (rc < 0)
		return -1;
	if (rc == SQLITE_ROW)
		journal_row_to_item(st, it);
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_item_get(struct journal *j, int64_t id, struct journal_item *it)
{
	sqlite3_stmt *st = NULL;
	int rc = journal_run(j, &st, "SELECT " ITEM_COLS " FROM items WHERE id=?", "i", id);

	return journal_item_first(j, rc, st, it);
}

int
journal_items_due(struct journal *j, const char *stage, size_t max,
    struct journal_item **items, int64_t *next_due)
{
	size_t n;
	int rows = journal_items_due_skip(j, stage, max, NULL, 0, items, &n, next_due);

	return rows < 0 ? -1 : (int)n;
}

/* skipped - id is one of skip[0..nskip) */
static int
skipped(int64_t id, const int64_t *skip, size_t nskip)
{
	for (size_t i = 0; i < nskip; i++)
		if (skip[i] == id)
			return 1;
	return 0;
}

int
journal_items_due_skip(struct journal *j, const char *stage, size_t max,
    const int64_t *skip, size_t nskip, struct journal_item **items, size_t *nitems,
    int64_t *next_due)
{
	sqlite3_stmt *st;
	int64_t now = wall_ms();
	size_t n = 0, rows = 0;
	int rc;

	*items = xcalloc(max ? max : 1, sizeof(**items));
	*nitems = 0;
	if ((rc = journal_run(j, &st, "SELECT " ITEM_COLS " FROM items INDEXED BY items_order"
	    " WHERE stage=? AND state='pending' AND not_before<=?"
	    " ORDER BY kind='rollout', id LIMIT ?", "siz", stage, now,
	    max + nskip)) < 0) {
		free(*items);
		*items = NULL;
		return -1;
	}
	while (rc == SQLITE_ROW && rows < max + nskip) {
		/* a skipped row costs its id only, not the copy of every column */
		if (!skipped(sqlite3_column_int64(st, 0), skip, nskip) && n < max)
			journal_row_to_item(st, &(*items)[n++]);
		rows++;
		rc = sqlite3_step(st);
	}
	journal_done(j, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		journal_jerr(j, "items_due");
		free(*items);
		*items = NULL;
		return -1;
	}
	if (next_due != NULL) {
		*next_due = 0;
		if (journal_run(j, &st, "SELECT MIN(not_before) FROM items WHERE stage=? AND"
		    " state='pending' AND not_before>?", "si", stage, now) == SQLITE_ROW) {
			*next_due = sqlite3_column_int64(st, 0);
			journal_done(j, st);
		}
	}
	*nitems = n;
	return (int)rows;
}
