/*
 * fetch_dir_test - the dir source on real folders: keys and paths in the
 * manifest, blobs in the spool, ignored files, symbolic links inside and
 * outside the folder, link loops, size caps, and a stable tree hash.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/json.h"
#include "common/spool.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_dir.h"
#include "t/tap.h"

static char top[256];

static void
put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", top, rel), *slash;

	slash = strrchr(p, '/');
	*slash = '\0';
	mkdir_p(p, 0700);
	*slash = '/';
	write_file_atomic(p, text, strlen(text), 0600);
	free(p);
}

static void
link_to(const char *target, const char *rel)
{
	char *p = xasprintf("%s/%s", top, rel);

	if (symlink(target, p) < 0)
		perror("symlink");
	free(p);
}

int
main(void)
{
	struct fetch_limits lim = { 1024, 4096, 0 };
	struct fetch_result res, again;
	struct spool *sp;
	char *root, *man, *blob;
	yajl_val doc, e;
	size_t len;

	snprintf(top, sizeof(top), "/tmp/fetch_dir_test.%ld", (long)getpid());
	root = xasprintf("%s/blocks", top);
	sp = spool_open(xasprintf("%s/spool", top));
	put("blocks/Header.json", "{\"a\": 1}");
	put("blocks/pages/Home%20Page.json", "[1, 2]");
	put("blocks/README.md", "not a block");
	put("blocks/.git/x.json", "{}");
	put("outside.json", "{\"secret\":1}");

	is_int(fetch_dir(sp, &lim, root, &res), 0, "a plain folder fetches");
	is_int((long long)res.entries, 2, "two blocks; README and .git ignored");
	is_str(res.commit, "", "no commit for dir");
	man = spool_get(sp, res.tree_hash, &len);
	ok(man != NULL, "manifest is in the spool under the tree hash");
	doc = json_parse(man, len, NULL);
	is_str(json_get_str(doc, "source", NULL), "dir", "manifest source");
	e = json_get(doc, "entries", NULL);
	ok(e && YAJL_IS_ARRAY(e) && e->u.array.len == 2, "manifest has two entries");
	if (e && YAJL_IS_ARRAY(e) && e->u.array.len == 2) {
		is_str(json_get_str(e->u.array.values[0], "key", NULL), "Header", "sorted by key (1)");
		is_str(json_get_str(e->u.array.values[1], "key", NULL), "Home Page",
		    "key is form-decoded");
		is_str(json_get_str(e->u.array.values[1], "path", NULL), "pages/Home%20Page.json",
		    "path is the file's path in the folder");
		blob = spool_get(sp, json_get_str(e->u.array.values[0], "blob", NULL), &len);
		is_str(blob, "{\"a\": 1}", "the blob holds the file's exact bytes");
		free(blob);
	}
	yajl_tree_free(doc);
	free(man);
	is_int(fetch_dir(sp, &lim, root, &again), 0, "fetches again");
	is_str(again.tree_hash, res.tree_hash, "same folder, same tree hash");

	link_to("Header.json", "blocks/Alias.json");
	link_to("..", "blocks/pages/up");
	is_int(fetch_dir(sp, &lim, root, &res), 0, "links inside the folder are followed");
	is_int((long long)res.entries, 3, "a link to a block is a block; a loop is entered once");

	link_to("../outside.json", "blocks/Evil.json");
	is_int(fetch_dir(sp, &lim, root, &res), -1, "a link out of the folder is refused");
	is_str(res.reason, "FetchError", "reason FetchError");
	ok(strstr(res.error, "Evil.json") && strstr(res.error, "outside"),
	    "the error names the link (%s)", res.error);
	unlink(xasprintf("%s/blocks/Evil.json", top));

	put("blocks/Big.json", "[\"................................................\"]");
	lim.max_file = 16;
	is_int(fetch_dir(sp, &lim, root, &res), -1, "a file over the per-file cap fails");
	is_str(res.reason, "TooLarge", "reason TooLarge");
	ok(strstr(res.error, "Big.json") != NULL, "names the file (%s)", res.error);
	lim.max_file = 1024;
	lim.max_tree = 40;
	is_int(fetch_dir(sp, &lim, root, &res), -1, "a tree over max_tree_size fails");
	is_str(res.reason, "TooLarge", "reason TooLarge for the tree");
	lim.max_tree = 4096;

	put("blocks/bad%zz.json", "{}");
	is_int(fetch_dir(sp, &lim, root, &res), -1, "a malformed escape fails");
	ok(strstr(res.error, "bad%zz.json") != NULL, "names the file (%s)", res.error);

	is_int(fetch_dir(sp, &lim, "relative/path", &res), -1, "a relative path is refused");
	is_int(fetch_dir(sp, &lim, "/nonexistent/decod/blocks", &res), -1, "a missing folder fails");
	ok(strstr(res.error, "/nonexistent/decod/blocks") != NULL, "names it (%s)", res.error);

	spool_close(sp);
	rm_rf(top);
	return done_testing();
}
