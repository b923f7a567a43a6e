/*
 * publish_target - what the publisher asks of a target.  Every target
 * (file, configmap, s3) lives in its own files behind this table;
 * publisher.c reads the item and the Decofile, picks the target by
 * spec.target, and hands over; the target owns its objects from there:
 * the write, Ready, its inventory, drift, deletion.  What every target
 * records alike (removal, status fragment, notifier detail) is
 * publish_record.c's.
 */
#ifndef DECOD_PUBLISH_TARGET_H
#define DECOD_PUBLISH_TARGET_H

#include <yajl/yajl_tree.h>

#include "common/stage.h"
#include "proto/proto.h"

struct publish_target {
	const char *name;	/* spec.target value: "file", "configmap", "s3" */
	/* why it is refused when init left no state: "configmap needs a cluster" */
	const char *unavailable;
	/*
	 * init - at stage start, after the store watch is up: *state is the
	 * target's (NULL: it cannot work on this host, items for it are
	 * refused).  0, or -1 (fatal).
	 */
	int (*init)(struct stage *st, void **state);
	/*
	 * publish - an item (checked: kind decofile, content hash, valid
	 * names, its detail pd) for a Decofile whose target is this one; doc is
	 * the Decofile (borrowed).  Returns as on_item does, with the reason
	 * of a STAGE_RETRY or STAGE_FAIL given to stage_item_error; STAGE_ASYNC
	 * items are ended with stage_finish.
	 */
	enum stage_result (*publish)(struct stage *st, void *t, const struct journal_item *it,
	    const struct proto_publish_detail *pd, yajl_val doc);
	/*
	 * swap - a "recompress" item: the same content (it->hash) in a smaller
	 * bin (pd->bin).  Replace the stored .bin atomically when the target
	 * still holds that content, keep timestamp.txt, push no notifier item
	 * (same content: no replica is told); anything else is superseded and
	 * done.  Returns as publish does.  NULL: the target keeps no .bin.
	 */
	enum stage_result (*swap)(struct stage *st, void *t, const struct journal_item *it,
	    const struct proto_publish_detail *pd);
	/* update - Decofile ns/name was written (doc, borrowed): follow its deletion policy */
	void (*update)(struct stage *st, void *t, const char *ns, const char *name,
	    yajl_val doc);
	/*
	 * remove - Decofile ns/name was deleted: remove (or, detached, keep)
	 * what it published and record that (publish_record_removal)
	 */
	void (*remove)(struct stage *st, void *t, const char *ns, const char *name);
	/* relist - the store watch lost history: remove what belongs to Decofiles gone */
	void (*relist)(struct stage *st, void *t);
	/* tick - about once a second: drift checks, retries (NULL: none) */
	void (*tick)(struct stage *st, void *t);
	/* shutdown - free the state; requests in flight are dropped */
	void (*shutdown)(struct stage *st, void *t);
};

extern const struct publish_target publish_file_target;
extern const struct publish_target publish_configmap_target;
extern const struct publish_target publish_s3_target;

#endif
