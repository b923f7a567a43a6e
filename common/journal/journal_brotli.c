/*
 * journal_brotli - the quality column of renders: a render's bin is
 * recorded at the fast quality (NULL), and a background recompression adds
 * a row for the same content hash with the quality it stored, so the
 * journal always says which blob, at which quality, the target should hold.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_brotli.h"
#include "common/journal_impl.h"

int
journal_record_recompress(struct journal *j, const char *ns, const char *name,
    const char *content_hash, size_t size, const char *tree_hash, const char *bin_hash,
    int quality)
{
	char obj[JOURNAL_OBJ_MAX], detail[256];

	snprintf(detail, sizeof(detail), "hash=%s bin=%s quality=%d size=%zu", content_hash,
	    bin_hash, quality, size);
	if (journal_run(j, NULL, "INSERT INTO renders (ns, name, content_hash, format, size,"
	    " tree_hash, bin_hash, quality) VALUES (?, ?, ?, 'bin', ?, ?, ?, ?)", "ssszssi", ns,
	    name, content_hash, size, tree_hash, bin_hash, (int64_t)quality) < 0)
		return -1;
	return journal_audit(j, "renderer", journal_obj(obj, sizeof(obj), "decofile", ns, name),
	    "recompress", detail);
}

int
journal_render_quality(struct journal *j, const char *ns, const char *name,
    const char *content_hash, int *quality)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT coalesce(quality, 0) FROM renders WHERE ns=? AND"
	    " name=? AND content_hash=? ORDER BY id DESC LIMIT 1", "sss", ns, name,
	    content_hash)) < 0)
		return -1;
	if (rc == SQLITE_ROW)
		*quality = sqlite3_column_int(st, 0);
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_recompress_pending(struct journal *j, int quality,
    void (*fn)(void *arg, const char *ns, const char *name, const char *content_hash,
    const char *tree_hash), void *arg)
{
	sqlite3_stmt *st;
	int rc, n = 0;

	if ((rc = journal_run(j, &st, "SELECT r.ns, r.name, r.content_hash, r.tree_hash FROM"
	    " renders r WHERE r.id = (SELECT max(id) FROM renders x WHERE x.ns = r.ns AND"
	    " x.name = r.name) AND r.format = 'bin' AND coalesce(r.quality, 0) < ?"
	    " ORDER BY r.id", "i", (int64_t)quality)) < 0)
		return -1;
	while (rc == SQLITE_ROW) {
		char ns[254], name[254], h[65], t[65];

		journal_copy_col(st, 0, ns, sizeof(ns));
		journal_copy_col(st, 1, name, sizeof(name));
		journal_copy_col(st, 2, h, sizeof(h));
		journal_copy_col(st, 3, t, sizeof(t));
		fn(arg, ns, name, h, t);
		n++;
		rc = sqlite3_step(st);
	}
	return journal_rows_done(j, st, rc, "recompress pending", n);
}
