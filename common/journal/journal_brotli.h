/*
 * journal_brotli - which brotli quality each render's stored bin has, so a
 * background recompression (daemons/renderer/render_recompress.c) is
 * recorded next to the render it improves and resumed after a restart.
 */
#ifndef DECOD_JOURNAL_BROTLI_H
#define DECOD_JOURNAL_BROTLI_H

#include <stddef.h>

#include "common/journal.h"

/*
 * journal_record_recompress - decofile ns/name's content content_hash now
 * has bin blob bin_hash (size bytes) at brotli quality: a renders row for
 * the same content hash (so journal_render_bin and journal_last_render
 * name the smaller blob, and the content looks unchanged) and an audit
 * line.  Inside the caller's transaction.  0 or -1.
 */
int journal_record_recompress(struct journal *j, const char *ns, const char *name,
    const char *content_hash, size_t size, const char *tree_hash, const char *bin_hash,
    int quality);

/*
 * journal_render_quality - the quality of the newest render of ns/name
 * with content_hash: its quality, 0 when it is the fast setting's (NULL),
 * 1 not found, -1 error.
 */
int journal_render_quality(struct journal *j, const char *ns, const char *name,
    const char *content_hash, int *quality);

/*
 * journal_recompress_pending - calls fn for every decofile whose newest
 * render is a bin below quality (a recompression not done yet, e.g. cut
 * short by a restart).  The number found, or -1.
 */
int journal_recompress_pending(struct journal *j, int quality,
    void (*fn)(void *arg, const char *ns, const char *name, const char *content_hash,
    const char *tree_hash), void *arg);

#endif
