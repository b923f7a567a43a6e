/*
 * cli_testtool - a test driver for decoctl's tests (not installed): writes
 * status fragments and journal rows through the same functions the stages
 * use (status_set_fields, status_set_condition, journal_record_*), so the
 * readers in decoctl are checked against the real formats.
 *   cli_testtool -c CONF fields NS NAME STAGE JSON
 *   cli_testtool -c CONF condition NS NAME STAGE TYPE STATUS REASON MESSAGE
 *   cli_testtool -c CONF fetch|render|publish|ack|drift|audit|inventory ARGS...
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

static struct journal *
open_journal(struct conf *cf)
{
	char err[512], *path;
	struct journal *j;

	mkdir_p(conf_get(cf, "state_dir"), 0700);
	path = xasprintf("%s/journal.db", conf_get(cf, "state_dir"));
	if ((j = journal_open(path, err, sizeof(err))) == NULL)
		fprintf(stderr, "cli_testtool: %s\n", err);
	free(path);
	return j;
}

static struct store *
open_store(struct conf *cf)
{
	char err[512];
	struct store *s;

	keys_set_prefix(conf_get(cf, "store_prefix"));
	if ((s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL)
		fprintf(stderr, "cli_testtool: %s\n", err);
	return s;
}

static int
need(int argc, int n, const char *usage)
{
	if (argc == n)
		return 0;
	fprintf(stderr, "usage: cli_testtool -c CONF %s\n", usage);
	return -1;
}

int
main(int argc, char **argv)
{
	struct conf *cf = conf_from_args(&argc, argv);
	struct journal *j = NULL;
	struct store *s = NULL;
	const char *cmd;
	int rc = -1;

	if (cf == NULL || argc < 2)
		return 2;
	cmd = argv[1];
	if (strcmp(cmd, "fields") == 0) {
		if (need(argc, 6, "fields NS NAME STAGE JSON") < 0 || (s = open_store(cf)) == NULL)
			goto out;
		rc = status_set_fields(s, "decofiles", argv[2], argv[3], argv[4], argv[5]);
	} else if (strcmp(cmd, "condition") == 0) {
		if (need(argc, 9, "condition NS NAME STAGE TYPE STATUS REASON MESSAGE") < 0 ||
		    (s = open_store(cf)) == NULL)
			goto out;
		j = open_journal(cf);
		rc = status_set_condition(s, j, "decofiles", argv[2], argv[3], argv[4], argv[5],
		    argv[6], argv[7], argv[8]) < 0 ? -1 : 0;
	} else {
		if ((j = open_journal(cf)) == NULL)
			goto out;
		if (strcmp(cmd, "fetch") == 0 && need(argc, 7, "fetch NS NAME SOURCE COMMIT TREE") == 0)
			rc = journal_record_fetch(j, argv[2], argv[3], argv[4], argv[5], argv[6]);
		else if (strcmp(cmd, "render") == 0 &&
		    need(argc, 7, "render NS NAME HASH FORMAT SIZE") == 0)
			rc = journal_record_render(j, argv[2], argv[3], argv[4], argv[5],
			    (size_t)atol(argv[6]), "", "");
		else if (strcmp(cmd, "publish") == 0 &&
		    need(argc, 8, "publish NS NAME TARGET LOCATION HASH TS") == 0)
			rc = journal_record_publish(j, argv[2], argv[3], argv[4], argv[5], argv[6],
			    atoll(argv[7]));
		else if (strcmp(cmd, "ack") == 0 &&
		    need(argc, 8, "ack NS NAME REPLICA HASH TS RESULT") == 0)
			rc = journal_record_ack(j, argv[2], argv[3], argv[4], argv[5], atoll(argv[6]),
			    argv[7]);
		else if (strcmp(cmd, "drift") == 0 && need(argc, 6, "drift NS NAME LOCATION DETAIL") == 0)
			rc = journal_record_drift(j, argv[2], argv[3], argv[4], argv[5]);
		else if (strcmp(cmd, "audit") == 0 &&
		    need(argc, 6, "audit STAGE OBJECT ACTION DETAIL") == 0)
			rc = journal_audit(j, argv[2], argv[3], argv[4], argv[5]);
		else if (strcmp(cmd, "inventory") == 0 &&
		    need(argc, 7, "inventory NS NAME TARGET LOCATION HASH") == 0)
			rc = journal_inventory_put(j, argv[2], argv[3], argv[4], argv[5], argv[6]);
		if (rc < 0)
			fprintf(stderr, "cli_testtool %s: %s\n", cmd, journal_error(j));
	}
	if (rc < 0 && s != NULL)
		fprintf(stderr, "cli_testtool %s: %s\n", cmd, store_error(s));
out:
	if (j)
		journal_close(j);
	store_close(s);
	conf_free(cf);
	return rc < 0 ? 1 : 0;
}
