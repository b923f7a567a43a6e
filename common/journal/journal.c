/*
 * journal - the shared sqlite database (see journal.h).  Tables are plain,
 * named for what they hold, with RFC 3339 times in an `at` column, so that
 * `sqlite3 journal.db` reads like a log.  The schema and its migrations
 * are in journal_schema.c, the work items' table in journal_items.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/journal.h"
#include "common/journal_impl.h"
#include "common/metrics_series.h"
#include "common/util.h"


void
journal_jerr(struct journal *j, const char *what)
{
	snprintf(j->err, sizeof(j->err), "%s: %s", what, sqlite3_errmsg(j->db));
}

/*
 * stmt_get - the statement for sql: the one kept for it when it is free,
 * else a new one, kept when there is room.  Profiles of the stages showed
 * sqlite3_prepare_v2 (the parser) at a fifth of the publisher's CPU: the
 * same few dozen statements prepared again for every item.
 */
static sqlite3_stmt *
stmt_get(struct journal *j, const char *sql)
{
	struct jstmt *c = NULL;
	sqlite3_stmt *st;

	for (size_t i = 0; i < j->ncache; i++)
		if (j->cache[i].sql == sql && strcmp(j->cache[i].text, sql) == 0) {
			c = &j->cache[i];
			break;
		}
	if (c != NULL && !c->inuse) {
		c->inuse = 1;
		return c->st;
	}
	if (sqlite3_prepare_v3(j->db, sql, -1, c == NULL &&
	    j->ncache < JOURNAL_STMT_CACHE ? SQLITE_PREPARE_PERSISTENT : 0, &st,
	    NULL) != SQLITE_OK) {
		journal_jerr(j, "prepare");
		return NULL;
	}
	if (c == NULL && j->ncache < JOURNAL_STMT_CACHE) {
		c = &j->cache[j->ncache++];
		c->sql = sql;
		c->text = xstrdup(sql);
		c->st = st;
		c->inuse = 1;
	}
	return st;	/* in use already (a nested run of the same SQL), or no room */
}

void
journal_done(struct journal *j, sqlite3_stmt *st)
{
	for (size_t i = 0; i < j->ncache; i++)
		if (j->cache[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			j->cache[i].inuse = 0;
			return;
		}
	sqlite3_finalize(st);
}

int
journal_run(struct journal *j, sqlite3_stmt **out, const char *sql, const char *types, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc;

	if ((st = stmt_get(j, sql)) == NULL)
		return -1;
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 's') {
			const char *s = va_arg(ap, const char *);

			sqlite3_bind_text(st, i + 1, s ? s : "", -1, SQLITE_TRANSIENT);
		} else if (types[i] == 'i') {
			sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
		} else if (types[i] == 'z') {
			sqlite3_bind_int64(st, i + 1, (int64_t)va_arg(ap, size_t));
		}
	}
	va_end(ap);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		journal_jerr(j, "step");
		journal_done(j, st);
		return -1;
	}
	if (out != NULL)
		*out = st;
	else
		journal_done(j, st);
	return rc;
}

/*
 * busy_wait - another process holds the write lock: wait for it, up to
 * BUSY_MAX_MS in all.  sqlite's own timeout sleeps 1, 2, 5 ... up to
 * 100 ms a try, and four stages that each commit hundreds of times a
 * second meet often: a writer slept long after the lock was free (a cold
 * start's publisher idled while its items waited).  Here the naps start
 * at 50 us and stop growing at 2 ms.
 */
#define BUSY_MAX_MS 10000
static int
busy_wait(void *arg, int count)
{
	struct journal *j = arg;
	int64_t now = now_ms();
	useconds_t us;

	if (count == 0)
		j->busy_since = now;
	else if (now - j->busy_since >= BUSY_MAX_MS)
		return 0;
	us = count < 6 ? 50u << count : 2000u;
	usleep(us);
	return 1;
}

/*
 * journal_private - create the journal 0600 before sqlite does (it would
 * use 0644 less the umask; its -wal and -shm copy the database's mode),
 * and take back group and other access from an existing one we own, so
 * the audit stays private whatever the state folder's mode.
 */
static int
journal_private(const char *path, char *err, size_t errlen)
{
	static const char *const sfx[] = { "", "-wal", "-shm" };
	struct stat sb;
	char p[4096];
	int fd;

	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		if (errno == EACCES || errno == EPERM || errno == EROFS) {
			snprintf(err, errlen, "journal %s: %s", path, strerror(errno));
			return -1;
		}
		return 0;	/* let sqlite say what is wrong */
	}
	close(fd);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		if (stat(p, &sb) == 0 && sb.st_uid == geteuid() && (sb.st_mode & 077) != 0)
			(void)chmod(p, sb.st_mode & 0700);
	}
	return 0;
}

struct journal *
journal_open(const char *path, char *err, size_t errlen)
{
	struct journal *j = xcalloc(1, sizeof(*j));
	char *msg = NULL;

	if (journal_private(path, err, errlen) < 0)
		goto fail;
	if (sqlite3_open_v2(path, &j->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "journal %s: %s", path,
		    j->db ? sqlite3_errmsg(j->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_handler(j->db, busy_wait, j);
	/*
	 * Two stages started at once on a new journal (systemd units): the
	 * switch to WAL and its first recovery answer SQLITE_BUSY at once,
	 * without the busy handler, while the other process holds the lock.
	 * Try again for as long as the busy timeout would have waited.
	 *
	 * temp_store=MEMORY: a batch's savepoints (one per item) keep their
	 * sub-journal in memory.  On disk it spilled past 64 KiB once and then
	 * stayed a file: ~34 writes per item in the publisher's batches.
	 */
	for (int64_t until = now_ms() + 10000;; ) {
		int rc = sqlite3_exec(j->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
		    "PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;", NULL, NULL, &msg);

		if (rc == SQLITE_OK && journal_migrate(j) == 0)
			break;
		if ((sqlite3_errcode(j->db) & 0xff) == SQLITE_BUSY && now_ms() < until) {
			sqlite3_free(msg);
			msg = NULL;
			(void)sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
			usleep(20000);
			continue;
		}
		snprintf(err, errlen, "journal %s: %s", path, rc != SQLITE_OK ?
		    (msg ? msg : sqlite3_errmsg(j->db)) : j->err);
		sqlite3_free(msg);
		goto fail;
	}
	return j;
fail:
	if (j->db)
		sqlite3_close(j->db);
	free(j);
	return NULL;
}

void
journal_close(struct journal *j)
{
	if (j == NULL)
		return;
	for (size_t i = 0; i < j->ncache; i++) {
		sqlite3_finalize(j->cache[i].st);
		free(j->cache[i].text);
	}
	sqlite3_close(j->db);
	free(j);
}

sqlite3 *
journal_db(struct journal *j)
{
	return j->db;
}

const char *
journal_error(struct journal *j)
{
	return j->err;
}

int
journal_begin(struct journal *j)
{
	const char *sql = j->depth == 0 ? "BEGIN IMMEDIATE" : "SAVEPOINT nest";

	if (sqlite3_exec(j->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		journal_jerr(j, "begin");
		return -1;
	}
	j->depth++;
	return 0;
}

int
journal_commit(struct journal *j)
{
	if (j->depth <= j->floor) {
		snprintf(j->err, sizeof(j->err), "commit: no transaction of the caller's open");
		return -1;
	}
	if (j->depth > 1) {
		/* inside a batch: the work joins the batch's transaction */
		if (sqlite3_exec(j->db, "RELEASE nest", NULL, NULL, NULL) != SQLITE_OK) {
			journal_jerr(j, "commit");
			journal_rollback(j);
			return -1;
		}
		j->depth--;
		return 0;
	}
	if (sqlite3_exec(j->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		journal_jerr(j, "commit");
		journal_rollback(j);
		return -1;
	}
	j->depth = 0;
	return 0;
}

void
journal_rollback(struct journal *j)
{
	if (j->depth == 0) {
		if (!sqlite3_get_autocommit(j->db))
			sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
		return;
	}
	if (j->depth <= j->floor)
		return;		/* the batch's own: only journal_batch_rollback ends it */
	if (j->depth > 1) {
		sqlite3_exec(j->db, "ROLLBACK TO nest", NULL, NULL, NULL);
		sqlite3_exec(j->db, "RELEASE nest", NULL, NULL, NULL);
	} else if (!sqlite3_get_autocommit(j->db)) {
		sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
	}
	j->depth--;
}

int
journal_batch_begin(struct journal *j)
{
	if (j->depth != 0) {
		snprintf(j->err, sizeof(j->err), "batch begin: a transaction is open");
		return -1;
	}
	if (journal_begin(j) < 0)
		return -1;
	j->floor = 1;
	return 0;
}

int
journal_batch_commit(struct journal *j)
{
	while (j->depth > 1)	/* a level left open inside the batch is undone */
		journal_rollback(j);
	j->floor = 0;
	return journal_commit(j);
}

void
journal_batch_rollback(struct journal *j)
{
	j->floor = 0;
	while (j->depth > 0)
		journal_rollback(j);
}

int
journal_rows_done(struct journal *j, sqlite3_stmt *st, int rc, const char *what, int n)
{
	journal_done(j, st);
	if (rc != SQLITE_DONE) {
		journal_jerr(j, what);
		return -1;
	}
	return n;
}

/* savepoint_sql - "<verb> <name>" with a checked name; 0 or -1 */
static int
savepoint_sql(struct journal *j, const char *verb, const char *name)
{
	char sql[96];

	if (name == NULL || *name == '\0' || strlen(name) > 40 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz_") != strlen(name)) {
		snprintf(j->err, sizeof(j->err), "savepoint name \"%.40s\" is not a-z and _",
		    name ? name : "");
		return -1;
	}
	snprintf(sql, sizeof(sql), "%s %s", verb, name);
	if (sqlite3_exec(j->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		journal_jerr(j, verb);
		return -1;
	}
	return 0;
}

int
journal_savepoint(struct journal *j, const char *name)
{
	return savepoint_sql(j, "SAVEPOINT", name);
}

int
journal_savepoint_release(struct journal *j, const char *name)
{
	return savepoint_sql(j, "RELEASE", name);
}

void
journal_savepoint_rollback(struct journal *j, const char *name)
{
	if (savepoint_sql(j, "ROLLBACK TO", name) == 0)
		(void)savepoint_sql(j, "RELEASE", name);
}

char *
journal_obj(char *out, size_t len, const char *kind, const char *ns, const char *name)
{
	size_t k = strlen(kind);

	/* "decofiles" -> "decofile": the plural is how resources name a kind */
	if (k > 1 && kind[k - 1] == 's')
		k--;
	snprintf(out, len, "%.*s/%s/%s", (int)k, kind, ns, name);
	return out;
}

/* audit_step - the audit row every recorded step of a decofile also leaves */
static int
audit_step(struct journal *j, const char *stage, const char *kind, const char *ns,
    const char *name, const char *action, const char *detail)
{
	char obj[JOURNAL_OBJ_MAX];

	return journal_audit(j, stage, journal_obj(obj, sizeof(obj), kind, ns, name), action,
	    detail);
}

int
journal_record_fetch(struct journal *j, const char *ns, const char *name,
    const char *source, const char *commit, const char *tree_hash)
{
	char detail[512];

	snprintf(detail, sizeof(detail), "source=%s commit=%s tree=%s", source,
	    commit ? commit : "", tree_hash);
	return journal_run(j, NULL, "INSERT INTO fetches (ns, name, source, commit_id, tree_hash)"
	    " VALUES (?, ?, ?, ?, ?)", "sssss", ns, name, source, commit, tree_hash) < 0 ||
	    audit_step(j, "fetcher", "decofile", ns, name, "fetch", detail) < 0 ? -1 : 0;
}

int
journal_record_render(struct journal *j, const char *ns, const char *name,
    const char *content_hash, const char *format, size_t size, const char *tree_hash,
    const char *bin_hash)
{
	char detail[256];

	snprintf(detail, sizeof(detail), "hash=%s format=%s size=%zu", content_hash, format,
	    size);
	return journal_run(j, NULL, "INSERT INTO renders (ns, name, content_hash, format, size,"
	    " tree_hash, bin_hash) VALUES (?, ?, ?, ?, ?, ?, ?)", "sssszss", ns, name,
	    content_hash, format, size, tree_hash, bin_hash) < 0 ||
	    audit_step(j, "renderer", "decofile", ns, name, "render", detail) < 0 ? -1 : 0;
}

int
journal_record_publish(struct journal *j, const char *ns, const char *name,
    const char *target, const char *location, const char *content_hash, int64_t timestamp)
{
	if (journal_run(j, NULL, "INSERT INTO publishes (ns, name, target, location, content_hash,"
	    " timestamp) VALUES (?, ?, ?, ?, ?, ?)", "sssssi", ns, name, target, location,
	    content_hash, timestamp) < 0)
		return -1;
	metrics_publish(ns, name, timestamp);
	return 0;
}

int
journal_record_condition(struct journal *j, const char *kind, const char *ns,
    const char *name, const char *type, const char *status, const char *reason,
    const char *message)
{
	char detail[1200];

	snprintf(detail, sizeof(detail), "%s=%s %s: %s", type, status, reason, message);
	/* the row and its audit row in one transaction: one commit, not two */
	if (journal_begin(j) < 0)
		return -1;
	if (journal_run(j, NULL, "INSERT INTO conditions (kind, ns, name, type, status, reason,"
	    " message) VALUES (?, ?, ?, ?, ?, ?, ?)", "sssssss", kind, ns, name, type,
	    status, reason, message) < 0 ||
	    audit_step(j, "status", kind, ns, name, "condition", detail) < 0) {
		journal_rollback(j);
		return -1;
	}
	return journal_commit(j);
}

int
journal_record_ack(struct journal *j, const char *ns, const char *name,
    const char *replica, const char *content_hash, int64_t timestamp, const char *result)
{
	return journal_run(j, NULL, "INSERT INTO acks (ns, name, replica, content_hash, timestamp,"
	    " result) VALUES (?, ?, ?, ?, ?, ?)", "ssssis", ns, name, replica, content_hash,
	    timestamp, result) < 0 ? -1 : 0;
}

int
journal_record_drift(struct journal *j, const char *ns, const char *name,
    const char *location, const char *detail)
{
	if (journal_run(j, NULL, "INSERT INTO drift (ns, name, location, detail) VALUES"
	    " (?, ?, ?, ?)", "ssss", ns, name, location, detail) < 0)
		return -1;
	metrics_drift_repaired();
	return 0;
}

int
journal_inventory_put(struct journal *j, const char *ns, const char *name,
    const char *target, const char *location, const char *content_hash)
{
	return journal_run(j, NULL, "INSERT INTO inventory (ns, name, target, location, content_hash)"
	    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (ns, name, location) DO UPDATE SET"
	    " target=excluded.target, content_hash=excluded.content_hash, updated_at=" NOW,
	    "sssss", ns, name, target, location, content_hash) < 0 ? -1 : 0;
}

int
journal_inventory_del(struct journal *j, const char *ns, const char *name,
    const char *location)
{
	return journal_run(j, NULL, "DELETE FROM inventory WHERE ns=? AND name=? AND location=?",
	    "sss", ns, name, location) < 0 ? -1 : 0;
}

int
journal_audit(struct journal *j, const char *stage, const char *object,
    const char *action, const char *detail)
{
	return journal_run(j, NULL, "INSERT INTO audit (stage, object, action, detail) VALUES"
	    " (?, ?, ?, ?)", "ssss", stage, object, action, detail ? detail : "") < 0 ? -1 : 0;
}

int
journal_last_publish(struct journal *j, const char *ns, const char *name,
    const char *target, char *hash, int64_t *timestamp)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT content_hash, timestamp FROM publishes WHERE ns=? AND"
	    " name=? AND target=? ORDER BY id DESC LIMIT 1", "sss", ns, name, target)) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		journal_copy_col(st, 0, hash, 65);
		if (timestamp != NULL)
			*timestamp = sqlite3_column_int64(st, 1);
	}
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_last_render(struct journal *j, const char *ns, const char *name, char *hash,
    char *format, char *bin_hash)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = journal_run(j, &st, "SELECT content_hash, format, bin_hash FROM renders WHERE ns=?"
	    " AND name=? ORDER BY id DESC LIMIT 1", "ss", ns, name)) < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		journal_copy_col(st, 0, hash, 65);
		if (format != NULL)
			journal_copy_col(st, 1, format, 8);
		if (bin_hash != NULL)
			journal_copy_col(st, 2, bin_hash, 65);
	}
	journal_done(j, st);
	return rc == SQLITE_ROW ? 0 : 1;
}

int
journal_detail_get(const char *detail, const char *key, char *out, size_t outlen)
{
	size_t kl = strlen(key);
	const char *p = detail;

	while (p != NULL && *p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t n = strcspn(v, " ");

			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = strchr(p, ' ');
	}
	if (outlen > 0)
		out[0] = '\0';
	return -1;
}

int
journal_referenced(struct journal *j, void (*fn)(void *arg, const char *hash), void *arg)
{
	static const char *const queries[] = {
		"SELECT hash FROM items WHERE state='pending' AND hash<>''",
		"SELECT tree_hash FROM fetches WHERE id IN"
		"  (SELECT MAX(id) FROM fetches GROUP BY ns, name)",
		"SELECT content_hash FROM renders WHERE id IN"
		"  (SELECT MAX(id) FROM renders GROUP BY ns, name)",
		"SELECT bin_hash FROM renders WHERE bin_hash<>'' AND id IN"
		"  (SELECT MAX(id) FROM renders GROUP BY ns, name)",
		"SELECT content_hash FROM inventory",
		/* a template's newest tree, and every older one a site still uses */
		"SELECT tree_hash FROM template_trees WHERE id IN"
		"  (SELECT MAX(id) FROM template_trees GROUP BY ns, name)",
		"SELECT tree_hash FROM template_uses",
		/* the bin blob of what is published, to repair drift of a .bin */
		"SELECT DISTINCT r.bin_hash FROM renders r JOIN inventory i"
		"  ON r.ns=i.ns AND r.name=i.name AND r.content_hash=i.content_hash"
		"  WHERE r.bin_hash<>''",
	};
	sqlite3_stmt *st;
	int rc;

	for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
		if ((rc = journal_run(j, &st, queries[q], "")) < 0)
			return -1;
		while (rc == SQLITE_ROW) {
			const unsigned char *h = sqlite3_column_text(st, 0);

			if (h != NULL)
				fn(arg, (const char *)h);
			rc = sqlite3_step(st);
		}
		journal_done(j, st);
	}
	return 0;
}

int
journal_prune(struct journal *j, int64_t age_ms)
{
	static const char *const tables[] = { "fetches", "renders", "publishes",
		"conditions", "acks", "drift", "audit" };
	char cutoff[40], sql[256];

	rfc3339_from((wall_ms() - age_ms) / 1000, cutoff, sizeof(cutoff));
	if (journal_begin(j) < 0)
		return -1;
	if (journal_run(j, NULL, "DELETE FROM items WHERE state<>'pending' AND updated_at<?", "s",
	    cutoff) < 0)
		goto fail;
	/* template generations: old ones go unless a decofile still uses them */
	if (journal_run(j, NULL, "DELETE FROM template_trees WHERE at<? AND id NOT IN"
	    " (SELECT MAX(id) FROM template_trees GROUP BY ns, name) AND NOT EXISTS"
	    " (SELECT 1 FROM template_uses u WHERE u.ns=template_trees.ns AND"
	    " u.template=template_trees.name AND u.tree_hash=template_trees.tree_hash)",
	    "s", cutoff) < 0)
		goto fail;
	/* rollouts: each template's newest is kept (it is in force), older ones age out */
	if (journal_run(j, NULL, "DELETE FROM template_rollout_sites WHERE rollout IN"
	    " (SELECT id FROM template_rollouts WHERE updated_at<? AND id NOT IN"
	    " (SELECT MAX(id) FROM template_rollouts GROUP BY ns, name))", "s", cutoff) < 0 ||
	    journal_run(j, NULL, "DELETE FROM template_rollouts WHERE updated_at<? AND id NOT IN"
	    " (SELECT MAX(id) FROM template_rollouts GROUP BY ns, name)", "s", cutoff) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		/* keep the newest row of each object, however old */
		if (strcmp(tables[i], "audit") == 0)
			snprintf(sql, sizeof(sql), "DELETE FROM audit WHERE at<?");
		else
			snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE at<? AND id NOT IN"
			    " (SELECT MAX(id) FROM %s GROUP BY ns, name)", tables[i], tables[i]);
		if (journal_run(j, NULL, sql, "s", cutoff) < 0)
			goto fail;
	}
	return journal_commit(j);
fail:
	journal_rollback(j);
	return -1;
}
