/*
 * publisher.h - the publisher stage's own state, shared by publisher.c
 * (items, deletion, start-up) and publish_drift.c (drift repair, and what
 * other instances published: adoption and hand-over).  Only
 * daemons/publisher/ includes this.
 */
#ifndef DECOD_PUBLISHER_H
#define DECOD_PUBLISHER_H

#include <stddef.h>
#include <stdint.h>

#include "common/json.h"
#include "common/stage.h"
#include "daemons/publisher/publish_file.h"

struct pcm;
struct stage_watch;

#define STAGE "publisher"
#define TARGET "file"

/* one published object: what we put there, so we can tell when it changed */
struct obj {
	char ns[254];
	char name[254];
	char format[8];			/* "json" | "bin" */
	char content_hash[65];
	char data_hash[65];		/* sha256 of the published bytes; "" unknown */
	int64_t timestamp;
	struct publish_file_res where;	/* dir, path, location, last sigs */
	int wd;				/* inotify watch on where.dir, -1 none */
	int detach;			/* last known deletion policy */
	int64_t check_timer;		/* a debounced check is scheduled */
	long repairs;
	int status_dirty;		/* Ready/fields not yet written to the store */
	int complained;			/* logged that the bytes cannot be put back */
	int gone;			/* Decofile deleted; removal to be retried */
	int defers;			/* repairs put off: a newer timestamp.txt */
	struct obj *next;
};

struct pub {
	char root[4096];
	void **tstate;			/* state of each target in publisher.c's targets[] */
	struct obj *objs;
	int ifd;			/* inotify */
	struct store_watch *watch;
	struct stage_watch *watch_sw;
	int64_t next_recheck;
	long repairs;			/* drift repairs since start */
	struct pcm *cm;			/* the configmap target; NULL: no cluster */
};

/* what the publisher fragment in the store says was published last */
struct published {
	char hash[65];
	char format[8];
	char location[4300];
	int64_t timestamp;
};

/* P - the stage's state */
struct pub *P(struct stage *st);

/* ---- publisher.c ---- */

/* publisher_obj_get - the object ns/name, made (unwatched, empty) if new; never NULL */
struct obj *publisher_obj_get(struct pub *p, const char *ns, const char *name);
/* publisher_obj_free - unlink o, drop its watch and timer, free it */
void publisher_obj_free(struct stage *st, struct obj *o);
/* publisher_obj_watch - (re)watch o's folder with inotify; a failure is logged */
void publisher_obj_watch(struct pub *p, struct obj *o);
/* publisher_object_id - "decofile/<ns>/<name>", the audit log's object */
void publisher_object_id(const struct obj *o, char *out, size_t len);
/*
 * publisher_finish_later - settle item it with r and the reason why from a
 * timer (on_item cannot settle a failure with its reason itself); returns
 * STAGE_ASYNC for on_item to return.
 */
enum stage_result publisher_finish_later(struct stage *st, const struct journal_item *it,
    enum stage_result r, const char *why);
/* publisher_doc_detach - the Decofile asks deco.sites/deletion: detach */
int publisher_doc_detach(yajl_val doc);
/* publisher_write_status - Ready and the published fields into the store; 0 or -1 */
int publisher_write_status(struct stage *st, struct obj *o);
/*
 * publisher_record - inside the open stage transaction of item it: o at
 * res->location in the inventory with its deletion policy, the audit row
 * (action, detail) and the notifier item for it->hash at res->timestamp
 * with commit.  0, or -1 with journal_error set (the caller rolls back).
 */
int publisher_record(struct stage *st, const struct journal_item *it, const struct obj *o,
    const struct publish_file_res *res, const char *action, const char *detail,
    const char *commit);
/* publisher_took - o now holds it->hash as format (bytes blob) at res; watched */
void publisher_took(struct stage *st, struct obj *o, const struct journal_item *it,
    const char *format, const char *blob, const struct publish_file_res *res);

/* ---- publish_drift.c ---- */

/* publish_drift_published - the store's publisher fragment of ns/name; 0 ("" / 0 where absent) */
int publish_drift_published(struct stage *st, const char *ns, const char *name,
    struct published *pb);
/* publish_drift_target_holds - nonzero when the file at path hashes to blob */
int publish_drift_target_holds(const char *path, const char *blob);
/*
 * publish_drift_check - make the target hold what we published, unless a
 * publish of it is pending or another instance published it anew (then it
 * is handed over and o is freed).  full: hash the files even when their
 * fingerprints look untouched.  A repair is journaled and sets Drifted.
 */
void publish_drift_check(struct stage *st, struct obj *o, int full);
/* publish_drift_on_inotify - the inotify fd callback: check what changed, debounced */
void publish_drift_on_inotify(struct stage *st, int fd, short revents, void *arg);
/*
 * publish_drift_adopt - another instance already published this content
 * hash and the target holds its bytes (data, len of blob): take the object
 * over without a new publish, and hand the change on to the notifier.
 * o may be NULL (made here).  What on_item returns.
 */
enum stage_result publish_drift_adopt(struct stage *st, const struct journal_item *it,
    struct obj *o, yajl_val doc, const char *format, const char *blob, const char *data,
    size_t len, const struct published *pb, const char *commit);

#endif
