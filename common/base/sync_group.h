/*
 * sync_group - durable writes of many files with the syncs grouped.  While
 * a group is open on this thread, write_file_atomic (and so spool_put)
 * writes the temporary file and returns without fsync or rename; the
 * file is added to the group.  sync_group_flush then makes every file's
 * bytes durable (one syncfs per filesystem), renames each to its name and
 * makes the names durable (one syncfs per filesystem again): a file never
 * shows under its name before its bytes are on disk, as write_file_atomic
 * alone promises, at two syncs per group instead of two per file.  The
 * stage skeleton opens one group per batch of items (stage_items.c) and
 * flushes it before the batch's journal transaction commits.
 */
#ifndef DECOD_SYNC_GROUP_H
#define DECOD_SYNC_GROUP_H

#include <stddef.h>

/* sync_group_begin - open a group on this thread (one at a time) */
void sync_group_begin(void);
/* sync_group_active - nonzero while a group is open on this thread */
int sync_group_active(void);
/* sync_group_add - tmp (written, closed) becomes path at the flush; len counts bytes */
void sync_group_add(const char *tmp, const char *path, size_t len);
/* sync_group_bytes, sync_group_files - what the open group holds so far */
size_t sync_group_bytes(void);
size_t sync_group_files(void);
/*
 * sync_group_flush - close the group: sync, rename, sync (see above).
 * 0, or -1 with errno (the files not renamed are removed; one renamed
 * before the failure stays, possibly not durable).
 */
int sync_group_flush(void);
/* sync_group_abort - close the group, removing every temporary file */
void sync_group_abort(void);

#endif
