/*
 * fetch_testtool - a small driver for the fetcher's integration tests
 * (built by `make check`, never installed): it writes what decoctl would
 * write -- a Decofile, its deletion, a sync trigger -- and reads the
 * fetcher's status fragment, using the same config file as the stage.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

static int
usage(void)
{
	fprintf(stderr, "usage: fetch_testtool -c CONF apply FILE\n"
	    "       fetch_testtool -c CONF delete NS NAME\n"
	    "       fetch_testtool -c CONF sync NS NAME\n"
	    "       fetch_testtool -c CONF status NS NAME   (the fetcher's fragment)\n");
	return 2;
}

int
main(int argc, char **argv)
{
	char err[512], plural[254], ns[254], name[254];
	struct conf *cf;
	struct store *s;
	yajl_val doc;
	size_t len;
	char *text, *key;
	int rv = 1;

	if ((cf = conf_from_args(&argc, argv)) == NULL)
		return 2;
	if (argc < 3)
		return usage();
	keys_set_prefix(conf_get(cf, "store_prefix"));
	if ((s = store_open(conf_get(cf, "store"), cf, err, sizeof(err))) == NULL) {
		fprintf(stderr, "store: %s\n", err);
		return 1;
	}
	if (strcmp(argv[1], "apply") == 0) {
		if ((text = read_file(argv[2], &len, 0)) == NULL ||
		    (doc = json_parse(text, len, NULL)) == NULL) {
			fprintf(stderr, "%s: cannot read JSON\n", argv[2]);
		} else {
			rv = resource_put(s, doc, "default", NULL, plural, ns, name, err,
			    sizeof(err)) < 0;
			if (rv)
				fprintf(stderr, "apply: %s\n", err);
			yajl_tree_free(doc);
		}
		free(text);
	} else if (strcmp(argv[1], "delete") == 0 && argc == 4) {
		key = key_resource("decofiles", argv[2], argv[3]);
		rv = store_delete(s, key) < 0;
		free(key);
	} else if (strcmp(argv[1], "sync") == 0 && argc == 4) {
		unsigned char r[8];
		char nonce[17];

		random_bytes(r, sizeof(r));
		hex_encode(r, sizeof(r), nonce);
		key = key_sync(argv[2], argv[3]);
		rv = store_put(s, key, nonce, strlen(nonce)) < 0;
		free(key);
	} else if (strcmp(argv[1], "status") == 0 && argc == 4) {
		struct buf b;
		struct jw w;

		doc = status_get_fragment(s, "decofiles", argv[2], argv[3], "fetcher");
		buf_init(&b);
		jw_init(&w, &b);
		jw_value(&w, doc);
		printf("%s\n", b.data);
		buf_free(&b);
		yajl_tree_free(doc);
		rv = 0;
	} else {
		rv = usage();
	}
	store_close(s);
	conf_free(cf);
	return rv;
}
