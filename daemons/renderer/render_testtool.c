/*
 * render_testtool - what the renderer's integration test needs from the
 * shared code, through the same config file the stage reads: put a
 * resource into the store, a file into the spool, and print a resource's
 * merged status.  A test helper, not installed.
 *
 *   render_testtool -c CONF apply FILE      (a resource, as decoctl apply)
 *   render_testtool -c CONF spool FILE      (prints the blob's hash)
 *   render_testtool -c CONF status NS NAME  (merged status JSON)
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

static int
die(const char *what, const char *why)
{
	fprintf(stderr, "render_testtool: %s: %s\n", what, why);
	return 1;
}

int
main(int argc, char **argv)
{
	char err[512], plural[64], ns[256], name[256], path[4096], hash[65];
	struct conf *cf;
	struct store *s;
	struct json_error je;
	struct spool *sp;
	struct buf b;
	yajl_val doc;
	size_t len;
	char *data;

	if ((cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	if (argc < 3)
		return die("usage", "render_testtool -c CONF apply FILE | spool FILE | status NS NAME");
	if (strcmp(argv[1], "spool") == 0) {
		snprintf(path, sizeof(path), "%s/spool", conf_get(cf, "state_dir"));
		if ((sp = spool_open(path)) == NULL)
			return die(path, strerror(errno));
		if ((data = read_file(argv[2], &len, 0)) == NULL)
			return die(argv[2], strerror(errno));
		if (spool_put(sp, data, len, hash) < 0)
			return die("spool_put", strerror(errno));
		printf("%s\n", hash);
		return 0;
	}
	keys_set_prefix(conf_get(cf, "store_prefix"));
	if ((s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL)
		return die("store", err);
	if (strcmp(argv[1], "apply") == 0) {
		if ((data = read_file(argv[2], &len, 0)) == NULL)
			return die(argv[2], strerror(errno));
		if ((doc = json_parse(data, len, &je)) == NULL)
			return die(argv[2], je.msg);
		if (resource_put(s, doc, "default", NULL, plural, ns, name, err, sizeof(err)) < 0)
			return die("apply", err);
		printf("%s/%s/%s\n", plural, ns, name);
		return 0;
	}
	if (strcmp(argv[1], "status") == 0 && argc == 4) {
		buf_init(&b);
		if (resource_status_merged(s, "decofiles", argv[2], argv[3], &b) < 0)
			return die("status", "cannot read");
		printf("%s\n", b.data);
		return 0;
	}
	return die("usage", "unknown command");
}
