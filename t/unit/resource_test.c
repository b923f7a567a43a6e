/* resource_test - resources and status fragments on a real local store */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/journal.h"
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
