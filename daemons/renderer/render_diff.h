/*
 * render_diff - what one rendered document would become as another, block
 * by block and key by key: blocks added, removed or changed, and within a
 * changed block (an object on both sides) its keys added, removed or
 * changed, as paths one or two levels deep ("theme", "theme.color"): a key
 * whose value is an object on both sides is compared one level further,
 * anything deeper (and every array) is compared whole.  The preview of a
 * pending template or source change: `decoctl diff NAME` prints it, the
 * render stage summarises it in TemplateUpdateAvailable's message.
 * Pure functions on memory.
 */
#ifndef DECOD_RENDER_DIFF_H
#define DECOD_RENDER_DIFF_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "common/json.h"
#include "common/util.h"

/* what happened to a block or a key */
#define RDIFF_ADDED '+'
#define RDIFF_REMOVED '-'
#define RDIFF_CHANGED '~'

struct rdiff_key {
	char op;		/* RDIFF_* */
	int nseg;		/* 1 or 2 */
	const char *seg[2];	/* key names (into the parsed documents) */
};

struct rdiff_block {
	char op;		/* RDIFF_* */
	const char *name;	/* block name (into the parsed documents) */
	int whole;		/* changed, not an object on both sides: replaced whole */
	struct rdiff_key *keys;	/* changed blocks only, in byte order */
	size_t nkeys;
};

struct render_diff {
	yajl_val old, new;	/* the parsed documents the names point into */
	struct rdiff_block *blocks;	/* in byte order of the block name */
	size_t n;
	size_t added, removed, changed;	/* blocks */
	size_t keys;		/* keys of the changed blocks added, removed or changed */
};

/*
 * render_diff_docs - compare the rendered document old (oldlen bytes; a
 * JSON object) with new.  0 (d filled: free with render_diff_free; d->n is
 * 0 when they are the same), or -1 with why.
 */
int render_diff_docs(const char *old, size_t oldlen, const char *new, size_t newlen,
    struct render_diff *d, char *why, size_t whylen);

void render_diff_free(struct render_diff *d);

/*
 * render_diff_summary - append "N blocks changed (K keys), A added, R
 * removed" (singular "1 block", "1 key")
 */
void render_diff_summary(struct buf *b, const struct render_diff *d);

/*
 * render_diff_path - append a key's path as shown: segments joined by
 * ".", a segment that is empty or holds ".", a quote, a backslash, a
 * space or a control byte written as a JSON string ("a b".c)
 */
void render_diff_path(struct buf *b, const struct rdiff_key *k);

/*
 * render_diff_json - the blocks as a JSON array: [{"name", "change":
 * "added"|"removed"|"changed", "keys": [{"path": [seg...], "change"}]}]
 * ("keys" only on changed blocks; "replaced": true when a block is not an
 * object on both sides)
 */
void render_diff_json(struct jw *w, const struct render_diff *d);

/* render_diff_op_name - "added", "removed" or "changed" */
const char *render_diff_op_name(char op);

#endif
