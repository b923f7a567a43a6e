/*
 * fetch_tree - collects a source's blocks into the spool and writes the
 * tree manifest.  It owns the entry list and the running size of the tree;
 * the spool is borrowed.  Sources (inline, dir, git) only decide which
 * bytes belong under which key and path.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/spool.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_tree.h"
#include "common/manifest.h"
#include "proto/proto.h"

struct fetch_tree {
	struct spool *sp;
	struct fetch_limits lim;
	struct manifest pt;	/* the manifest's entries */
	size_t cap;
	uint64_t bytes;
	/*
	 * the blobs written but not yet synced, one per entry (NULL: it was
	 * there already): fetch_tree_finish syncs them together, so a tree
	 * of n blobs costs about one disk commit instead of 2n fsyncs
	 */
	char **tmps;
};

int
fetch_result_error(struct fetch_result *res, const char *reason, const char *fmt, ...)
{
	va_list ap;

	res->reason = reason;
	res->tree_hash[0] = '\0';
	va_start(ap, fmt);
	if (vsnprintf(res->error, sizeof(res->error), fmt, ap) >= (int)sizeof(res->error))
		utf8_cut_tail(res->error);	/* the condition and the log stay UTF-8 */
	va_end(ap);
	return -1;
}

struct fetch_tree *
fetch_tree_new(struct spool *sp, const struct fetch_limits *lim)
{
	struct fetch_tree *t = xcalloc(1, sizeof(*t));

	t->sp = sp;
	t->lim = *lim;
	return t;
}

void
fetch_tree_free(struct fetch_tree *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->pt.n; i++)
		if (t->tmps[i] != NULL) {
			unlink(t->tmps[i]);	/* never committed */
			free(t->tmps[i]);
		}
	free(t->tmps);
	manifest_free(&t->pt);
	free(t);
}

int
fetch_tree_check_size(struct fetch_tree *t, const char *path, uint64_t len,
    struct fetch_result *res)
{
	if (t->lim.max_file > 0 && len > t->lim.max_file)
		return fetch_result_error(res, "TooLarge",
		    "%s: %llu bytes, larger than the %llu-byte limit of one file", path,
		    (unsigned long long)len, (unsigned long long)t->lim.max_file);
	if (t->lim.max_tree > 0 && t->bytes + len > t->lim.max_tree)
		return fetch_result_error(res, "TooLarge",
		    "%s: the tree passes max_tree_size (%llu bytes)", path,
		    (unsigned long long)t->lim.max_tree);
	return 0;
}

int
fetch_tree_add(struct fetch_tree *t, const char *key, const char *path,
    const void *data, size_t len, struct fetch_result *res)
{
	struct manifest_entry *e;

	if (fetch_tree_check_size(t, path, len, res) < 0)
		return -1;
	if (t->pt.n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->pt.e = xrealloc(t->pt.e, t->cap * sizeof(*t->pt.e));
		t->tmps = xrealloc(t->tmps, t->cap * sizeof(*t->tmps));
	}
	e = &t->pt.e[t->pt.n];
	if (spool_stage(t->sp, data, len, e->blob, &t->tmps[t->pt.n]) < 0)
		return fetch_result_error(res, "FetchError", "%s: cannot write to the spool: %s",
		    path, strerror(errno));
	e->key = xstrdup(key);
	e->path = xstrdup(path);
	t->pt.n++;
	t->bytes += len;
	return 0;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct manifest_entry *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c != 0 ? c : strcmp(x->path, y->path);
}

/*
 * stage_manifest - spool_stage the manifest in b and move it and the
 * tree's staged blobs into res->staged (defer_sync); 0 or -1 with errno
 */
static int
stage_manifest(struct fetch_tree *t, const struct buf *b, struct fetch_result *res)
{
	char *tmp;

	if (spool_stage(t->sp, b->data, b->len, res->tree_hash, &tmp) < 0)
		return -1;
	res->staged = xrealloc(res->staged, (res->nstaged + t->pt.n + 1) *
	    sizeof(*res->staged));
	for (size_t i = 0; i < t->pt.n; i++) {
		if (t->tmps[i] != NULL)
			res->staged[res->nstaged++] = t->tmps[i];
		t->tmps[i] = NULL;
	}
	if (tmp != NULL)
		res->staged[res->nstaged++] = tmp;
	return 0;
}

int
fetch_result_group(struct fetch_result *res)
{
	int rc = 0;

	if (res->nstaged > 0 && (rc = spool_group(res->staged, res->nstaged)) < 0) {
		fetch_result_unstage(res);
		return -1;
	}
	for (size_t i = 0; i < res->nstaged; i++)
		free(res->staged[i]);
	free(res->staged);
	res->staged = NULL;
	res->nstaged = 0;
	return rc;
}

void
fetch_result_unstage(struct fetch_result *res)
{
	for (size_t i = 0; i < res->nstaged; i++) {
		unlink(res->staged[i]);
		free(res->staged[i]);
	}
	free(res->staged);
	res->staged = NULL;
	res->nstaged = 0;
}

int
fetch_tree_finish(struct fetch_tree *t, const char *source, const char *commit,
    struct fetch_result *res)
{
	struct buf b;
	char err[512];
	int rc = 0;

	/*
	 * the blobs on disk under their names before the manifest names them;
	 * deferred: the blobs and the manifest all wait for the caller's one
	 * sync group, which the journal row naming the tree waits for
	 */
	if (!t->lim.defer_sync) {
		rc = spool_commit(t->sp, t->tmps, t->pt.n);
		for (size_t i = 0; i < t->pt.n; i++) {
			free(t->tmps[i]);
			t->tmps[i] = NULL;
		}
		if (rc < 0)
			return fetch_result_error(res, "FetchError",
			    "cannot write to the spool: %s", strerror(errno));
	}
	if (t->pt.n > 1)
		qsort(t->pt.e, t->pt.n, sizeof(*t->pt.e), entry_cmp);
	snprintf(t->pt.source, sizeof(t->pt.source), "%s", source);
	snprintf(t->pt.commit, sizeof(t->pt.commit), "%s", commit ? commit : "");
	buf_init(&b);
	if (manifest_encode(&t->pt, &b, err, sizeof(err)) < 0) {
		buf_free(&b);
		return fetch_result_error(res, "FetchError", "tree manifest: %s", err);
	}
	if ((t->lim.defer_sync ? stage_manifest(t, &b, res) :
	    spool_put(t->sp, b.data, b.len, res->tree_hash)) < 0) {
		rc = fetch_result_error(res, "FetchError",
		    "cannot write the tree manifest to the spool: %s", strerror(errno));
	} else {
		res->reason = NULL;
		res->error[0] = '\0';
		snprintf(res->commit, sizeof(res->commit), "%s", commit ? commit : "");
		res->entries = t->pt.n;
		res->bytes = t->bytes;
	}
	buf_free(&b);
	return rc;
}
