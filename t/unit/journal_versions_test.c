/*
 * journal_versions_test - the versions a rollback can go back to: one per
 * content hash (the newest render of it, with the commit its tree was
 * fetched at), newest first; a prefix or a step back finds one, an
 * ambiguous prefix says so; the spool keeps the newest N of each decofile.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/util.h"
#include "t/tap.h"

static void
seen_version(void *arg, const struct journal_version *v)
{
	char *seen = arg;

	strncat(seen, v->content_hash, 400 - strlen(seen) - 3);
	strcat(seen, "@");
	strncat(seen, v->commit[0] ? v->commit : "-", 400 - strlen(seen) - 3);
	strcat(seen, " ");
}

static void
seen_hash(void *arg, const char *hash)
{
	char *seen = arg;

	strncat(seen, hash, 400 - strlen(seen) - 2);
	strcat(seen, " ");
}

int
main(void)
{
	char dir[] = "/tmp/journal_versions_test.XXXXXX", path[256], err[512];
	char seen[400] = "";
	struct journal_version v;
	struct journal *j;
	static const struct {
		const char *label, *prefix;
		int steps, limit, rc;
		const char *hash;
	} finds[] = {
		{ "newest by step 0", NULL, 0, 10, 0, "c3aa" },
		{ "one back (c1 rendered again: newer than c2)", NULL, 1, 10, 0, "c1cc" },
		{ "two back", NULL, 2, 10, 0, "c2bb" },
		{ "past the oldest", NULL, 3, 10, 1, NULL },
		{ "past the limit", NULL, 2, 2, 1, NULL },
		{ "by prefix", "c2", 0, 10, 0, "c2bb" },
		{ "by the whole hash", "c1cc", 0, 10, 0, "c1cc" },
		{ "ambiguous prefix", "c", 0, 10, 2, NULL },
		{ "unknown prefix", "ff", 0, 10, 1, NULL },
		{ "a prefix beyond the limit", "c2", 0, 2, 1, NULL },
	};

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/journal.db", dir);
	if ((j = journal_open(path, err, sizeof(err))) == NULL) {
		ok(0, "open: %s", err);
		return done_testing();
	}
	journal_record_fetch(j, "loja", "sp", "git", "commit1", "t1");
	journal_record_render(j, "loja", "sp", "c1cc", "json", 10, "t1", "");
	journal_record_fetch(j, "loja", "sp", "git", "commit2", "t2");
	journal_record_render(j, "loja", "sp", "c2bb", "bin", 10, "t2", "b2");
	journal_record_fetch(j, "loja", "sp", "git", "commit3", "t3");
	journal_record_render(j, "loja", "sp", "c3aa", "json", 10, "t3", "");
	/* c1 again, then c3 again: each counts once, at its newest render */
	journal_record_render(j, "loja", "sp", "c1cc", "json", 10, "t1", "");
	journal_record_render(j, "loja", "sp", "c3aa", "json", 10, "t3", "");
	journal_record_render(j, "outra", "rj", "d1", "json", 10, "", "");

	is_int(journal_versions_each(j, "loja", "sp", 10, seen_version, seen), 3,
	    "three versions");
	is_str(seen, "c3aa@commit3 c1cc@commit1 c2bb@commit2 ",
	    "newest first, each with its commit");
	for (size_t i = 0; i < sizeof(finds) / sizeof(finds[0]); i++) {
		int rc = journal_version_find(j, "loja", "sp", finds[i].prefix, finds[i].steps,
		    finds[i].limit, &v);

		ok(rc == finds[i].rc && (finds[i].hash == NULL ||
		    strcmp(v.content_hash, finds[i].hash) == 0), "find: %s (rc %d)",
		    finds[i].label, rc);
	}
	ok(journal_version_find(j, "loja", "sp", "c2", 0, 10, &v) == 0 &&
	    strcmp(v.format, "bin") == 0 && strcmp(v.bin_hash, "b2") == 0,
	    "a bin version carries its bin hash");
	seen[0] = '\0';
	ok(journal_versions_referenced(j, 2, seen_hash, seen) == 0, "kept hashes");
	ok(strstr(seen, "c3aa ") != NULL && strstr(seen, "c1cc ") != NULL &&
	    strstr(seen, "d1 ") != NULL, "the newest two of each decofile are kept: %s", seen);
	ok(strstr(seen, "c2bb") == NULL && strstr(seen, "b2") == NULL,
	    "the third (and its bin blob) is not");
	seen[0] = '\0';
	journal_versions_referenced(j, 3, seen_hash, seen);
	ok(strstr(seen, "c2bb ") != NULL && strstr(seen, "b2 ") != NULL,
	    "history_keep 3 keeps it, with its bin blob");
	journal_close(j);
	rm_rf(dir);
	return done_testing();
}
