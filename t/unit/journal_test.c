/* journal_test - migration (v1 to v2 too), items, supersede, records, reads, corrupt rows */
#include "config.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/journal.h"
#include "common/journal_impl.h"
#include "common/util.h"
#include "t/tap.h"

/* inv_row - count inventory rows and keep the last one's deletion policy */
static void
inv_row(void *arg, const struct journal_inventory_row *r)
{
	char *last = arg;

	snprintf(last, 16, "%s", r->deletion);
}

static void
count_ack(void *arg, const struct journal_ack_row *r)
{
	int *n = arg;

	*n += r->confirmed ? 100 : 1;
}

static void
count_event(void *arg, const char *at, const char *event, const char *detail)
{
	char *seen = arg;

	(void)at;
	(void)detail;
	strncat(seen, event, 200 - strlen(seen) - 2);
	strcat(seen, " ");
}

static void
count_audit(void *arg, const struct journal_audit_row *r)
{
	char *seen = arg;

	strncat(seen, r->action, 200 - strlen(seen) - 2);
	strcat(seen, " ");
}

/* test_reads - the questions stages and decoctl ask (journal_query.c), savepoints */
/* last_seen - journal_last_items' rows, "name:detail;" in order of name */
static void
last_seen(void *arg, const struct journal_item *it)
{
	char *seen = arg;
	size_t o = strlen(seen);

	snprintf(seen + o, 200 - o, "%s:%s;", it->name, it->detail);
}

static void
test_reads(const char *dir)
{
	char path[256], err[512], h[65], seen[200] = "";
	char obj[JOURNAL_OBJ_MAX];
	struct journal *j, *j2;
	struct journal_item it;
	int64_t id;
	int done, total, n = 0;

	snprintf(path, sizeof(path), "%s/reads.db", dir);
	if ((j = journal_open(path, err, sizeof(err))) == NULL) {
		ok(0, "open: %s", err);
		return;
	}
	is_int(journal_last_item(j, "renderer", "decofile", "ns", "a", &it), 1, "no item yet");
	id = journal_item_add(j, "renderer", "decofile", "ns", "a", "", "source=dir");
	journal_item_add(j, "renderer", "decofile", "ns", "a", "", "source=git");
	ok(journal_last_item(j, "renderer", "decofile", "ns", "a", &it) == 0 &&
	    it.id == id + 1 && strcmp(it.detail, "source=git") == 0, "the newest item");
	journal_item_add(j, "renderer", "decofile", "ns", "b", "", "source=inline");
	journal_item_add(j, "renderer", "template", "ns", "c", "", "source=tpl");
	journal_item_add(j, "publisher", "decofile", "ns", "d", "", "source=other");
	seen[0] = '\0';
	is_int(journal_last_items(j, "renderer", "decofile", last_seen, seen), 2,
	    "last items: one per object of that stage and kind");
	is_str(seen, "a:source=git;b:source=inline;", "... each the newest (as journal_last_item)");
	seen[0] = '\0';
	is_int(journal_pending_for(j, "publisher", "ns", "a"), 0, "... not for the publisher");
	journal_item_done(j, id + 1, "ok");
	is_int(journal_pending_for(j, NULL, "ns", "a"), 0, "nothing pending once done");
	id = journal_item_add(j, "publisher", "decofile", "ns", "a", "h1", "");
	is_int(journal_pending_unlike(j, "publisher", "ns", "a", "h1"), 0,
	    "the publisher's pending item of h1 is the one its word (contentHash h1) names");
	is_int(journal_pending_unlike(j, "publisher", "ns", "a", "h0"), 1,
	    "... beside a word of h0: a change still to pass");
	is_int(journal_pending_unlike(j, "publisher", "ns", "a", NULL), 1, "... beside no word");
	is_int(journal_pending_unlike(j, "notifier", "ns", "a", "h0"), 0, "... none for the notifier");
	journal_item_done(j, id, "ok");
	is_int(journal_pending_unlike(j, "publisher", "ns", "a", "h0"), 0, "... none once done");

	is_int(journal_last_fetch(j, "ns", "a", h), 1, "no fetch yet");
	journal_record_fetch(j, "ns", "a", "dir", "", "t1");
	journal_record_fetch(j, "ns", "a", "dir", "", "t2");
	ok(journal_last_fetch(j, "ns", "a", h) == 0 && strcmp(h, "t2") == 0, "newest fetch");
	journal_record_render(j, "ns", "a", "c1", "bin", 10, "t2", "b1");
	journal_record_render(j, "ns", "a", "c2", "json", 10, "t2", "");
	ok(journal_render_bin(j, "ns", "a", "c1", h) == 0 && strcmp(h, "b1") == 0,
	    "the bin blob of a content hash");
	is_int(journal_render_bin(j, "ns", "a", "c2", h), 1, "a json render has none");

	journal_record_ack(j, "ns", "a", "r1", "c1", 1, "200");
	journal_record_ack(j, "ns", "a", "r2", "c1", 1, "500");
	journal_record_ack(j, "ns", "a", "r2", "c1", 2, "ok");
	journal_record_ack(j, "ns", "a", "r3", "c0", 1, "ok");
	ok(journal_acks_count(j, "ns", "a", "c1", &done, &total) == 0 && done == 2 &&
	    total == 3, "acks: 2 confirmed of 3 replicas heard from");
	is_int(journal_acks_each(j, "ns", "a", count_ack, &n), 3, "one row per replica");
	is_int(n, 300, "... each its newest answer (r2's ok, not its 500)");

	is_int(journal_history_each(j, "ns", "a", 50, count_event, seen), 6,
	    "history: 2 fetches, 2 renders, acks summed per content hash (2)");
	ok(strstr(seen, "fetch") != NULL && strstr(seen, "render") != NULL &&
	    strstr(seen, "acks") != NULL, "... each kind of event named (%s)", seen);
	seen[0] = '\0';
	is_str(journal_obj(obj, sizeof(obj), "decofiles", "sites-ç", "Página Inicial"),
	    "decofile/sites-ç/Página Inicial", "journal_obj: a plural kind is spelled singular");
	is_str(journal_obj(obj, sizeof(obj), "tenant", "ns", "t"), "tenant/ns/t",
	    "... a singular one as it is");
	journal_audit(j, "publisher", "decofile/ns/aud", "publish", "");
	journal_audit(j, "publisher", "decofile/ns/b", "publish", "");
	journal_audit(j, "publisher", "decofile/ns/aud", "drift-repaired", "");
	is_int(journal_audit_each(j, "", "decofile/ns/aud", 10, count_audit, seen), 2,
	    "audit of one object");
	is_str(seen, "publish drift-repaired ", "... oldest first");
	is_int(journal_audit_each(j, "", NULL, 1, count_audit, seen), 1, "limit 1");
	seen[0] = '\0';
	is_int(journal_audit_each(j, "", "decofile/ns/a", 50, count_audit, seen), 4,
	    "every recorded fetch and render of ns/a left an audit row");
	is_str(seen, "fetch fetch render render ", "... named by its step, in order");
	seen[0] = '\0';
	ok(journal_record_condition(j, "decofiles", "ns", "a", "Syncing", "False",
	    "ValidationError", "Footer.json:1:13") == 0 &&
	    journal_audit_each(j, "", "decofile/ns/a", 50, count_audit, seen) == 5 &&
	    strstr(seen, "condition") != NULL, "a condition change leaves one too (%s)", seen);

	/* savepoints: one part of a batch fails, the rest commits */
	ok(journal_begin(j) == 0 && journal_savepoint(j, "one") == 0, "savepoint inside a txn");
	journal_record_fetch(j, "ns", "sp", "dir", "", "kept");
	ok(journal_savepoint_release(j, "one") == 0, "released");
	journal_savepoint(j, "two");
	journal_record_fetch(j, "ns", "sp2", "dir", "", "undone");
	journal_savepoint_rollback(j, "two");
	ok(journal_commit(j) == 0, "the batch commits");
	ok(journal_last_fetch(j, "ns", "sp", h) == 0 && strcmp(h, "kept") == 0,
	    "the released part is there");
	is_int(journal_last_fetch(j, "ns", "sp2", h), 1, "the rolled-back part is not");
	ok(journal_savepoint(j, "bad name;") == -1, "a savepoint name is checked");

	/* a batch: begins inside it nest, a rollback undoes only its own level */
	if ((j2 = journal_open(path, err, sizeof(err))) == NULL) {
		ok(0, "open a second connection: %s", err);
		journal_close(j);
		return;
	}
	ok(journal_batch_begin(j) == 0, "batch begins");
	ok(journal_begin(j) == 0, "begin inside a batch (a savepoint)");
	journal_record_fetch(j, "ns", "b1", "dir", "", "first");
	ok(journal_commit(j) == 0, "its commit releases into the batch");
	ok(journal_begin(j) == 0, "a second one");
	journal_record_fetch(j, "ns", "b2", "dir", "", "failed");
	journal_rollback(j);
	journal_rollback(j);	/* a caller's second rollback must not reach the batch */
	ok(journal_commit(j) == -1, "a commit with no level of the caller's open fails");
	ok(journal_begin(j) == 0 && journal_begin(j) == 0, "two levels deep");
	journal_record_fetch(j, "ns", "b3", "dir", "", "deep");
	ok(journal_commit(j) == 0 && journal_commit(j) == 0, "both released");
	is_int(journal_last_fetch(j2, "ns", "b1", h), 1, "nothing seen outside before the commit");
	ok(journal_batch_commit(j) == 0, "the batch commits once");
	ok(journal_last_fetch(j2, "ns", "b1", h) == 0 && strcmp(h, "first") == 0 &&
	    journal_last_fetch(j2, "ns", "b3", h) == 0 && strcmp(h, "deep") == 0,
	    "the released items are there, seen by another connection");
	is_int(journal_last_fetch(j2, "ns", "b2", h), 1, "the rolled-back one is not");
	ok(journal_batch_begin(j) == 0, "another batch");
	journal_record_fetch(j, "ns", "b4", "dir", "", "lost");
	journal_batch_rollback(j);
	is_int(journal_last_fetch(j, "ns", "b4", h), 1, "a batch rolled back leaves nothing");
	ok(journal_begin(j) == 0 && journal_commit(j) == 0, "plain transactions work after");
	journal_close(j2);
	journal_close(j);
}

/*
 * test_v1 - a journal written by a version-1 build: inventory without the
 * deletion column, the policy only in the audit log.  Opening it migrates
 * to version 2 and fills the column from the audit log.
 */
static void
test_v1(const char *dir)
{
	char path[256], err[512], last[16] = "?";
	struct journal *j;
	sqlite3 *db;
	sqlite3_stmt *st;

	snprintf(path, sizeof(path), "%s/v1.db", dir);
	ok(sqlite3_open(path, &db) == SQLITE_OK &&
	    sqlite3_exec(db, journal_migration(0), NULL, NULL, NULL) == SQLITE_OK &&
	    sqlite3_exec(db, "PRAGMA user_version = 1;"
	    "INSERT INTO inventory (ns, name, target, location, content_hash) VALUES"
	    " ('ns', 'kept', 'file', 'file:///p/ns/kept/decofile.json', 'h1'),"
	    " ('ns', 'gone', 'file', 'file:///p/ns/gone/decofile.json', 'h2'),"
	    " ('ns', 'quiet', 'file', 'file:///p/ns/quiet/decofile.json', 'h3');"
	    "INSERT INTO audit (stage, object, action, detail) VALUES"
	    " ('publisher', 'decofile/ns/kept', 'publish', 'hash=h1 deletion=delete'),"
	    " ('publisher', 'decofile/ns/kept', 'deletion-policy', 'deletion=detach'),"
	    " ('publisher', 'decofile/ns/gone', 'publish', 'hash=h2 deletion=delete'),"
	    " ('renderer', 'decofile/ns/quiet', 'publish', 'deletion=detach'),"
	    " ('notifier', 'decofiles/ns/kept', 'notify', 'confirmed=3'),"
	    " ('renderer', 'Página Inicial', 'refused', 'Footer.json:1:13');"
	    "INSERT INTO items (stage, kind, ns, name) VALUES"
	    " ('renderer', 'decofile', 'sites-ç', 'Página Inicial');",
	    NULL, NULL, NULL) == SQLITE_OK, "a version-1 journal, as an old build left it");
	sqlite3_close(db);
	j = journal_open(path, err, sizeof(err));
	ok(j != NULL, "it opens: %s", j ? "migrated" : err);
	if (j == NULL)
		return;
	sqlite3_prepare_v2(journal_db(j), "PRAGMA user_version", -1, &st, NULL);
	sqlite3_step(st);
	is_int(sqlite3_column_int(st, 0), JOURNAL_SCHEMA_VERSION, "migrated to the newest version");
	sqlite3_finalize(st);
	{
		char seen[200] = "";

		is_int(journal_audit_each(j, "", "decofile/ns/kept", 10, count_audit, seen), 3,
		    "the notifier's old spelling (decofiles/) is migrated to decofile/");
		is_str(seen, "publish deletion-policy notify ", "... in order");
		seen[0] = '\0';
		is_int(journal_audit_each(j, "", "decofile/sites-ç/Página Inicial", 10,
		    count_audit, seen), 1, "the renderer's bare name gets its item's namespace");
	}
	is_int(journal_inventory_deletion(j, "ns", "kept"), 1,
	    "the newest policy in the audit log (detach) is in the column");
	is_int(journal_inventory_deletion(j, "ns", "gone"), 0, "delete, likewise");
	is_int(journal_inventory_deletion(j, "ns", "quiet"), -1,
	    "no publisher row: unknown, not guessed from another stage's");
	is_int(journal_inventory_each(j, "file", "ns", "kept", inv_row, last), 1,
	    "the migrated row reads back");
	is_str(last, "detach", "... with its policy");
	ok(journal_inventory_set_deletion(j, "ns", "quiet", "delete") == 0 &&
	    journal_inventory_deletion(j, "ns", "quiet") == 0, "a policy can be recorded");
	ok(journal_inventory_set_deletion(j, "ns", "quiet", "maybe") == -1,
	    "only delete or detach");
	ok(journal_inventory_put(j, "ns", "kept", "file", "file:///p/ns/kept/decofile.json",
	    "h9") == 0 && journal_inventory_deletion(j, "ns", "kept") == 1,
	    "a new publish keeps the recorded policy");
	journal_close(j);
}

/*
 * test_open_race - stages started at once as their own units each open the
 * same new journal: every one must get it (the WAL switch answers BUSY at
 * once, without the busy handler, while another process holds the lock)
 */
static void
test_open_race(const char *dir)
{
	enum { KIDS = 8, ROUNDS = 20 };
	int failed = 0;

	for (int r = 0; r < ROUNDS; r++) {
		char path[256];
		int go[2];
		pid_t kids[KIDS];

		snprintf(path, sizeof(path), "%s/race%d.db", dir, r);
		if (pipe(go) < 0)
			break;
		for (int k = 0; k < KIDS; k++) {
			if ((kids[k] = fork()) == 0) {
				char err[512], c;
				struct journal *jk;

				close(go[1]);
				(void)read(go[0], &c, 1);	/* all start together */
				jk = journal_open(path, err, sizeof(err));
				if (jk == NULL)
					fprintf(stderr, "# %s\n", err);
				_exit(jk == NULL);
			}
		}
		close(go[0]);
		close(go[1]);	/* EOF: go */
		for (int k = 0; k < KIDS; k++) {
			int ws;

			if (kids[k] > 0 && (waitpid(kids[k], &ws, 0) < 0 || !WIFEXITED(ws) ||
			    WEXITSTATUS(ws) != 0))
				failed++;
		}
	}
	is_int(failed, 0, "8 processes opening one new journal at once, 20 times: all get it");
}

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
	test_open_race(dir);
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
	{
		size_t got = 0;
		int rows = journal_items_due_skip(j2, "renderer", 1, &id1, 1, &items, &got,
		    NULL);

		ok(rows == 2 && got == 1 && items[0].id == id2,
		    "an item in flight is left out, the next one taken in its place");
		free(items);
		rows = journal_items_due_skip(j2, "renderer", 1, NULL, 0, &items, &got, NULL);
		ok(rows == 1 && got == 1 && items[0].id == id1, "... and without it, the oldest");
		free(items);
	}
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
	test_v1(dir);
	test_reads(dir);
	rm_rf(dir);
	return done_testing();
}
