/*
 * notify_testtool - a driver for the notifier's integration tests (built
 * by `make check`, never installed).  With the stages' own config file it
 * writes what decoctl and the publisher would write (a Decofile in the
 * store, a rendered document in the spool, a notifier item in the
 * journal) and reads back the merged status, so the notifier runs alone.
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
	fprintf(stderr, "usage: notify_testtool -c CONF apply FILE\n"
	    "       notify_testtool -c CONF spool FILE         (prints the hash)\n"
	    "       notify_testtool -c CONF enqueue NS NAME HASH DETAIL (prints the id)\n"
	    "       notify_testtool -c CONF status NS NAME     (merged status JSON)\n");
	return 2;
}

static struct store *
store_from(struct conf *cf)
{
	char err[512];
	struct store *s;

	keys_set_prefix(conf_get(cf, "store_prefix"));
	if ((s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL)
		fprintf(stderr, "store: %s\n", err);
	return s;
}

static int
apply(struct conf *cf, const char *file)
{
	char err[512], plural[254], ns[254], name[254];
	struct json_error je;
	struct store *s;
	yajl_val doc;
	size_t len;
	char *text;
	int rv = 1;

	if ((text = read_file(file, &len, 0)) == NULL) {
		perror(file);
		return 1;
	}
	if ((doc = json_parse(text, len, &je)) == NULL)
		fprintf(stderr, "%s:%d:%d: %s\n", file, je.line, je.column, je.msg);
	else if ((s = store_from(cf)) != NULL) {
		rv = resource_put(s, doc, "default", NULL, plural, ns, name, err, sizeof(err));
		if (rv < 0)
			fprintf(stderr, "apply: %s\n", err);
		store_close(s);
	}
	yajl_tree_free(doc);
	free(text);
	return rv != 0;
}

static int
spool(struct conf *cf, const char *file)
{
	char path[4096], hash[65];
	struct spool *sp;
	size_t len;
	char *data;
	int rv = -1;

	if ((data = read_file(file, &len, 0)) == NULL) {
		perror(file);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/spool", conf_get(cf, "state_dir"));
	if ((sp = spool_open(path)) != NULL && (rv = spool_put(sp, data, len, hash)) == 0)
		printf("%s\n", hash);
	spool_close(sp);
	free(data);
	return rv < 0;
}

static int
enqueue(struct conf *cf, char **a)
{
	char path[4096], err[512];
	struct journal *j;
	int64_t id;

	snprintf(path, sizeof(path), "%s/journal.db", conf_get(cf, "state_dir"));
	if (mkdir_p(conf_get(cf, "state_dir"), 0700) < 0 ||
	    (j = journal_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "journal %s: cannot open\n", path);
		return 1;
	}
	if ((id = journal_item_add(j, "notifier", "decofile", a[0], a[1], a[2], a[3])) < 0)
		fprintf(stderr, "enqueue: %s\n", journal_error(j));
	else
		printf("%lld\n", (long long)id);
	journal_close(j);
	return id < 0;
}

static int
status(struct conf *cf, const char *ns, const char *name)
{
	struct store *s;
	struct buf b;
	int rv;

	if ((s = store_from(cf)) == NULL)
		return 1;
	buf_init(&b);
	if ((rv = resource_status_merged(s, "decofiles", ns, name, &b)) == 0)
		printf("%s\n", b.data);
	buf_free(&b);
	store_close(s);
	return rv < 0;
}

int
main(int argc, char **argv)
{
	struct conf *cf;
	int rv;

	if ((cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	if (argc == 3 && strcmp(argv[1], "apply") == 0)
		rv = apply(cf, argv[2]);
	else if (argc == 3 && strcmp(argv[1], "spool") == 0)
		rv = spool(cf, argv[2]);
	else if (argc == 6 && strcmp(argv[1], "enqueue") == 0)
		rv = enqueue(cf, argv + 2);
	else if (argc == 4 && strcmp(argv[1], "status") == 0)
		rv = status(cf, argv[2], argv[3]);
	else
		rv = usage();
	conf_free(cf);
	return rv;
}
