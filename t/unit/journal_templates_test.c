/*
 * journal_templates_test - DecofileTemplate generations in the journal:
 * a fetch of the same generation and tree records nothing; the newest is
 * found; what each site used is replaced whole per render and listed per
 * template; the spool keeps the newest tree and every one a site uses;
 * pruning drops only old generations nobody uses.  Rollouts: a new one
 * supersedes the running one; sites by wave and state; a state change
 * keeps the reason unless given; a rollback marks every site on the
 * rolled-out tree (a rollout site or not) and is refused twice; the
 * notifier's verdict is the newest finished item after the mark; a
 * rollout keeps its wave timeout and a site when it rendered.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/journal_impl.h"
#include "common/util.h"
#include "t/tap.h"

static void
seen_hash(void *arg, const char *hash)
{
	char *seen = arg;

	strncat(seen, hash, 600 - strlen(seen) - 2);
	strcat(seen, " ");
}

static void
seen_user(void *arg, const char *name, int64_t gen)
{
	char *seen = arg, one[300];

	snprintf(one, sizeof(one), "%s@%lld ", name, (long long)gen);
	strncat(seen, one, 600 - strlen(seen) - 1);
}

static void
seen_site(void *arg, const struct journal_rollout_site *s)
{
	char *seen = arg, one[300];

	snprintf(one, sizeof(one), "%s:%d:%s ", s->site, s->wave, s->state);
	strncat(seen, one, 600 - strlen(seen) - 1);
}

static void
seen_rollout(void *arg, const struct journal_rollout *r)
{
	char *seen = arg, one[600];

	snprintf(one, sizeof(one), "%s/%s@%lld:%s ", r->ns, r->name, (long long)r->generation,
	    r->state);
	strncat(seen, one, 600 - strlen(seen) - 1);
}

static void
rollouts(struct journal *j)
{
	struct journal_rollout r, got;
	struct journal_rollout_site s[3], gs;
	struct journal_template_use u = { "base", 3, "t3" };
	char seen[600] = "", why[300], detail[200], prev[65];
	int64_t id1, id2, mark, g;

	memset(&r, 0, sizeof(r));
	memset(s, 0, sizeof(s));
	snprintf(r.ns, sizeof(r.ns), "ns");
	snprintf(r.name, sizeof(r.name), "base");
	r.generation = 3;
	snprintf(r.tree_hash, sizeof(r.tree_hash), "t3");
	r.prev_generation = 2;
	snprintf(r.prev_hash, sizeof(r.prev_hash), "t2");
	r.waves = 2;
	snprintf(s[0].site, sizeof(s[0].site), "a");
	snprintf(s[1].site, sizeof(s[1].site), "b");
	s[1].wave = 1;
	snprintf(s[2].site, sizeof(s[2].site), "m");
	s[2].wave = JOURNAL_ROLLOUT_OWNER;
	ok(journal_template_before(j, "ns", "base", "t3", &g, prev) == 0 && g == 1 &&
	    strcmp(prev, "t1") == 0, "the tree before t3 still kept: t1");
	r.wave_timeout_ms = 2000;
	ok((id1 = journal_rollout_start(j, &r, s, 3)) > 0, "a rollout starts");
	ok(journal_rollout_newest(j, "ns", "base", &got) == 0 && got.id == id1 &&
	    strcmp(got.state, "running") == 0 && got.wave == 0 && got.waves == 2 &&
	    got.wave_timeout_ms == 2000,
	    "the newest rollout: running, wave 0 of 2 groups, its wave timeout");
	{
		int64_t before = wall_ms();

		ok(journal_rollout_site_get(j, id1, "b", &gs) == 0 && gs.rendered_ms == 0 &&
		    journal_rollout_site_set(j, id1, "b", "rendered", 5, "") == 0 &&
		    journal_rollout_site_get(j, id1, "b", &gs) == 0 &&
		    gs.rendered_ms >= before - 1000 && gs.rendered_ms <= wall_ms() + 1000,
		    "going to rendered stamps when");
		journal_rollout_site_set(j, id1, "b", "waiting", 0, "");
	}
	journal_rollout_sites(j, id1, JOURNAL_ROLLOUT_ANY, NULL, 0, seen_site, seen);
	is_str(seen, "m:-1:waiting a:0:waiting b:1:waiting ", "its sites, by wave then name");
	ok(journal_rollout_site_set(j, id1, "a", "failed", -1, "render error: x") == 0 &&
	    journal_rollout_site_set(j, id1, "a", "failed", 7, NULL) == 0 &&
	    journal_rollout_site_get(j, id1, "a", &gs) == 0 && gs.mark == 7 &&
	    strcmp(gs.reason, "render error: x") == 0,
	    "a state change keeps the reason unless given, and sets the mark");
	seen[0] = '\0';
	journal_rollout_sites(j, id1, 1, "waiting", 1, seen_site, seen);
	is_str(seen, "b:1:waiting ", "sites of wave 1 still waiting");
	seen[0] = '\0';
	journal_rollout_active(j, seen_rollout, seen);
	is_str(seen, "ns/base@3:running ", "the running rollout is active");
	r.generation = 4;
	snprintf(r.tree_hash, sizeof(r.tree_hash), "t4");
	ok((id2 = journal_rollout_start(j, &r, s, 1)) > id1, "a newer generation's rollout");
	seen[0] = '\0';
	journal_rollout_active(j, seen_rollout, seen);
	is_str(seen, "ns/base@4:running ", "... supersedes the running one");
	/* the notifier's verdict: the newest finished item after the mark */
	mark = journal_items_mark(j);
	is_int(journal_notify_after(j, "ns", "a", mark, detail, sizeof(detail)), 1,
	    "no verdict yet");
	journal_item_done(j, journal_item_add(j, "notifier", "decofile", "ns", "a", "h", ""),
	    "confirmed=1 failed=0 gone=0 missing_token=0");
	ok(journal_notify_after(j, "ns", "a", mark, detail, sizeof(detail)) == 0 &&
	    strcmp(detail, "confirmed=1 failed=0 gone=0 missing_token=0") == 0,
	    "the verdict after the mark");
	journal_item_fail(j, journal_item_add(j, "notifier", "decofile", "ns", "a", "h2", ""),
	    "boom");
	ok(journal_notify_after(j, "ns", "a", mark, detail, sizeof(detail)) == 0 &&
	    strcmp(detail, "failed: boom") == 0, "a failed notifier item is a refusal");
	journal_item_add(j, "renderer", "rollout", "ns", "a", "", "");
	is_int(journal_items_pending(j, "renderer", "rollout"), 1, "one rollout item pending");
	/* rollback: every site whose last render used t4 */
	u.generation = 4;
	snprintf(u.tree_hash, sizeof(u.tree_hash), "t4");
	journal_template_uses_set(j, "ns", "a", &u, 1);
	journal_template_uses_set(j, "ns", "z", &u, 1);	/* not a rollout site */
	is_int(journal_rollout_rollback(j, "ns", "base", why, sizeof(why)), 2,
	    "rollback: two sites on the tree go back");
	seen[0] = '\0';
	journal_rollout_sites(j, id2, JOURNAL_ROLLOUT_ANY, "revert", 0, seen_site, seen);
	is_str(seen, "z:-1:revert a:0:revert ", "... a rollout site and one that is not");
	is_int(journal_rollout_rollback(j, "ns", "base", why, sizeof(why)), -2,
	    "a second rollback is refused");
	ok(strstr(why, "already rolledback") != NULL, "... saying why (%s)", why);
	is_int(journal_rollout_rollback(j, "ns", "none", why, sizeof(why)), -2,
	    "no rollout: nothing to roll back");
	/* retention: the superseded rollout and its sites go, the newest stays */
	sqlite3_exec(journal_db(j), "UPDATE template_rollouts SET updated_at="
	    "'2000-01-01T00:00:00.000Z'", NULL, NULL, NULL);
	ok(journal_prune(j, 1000) == 0 && journal_rollout_site_get(j, id1, "b", &gs) == 1 &&
	    journal_rollout_newest(j, "ns", "base", &got) == 0 && got.id == id2 &&
	    journal_rollout_site_get(j, id2, "a", &gs) == 0,
	    "pruning drops the superseded rollout and its sites, keeps the newest");
}

int
main(void)
{
	char dir[] = "/tmp/journal_templates_test.XXXXXX", path[256], err[512];
	char seen[600] = "", h[65];
	struct journal_template_use u[2], got;
	struct journal *j;
	int64_t g = 0;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/journal.db", dir);
	if ((j = journal_open(path, err, sizeof(err))) == NULL) {
		ok(0, "journal opens: %s", err);
		return done_testing();
	}
	is_int(journal_template_newest(j, "ns", "base", &g, h), 1, "never fetched: none");
	is_int(journal_template_record(j, "ns", "base", 1, "", "t1"), 1, "generation 1 recorded");
	is_int(journal_template_record(j, "ns", "base", 1, "", "t1"), 0,
	    "the same generation and tree again: nothing");
	is_int(journal_template_record(j, "ns", "base", 2, "", "t2"), 1, "generation 2");
	is_int(journal_template_record(j, "ns", "base", 3, "", "t3"), 1, "generation 3");
	is_int(journal_template_record(j, "ns", "other", 7, "", "o7"), 1, "another template");
	ok(journal_template_newest(j, "ns", "base", &g, h) == 0 && g == 3 && strcmp(h, "t3") == 0,
	    "the newest is generation 3 (t3)");

	/* man pinned at 1, auto on 3, then auto's next render drops the template */
	memset(u, 0, sizeof(u));
	snprintf(u[0].template, sizeof(u[0].template), "base");
	u[0].generation = 1;
	snprintf(u[0].tree_hash, sizeof(u[0].tree_hash), "t1");
	snprintf(u[1].template, sizeof(u[1].template), "other");
	u[1].generation = 7;
	snprintf(u[1].tree_hash, sizeof(u[1].tree_hash), "o7");
	ok(journal_template_uses_set(j, "ns", "man", u, 2) == 0, "man's render used base@1, other@7");
	u[0].generation = 3;
	snprintf(u[0].tree_hash, sizeof(u[0].tree_hash), "t3");
	ok(journal_template_uses_set(j, "ns", "auto", u, 1) == 0, "auto's render used base@3");
	ok(journal_template_used(j, "ns", "man", "base", &got) == 0 && got.generation == 1 &&
	    strcmp(got.tree_hash, "t1") == 0, "man uses base generation 1, tree t1");
	is_int(journal_template_used(j, "ns", "man", "gone", &got), 1, "a template not used: none");
	is_int(journal_template_users(j, "ns", "base", seen_user, seen), 2, "two sites use base");
	is_str(seen, "auto@3 man@1 ", "... by name, with their generations");
	seen[0] = '\0';
	is_int(journal_template_users(j, "other-ns", "base", seen_user, seen), 0,
	    "none in another namespace");

	seen[0] = '\0';
	journal_referenced(j, seen_hash, seen);
	ok(strstr(seen, "t1 ") && strstr(seen, "t3 ") && strstr(seen, "o7 "),
	    "the spool keeps the newest trees and man's pinned t1: %s", seen);
	ok(strstr(seen, "t2 ") == NULL, "generation 2, used by nobody, is not kept");

	/* prune everything older than now: t2 goes, t1 (used) and t3 (newest) stay */
	sqlite3_exec(journal_db(j), "UPDATE template_trees SET at='2000-01-01T00:00:00Z'", NULL,
	    NULL, NULL);
	ok(journal_prune(j, 1000) == 0, "prune");
	{
		sqlite3_stmt *st;
		char rows[200] = "";

		sqlite3_prepare_v2(journal_db(j), "SELECT group_concat(tree_hash, ' ') FROM"
		    " (SELECT tree_hash FROM template_trees ORDER BY id)", -1, &st, NULL);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
			snprintf(rows, sizeof(rows), "%s", sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		is_str(rows, "t1 t3 o7", "pruning keeps the pinned and the newest generations");
	}
	ok(journal_template_uses_set(j, "ns", "man", NULL, 0) == 0 &&
	    journal_template_used(j, "ns", "man", "base", &got) == 1,
	    "a render without templates clears what man used");
	rollouts(j);
	journal_close(j);
	rm_rf(dir);
	return done_testing();
}
