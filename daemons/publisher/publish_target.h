/*
 * publish_target - what the publisher asks of a target that lives in its
 * own file (s3 today; configmap next; the file target, in publisher.c and
 * publish_drift.c, could move behind it too).  publisher.c reads the item
 * and the Decofile, picks the target by spec.target, and hands over; the
 * target owns its objects from there: upload, Ready, inventory, drift,
 * deletion.
 */
#ifndef DECOD_PUBLISH_TARGET_H
#define DECOD_PUBLISH_TARGET_H

#include <yajl/yajl_tree.h>

#include "common/stage.h"

struct publish_target {
	const char *name;	/* spec.target value: "s3" */
	/* init - at stage start, after the store watch is up; state or NULL (fatal) */
	void *(*init)(struct stage *st);
	/*
	 * publish - an item (checked: kind decofile, content hash, valid names)
	 * for a Decofile whose target is this one; doc is the Decofile
	 * (borrowed).  Returns as on_item does; STAGE_ASYNC items are ended
	 * with stage_finish.
	 */
	enum stage_result (*publish)(struct stage *st, void *t, const struct journal_item *it,
	    yajl_val doc);
	/* decofile - the Decofile was written (doc) or deleted (doc NULL) */
	void (*decofile)(struct stage *st, void *t, const char *ns, const char *name,
	    yajl_val doc);
	/* relist - the store watch lost history: re-check every object's Decofile */
	void (*relist)(struct stage *st, void *t);
	/* tick - about once a second: timers, drift checks, retries */
	void (*tick)(struct stage *st, void *t);
	/* shutdown - free the state; requests in flight are dropped */
	void (*shutdown)(struct stage *st, void *t);
};

extern const struct publish_target publish_s3_target;

#endif
