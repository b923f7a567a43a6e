/*
 * journal_versions - the rendered versions of a decofile a rollback can go
 * back to: one per content hash, the newest render of it, with the commit
 * of the fetch its tree came from.  The newest history_keep of each
 * decofile are what spool GC keeps (housekeeping.c); older ones lose their
 * blobs after the hour every blob gets, and with them the way back.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_impl.h"

/* one row per content hash of ns/name: its newest render, newest first */
#define VERSIONS_SQL \
	"SELECT r.at, r.content_hash, r.format, r.bin_hash, r.tree_hash, r.size," \
	" COALESCE((SELECT f.commit_id FROM fetches f WHERE f.ns=r.ns AND" \
	"  f.name=r.name AND f.tree_hash=r.tree_hash AND f.at<=r.at" \
	"  ORDER BY f.id DESC LIMIT 1), '')" \
	" FROM renders r WHERE r.id IN (SELECT MAX(id) FROM renders" \
	"  WHERE ns=? AND name=? GROUP BY content_hash)" \
	" ORDER BY r.id DESC LIMIT ?"

int
journal_versions_each(struct journal *j, const char *ns, const char *name, int limit,
    void (*fn)(void *arg, const struct journal_version *v), void *arg)
{
	struct journal_version v;
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, VERSIONS_SQL, "ssi", ns, name, (int64_t)limit)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		memset(&v, 0, sizeof(v));
		journal_copy_col(st, 0, v.at, sizeof(v.at));
		journal_copy_col(st, 1, v.content_hash, sizeof(v.content_hash));
		journal_copy_col(st, 2, v.format, sizeof(v.format));
		journal_copy_col(st, 3, v.bin_hash, sizeof(v.bin_hash));
		journal_copy_col(st, 4, v.tree_hash, sizeof(v.tree_hash));
		v.size = sqlite3_column_int64(st, 5);
		journal_copy_col(st, 6, v.commit, sizeof(v.commit));
		v.index = n++;
		fn(arg, &v);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE) {
		journal_jerr(j, "versions");
		n = -1;
	}
	journal_done(j, st);
	return n;
}

/* what journal_version_find collects */
struct find {
	const char *prefix;
	int steps;
	int matches;
	struct journal_version *out;
};

static void
find_row(void *arg, const struct journal_version *v)
{
	struct find *f = arg;

	if (f->prefix != NULL ? strncmp(v->content_hash, f->prefix, strlen(f->prefix)) != 0 :
	    v->index != f->steps)
		return;
	if (f->matches++ == 0)
		*f->out = *v;
}

int
journal_version_find(struct journal *j, const char *ns, const char *name,
    const char *prefix, int steps, int limit, struct journal_version *v)
{
	struct find f = { prefix, steps, 0, v };

	if (prefix != NULL && *prefix == '\0')
		return 1;
	if (journal_versions_each(j, ns, name, limit, find_row, &f) < 0)
		return -1;
	return f.matches == 0 ? 1 : f.matches > 1 ? 2 : 0;
}

int
journal_versions_referenced(struct journal *j, int keep,
    void (*fn)(void *arg, const char *hash), void *arg)
{
	static const char sql[] =
	    "SELECT content_hash, bin_hash FROM (SELECT content_hash, bin_hash,"
	    " ROW_NUMBER() OVER (PARTITION BY ns, name ORDER BY id DESC) AS rn"
	    " FROM renders WHERE id IN (SELECT MAX(id) FROM renders"
	    "  GROUP BY ns, name, content_hash)) WHERE rn<=?";
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, sql, "i", (int64_t)keep)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		for (int c = 0; c < 2; c++) {
			const unsigned char *h = sqlite3_column_text(st, c);

			if (h != NULL && *h != '\0')
				fn(arg, (const char *)h);
		}
		rc = sqlite3_step(st);
	}
	return journal_rows_done(j, st, rc, "kept versions", 0);
}
