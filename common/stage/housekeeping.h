/*
 * housekeeping - journal pruning and spool garbage collection, run by the
 * stage whose stage_ops sets housekeeping (the renderer).
 */
#ifndef DECOD_HOUSEKEEPING_H
#define DECOD_HOUSEKEEPING_H

#include <stdint.h>

struct journal;
struct spool;

/*
 * housekeeping_run - delete history older than retention_ms (never pending
 * items), then remove spool blobs older than an hour that neither the
 * journal nor a tree manifest it refers to names (the hour keeps a blob
 * written just before its journal row).  Logs what it did.  Returns the
 * number of blobs removed, or -1 if the journal could not say what it
 * needs (nothing is removed then).  The blobs of the newest keep_versions
 * rendered versions of each decofile are kept too (history_keep: what
 * `decoctl rollback` can go back to).
 */
long housekeeping_run(struct journal *j, struct spool *sp, int64_t retention_ms,
    int keep_versions);

#endif
