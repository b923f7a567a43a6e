/*
 * testtool - the one driver the stages' integration tests use to write
 * what decoctl and the upstream stages would write, so each stage can run
 * alone: a resource in the store, a blob in the spool, an item in the
 * journal, a sync trigger; and to read a status back.  Test-only: built by
 * `make check`, never installed.
 *
 *   testtool -c CONF apply FILE                  (a JSON resource)
 *   testtool -c CONF delete NS NAME              (a Decofile)
 *   testtool -c CONF sync NS NAME                (the "fetch now" trigger)
 *   testtool -c CONF status NS NAME [STAGE]      (merged status, or one stage's fragment)
 *   testtool -c CONF spool FILE                  (prints the blob's hash)
 *   testtool -c CONF enqueue STAGE NS NAME HASH DETAIL [KIND]   (prints the item id)
 *   testtool -c CONF fields NS NAME STAGE JSON   (a stage's status fields)
 *   testtool -c CONF condition NS NAME STAGE TYPE STATUS REASON MESSAGE
 *   testtool -c CONF burst NS NAME TYPE STATUS REASON MESSAGE STAGE...
 *                                                (condition TYPE-STAGE in each
 *                                                 stage's fragment, back to back,
 *                                                 not journaled)
 *   testtool -c CONF fetch|render|publish|ack|drift|audit|inventory ...
 *                                                (journal rows, for decoctl's tests)
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

static int
usage(void)
{
	fprintf(stderr, "usage: testtool -c CONF apply FILE | delete NS NAME | sync NS NAME |\n"
	    "       status NS NAME [STAGE] | spool FILE | enqueue STAGE NS NAME HASH DETAIL [KIND] |\n"
	    "       fields NS NAME STAGE JSON |\n"
	    "       condition NS NAME STAGE TYPE STATUS REASON MESSAGE |\n"
	    "       burst NS NAME TYPE STATUS REASON MESSAGE STAGE... |\n"
	    "       fetch NS NAME SOURCE COMMIT TREE | render NS NAME HASH FORMAT SIZE |\n"
	    "       publish NS NAME TARGET LOCATION HASH TS | ack NS NAME REPLICA HASH TS RESULT |\n"
	    "       drift NS NAME LOCATION DETAIL | audit STAGE OBJECT ACTION DETAIL |\n"
	    "       inventory NS NAME TARGET LOCATION HASH | rawput KIND NS NAME FILE\n");
	return 2;
}

static struct journal *
open_journal(struct conf *cf)
{
	char path[4096], err[512];
	struct journal *j;

	snprintf(path, sizeof(path), "%s/journal.db", conf_get(cf, "state_dir"));
	if (mkdir_p(conf_get(cf, "state_dir"), 0700) < 0 ||
	    (j = journal_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "journal %s: cannot open\n", path);
		return NULL;
	}
	return j;
}

/*
 * record - one journal row of the kind cmd names (argc checked); 0 ok,
 * 1 failed, 2 not a record command or wrong argument count.
 */
static int
record(struct conf *cf, int argc, char **a)
{
	static const struct { const char *cmd; int argc; } rows[] = {
		{ "fetch", 7 }, { "render", 7 }, { "publish", 8 }, { "ack", 8 },
		{ "drift", 6 }, { "audit", 6 }, { "inventory", 7 },
	};
	const char *cmd = a[1];
	struct journal *j;
	size_t i;
	int rc = -1;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (strcmp(cmd, rows[i].cmd) == 0)
			break;
	if (i == sizeof(rows) / sizeof(rows[0]) || argc != rows[i].argc)
		return 2;
	if ((j = open_journal(cf)) == NULL)
		return 1;
	if (strcmp(cmd, "fetch") == 0)
		rc = journal_record_fetch(j, a[2], a[3], a[4], a[5], a[6]);
	else if (strcmp(cmd, "render") == 0)
		rc = journal_record_render(j, a[2], a[3], a[4], a[5], (size_t)atol(a[6]), "", "");
	else if (strcmp(cmd, "publish") == 0)
		rc = journal_record_publish(j, a[2], a[3], a[4], a[5], a[6], atoll(a[7]));
	else if (strcmp(cmd, "ack") == 0)
		rc = journal_record_ack(j, a[2], a[3], a[4], a[5], atoll(a[6]), a[7]);
	else if (strcmp(cmd, "drift") == 0)
		rc = journal_record_drift(j, a[2], a[3], a[4], a[5]);
	else if (strcmp(cmd, "audit") == 0)
		rc = journal_audit(j, a[2], a[3], a[4], a[5]);
	else
		rc = journal_inventory_put(j, a[2], a[3], a[4], a[5], a[6]);
	if (rc < 0)
		fprintf(stderr, "testtool %s: %s\n", cmd, journal_error(j));
	journal_close(j);
	return rc < 0;
}

static struct store *
open_store(struct conf *cf)
{
	char err[512];
	struct store *s;

	keys_set_prefix(conf_get(cf, "store_prefix"));
	if ((s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL)
		fprintf(stderr, "testtool: %s\n", err);
	return s;
}

static int
apply(struct store *s, const char *file)
{
	char err[512], plural[254], ns[254], name[254];
	struct json_error je;
	yajl_val doc;
	size_t len;
	char *text;
	int rv = 1;

	if ((text = read_file(file, &len, 0)) == NULL) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		return 1;
	}
	if ((doc = json_parse(text, len, &je)) == NULL)
		fprintf(stderr, "%s:%d:%d: %s\n", file, je.line, je.column, je.msg);
	else if (resource_put(s, doc, "default", NULL, plural, ns, name, err, sizeof(err)) < 0)
		fprintf(stderr, "apply: %s\n", err);
	else
		rv = 0;
	yajl_tree_free(doc);
	free(text);
	return rv;
}

static int
status(struct store *s, const char *ns, const char *name, const char *stage)
{
	struct buf b;
	struct jw w;
	yajl_val frag;
	int rv = 0;

	buf_init(&b);
	if (stage != NULL) {
		frag = status_get_fragment(s, "decofiles", ns, name, stage);
		jw_init(&w, &b);
		jw_value(&w, frag);
		yajl_tree_free(frag);
	} else if (resource_status_merged(s, "decofiles", ns, name, &b) < 0) {
		fprintf(stderr, "status: %s\n", store_error(s));
		rv = 1;
	}
	if (rv == 0)
		printf("%s\n", b.data);
	buf_free(&b);
	return rv;
}

static int
spool(struct conf *cf, const char *file)
{
	char path[4096], hash[65];
	struct spool *sp;
	size_t len;
	char *data;
	int rv = 1;

	if ((data = read_file(file, &len, 0)) == NULL) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/spool", conf_get(cf, "state_dir"));
	if ((sp = spool_open(path)) != NULL && spool_put(sp, data, len, hash) == 0) {
		printf("%s\n", hash);
		rv = 0;
	} else {
		fprintf(stderr, "spool %s: %s\n", path, strerror(errno));
	}
	spool_close(sp);
	free(data);
	return rv;
}

static int
enqueue(struct conf *cf, char **a)
{
	struct journal *j;
	int64_t id;

	if ((j = open_journal(cf)) == NULL)
		return 1;
	if ((id = journal_item_add(j, a[0], a[5] != NULL ? a[5] : "decofile", a[1], a[2], a[3],
	    a[4])) < 0)
		fprintf(stderr, "enqueue: %s\n", journal_error(j));
	else
		printf("%lld\n", (long long)id);
	journal_close(j);
	return id < 0;
}

/*
 * rawput - FILE's bytes as the resource kind/ns/name, unchecked: what a
 * store client other than decoctl (an etcd client, an older decod) may
 * leave there, for the stages' hostile-input tests
 */
static int
rawput(struct store *s, char **a)
{
	size_t len;
	char *text = read_file(a[3], &len, 0), *key;
	int rv;

	if (text == NULL) {
		fprintf(stderr, "rawput: %s: %s\n", a[3], strerror(errno));
		return 1;
	}
	key = key_resource(a[0], a[1], a[2]);
	rv = store_put(s, key, text, len) < 0;
	free(key);
	free(text);
	return rv;
}

/* trigger - write a fresh nonce to the "fetch now" key */
static int
trigger(struct store *s, const char *ns, const char *name)
{
	unsigned char r[8];
	char nonce[17], *key = key_sync(ns, name);
	int rv;

	random_bytes(r, sizeof(r));
	hex_encode(r, sizeof(r), nonce);
	rv = store_put(s, key, nonce, strlen(nonce)) < 0;
	free(key);
	return rv;
}

int
main(int argc, char **argv)
{
	struct conf *cf;
	struct store *s = NULL;
	const char *cmd;
	int rv = 2;

	if ((cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	cmd = argc > 1 ? argv[1] : "";
	if (argc == 3 && strcmp(cmd, "spool") == 0)
		rv = spool(cf, argv[2]);
	else if ((argc == 7 || argc == 8) && strcmp(cmd, "enqueue") == 0)
		rv = enqueue(cf, argv + 2);
	else if (argc > 1 && (rv = record(cf, argc, argv)) != 2)
		;	/* a journal row */
	else if ((argc == 6 && strcmp(cmd, "fields") == 0) ||
	    (argc == 9 && strcmp(cmd, "condition") == 0)) {
		struct journal *j = NULL;

		if ((s = open_store(cf)) == NULL)
			rv = 1;
		else if (strcmp(cmd, "fields") == 0)
			rv = status_set_fields(s, "decofiles", argv[2], argv[3], argv[4],
			    argv[5]) < 0;
		else {
			j = open_journal(cf);
			rv = status_set_condition(s, j, "decofiles", argv[2], argv[3], argv[4],
			    argv[5], argv[6], argv[7], argv[8]) < 0;
			journal_close(j);
		}
	}
	else if (argc >= 9 && strcmp(cmd, "burst") == 0) {
		/*
		 * one process, the fragments of several stages built first and
		 * then put back to back (store_put_many_volatile, as stages put
		 * theirs; not journaled), so they land microseconds apart
		 */
		int n = argc - 8;
		char **keys = xcalloc((size_t)n, sizeof(*keys));
		char **vals = xcalloc((size_t)n, sizeof(*vals));
		size_t *lens = xcalloc((size_t)n, sizeof(*lens));

		if ((s = open_store(cf)) == NULL)
			rv = 1;
		else {
			rv = 0;
			for (int i = 0; i < n && rv == 0; i++) {
				char type[128], *old = NULL;
				size_t olen = 0;

				keys[i] = key_status("decofiles", argv[2], argv[3], argv[8 + i]);
				if (store_get(s, keys[i], &old, &olen) < 0)
					rv = 1;
				snprintf(type, sizeof(type), "%s-%s", argv[4], argv[8 + i]);
				if (rv == 0 && (vals[i] = status_fragment_build(old, old != NULL ? olen : 0,
				    NULL, type, argv[5], argv[6], argv[7], NULL, NULL)) == NULL)
					rv = 1;
				if (vals[i] != NULL)
					lens[i] = strlen(vals[i]);
				free(old);
			}
			if (rv == 0 && store_put_many_volatile(s, (const char *const *)keys,
			    (const char *const *)vals, lens, (size_t)n) < 0)
				rv = 1;
		}
		for (int i = 0; i < n; i++) {
			free(keys[i]);
			free(vals[i]);
		}
		free(keys);
		free(vals);
		free(lens);
	} else if (argc == 6 && strcmp(cmd, "rawput") == 0) {
		if ((s = open_store(cf)) == NULL)
			rv = 1;
		else
			rv = rawput(s, argv + 2);
	} else if ((argc == 3 && strcmp(cmd, "apply") == 0) ||
	    (argc == 4 && (strcmp(cmd, "delete") == 0 || strcmp(cmd, "sync") == 0)) ||
	    ((argc == 4 || argc == 5) && strcmp(cmd, "status") == 0)) {
		if ((s = open_store(cf)) == NULL)
			rv = 1;
		else if (strcmp(cmd, "apply") == 0)
			rv = apply(s, argv[2]);
		else if (strcmp(cmd, "sync") == 0)
			rv = trigger(s, argv[2], argv[3]);
		else if (strcmp(cmd, "status") == 0)
			rv = status(s, argv[2], argv[3], argc == 5 ? argv[4] : NULL);
		else {
			char *key = key_resource("decofiles", argv[2], argv[3]);

			rv = store_delete(s, key) < 0;
			free(key);
		}
	} else {
		rv = usage();
	}
	store_close(s);
	conf_free(cf);
	return rv;
}
