/*
 * housekeeping - what one stage per host (the renderer) does on a timer:
 * prune journal history older than journal_retention, then remove spool
 * blobs nothing refers to any more.  The journal says which hashes it still
 * needs; a tree manifest among them keeps every blob it names.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/housekeeping.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/spool.h"
#include "common/util.h"
#include "common/manifest.h"
#include "proto/proto.h"

/* the set of hashes the spool must keep, for spool_gc */
struct keep_set {
	char **h;
	size_t n, cap;
};

static void
keep_add(void *arg, const char *hash)
{
	struct keep_set *k = arg;

	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 256;
		k->h = xrealloc(k->h, k->cap * sizeof(*k->h));
	}
	k->h[k->n++] = xstrdup(hash);
}

static int
keep_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
keep_has(void *arg, const char *hash)
{
	struct keep_set *k = arg;
	const char *key = hash;

	return k->n > 0 && bsearch(&key, k->h, k->n, sizeof(*k->h), keep_cmp) != NULL;
}

long
housekeeping_run(struct journal *j, struct spool *sp, int64_t retention_ms,
    int keep_versions)
{
	struct keep_set k = { NULL, 0, 0 };
	size_t first;
	long removed = -1;
	char n[32];

	if (journal_prune(j, retention_ms) < 0)
		log_kv(LOG_WARN, "journal prune failed", "error", journal_error(j), NULL);
	if (journal_referenced(j, keep_add, &k) < 0 ||
	    journal_versions_referenced(j, keep_versions, keep_add, &k) < 0) {
		log_kv(LOG_WARN, "spool gc skipped", "error", journal_error(j), NULL);
		goto out;
	}
	first = k.n;
	for (size_t i = 0; i < first; i++) {
		struct manifest pt;
		char err[256];
		size_t len;
		char *doc = spool_get(sp, k.h[i], &len);

		/* only a blob that decodes as a tree manifest names other blobs */
		if (doc != NULL && manifest_decode(doc, len, &pt, err, sizeof(err)) == 0) {
			for (size_t e = 0; e < pt.n; e++)
				keep_add(&k, pt.e[e].blob);
			manifest_free(&pt);
		}
		free(doc);
	}
	if (k.n > 1)
		qsort(k.h, k.n, sizeof(*k.h), keep_cmp);
	removed = spool_gc(sp, 3600 * 1000, keep_has, &k);
	snprintf(n, sizeof(n), "%ld", removed);
	log_kv(LOG_INFO, "housekeeping done", "spool_removed", n, NULL);
out:
	for (size_t i = 0; i < k.n; i++)
		free(k.h[i]);
	free(k.h);
	return removed;
}
