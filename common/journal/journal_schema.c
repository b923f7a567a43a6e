/*
 * journal_schema - the journal's tables as a list of migrations, each
 * taking PRAGMA user_version one step forward, and the code that runs
 * them in one transaction.  A schema newer than this build knows is
 * refused rather than guessed at.  A new table or column is one more
 * entry at the end of migrations[].
 */
#include "config.h"

#include <stdio.h>

#include <sqlite3.h>

#include "common/journal.h"
#include "common/journal_impl.h"

/* migrations[v] takes the schema from version v to v + 1 */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE items ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  stage TEXT NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  ns TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  hash TEXT NOT NULL DEFAULT '',"
	"  detail TEXT NOT NULL DEFAULT '',"
	"  state TEXT NOT NULL DEFAULT 'pending'"
	"    CHECK (state IN ('pending','done','failed','superseded')),"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  not_before INTEGER NOT NULL DEFAULT 0,"
	"  result TEXT NOT NULL DEFAULT '',"
	"  created_ms INTEGER NOT NULL"
	"    DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),"
	"  created_at TEXT NOT NULL DEFAULT (" NOW "),"
	"  updated_at TEXT NOT NULL DEFAULT (" NOW "));"
	"CREATE INDEX items_due ON items (stage, state, not_before);"
	"CREATE INDEX items_object ON items (ns, name);"
	"CREATE TABLE fetches ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  source TEXT NOT NULL, commit_id TEXT NOT NULL DEFAULT '',"
	"  tree_hash TEXT NOT NULL);"
	"CREATE INDEX fetches_object ON fetches (ns, name, id);"
	"CREATE TABLE renders ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  content_hash TEXT NOT NULL, format TEXT NOT NULL CHECK (format IN ('json','bin')),"
	"  size INTEGER NOT NULL, tree_hash TEXT NOT NULL DEFAULT '',"
	"  bin_hash TEXT NOT NULL DEFAULT '');"
	"CREATE INDEX renders_object ON renders (ns, name, id);"
	"CREATE TABLE publishes ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  target TEXT NOT NULL, location TEXT NOT NULL,"
	"  content_hash TEXT NOT NULL, timestamp INTEGER NOT NULL);"
	"CREATE INDEX publishes_object ON publishes (ns, name, target, id);"
	"CREATE TABLE inventory ("
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  target TEXT NOT NULL, location TEXT NOT NULL,"
	"  content_hash TEXT NOT NULL,"
	"  updated_at TEXT NOT NULL DEFAULT (" NOW "),"
	"  PRIMARY KEY (ns, name, location));"
	"CREATE TABLE conditions ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  kind TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  type TEXT NOT NULL, status TEXT NOT NULL,"
	"  reason TEXT NOT NULL, message TEXT NOT NULL);"
	"CREATE INDEX conditions_object ON conditions (ns, name, id);"
	"CREATE TABLE acks ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  replica TEXT NOT NULL, content_hash TEXT NOT NULL,"
	"  timestamp INTEGER NOT NULL, result TEXT NOT NULL);"
	"CREATE INDEX acks_object ON acks (ns, name, replica, id);"
	"CREATE TABLE drift ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  location TEXT NOT NULL, detail TEXT NOT NULL);"
	"CREATE TABLE audit ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  stage TEXT NOT NULL, object TEXT NOT NULL,"
	"  action TEXT NOT NULL, detail TEXT NOT NULL);"
	"CREATE INDEX audit_at ON audit (at);",
	/*
	 * 1 -> 2: the deletion policy of each inventoried object gets its own
	 * column ('' = unknown), filled from the last policy the publisher
	 * wrote to the audit log, which retention would prune.
	 */
	"ALTER TABLE inventory ADD COLUMN deletion TEXT NOT NULL DEFAULT ''"
	"  CHECK (deletion IN ('', 'delete', 'detach'));"
	"UPDATE inventory SET deletion = COALESCE((SELECT CASE"
	"  WHEN a.detail GLOB '*deletion=detach*' THEN 'detach'"
	"  WHEN a.detail GLOB '*deletion=delete*' THEN 'delete' ELSE '' END"
	"  FROM audit a WHERE a.stage='publisher'"
	"  AND a.object='decofile/' || inventory.ns || '/' || inventory.name"
	"  AND a.action IN ('publish', 'deletion-policy') ORDER BY a.id DESC LIMIT 1), '');",
	/*
	 * 2 -> 3: one spelling of an audit row's object (journal_obj): the
	 * notifier wrote "decofiles/NS/NAME" and the renderer's refusals the
	 * bare name (its ns is the renderer item's); an index for the
	 * per-object filter.
	 */
	"UPDATE audit SET object = 'decofile/' || substr(object, 11)"
	"  WHERE object GLOB 'decofiles/*';"
	"UPDATE audit SET object = 'decofile/' || (SELECT i.ns FROM items i"
	"  WHERE i.stage = 'renderer' AND i.name = audit.object ORDER BY i.id DESC LIMIT 1)"
	"  || '/' || object WHERE stage = 'renderer' AND object NOT GLOB '*/*'"
	"  AND EXISTS (SELECT 1 FROM items i WHERE i.stage = 'renderer'"
	"  AND i.name = audit.object);"
	"CREATE INDEX audit_object ON audit (object, id);",
	/*
	 * 3 -> 4: every DecofileTemplate generation's tree (history, kept
	 * while a decofile still uses it), and what each decofile's last
	 * valid render used (state: one row per template it resolved), so a
	 * site pinned to an older generation still renders.  Template fetches
	 * leave the fetches table, where a Decofile of the same name would
	 * shadow them.
	 */
	"CREATE TABLE template_trees ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  generation INTEGER NOT NULL, commit_id TEXT NOT NULL DEFAULT '',"
	"  tree_hash TEXT NOT NULL);"
	"CREATE INDEX template_trees_object ON template_trees (ns, name, id);"
	"CREATE TABLE template_uses ("
	"  ns TEXT NOT NULL, name TEXT NOT NULL, template TEXT NOT NULL,"
	"  position INTEGER NOT NULL, generation INTEGER NOT NULL,"
	"  tree_hash TEXT NOT NULL,"
	"  at TEXT NOT NULL DEFAULT (" NOW "),"
	"  PRIMARY KEY (ns, name, template));"
	"CREATE INDEX template_uses_template ON template_uses (ns, template);",
	/*
	 * 4 -> 5: a DecofileTemplate generation's rollout in waves (state: the
	 * newest row per template is the one in force) and each Auto site's
	 * wave and progress, so a restarted renderer picks the rollout up
	 * where it was.  Items the rollout driver enqueues have kind
	 * 'rollout' and are claimed after every other kind (journal.c).
	 */
	"CREATE TABLE template_rollouts ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  ns TEXT NOT NULL, name TEXT NOT NULL,"
	"  generation INTEGER NOT NULL, tree_hash TEXT NOT NULL,"
	"  prev_generation INTEGER NOT NULL DEFAULT 0, prev_hash TEXT NOT NULL DEFAULT '',"
	"  waves INTEGER NOT NULL, wave INTEGER NOT NULL DEFAULT 0,"
	"  pause_ms INTEGER NOT NULL DEFAULT 0, max_failed INTEGER NOT NULL DEFAULT 0,"
	"  max_failed_pct INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL DEFAULT 'running' CHECK (state IN"
	"    ('running','halted','done','rolledback','superseded')),"
	"  reason TEXT NOT NULL DEFAULT '',"
	"  confirmed_ms INTEGER NOT NULL DEFAULT 0,"
	"  at TEXT NOT NULL DEFAULT (" NOW "), updated_at TEXT NOT NULL DEFAULT (" NOW "));"
	"CREATE INDEX template_rollouts_object ON template_rollouts (ns, name, id);"
	"CREATE TABLE template_rollout_sites ("
	"  rollout INTEGER NOT NULL, site TEXT NOT NULL, wave INTEGER NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting','queued',"
	"    'rendered','confirmed','failed','revert','reverting','reverted')),"
	"  mark INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',"
	"  queued_ms INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (rollout, site));"
	"CREATE INDEX template_rollout_sites_site ON template_rollout_sites (site);",
	/*
	 * 5 -> 6: the brotli quality of a render's bin blob.  NULL is the
	 * renderer's fast setting (brotli_quality) at the time; a background
	 * recompression adds a row for the same content hash with the slower
	 * quality it stored (journal_brotli.c).
	 */
	"ALTER TABLE renders ADD COLUMN quality INTEGER;",
	/*
	 * 6 -> 7: a rollout's wave timeout (spec.rollout.waveTimeout, 0 none;
	 * a rollout recorded before has the default, 10m) and when each site
	 * rendered the new generation, from which its notifier verdict is
	 * awaited at most that long.  A site already waiting for its verdict
	 * starts the clock at the upgrade.
	 */
	"ALTER TABLE template_rollouts ADD COLUMN wave_timeout_ms INTEGER NOT NULL"
	"  DEFAULT 600000;"
	"ALTER TABLE template_rollout_sites ADD COLUMN rendered_ms INTEGER NOT NULL DEFAULT 0;"
	"UPDATE template_rollout_sites SET rendered_ms ="
	"  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) WHERE state='rendered';",
	/*
	 * 7 -> 8: a stage's due items in the order it takes them, so that
	 * journal_items_due reads the first LIMIT rows of this index instead of
	 * sorting every pending item of the stage on each pass (10,000 pending
	 * publisher items, one pass per finished ConfigMap write).
	 */
	"CREATE INDEX items_order ON items (stage, state, kind='rollout', id);",
};

#define NMIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

const char *
journal_migration(int v)
{
	return v >= 0 && v < NMIGRATIONS ? migrations[v] : NULL;
}

int
journal_migrate(struct journal *j)
{
	sqlite3_stmt *st;
	int version;
	char *msg = NULL;

	if (journal_run(j, &st, "PRAGMA user_version", "") < 0)
		return -1;
	version = sqlite3_column_int(st, 0);
	journal_done(j, st);
	if (version > NMIGRATIONS) {
		snprintf(j->err, sizeof(j->err),
		    "journal schema version %d is newer than this build's %d", version,
		    NMIGRATIONS);
		return -1;
	}
	if (version == NMIGRATIONS)
		return 0;
	if (journal_begin(j) < 0)
		return -1;
	/* another process may have migrated while we waited for the lock */
	if (journal_run(j, &st, "PRAGMA user_version", "") < 0)
		goto fail;
	version = sqlite3_column_int(st, 0);
	journal_done(j, st);
	for (int v = version; v < NMIGRATIONS; v++) {
		char pragma[64];

		if (sqlite3_exec(j->db, migrations[v], NULL, NULL, &msg) != SQLITE_OK) {
			snprintf(j->err, sizeof(j->err), "migration to version %d: %s", v + 1,
			    msg ? msg : "?");
			sqlite3_free(msg);
			goto fail;
		}
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
		if (sqlite3_exec(j->db, pragma, NULL, NULL, NULL) != SQLITE_OK) {
			journal_jerr(j, "user_version");
			goto fail;
		}
	}
	return journal_commit(j);
fail:
	journal_rollback(j);
	return -1;
}

