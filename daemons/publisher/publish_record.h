/*
 * publish_record - what every target (file, configmap, s3) records the same
 * way: the removal of a published object (one journal transaction), the
 * publisher's status fragment (Ready and the published fields), what that
 * fragment says was published, the notifier item's detail, the Decofile's
 * deletion policy, and an item that ends without a publish.  Only
 * daemons/publisher/ includes this.
 */
#ifndef DECOD_PUBLISH_RECORD_H
#define DECOD_PUBLISH_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/journal.h"
#include "common/resource.h"
#include "common/stage.h"

#define PUBLISH_STAGE "publisher"
#define PUBLISH_DELETION_ANNOTATION "deco.sites/deletion"

/* what the publisher fragment in the store says was published last */
struct published {
	char hash[65];		/* "" when absent or not a sha256 */
	char format[8];
	char location[4300];
	int64_t timestamp;	/* 0 when absent */
};

/* the published fields of the status fragment; NULL strings are left out */
struct publish_status {
	const char *configmap;	/* configMapName */
	const char *source;	/* sourceType */
	const char *hash;	/* contentHash */
	int64_t timestamp;	/* timestamp, and lastUpdated from it */
	const char *location;
	const char *s3_url;	/* s3URL */
	const char *format;
};

/* publish_doc_detach - 1 when Decofile doc says deco.sites/deletion: detach */
int publish_doc_detach(yajl_val doc);

/*
 * publish_decofile_gone - 1 when the store no longer holds Decofile
 * ns/name; 0 when it does or cannot be read (keeping is the safe side)
 */
int publish_decofile_gone(struct stage *st, const char *ns, const char *name);

/*
 * publish_record_removal - a published object of Decofile ns/name at
 * location left this instance's hands: one journal transaction drops its
 * inventory row and audits action ("prune", "detach", "handed-over") with
 * detail; drop_status also deletes the publisher's status fragment (not on
 * a hand-over: the other instance owns it now).  Failures are logged; 0 or -1.
 */
int publish_record_removal(struct stage *st, const char *ns, const char *name,
    const char *location, const char *action, const char *detail, int drop_status);

/*
 * publish_record_repair - the target put back what was published of ns/name
 * at location (detail: what was wrong), its repairs-th repair since start:
 * logged, a drift row and an audit row in the journal, Drifted=True
 * Repaired with the count
 */
void publish_record_repair(struct stage *st, const char *ns, const char *name,
    const char *location, const char *detail, long repairs);

/*
 * publish_status_write - Ready (conds, n) and ps's fields into the
 * publisher's fragment of ns/name with one store write; 0, or -1 logged
 */
int publish_status_write(struct stage *st, const char *ns, const char *name,
    const struct publish_status *ps, const struct status_cond *conds, size_t n);

/* publish_published - read the publisher's fragment of ns/name into pb (zeroed if absent) */
void publish_published(struct stage *st, const char *ns, const char *name,
    struct published *pb);

/* publish_notify_detail - the notifier item's detail (proto.h); a commit it cannot carry is left out */
void publish_notify_detail(char *out, size_t outlen, int64_t timestamp, const char *commit);

/*
 * publish_item_failed - item it ends with r (STAGE_RETRY or STAGE_FAIL) and
 * why in the journal; logged.  Returns r, for on_item to return.
 */
enum stage_result publish_item_failed(struct stage *st, const struct journal_item *it,
    enum stage_result r, const char *why);

#endif
