/* objtab_test - the publisher's object table: put, get, delete, growth, walks */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemons/publisher/objtab.h"
#include "t/tap.h"

#define MANY 5000

int
main(void)
{
	static const struct {
		const char *label, *ns, *name;
	} rows[] = {
		{ "plain", "sites-loja", "loja" },
		{ "same name, other namespace", "sites-casa", "loja" },
		{ "accented", "sites-ação", "coração" },
		{ "spaced", "my ns", "a name with spaces" },
		{ "split differs", "ab", "c" },
		{ "split differs (other side)", "a", "bc" },
		{ "empty name", "ns", "" },
	};
	size_t n = sizeof(rows) / sizeof(rows[0]), cursor, seen;
	struct objtab *t = objtab_new();
	int vals[MANY], *v, bad;
	char ns[64], name[64];

	is_int((int)objtab_len(t), 0, "a new table is empty");
	ok(objtab_get(t, "sites-loja", "loja") == NULL, "nothing found in an empty table");
	for (size_t i = 0; i < n; i++)
		objtab_put(t, rows[i].ns, rows[i].name, &vals[i]);
	is_int((int)objtab_len(t), (int)n, "one key per row");
	for (size_t i = 0; i < n; i++)
		ok(objtab_get(t, rows[i].ns, rows[i].name) == &vals[i], "%s: found", rows[i].label);
	ok(objtab_get(t, "sites-ação", "coracao") == NULL, "an unaccented spelling is another key");
	ok(objtab_get(t, "abc", "") == NULL, "ns+name joined is not a key");

	objtab_put(t, "sites-loja", "loja", &vals[100]);
	is_int((int)objtab_len(t), (int)n, "a put of a held key replaces, not adds");
	ok(objtab_get(t, "sites-loja", "loja") == &vals[100], "the new value is found");

	ok(objtab_del(t, "my ns", "a name with spaces") == &vals[3], "delete returns the value");
	ok(objtab_get(t, "my ns", "a name with spaces") == NULL, "a deleted key is gone");
	ok(objtab_del(t, "my ns", "a name with spaces") == NULL, "deleting it again finds nothing");
	is_int((int)objtab_len(t), (int)n - 1, "one fewer key");
	ok(objtab_get(t, "sites-ação", "coração") == &vals[2], "the others stay");
	objtab_put(t, "my ns", "a name with spaces", &vals[3]);
	ok(objtab_get(t, "my ns", "a name with spaces") == &vals[3], "put back after a delete");
	objtab_free(t);

	/* growth: many keys, all found, across many rehashes */
	t = objtab_new();
	for (int i = 0; i < MANY; i++) {
		vals[i] = i;
		snprintf(ns, sizeof(ns), "ns-%d é", i % 37);
		snprintf(name, sizeof(name), "decofile %d", i);
		objtab_put(t, ns, name, &vals[i]);
	}
	is_int((int)objtab_len(t), MANY, "%d keys held", MANY);
	bad = 0;
	for (int i = 0; i < MANY; i++) {
		snprintf(ns, sizeof(ns), "ns-%d é", i % 37);
		snprintf(name, sizeof(name), "decofile %d", i);
		v = objtab_get(t, ns, name);
		bad += v == NULL || *v != i;
	}
	is_int(bad, 0, "every key finds its own value after growing");

	/* a walk that deletes every other value as it goes meets each once */
	cursor = 0;
	seen = 0;
	bad = 0;
	while ((v = objtab_next(t, &cursor)) != NULL) {
		if (*v < 0)
			bad++;
		seen++;
		if (*v % 2 == 0) {
			snprintf(ns, sizeof(ns), "ns-%d é", *v % 37);
			snprintf(name, sizeof(name), "decofile %d", *v);
			bad += objtab_del(t, ns, name) != v;
		}
		*v = -1 - *v;	/* met */
	}
	is_int((int)seen, MANY, "the walk met every value");
	is_int(bad, 0, "none twice, each deleted value was its own");
	is_int((int)objtab_len(t), MANY / 2, "half the keys left");
	bad = 0;
	for (int i = 0; i < MANY; i++) {
		snprintf(ns, sizeof(ns), "ns-%d é", i % 37);
		snprintf(name, sizeof(name), "decofile %d", i);
		v = objtab_get(t, ns, name);
		bad += i % 2 == 0 ? v != NULL : v != &vals[i];
	}
	is_int(bad, 0, "deleted keys gone, the others found");

	/* tombstones do not fill the table: churn many times its size */
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < MANY; i += 2) {
			snprintf(ns, sizeof(ns), "churn %d", round);
			snprintf(name, sizeof(name), "%d", i);
			objtab_put(t, ns, name, &vals[i]);
		}
		for (int i = 0; i < MANY; i += 2) {
			snprintf(ns, sizeof(ns), "churn %d", round);
			snprintf(name, sizeof(name), "%d", i);
			objtab_del(t, ns, name);
		}
	}
	is_int((int)objtab_len(t), MANY / 2, "put and delete churn leaves the count");
	snprintf(ns, sizeof(ns), "ns-%d é", 1 % 37);
	ok(objtab_get(t, ns, "decofile 1") == &vals[1], "an old key is still found after churn");
	cursor = 0;
	seen = 0;
	while (objtab_next(t, &cursor) != NULL)
		seen++;
	is_int((int)seen, MANY / 2, "a walk meets exactly the live keys");
	objtab_free(t);
	objtab_free(NULL);
	return done_testing();
}
