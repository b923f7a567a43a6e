/*
 * journal_impl.h - the journal's inside, shared by common/journal*.c and
 * by unit tests that check the schema itself.  No stage or CLI file
 * includes this: they go through the functions of journal.h.
 */
#ifndef DECOD_JOURNAL_IMPL_H
#define DECOD_JOURNAL_IMPL_H

#include <sqlite3.h>

#include "common/journal.h"

#define JOURNAL_STMT_CACHE 64

/* a prepared statement kept for the next journal_run of the same SQL */
struct jstmt {
	const char *sql;	/* the caller's text (a literal), compared by address... */
	char *text;		/* ... and by content */
	sqlite3_stmt *st;
	int inuse;		/* handed out by journal_run, not yet journal_done */
};

struct journal {
	sqlite3 *db;
	char err[512];
	int depth;	/* journal_begin levels open (the first a transaction, then savepoints) */
	int floor;	/* 1 while a batch holds the transaction (journal_batch_begin) */
	struct jstmt cache[JOURNAL_STMT_CACHE];
	size_t ncache;
	int64_t busy_since;	/* when the current wait for the write lock began */
};

#define NOW "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
#define ITEM_COLS "id, stage, kind, ns, name, hash, detail, attempts, not_before," \
	" created_ms, state"

/*
 * journal_migration - the SQL that takes the schema from version v to
 * v + 1, or NULL past the last; lets a test build an old database.
 */
const char *journal_migration(int v);

/*
 * journal_migrate - bring the schema to this build's version (journal_schema.c);
 * 0, or -1 with j->err set (a newer schema than this build's is an error)
 */
int journal_migrate(struct journal *j);

/* journal_db - the raw handle, for journal*.c and schema tests only */
sqlite3 *journal_db(struct journal *j);

/* journal_jerr - j->err = "<what>: <sqlite's message>" */
void journal_jerr(struct journal *j, const char *what);

/*
 * journal_run - prepare sql (or take the statement kept for it: sql is a
 * string literal in practice, prepared once per process), bind args by
 * types ('s' text, 'i' int64, 'z' size_t), step once.  With out non-NULL
 * the statement is handed back positioned on its first row, and the
 * caller gives it back with journal_done (never sqlite3_finalize);
 * returns SQLITE_ROW or SQLITE_DONE, or -1 with j->err set.
 */
int journal_run(struct journal *j, sqlite3_stmt **out, const char *sql, const char *types,
    ...);
/* journal_done - a statement journal_run handed out: reset and kept, or finalized */
void journal_done(struct journal *j, sqlite3_stmt *st);

/* journal_copy_col - column col as text into dst ("" for NULL) */
void journal_copy_col(sqlite3_stmt *st, int col, char *dst, size_t len);

/* journal_row_to_item - a row of ITEM_COLS into it */
void journal_row_to_item(sqlite3_stmt *st, struct journal_item *it);

/*
 * journal_item_first - finish a journal_run of an ITEM_COLS query: its
 * first row into it, st given back (journal_done).  rc is journal_run's.  0 found, 1 none,
 * -1 error.
 */
int journal_item_first(struct journal *j, int rc, sqlite3_stmt *st, struct journal_item *it);

/*
 * journal_rows_done - end a loop over st's rows: st finalized; n (the rows
 * read) when the last step was SQLITE_DONE, else -1 with j->err = "<what>: ..."
 */
int journal_rows_done(struct journal *j, sqlite3_stmt *st, int rc, const char *what, int n);

#endif
