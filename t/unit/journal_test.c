/* journal_test - migration, items lifecycle, supersede, records, corrupt rows */
#include "config.h"

#include <stdlib.h>

#include <sqlite3.h>

#include "common/journal.h"
#include "common/util.h"
#include "t/tap.h"

int
main(void)
{
	char dir[] = "/tmp/journal_test.XXXXXX", path[256], err[512], h[65], fmt[8], bin[65];
	struct journal *j, *j2;
	struct journal_item *items, it;
	int64_t id1, id2, id3, next, ts;
	int n;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/journal.db", dir);
	j = journal_open(path, err, sizeof(err));
	ok(j != NULL, "open creates the schema");
	{
		sqlite3_stmt *st;

		sqlite3_prepare_v2(journal_db(j), "PRAGMA user_version", -1, &st, NULL);
		sqlite3_step(st);
		is_int(sqlite3_column_int(st, 0), JOURNAL_SCHEMA_VERSION, "user_version set");
		sqlite3_finalize(st);
	}
	j2 = journal_open(path, err, sizeof(err));
	ok(j2 != NULL, "a second process opens the same journal");

	ok(journal_begin(j) == 0, "begin");
	id1 = journal_item_add(j, "renderer", "decofile", "ns", "a", "", "source=dir");
	id2 = journal_item_add(j, "renderer", "decofile", "ns", "b", "", "");
	ok(journal_commit(j) == 0 && id1 > 0 && id2 > id1, "two items added");
	n = journal_items_due(j2, "renderer", 10, &items, &next);
	is_int(n, 2, "the other handle sees both due");
	ok(n == 2 && items[0].id == id1 && strcmp(items[0].detail, "source=dir") == 0,
	    "oldest first, fields kept");
	free(items);
	id3 = journal_item_add(j, "renderer", "decofile", "ns", "a", "", "newer");
	ok(journal_item_get(j, id1, &it) == 0 && it.state == ITEM_SUPERSEDED,
	    "a newer item for the same object supersedes the pending one");
	ok(journal_item_retry(j, id2, 60000, "peer down") == 0, "retry");
	n = journal_items_due(j, "renderer", 10, &items, &next);
	ok(n == 1 && items[0].id == id3 && next > wall_ms(), "retried item not due yet");
	free(items);
	ok(journal_item_get(j, id2, &it) == 0 && it.attempts == 1, "attempt counted");
	ok(journal_item_done(j, id3, "ok") == 0, "done");
	ok(journal_item_fail(j, id2, "bad for good") == 0, "failed");
	n = journal_items_due(j, "renderer", 10, &items, &next);
	is_int(n, 0, "nothing left");
	free(items);
	is_int(journal_item_get(j, 99999, &it), 1, "absent item");

	/* rollback: nothing of an aborted transaction remains */
	journal_begin(j);
	journal_item_add(j, "publisher", "decofile", "ns", "x", "", "");
	journal_rollback(j);
	n = journal_items_due(j, "publisher", 10, &items, NULL);
	is_int(n, 0, "rolled back item is gone");
	free(items);

	ok(journal_record_render(j, "ns", "a", "aaaa", "bin", 10, "tree", "binh") == 0, "render");
	ok(journal_last_render(j, "ns", "a", h, fmt, bin) == 0 && strcmp(h, "aaaa") == 0 &&
	    strcmp(fmt, "bin") == 0 && strcmp(bin, "binh") == 0, "last render");
	ok(journal_record_render(j, "ns", "a", "x", "zip", 10, "", "") == -1 &&
	    strstr(journal_error(j), "CHECK") != NULL, "a bad format is refused by the schema");
	ok(journal_record_publish(j, "ns", "a", "file", "file:///x", "aaaa", 17) == 0, "publish");
	ok(journal_last_publish(j, "ns", "a", "file", h, &ts) == 0 && ts == 17, "last publish");
	is_int(journal_last_publish(j, "ns", "zz", "file", h, &ts), 1, "no publish");
	ok(journal_record_condition(j, "decofiles", "ns", "a", "Ready", "True", "Published",
	    "m") == 0, "condition");
	ok(journal_record_ack(j, "ns", "a", "http://r1", "aaaa", 17, "confirmed") == 0, "ack");
	ok(journal_inventory_put(j, "ns", "a", "file", "file:///x", "aaaa") == 0 &&
	    journal_inventory_put(j, "ns", "a", "file", "file:///x", "bbbb") == 0, "inventory upsert");
	ok(journal_record_drift(j, "ns", "a", "file:///x", "changed") == 0, "drift");
	ok(journal_audit(j, "test", "ns/a", "start", "") == 0, "audit");
	{
		char v[64];

		ok(journal_detail_get("format=bin bin=abc commit=123", "bin", v, sizeof(v)) == 0 &&
		    strcmp(v, "abc") == 0, "detail get");
		ok(journal_detail_get("format=bin", "commit", v, sizeof(v)) == -1, "detail absent");
	}
	ok(journal_prune(j, 3600000) == 0, "prune keeps recent rows");

	/* a corrupt row: an item whose state the schema forbids cannot be written */
	ok(sqlite3_exec(journal_db(j), "UPDATE items SET state='bogus'", NULL, NULL, NULL) !=
	    SQLITE_OK, "an invalid item state is refused by the schema");
	journal_close(j2);
	journal_close(j);

	/* a newer schema than this build knows is refused with a clear error */
	{
		sqlite3 *db;

		sqlite3_open(path, &db);
		sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL);
		sqlite3_close(db);
		j = journal_open(path, err, sizeof(err));
		ok(j == NULL && strstr(err, "newer than this build") != NULL,
		    "newer schema refused: %s", err);
	}
	/* a file that is not a database */
	snprintf(path, sizeof(path), "%s/garbage.db", dir);
	write_file_atomic(path, "this is not sqlite at all, not even close.......", 48, 0600);
	j = journal_open(path, err, sizeof(err));
	ok(j == NULL && strstr(err, "garbage.db") != NULL, "corrupt file refused: %s", err);
	rm_rf(dir);
	return done_testing();
}
