/*
 * fuzz_manifest - the tree manifest the renderer reads from the spool
 * (proto/PROTOCOL.md §3): the renderer's own loader, render_tree_load,
 * over a real spool in a temporary folder; a manifest that loads is then
 * merged.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/spool.h"
#include "common/util.h"
#include "daemons/renderer/render_merge.h"
#include "daemons/renderer/render_tree.h"
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
	static struct spool *sp;
	static char *dir;
	static const char blob[] = "{\"title\": \"x\"}";
	char hash[SHA256_HEX_LEN + 1], bhash[SHA256_HEX_LEN + 1], why[512];
	struct render_error e;
	struct render_tree t;
	struct buf out;
	int missing;

	if (sp == NULL) {
		if ((dir = mkdtemp(tmpl("manifest"))) == NULL || (sp = spool_open(dir)) == NULL)
			abort();
		/* one blob manifests may name */
		if (spool_put(sp, blob, sizeof(blob) - 1, bhash) < 0)
			abort();
	}
	if (spool_put(sp, data, size, hash) < 0)
		return 0;
	if (render_tree_load(sp, hash, RENDER_LAYER_OWN, &t, &missing, why, sizeof(why)) < 0) {
		fuzz_check(why[0] != '\0', "a refusal says why");
	} else {
		buf_init(&out);
		if (render_merge(t.in, t.n, &out, NULL, &e) == 0)
			fuzz_check(json_validate(out.data, out.len, NULL) == 0,
			    "merged is JSON");
		buf_free(&out);
		render_tree_free(&t);
	}
	/* one file per input would fill the disk: drop it again */
	if (strcmp(hash, bhash) != 0 && spool_path(sp, hash, why, sizeof(why)) == 0)
		unlink(why);
	return 0;
}
