/*
 * fetch_dir - reads a local folder of blocks.  The folder is walked with
 * lstat so that every symbolic link is checked (its real path must stay
 * inside the folder) and every folder is entered once (a link loop cannot
 * make the walk endless).  Only block files are read; other files cost
 * nothing.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "daemons/fetcher/fetch_dir.h"
#include "daemons/fetcher/fetch_keys.h"

#define MAX_DEPTH 64

struct walk {
	struct fetch_tree *t;
	struct fetch_result *res;
	char root[PATH_MAX];	/* real path of the root */
	size_t rootlen;
	struct { dev_t dev; ino_t ino; } *seen;	/* folders entered */
	size_t nseen, capseen;
};

static int
inside_root(const struct walk *wk, const char *real)
{
	if (strcmp(wk->root, "/") == 0)
		return 1;
	return strncmp(real, wk->root, wk->rootlen) == 0 &&
	    (real[wk->rootlen] == '/' || real[wk->rootlen] == '\0');
}

static int
seen_before(struct walk *wk, const struct stat *st)
{
	for (size_t i = 0; i < wk->nseen; i++)
		if (wk->seen[i].dev == st->st_dev && wk->seen[i].ino == st->st_ino)
			return 1;
	if (wk->nseen == wk->capseen) {
		wk->capseen = wk->capseen ? wk->capseen * 2 : 16;
		wk->seen = xrealloc(wk->seen, wk->capseen * sizeof(*wk->seen));
	}
	wk->seen[wk->nseen].dev = st->st_dev;
	wk->seen[wk->nseen].ino = st->st_ino;
	wk->nseen++;
	return 0;
}

static int walk_dir(struct walk *wk, const char *abs, const char *rel, int depth);

/* one file (already known to be regular) */
static int
walk_file(struct walk *wk, const char *abs, const char *rel, const struct stat *st)
{
	char key[1024];
	size_t len;
	char *data;
	int rc;

	rc = fetch_key_from_path(rel, key, sizeof(key), wk->res->error, sizeof(wk->res->error));
	if (rc == 1)
		return 0;
	if (rc < 0) {
		wk->res->reason = "FetchError";
		return -1;
	}
	if (fetch_tree_check_size(wk->t, rel, (uint64_t)st->st_size, wk->res) < 0)
		return -1;
	if ((data = read_file(abs, &len, 0)) == NULL)
		return fetch_result_error(wk->res, "FetchError", "%s: cannot read: %s", rel,
		    strerror(errno));
	rc = fetch_tree_add(wk->t, key, rel, data, len, wk->res);
	free(data);
	return rc;
}

static int
walk_entry(struct walk *wk, const char *abs, const char *rel, int depth)
{
	char real[PATH_MAX];
	struct stat st;

	if (lstat(abs, &st) < 0)
		return fetch_result_error(wk->res, "FetchError", "%s: %s", rel, strerror(errno));
	if (S_ISLNK(st.st_mode)) {
		if (realpath(abs, real) == NULL)
			return fetch_result_error(wk->res, "FetchError",
			    "%s: symbolic link cannot be resolved: %s", rel, strerror(errno));
		if (!inside_root(wk, real))
			return fetch_result_error(wk->res, "FetchError",
			    "%s: symbolic link points outside the source folder", rel);
		if (stat(real, &st) < 0)
			return fetch_result_error(wk->res, "FetchError", "%s: %s", rel,
			    strerror(errno));
	}
	if (S_ISDIR(st.st_mode)) {
		if (seen_before(wk, &st))
			return 0;
		return walk_dir(wk, abs, rel, depth + 1);
	}
	if (S_ISREG(st.st_mode))
		return walk_file(wk, abs, rel, &st);
	return 0;		/* fifos, sockets, devices: not blocks */
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
walk_dir(struct walk *wk, const char *abs, const char *rel, int depth)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	int rc = 0;

	if (depth > MAX_DEPTH)
		return fetch_result_error(wk->res, "FetchError",
		    "%s: folders nested deeper than %d", rel[0] ? rel : ".", MAX_DEPTH);
	if ((d = opendir(abs)) == NULL)
		return fetch_result_error(wk->res, "FetchError", "%s: cannot open folder: %s",
		    rel[0] ? rel : abs, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	/* a stable order makes the first error the same on every run */
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		char *a, *r;

		if (rc == 0) {
			a = xasprintf("%s/%s", abs, names[i]);
			r = rel[0] ? xasprintf("%s/%s", rel, names[i]) : xstrdup(names[i]);
			rc = walk_entry(wk, a, r, depth);
			free(a);
			free(r);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int
fetch_dir(struct spool *sp, const struct fetch_limits *lim, const char *root,
    struct fetch_result *res)
{
	struct walk wk;
	struct stat st;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&wk, 0, sizeof(wk));
	if (root == NULL || root[0] != '/')
		return fetch_result_error(res, "FetchError",
		    "source dir: spec.dir.path must be an absolute path");
	if (realpath(root, wk.root) == NULL || stat(wk.root, &st) < 0)
		return fetch_result_error(res, "FetchError", "source dir: %s: %s", root,
		    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fetch_result_error(res, "FetchError", "source dir: %s is not a folder",
		    root);
	wk.rootlen = strlen(wk.root);
	wk.res = res;
	wk.t = fetch_tree_new(sp, lim);
	seen_before(&wk, &st);
	rc = walk_dir(&wk, wk.root, "", 0);
	if (rc == 0)
		rc = fetch_tree_finish(wk.t, "dir", NULL, res);
	fetch_tree_free(wk.t);
	free(wk.seen);
	return rc;
}
