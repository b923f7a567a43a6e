/*
 * fuzz_store - store keys and values: the key parser and name checks on
 * the input as a key, then the input dropped in as a local store value
 * file (as a hand edit or a crash could leave it) and read back through
 * store_get, store_list and resource_get.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "t/fuzz/fuzz.h"

/* tmpl - a mkdtemp template under $TMPDIR (the tests point it at their folder) */
static char *
tmpl(const char *what)
{
	const char *t = getenv("TMPDIR");

	return xasprintf("%s/decod-fuzz-%s.XXXXXX", t != NULL && *t ? t : "/tmp", what);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *dir;
	static struct store *st;
	static char *vfile;
	char kind[254], ns[254], name[254], err[512], *key, *val, rel[2048];
	struct store_list l;
	size_t len;
	yajl_val doc;

	if (st == NULL) {
		char *spec;

		if ((dir = mkdtemp(tmpl("store"))) == NULL)
			abort();
		spec = xasprintf("local:%s", dir);
		if ((st = store_open(spec, NULL, err, sizeof(err))) == NULL)
			abort();
		free(spec);
		/* create the folders of /decod/decofiles/ns/x */
		key = key_resource("decofiles", "ns", "x");
		if (store_put(st, key, "{}", 2) < 0)
			abort();
		free(key);
		vfile = xasprintf("%s/kv/decod.d/decofiles.d/ns.d/x.v", dir);
	}
	/* the input as a key */
	key = xstrndup((const char *)data, size > 1024 ? 1024 : size);
	if (key_parse_resource(key, kind, ns, name) == 0)
		fuzz_check(strlen(kind) < 254 && strlen(ns) < 254 && strlen(name) < 254,
		    "parsed parts fit their buffers");
	(void)name_valid(key);
	(void)ns_valid(key);
	(void)label_value_valid(key);
	(void)url_has_credentials(key);
	(void)path_clean_rel(key, rel, sizeof(rel));
	free(key);
	/* the input as a value file (an expired one removes its folder) */
	*strrchr(vfile, '/') = '\0';
	(void)mkdir_p(vfile, 0700);
	vfile[strlen(vfile)] = '/';
	if (write_file_atomic(vfile, data, size, 0600) < 0)
		abort();
	key = key_resource("decofiles", "ns", "x");
	if (store_get(st, key, &val, &len) == 0)
		free(val);
	free(key);
	memset(&l, 0, sizeof(l));
	if (store_list(st, "/decod/decofiles/", &l) == 0)
		store_list_free(&l);
	if (resource_get(st, "decofiles", "ns", "x", &doc, err, sizeof(err)) == 0)
		yajl_tree_free(doc);
	return 0;
}
