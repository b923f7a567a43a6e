/*
 * publish_testtool - a small driver for the publisher's integration tests
 * (built by `make check`, never installed): it writes what the other stages
 * and decoctl would write -- a Decofile in the store, a blob in the spool,
 * a publisher item in the journal -- using the same config file, so the
 * publisher can be tested alone.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
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
	fprintf(stderr, "usage: publish_testtool -c CONF apply FILE\n"
	    "       publish_testtool -c CONF delete NS NAME\n"
	    "       publish_testtool -c CONF spool FILE      (prints the hash)\n"
	    "       publish_testtool -c CONF enqueue NS NAME HASH DETAIL\n");
	return 2;
}

static struct store *
open_store(struct conf *cf)
{
	char err[512];
	struct store *s;

	keys_set_prefix(conf_get(cf, "store_prefix"));
	if ((s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL)
		fprintf(stderr, "store: %s\n", err);
	return s;
}

static int
cmd_apply(struct conf *cf, const char *file)
{
	char err[512], plural[254], ns[254], name[254];
	struct json_error je;
	struct store *s;
	yajl_val doc;
	size_t len;
	char *text;
	int rv;

	if ((text = read_file(file, &len, 0)) == NULL) {
		perror(file);
		return 1;
	}
	if ((doc = json_parse(text, len, &je)) == NULL) {
		fprintf(stderr, "%s:%d:%d: %s\n", file, je.line, je.column, je.msg);
		free(text);
		return 1;
	}
	free(text);
	if ((s = open_store(cf)) == NULL) {
		yajl_tree_free(doc);
		return 1;
	}
	rv = resource_put(s, doc, "default", NULL, plural, ns, name, err, sizeof(err));
	if (rv < 0)
		fprintf(stderr, "apply: %s\n", err);
	yajl_tree_free(doc);
	store_close(s);
	return rv < 0;
}

static int
cmd_delete(struct conf *cf, const char *ns, const char *name)
{
	struct store *s;
	char *key;
	int rv;

	if ((s = open_store(cf)) == NULL)
		return 1;
	key = key_resource("decofiles", ns, name);
	if ((rv = store_delete(s, key)) < 0)
		fprintf(stderr, "delete: %s\n", store_error(s));
	free(key);
	store_close(s);
	return rv < 0;
}

static int
cmd_spool(struct conf *cf, const char *file)
{
	char path[4096], hash[65];
	struct spool *sp;
	size_t len;
	char *data;
	int rv;

	if ((data = read_file(file, &len, 0)) == NULL) {
		perror(file);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/spool", conf_get(cf, "state_dir"));
	if ((sp = spool_open(path)) == NULL) {
		perror(path);
		free(data);
		return 1;
	}
	if ((rv = spool_put(sp, data, len, hash)) == 0)
		printf("%s\n", hash);
	free(data);
	spool_close(sp);
	return rv < 0;
}

static int
cmd_enqueue(struct conf *cf, char **a)
{
	char path[4096], err[512];
	struct journal *j;
	int64_t id;

	snprintf(path, sizeof(path), "%s/journal.db", conf_get(cf, "state_dir"));
	if ((j = journal_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "journal: %s\n", err);
		return 1;
	}
	id = journal_item_add(j, "publisher", "decofile", a[0], a[1], a[2], a[3]);
	if (id < 0)
		fprintf(stderr, "enqueue: %s\n", journal_error(j));
	else
		printf("%lld\n", (long long)id);
	journal_close(j);
	return id < 0;
}

int
main(int argc, char **argv)
{
	struct conf *cf;
	int rv;

	if ((cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	if (argc >= 3 && strcmp(argv[1], "apply") == 0)
		rv = cmd_apply(cf, argv[2]);
	else if (argc >= 4 && strcmp(argv[1], "delete") == 0)
		rv = cmd_delete(cf, argv[2], argv[3]);
	else if (argc >= 3 && strcmp(argv[1], "spool") == 0)
		rv = cmd_spool(cf, argv[2]);
	else if (argc >= 6 && strcmp(argv[1], "enqueue") == 0)
		rv = cmd_enqueue(cf, argv + 2);
	else
		rv = usage();
	conf_free(cf);
	return rv;
}
