/*
 * render_tree - a fetched tree loaded back from the spool as merge inputs:
 * the manifest (proto/PROTOCOL.md §3) and every blob it lists.  Shared by
 * the render stage and by `decoctl diff`, which merges exactly as the
 * stage does.
 */
#ifndef DECOD_RENDER_TREE_H
#define DECOD_RENDER_TREE_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "daemons/renderer/render_merge.h"
#include "common/manifest.h"

struct spool;

/* one tree loaded from the spool: its manifest and every blob it lists */
struct render_tree {
	char hash[65];
	struct manifest pt;		/* the manifest */
	size_t n;
	struct render_input *in;	/* key/path point into pt; data owned */
};

/*
 * render_tree_load - read manifest hash and its blobs from sp, every input
 * on layer.  0, or -1 with why filled (t then empty); *missing says the
 * spool lacks a blob (worth a retry) rather than holding a bad one.
 */
int render_tree_load(struct spool *sp, const char *hash, int layer, struct render_tree *t,
    int *missing, char *why, size_t whylen);

/* render_tree_free - free what t owns and empty it */
void render_tree_free(struct render_tree *t);

/* most templates one Decofile may list */
#define RENDER_MAX_TEMPLATES 64

/*
 * render_template_names - a Decofile's spec.templates (names, or objects
 * with a name) into names, at most max.  The count (0 when none), or -1
 * with why filled.
 */
int render_template_names(yajl_val doc, char names[][254], size_t max, char *why,
    size_t whylen);

#endif
