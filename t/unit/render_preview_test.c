/*
 * render_preview_test - a site's row for one template (render_tpl_site),
 * the one `decoctl template status` and the web's GET .../templates both
 * print: table-driven over policies, what the site's last render used,
 * the newest rollout's state and the site's row in it, against a real
 * journal.  Then a row as JSON, and the web's array (one row per listed
 * template, a template never fetched included).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/util.h"
#include "daemons/renderer/render_preview.h"
#include "t/tap.h"

/* site_doc - a decofile listing base under a policy ("" none) */
static yajl_val
site_doc(const char *policy)
{
	char text[300];

	if (strcmp(policy, "Window") == 0)
		snprintf(text, sizeof(text), "{\"spec\":{\"templates\":[\"base\"],\"updatePolicy\":"
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}}}");
	else
		snprintf(text, sizeof(text), "{\"spec\":{\"templates\":[\"base\"]%s%s%s}}",
		    *policy ? ",\"updatePolicy\":{\"templateChanges\":\"" : "", policy,
		    *policy ? "\"}" : "");
	return json_parse(text, strlen(text), NULL);
}

/* site_status - status.resolvedTemplates naming base at tree ("" none) */
static yajl_val
site_status(const char *tree)
{
	char text[200];

	if (*tree)
		snprintf(text, sizeof(text), "{\"resolvedTemplates\":[{\"name\":\"base\","
		    "\"generation\":%c,\"hash\":\"%s\"}]}", tree[1], tree);
	else
		snprintf(text, sizeof(text), "{}");
	return json_parse(text, strlen(text), NULL);
}

int
main(void)
{
	static const struct {
		const char *label;
		const char *policy;	/* "" Auto by default */
		const char *used;	/* the tree its last render used: "", t1, t2 (newest) */
		const char *ro;		/* the newest rollout's state; NULL none; "stale": of t1 */
		int ro_wave;
		int wave;		/* the site's wave; -2 no row */
		const char *site;	/* the site's row state */
		const char *state;	/* expected */
		int count;
		int row_wave;		/* expected wave, -1 none */
		const char *reason;
	} rows[] = {
		{ "a policy it cannot read", "Sometimes", "t1", NULL, 0, -2, NULL,
		  "invalid-policy", RENDER_TPL_OTHER, -1, "" },
		{ "never rendered with it", "", "", NULL, 0, -2, NULL, "not-rendered",
		  RENDER_TPL_OTHER, -1, "" },
		{ "no rollout, on the newest", "", "t2", NULL, 0, -2, NULL, "adopted",
		  RENDER_TPL_ADOPTED, -1, "" },
		{ "no rollout, Auto on an older", "", "t1", NULL, 0, -2, NULL, "updating",
		  RENDER_TPL_OTHER, -1, "" },
		{ "no rollout, Manual on an older", "Manual", "t1", NULL, 0, -2, NULL, "pending",
		  RENDER_TPL_PENDING, -1, "" },
		{ "running, its wave later", "", "t1", "running", 0, 1, "waiting", "waiting",
		  RENDER_TPL_OTHER, 1, "" },
		{ "running, its wave reached", "", "t1", "running", 1, 1, "queued", "updating",
		  RENDER_TPL_OTHER, 1, "" },
		{ "running, it rendered the newest", "", "t2", "running", 0, 0, "rendered",
		  "adopted", RENDER_TPL_ADOPTED, 0, "" },
		{ "running, it failed", "", "t2", "running", 0, 0, "failed", "failed",
		  RENDER_TPL_FAILED, 0, "no notifier verdict within 2s" },
		{ "halted before its wave", "", "t1", "halted", 0, 2, "waiting", "halted",
		  RENDER_TPL_OTHER, 2, "" },
		{ "halted, the canary that failed", "", "t2", "halted", 0, 0, "failed", "failed",
		  RENDER_TPL_FAILED, 0, "replicas refused the reload (x)" },
		{ "halted, a Manual site", "Manual", "t1", "halted", 0, -1, "waiting", "pending",
		  RENDER_TPL_PENDING, -1, "" },
		{ "rolled back, on its way back", "", "t2", "rolledback", 0, 0, "reverting",
		  "reverting", RENDER_TPL_OTHER, 0, "" },
		{ "rolled back, back", "", "t1", "rolledback", 0, 0, "reverted", "reverted",
		  RENDER_TPL_OTHER, 0, "" },
		{ "rolled back, never reached", "", "t1", "rolledback", 0, 1, "waiting", "reverted",
		  RENDER_TPL_OTHER, 1, "" },
		{ "done, not rendered since", "", "t1", "done", 1, -2, NULL, "updating",
		  RENDER_TPL_OTHER, -1, "" },
		{ "a rollout of an older tree decides nothing", "", "t1", "stale", 0, 1, "failed",
		  "updating", RENDER_TPL_OTHER, -1, "" },
	};
	char dir[] = "/tmp/render_preview_test.XXXXXX", path[256], err[512];
	struct journal *j;
	struct render_tpl t;
	struct render_tpl_row row;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/journal.db", dir);
	if ((j = journal_open(path, err, sizeof(err))) == NULL) {
		ok(0, "journal opens: %s", err);
		return done_testing();
	}
	journal_template_record(j, "ns", "base", 1, "", "t1");
	journal_template_record(j, "ns", "base", 2, "", "t2");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char site[16];
		yajl_val doc = site_doc(rows[i].policy), st = site_status(rows[i].used);

		snprintf(site, sizeof(site), "s%zu", i);
		if (rows[i].ro != NULL) {
			struct journal_rollout r;
			struct journal_rollout_site s;
			int stale = strcmp(rows[i].ro, "stale") == 0;

			memset(&r, 0, sizeof(r));
			memset(&s, 0, sizeof(s));
			snprintf(r.ns, sizeof(r.ns), "ns");
			snprintf(r.name, sizeof(r.name), "base");
			r.generation = stale ? 1 : 2;
			snprintf(r.tree_hash, sizeof(r.tree_hash), stale ? "t1" : "t2");
			r.prev_generation = 1;
			snprintf(r.prev_hash, sizeof(r.prev_hash), "t1");
			r.waves = 3;
			snprintf(s.site, sizeof(s.site), "%s", site);
			s.wave = rows[i].wave;
			r.id = journal_rollout_start(j, &r, &s, rows[i].wave == -2 ? 0 : 1);
			r.wave = rows[i].ro_wave;
			snprintf(r.state, sizeof(r.state), "%s", stale ? "halted" : rows[i].ro);
			journal_rollout_update(j, &r);
			if (rows[i].site != NULL)
				journal_rollout_site_set(j, r.id, site, rows[i].site, -1, rows[i].reason);
		}
		ok(render_tpl_load(j, "ns", "base", &t) == 0 && t.fetched == 2 &&
		    strcmp(t.tree, "t2") == 0, "%s: the template loads", rows[i].label);
		if (rows[i].ro == NULL)
			t.have_ro = t.ro_current = 0;	/* as a template with none */
		is_int(render_tpl_site(j, &t, site, doc, st, &row), 0, "%s: a row", rows[i].label);
		is_str(row.state, rows[i].state, "%s: %s", rows[i].label, rows[i].state);
		is_int(row.count, rows[i].count, "%s: its tally", rows[i].label);
		is_int(row.wave, rows[i].row_wave, "%s: its wave", rows[i].label);
		is_str(row.reason, rows[i].state[0] == 'f' ? rows[i].reason : "",
		    "%s: its reason", rows[i].label);
		yajl_tree_free(doc);
		yajl_tree_free(st);
	}

	/* a Window site pending: its next opening; a row as JSON */
	{
		yajl_val doc = site_doc("Window"), st = site_status("t1");
		struct buf b;
		struct jw w;

		render_tpl_load(j, "ns", "base", &t);
		t.have_ro = t.ro_current = 0;
		render_tpl_site(j, &t, "win", doc, st, &row);
		ok(strcmp(row.state, "pending") == 0 && row.next_window > 0 &&
		    strcmp(row.policy, "Window") == 0, "a Window site: pending, with its next window");
		row.next_window = 0;	/* 1970-01-01T00:00:00Z: a fixed text below */
		buf_init(&b);
		jw_init(&w, &b);
		render_tpl_row_json(&w, "win", &row);
		is_str(b.data, "{\"name\":\"win\",\"policy\":\"Window\",\"generation\":1,"
		    "\"fetchedGeneration\":2,\"state\":\"pending\","
		    "\"nextWindow\":\"1970-01-01T00:00:00Z\"}", "the row as JSON");
		buf_free(&b);
		yajl_tree_free(doc);
		yajl_tree_free(st);
	}
	/* the web's array: one row per listed template, in order, the unfetched too */
	{
		const char *text = "{\"spec\":{\"templates\":[\"base\",\"never\"]}}";
		yajl_val doc = json_parse(text, strlen(text), NULL), st = site_status("t2");
		struct buf b;
		struct jw w;

		buf_init(&b);
		jw_init(&w, &b);
		render_preview_rollout_json(&w, j, "ns", "web", doc, st);
		is_str(b.data, "[{\"name\":\"base\",\"policy\":\"Auto\",\"generation\":2,"
		    "\"fetchedGeneration\":2,\"state\":\"adopted\"},{\"name\":\"never\","
		    "\"policy\":\"Auto\",\"generation\":null,\"fetchedGeneration\":null,"
		    "\"state\":\"not-rendered\"}]", "the web's array: base adopted, never not-rendered");
		buf_free(&b);
		yajl_tree_free(doc);
		yajl_tree_free(st);
	}
	journal_close(j);
	rm_rf(dir);
	return done_testing();
}
