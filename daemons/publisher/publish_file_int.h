/*
 * publish_file_int.h - what the file target's two halves share:
 * publish_file_target.c (publish, inventory, deletion, the target's calls)
 * and publish_file_drift.c (drift repair, and what other instances
 * published: adoption and hand-over).  Private to the publisher.
 */
#ifndef DECOD_PUBLISH_FILE_INT_H
#define DECOD_PUBLISH_FILE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/json.h"
#include "common/stage.h"
#include "daemons/publisher/publish_file.h"
#include "daemons/publisher/publish_record.h"
#include "proto/proto.h"

#define STAGE PUBLISH_STAGE
#define TARGET "file"

struct objtab;
struct ft;

/* one published object: what we put there, so we can tell when it changed */
struct fobj {
	struct ft *t;
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
};

/* the target: one per stage */
struct ft {
	struct stage *st;
	char root[4096];		/* file_root */
	struct objtab *objs;		/* struct fobj by Decofile */
	struct objtab *bywd;		/* struct fobj by inotify watch ("", "<wd>") */
	int ifd;			/* inotify */
	int64_t next_recheck;
	long repairs;			/* drift repairs since start */
};

/* ---- publish_file_target.c ---- */

/* pft_obj_get - the object ns/name, made (unwatched, empty) if new; never NULL */
struct fobj *pft_obj_get(struct ft *t, const char *ns, const char *name);
/* pft_obj_free - drop o from the table, its watch and timer, and free it */
void pft_obj_free(struct ft *t, struct fobj *o);
/* pft_obj_watch - (re)watch o's folder with inotify; a failure is logged */
void pft_obj_watch(struct ft *t, struct fobj *o);
/* pft_wd_lost - the kernel dropped watch wd (IN_IGNORED) */
void pft_wd_lost(struct ft *t, struct fobj *o);
/*
 * pft_write_status - Ready and the published fields into the store, with
 * Drifted=False InSync too when insync (one write of the fragment); 0 or -1
 */
int pft_write_status(struct ft *t, struct fobj *o, int insync);
/*
 * pft_record - inside the open stage transaction of item it: o at
 * res->location in the inventory with its deletion policy, the audit row
 * (action, detail) and the notifier item for it->hash at res->timestamp
 * with commit.  0, or -1 with journal_error set (the caller rolls back).
 */
int pft_record(struct ft *t, const struct journal_item *it, const struct fobj *o,
    const struct publish_file_res *res, const char *action, const char *detail,
    const char *commit);
/* pft_took - o now holds it->hash as format (bytes blob) at res; watched */
void pft_took(struct ft *t, struct fobj *o, const struct journal_item *it,
    const char *format, const char *blob, const struct publish_file_res *res);

/* ---- publish_file_drift.c ---- */

/* pft_target_holds - nonzero when the file at path hashes to blob */
int pft_target_holds(const char *path, const char *blob);
/*
 * pft_drift_check - make the target hold what we published, unless a
 * publish of it is pending or another instance published it anew (then it
 * is handed over and o is freed).  full: hash the files even when their
 * fingerprints look untouched.  A repair is journaled and sets Drifted.
 */
void pft_drift_check(struct ft *t, struct fobj *o, int full);
/* pft_on_inotify - the inotify fd callback (arg: the target): check what changed, debounced */
void pft_on_inotify(struct stage *st, int fd, short revents, void *arg);
/*
 * pft_adopt - another instance already published this content hash and
 * the target holds its bytes (data, len of blob): take the object over
 * without a new publish, and hand the change on to the notifier.  o may be
 * NULL (made here).  What publish returns.
 */
enum stage_result pft_adopt(struct ft *t, const struct journal_item *it, struct fobj *o,
    yajl_val doc, const char *format, const char *blob, const char *data, size_t len,
    const struct published *pb, const char *commit);

/* ---- publish_file_swap.c ---- */

/* pft_swap - the target's swap (publish_target.h): decofile.bin replaced in place */
enum stage_result pft_swap(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd);

#endif
