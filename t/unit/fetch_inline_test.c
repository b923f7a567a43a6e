/*
 * fetch_inline_test - spec.inline.value to a tree: keys as written (no URL
 * decoding), paths "inline:<key>", values compact, bad shapes refused.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/spool.h"
#include "common/sync_group.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_inline.h"
#include "t/tap.h"

static yajl_val
parse(const char *s)
{
	return json_parse(s, strlen(s), NULL);
}

int
main(void)
{
	struct fetch_limits lim = { 1024, 4096, 0 };
	struct fetch_result res, again;
	struct spool *sp;
	char top[256], path[4096], *man, *blob;
	yajl_val v, doc, e;
	size_t len;

	snprintf(top, sizeof(top), "/tmp/fetch_inline_test.%ld", (long)getpid());
	sp = spool_open(top);

	v = parse("{\"Foot%20er\": {\"n\": 1.50, \"s\": \"<b>\"}, \"Header\": [true, null]}");
	is_int(fetch_inline(sp, &lim, v, &res), 0, "an object of blocks fetches");
	is_int((long long)res.entries, 2, "two entries");
	man = spool_get(sp, res.tree_hash, &len);
	doc = json_parse(man, len, NULL);
	is_str(json_get_str(doc, "source", NULL), "inline", "source inline");
	ok(json_get(doc, "commit", NULL) == NULL, "no commit for inline");
	e = json_get(doc, "entries", NULL);
	ok(e && YAJL_IS_ARRAY(e) && e->u.array.len == 2, "two entries in the manifest");
	if (e && YAJL_IS_ARRAY(e) && e->u.array.len == 2) {
		is_str(json_get_str(e->u.array.values[0], "key", NULL), "Foot%20er",
		    "inline keys are not URL-decoded");
		is_str(json_get_str(e->u.array.values[0], "path", NULL), "inline:Foot%20er",
		    "path inline:<key>");
		blob = spool_get(sp, json_get_str(e->u.array.values[0], "blob", NULL), &len);
		ok(blob && strstr(blob, "1.50") != NULL, "numbers keep their text (%s)", blob ? blob : "");
		ok(blob && json_validate(blob, len, NULL) == 0, "each blob is valid JSON");
		free(blob);
	}
	yajl_tree_free(doc);
	free(man);
	is_int(fetch_inline(sp, &lim, v, &again), 0, "again");
	is_str(again.tree_hash, res.tree_hash, "same value, same tree hash");
	yajl_tree_free(v);

	/* one trailing .json is stripped, as the Go operator does (issue 17) */
	v = parse("{\"Header.json\": 1, \"a.json.json\": 2, \"Foot%20er.json\": 3}");
	is_int(fetch_inline(sp, &lim, v, &res), 0, "keys ending in .json fetch");
	man = spool_get(sp, res.tree_hash, &len);
	doc = json_parse(man, len, NULL);
	e = json_get(doc, "entries", NULL);
	if (ok(e && YAJL_IS_ARRAY(e) && e->u.array.len == 3, "three entries")) {
		char keys[256] = "", paths[256] = "";

		for (size_t i = 0; i < 3; i++) {
			snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s;",
			    json_get_str(e->u.array.values[i], "key", NULL));
			snprintf(paths + strlen(paths), sizeof(paths) - strlen(paths), "%s;",
			    json_get_str(e->u.array.values[i], "path", NULL));
		}
		is_str(keys, "Foot%20er;Header;a.json;", "one .json stripped, still not URL-decoded");
		is_str(paths, "inline:Foot%20er.json;inline:Header.json;inline:a.json.json;",
		    "paths keep the key as written");
	}
	yajl_tree_free(doc);
	free(man);
	yajl_tree_free(v);
	v = parse("{\".json\": 1}");
	is_int(fetch_inline(sp, &lim, v, &res), -1, "\".json\" alone leaves an empty key: refused");
	yajl_tree_free(v);

	v = parse("{}");
	is_int(fetch_inline(sp, &lim, v, &res), 0, "an empty object is an empty tree");
	is_int((long long)res.entries, 0, "no entries");
	yajl_tree_free(v);

	v = parse("[1]");
	is_int(fetch_inline(sp, &lim, v, &res), -1, "an array is refused");
	is_str(res.reason, "FetchError", "reason FetchError");
	ok(strstr(res.error, "spec.inline.value") != NULL, "message names the field (%s)", res.error);
	yajl_tree_free(v);
	is_int(fetch_inline(sp, &lim, NULL, &res), -1, "a missing value is refused");

	lim.max_file = 4;
	v = parse("{\"A\": \"long string\"}");
	is_int(fetch_inline(sp, &lim, v, &res), -1, "caps apply to inline values");
	is_str(res.reason, "TooLarge", "TooLarge");
	ok(strstr(res.error, "inline:A") != NULL, "names the key (%s)", res.error);
	yajl_tree_free(v);

	/*
	 * defer_sync (the fetcher's workers): the tree is written but nothing
	 * shows under its hash until the sync group it is handed to is
	 * flushed, so the journal row naming the tree, committed after the
	 * flush, never names a blob that is not durable
	 */
	lim.max_file = 1024;
	lim.defer_sync = 1;
	v = parse("{\"Deferred\": {\"a\": 1}, \"Later\": [2]}");
	is_int(fetch_inline(sp, &lim, v, &res), 0, "a deferred fetch");
	is_int((long long)res.nstaged, 3, "two blobs and the manifest wait, staged");
	ok(res.tree_hash[0] != '\0' && !spool_has(sp, res.tree_hash),
	    "the manifest is not under its hash before the sync");
	sync_group_begin();
	is_int(fetch_result_group(&res), 0, "handed to a sync group");
	ok(res.nstaged == 0 && res.staged == NULL, "the result lets go of them");
	ok(!spool_has(sp, res.tree_hash), "still not under its hash before the flush");
	is_int(sync_group_flush(), 0, "the group's flush");
	man = spool_get(sp, res.tree_hash, &len);
	doc = man ? json_parse(man, len, NULL) : NULL;
	e = json_get(doc, "entries", NULL);
	if (ok(e && YAJL_IS_ARRAY(e) && e->u.array.len == 2, "the manifest, after the flush")) {
		for (size_t i = 0; i < 2; i++) {
			blob = spool_get(sp, json_get_str(e->u.array.values[i], "blob", NULL),
			    &len);
			ok(blob != NULL, "and blob %zu it names", i);
			free(blob);
		}
	}
	yajl_tree_free(doc);
	free(man);
	is_int(fetch_inline(sp, &lim, v, &again), 0, "the same value deferred again");
	ok(again.nstaged == 0 && strcmp(again.tree_hash, res.tree_hash) == 0,
	    "nothing staged when the tree is there");
	yajl_tree_free(v);
	v = parse("{\"Dropped\": \"never synced\"}");
	is_int(fetch_inline(sp, &lim, v, &res), 0, "a deferred fetch never synced");
	ok(res.nstaged == 2 && access(res.staged[0], F_OK) == 0, "its files are staged");
	snprintf(path, sizeof(path), "%s", res.staged[0]);
	fetch_result_unstage(&res);
	ok(res.nstaged == 0 && access(path, F_OK) < 0 && !spool_has(sp, res.tree_hash),
	    "unstaged: removed, nothing under a hash");
	yajl_tree_free(v);

	spool_close(sp);
	rm_rf(top);
	return done_testing();
}
