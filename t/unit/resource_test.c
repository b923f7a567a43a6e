/* resource_test - resources and status fragments on a real local store */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/journal.h"
#include "common/journal_impl.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "t/tap.h"

static yajl_val
parse(const char *text)
{
	return json_parse(text, strlen(text), NULL);
}

static int
put(struct store *s, const char *text, int *changed, char *err)
{
	yajl_val v = parse(text);
	int rc = resource_put(s, v, "default", changed, NULL, NULL, NULL, err, 256);

	yajl_tree_free(v);
	return rc;
}

static int
count_conditions(struct journal *j)
{
	sqlite3_stmt *st;
	int n;

	sqlite3_prepare_v2(journal_db(j), "SELECT count(*) FROM conditions", -1, &st, NULL);
	sqlite3_step(st);
	n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* one status_fragment_build case: from old, with fields and a condition */
static const struct build_case {
	const char *label;
	const char *old;
	const char *fields;
	const char *type, *status, *reason, *message;
	int changed, moved;
	const char *want;	/* the whole new text; "@now" where the time is now */
} build_cases[] = {
	{ "new fragment", NULL, "{\"sourceType\":\"git\",\"observedGeneration\":3}",
	  "Syncing", "True", "Fetched", "ok", 1, 1,
	  "{\"sourceType\":\"git\",\"observedGeneration\":3,\"conditions\":[{\"type\":"
	  "\"Syncing\",\"status\":\"True\",\"reason\":\"Fetched\",\"message\":\"ok\","
	  "\"lastTransitionTime\":\"@now\"}]}" },
	{ "same again: no write",
	  "{\"sourceType\":\"git\",\"observedGeneration\":3,\"conditions\":[{\"type\":"
	  "\"Syncing\",\"status\":\"True\",\"reason\":\"Fetched\",\"message\":\"ok\","
	  "\"lastTransitionTime\":\"2000-01-01T00:00:00Z\"}]}",
	  "{\"sourceType\":\"git\",\"observedGeneration\":3}",
	  "Syncing", "True", "Fetched", "ok", 0, 0,
	  "{\"sourceType\":\"git\",\"observedGeneration\":3,\"conditions\":[{\"type\":"
	  "\"Syncing\",\"status\":\"True\",\"reason\":\"Fetched\",\"message\":\"ok\","
	  "\"lastTransitionTime\":\"2000-01-01T00:00:00Z\"}]}" },
	{ "reason only: the time stays",
	  "{\"conditions\":[{\"type\":\"Syncing\",\"status\":\"True\",\"reason\":\"A\","
	  "\"message\":\"ok\",\"lastTransitionTime\":\"2000-01-01T00:00:00Z\"}]}",
	  NULL, "Syncing", "True", "B", "ok", 1, 0,
	  "{\"conditions\":[{\"type\":\"Syncing\",\"status\":\"True\",\"reason\":\"B\","
	  "\"message\":\"ok\",\"lastTransitionTime\":\"2000-01-01T00:00:00Z\"}]}" },
	{ "message changes: the time moves",
	  "{\"conditions\":[{\"type\":\"Syncing\",\"status\":\"False\",\"reason\":\"A\","
	  "\"message\":\"x\",\"lastTransitionTime\":\"2000-01-01T00:00:00Z\"}]}",
	  NULL, "Syncing", "False", "A", "y", 1, 1,
	  "{\"conditions\":[{\"type\":\"Syncing\",\"status\":\"False\",\"reason\":\"A\","
	  "\"message\":\"y\",\"lastTransitionTime\":\"@now\"}]}" },
	{ "fields only: conditions and other fields kept",
	  "{\"keep\":1,\"observedGeneration\":2,\"conditions\":[{\"type\":\"Ready\"}]}",
	  "{\"observedGeneration\":3}", NULL, NULL, NULL, NULL, 1, 0,
	  "{\"keep\":1,\"observedGeneration\":3,\"conditions\":[{\"type\":\"Ready\"}]}" },
	{ "same fields: no write",
	  "{\"observedGeneration\":3,\"conditions\":[]}",
	  "{\"observedGeneration\":3}", NULL, NULL, NULL, NULL, 0, 0,
	  "{\"observedGeneration\":3,\"conditions\":[]}" },
	{ "another type is kept beside the new one",
	  "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}",
	  NULL, "Syncing", "False", "FetchError", "boom", 1, 1,
	  "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Syncing\","
	  "\"status\":\"False\",\"reason\":\"FetchError\",\"message\":\"boom\","
	  "\"lastTransitionTime\":\"@now\"}]}" },
	{ "a null field removes it",
	  "{\"fetchFailures\":4,\"keep\":1,\"conditions\":[]}",
	  "{\"fetchFailures\":null}", NULL, NULL, NULL, NULL, 1, 0,
	  "{\"keep\":1,\"conditions\":[]}" },
	{ "a null field already absent: no write",
	  "{\"keep\":1,\"conditions\":[]}",
	  "{\"fetchFailures\":null}", NULL, NULL, NULL, NULL, 0, 0,
	  "{\"keep\":1,\"conditions\":[]}" },
	{ "unparsable old counts as none", "{oops", "{\"a\":1}", NULL, NULL, NULL, NULL,
	  1, 0, "{\"a\":1,\"conditions\":[]}" },
};

static void
test_build(void)
{
	for (size_t i = 0; i < sizeof(build_cases) / sizeof(build_cases[0]); i++) {
		const struct build_case *c = &build_cases[i];
		int changed = -1, moved = -1;
		char *got = status_fragment_build(c->old, c->old ? strlen(c->old) : 0,
		    c->fields, c->type, c->status, c->reason, c->message, &changed, &moved);
		struct buf want;
		const char *at = strstr(c->want, "@now");
		char now[40];

		buf_init(&want);
		if (at != NULL) {
			/* the time in got, if it is a fresh RFC 3339 one */
			const char *t = got ? strstr(got, "\"lastTransitionTime\":\"") : NULL;

			snprintf(now, sizeof(now), "%.20s", t ? t + 22 : "");
			ok(strncmp(now, "2000", 4) != 0 && strlen(now) == 20 && now[19] == 'Z',
			    "build %s: a new time (%s)", c->label, now);
			buf_printf(&want, "%.*s%s%s", (int)(at - c->want), c->want, now, at + 4);
		} else {
			buf_adds(&want, c->want);
		}
		is_str(got, want.data, "build %s: text", c->label);
		is_int(changed, c->changed, "build %s: changed", c->label);
		is_int(moved, c->moved, "build %s: moved", c->label);
		buf_free(&want);
		free(got);
	}
	ok(status_fragment_build(NULL, 0, "[1]", NULL, NULL, NULL, NULL, NULL, NULL) == NULL,
	    "build: fields that are not an object are refused");
	ok(status_fragment_build(NULL, 0, "{", NULL, NULL, NULL, NULL, NULL, NULL) == NULL,
	    "build: fields that are not JSON are refused");
	ok(status_fragment_build(NULL, 0, NULL, "Ready", NULL, NULL, NULL, NULL, NULL) ==
	    NULL, "build: a condition without a status is refused");
}

int
main(void)
{
	char dir[] = "/tmp/resource_test.XXXXXX", url[128], err[256], path[256];
	const char *first_created;
	struct store *s;
	struct journal *j;
	yajl_val doc, v;
	struct buf b;
	int changed;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(url, sizeof(url), "local:%s/store", dir);
	s = store_open(url, NULL, err, sizeof(err));
	snprintf(path, sizeof(path), "%s/journal.db", dir);
	j = journal_open(path, err, sizeof(err));
	ok(s != NULL && j != NULL, "store and journal");
	keys_set_prefix("/decod");
	test_build();

	is_str(resource_kind_plural("df"), "decofiles", "df is decofiles");
	is_str(resource_kind_plural("DecofileTemplate"), "templates", "kind name");
	ok(resource_kind_plural("pods") == NULL, "unknown kind");

	ok(put(s, "{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\","
	    "\"metadata\":{\"name\":\"loja\",\"namespace\":\"sites-loja\"},"
	    "\"spec\":{\"source\":\"inline\"},\"status\":{\"contentHash\":\"forged\"}}",
	    &changed, err) == 0, "create");
	is_int(changed, 2, "reported as new");
	ok(resource_get(s, "decofiles", "sites-loja", "loja", &doc, err, sizeof(err)) == 0,
	    "read back");
	is_int(decofile_generation(doc), 1, "generation 1");
	ok(json_get(doc, "status", NULL) == NULL, "a client's status is dropped");
	first_created = json_get_str(doc, "metadata", "created_at", NULL);
	ok(first_created != NULL && strlen(first_created) == 20, "created_at stamped RFC 3339");
	is_str(decofile_deployment_id(doc), "loja", "deploymentId defaults to the name");
	is_str(decofile_target(doc, "file"), "file", "target default");
	{
		char keep[32];

		snprintf(keep, sizeof(keep), "%s", first_created);
		yajl_tree_free(doc);
		ok(put(s, "{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\","
		    "\"metadata\":{\"name\":\"loja\",\"namespace\":\"sites-loja\"},"
		    "\"spec\":{\"source\":\"inline\"}}", &changed, err) == 0 && changed == 0,
		    "same spec: unchanged");
		ok(put(s, "{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\","
		    "\"metadata\":{\"name\":\"loja\",\"namespace\":\"sites-loja\"},"
		    "\"spec\":{\"source\":\"dir\",\"deploymentId\":\"lj\"}}", &changed, err) == 0 &&
		    changed == 1, "spec change: configured");
		resource_get(s, "decofiles", "sites-loja", "loja", &doc, err, sizeof(err));
		is_int(decofile_generation(doc), 2, "generation 2");
		is_str(json_get_str(doc, "metadata", "created_at", NULL), keep, "created_at kept");
		is_str(decofile_deployment_id(doc), "lj", "deploymentId from spec");
		yajl_tree_free(doc);
	}
	{
		/* a mirror keeps its source's generation (a CR's metadata.generation) */
		static const struct {
			const char *label, *spec;
			int64_t gen;
			int changed;
			int64_t stored;
		} g[] = {
			{ "mirror: new at the CR's generation 3", "{\"source\":\"inline\"}", 3, 2, 3 },
			{ "mirror: same spec and generation: unchanged", "{\"source\":\"inline\"}", 3, 0, 3 },
			{ "mirror: spec edited twice unseen: the CR's 5", "{\"source\":\"dir\"}", 5, 1, 5 },
			{ "mirror: edited away and back: same spec, generation 7", "{\"source\":\"dir\"}", 7, 1, 7 },
			{ "mirror: generation 0 counts as resource_put", "{\"source\":\"git\"}", 0, 1, 8 },
		};

		for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
			char *text = xasprintf("{\"apiVersion\":\"deco.sites/v1alpha1\","
			    "\"kind\":\"Decofile\",\"metadata\":{\"name\":\"mir\","
			    "\"namespace\":\"sites-loja\"},\"spec\":%s}", g[i].spec);
			yajl_val mv = parse(text);
			int rc = resource_put_gen(s, mv, g[i].gen, NULL, &changed, NULL, NULL, NULL,
			    err, sizeof(err));

			yajl_tree_free(mv);
			free(text);
			resource_get(s, "decofiles", "sites-loja", "mir", &doc, err, sizeof(err));
			ok(rc == 0 && changed == g[i].changed && decofile_generation(doc) == g[i].stored,
			    "%s", g[i].label);
			yajl_tree_free(doc);
		}
	}
	ok(put(s, "{\"apiVersion\":\"v1\",\"kind\":\"Decofile\",\"metadata\":{\"name\":\"x\"}}",
	    &changed, err) == -1 && strstr(err, "apiVersion") != NULL, "wrong apiVersion named");
	ok(put(s, "{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\","
	    "\"metadata\":{\"name\":\"Bad_Name\"}}", &changed, err) == -1 &&
	    strstr(err, "metadata.name") != NULL, "bad name named");
	ok(put(s, "{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"x\"}}", &changed, err) == -1 &&
	    strstr(err, "unknown kind") != NULL, "unknown kind named");

	/* conditions: move only when status or message changes */
	is_int(status_set_condition(s, j, "decofiles", "sites-loja", "loja", "publisher",
	    "Ready", "True", "Published", "Decofile published"), 1, "condition set");
	is_int(status_set_condition(s, j, "decofiles", "sites-loja", "loja", "publisher",
	    "Ready", "True", "Published", "Decofile published"), 0, "same again: no change");
	is_int(count_conditions(j), 1, "one transition journalled");
	{
		yajl_val fr = status_get_fragment(s, "decofiles", "sites-loja", "loja",
		    "publisher");
		struct buf fb;
		struct jw fw;
		int ch = -1, mv = -1;
		char *t;

		buf_init(&fb);
		jw_init(&fw, &fb);
		jw_value(&fw, fr);
		t = status_fragment_build(fb.data, fb.len, NULL, "Ready", "True", "Published",
		    "Decofile published", &ch, &mv);
		is_str(t, fb.data, "build on what status_set_condition wrote: the same text");
		ok(ch == 0 && mv == 0, "and neither changed nor moved");
		free(t);
		buf_free(&fb);
		yajl_tree_free(fr);
	}
	ok(status_set_fields(s, "decofiles", "sites-loja", "loja", "publisher",
	    "{\"contentHash\":\"abc\",\"timestamp\":17}") == 0, "fields");
	status_set_condition(s, j, "decofiles", "sites-loja", "loja", "fetcher", "Syncing",
	    "True", "Fetched", "ok");
	status_set_condition(s, j, "decofiles", "sites-loja", "loja", "renderer", "Syncing",
	    "False", "ValidationError", "Bad.json:4:2: oops");
	buf_init(&b);
	ok(resource_status_merged(s, "decofiles", "sites-loja", "loja", &b) == 0, "merged");
	v = parse(b.data);
	is_str(json_get_str(v, "contentHash", NULL), "abc", "merged keeps fields");
	is_int(json_get_int(v, 0, "timestamp", NULL), 17, "number field");
	{
		yajl_val c = json_get(v, "conditions", NULL);
		int sync_false = 0, ready = 0;

		for (size_t i = 0; c && i < c->u.array.len; i++) {
			const char *t = json_get_str(c->u.array.values[i], "type", NULL);
			const char *st = json_get_str(c->u.array.values[i], "status", NULL);

			if (strcmp(t, "Syncing") == 0 && strcmp(st, "False") == 0)
				sync_false++;
			if (strcmp(t, "Ready") == 0)
				ready++;
		}
		ok(c != NULL && c->u.array.len == 2, "one condition per type");
		ok(sync_false == 1, "Syncing=False wins over True in the merge");
		ok(ready == 1, "Ready present");
	}
	yajl_tree_free(v);
	buf_free(&b);
	ok(status_delete(s, "decofiles", "sites-loja", "loja") == 0, "status deleted");
	buf_init(&b);
	resource_status_merged(s, "decofiles", "sites-loja", "loja", &b);
	is_str(b.data, "{\"conditions\":[]}", "nothing left");
	buf_free(&b);
	store_close(s);
	journal_close(j);
	rm_rf(dir);
	return done_testing();
}
