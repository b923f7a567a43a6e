/*
 * render_recompress - best size without the wait: a render publishes its
 * bin at the fast quality at once, then one low-priority worker thread
 * recompresses it at the slow quality (brotli_recompress_quality) and the
 * loop records the smaller blob for the same content hash and hands the
 * publisher a "recompress" item, which swaps the stored .bin in place: the
 * content hash is unchanged, so no replica is notified.  A newer render of
 * the site cancels its pending (or running) recompression.
 */
#ifndef DECOD_RENDER_RECOMPRESS_H
#define DECOD_RENDER_RECOMPRESS_H

#include <stddef.h>
#include <stdint.h>

struct stage;
struct render_recompress;

/* render_recompress_new - the worker (started on first use); never NULL */
struct render_recompress *render_recompress_new(struct stage *st);

/*
 * render_recompress_settings - quality (0: off), window bits, delay_ms
 * after a render before the recompression starts (a burst of edits costs
 * one recompression), nice of the worker thread
 */
void render_recompress_settings(struct render_recompress *rr, int quality, int window,
    int64_t delay_ms, int nice);

/*
 * render_recompress_queue - decofile ns/name was rendered (content hash,
 * in the spool; json and len are not kept: the document is read back from
 * the spool when the worker is free, so waiting jobs hold no document) with
 * tree and commit, and its fast bin takes binlen bytes: a recompression
 * for it replaces any pending one
 */
void render_recompress_queue(struct render_recompress *rr, const char *ns, const char *name,
    const char *hash, const char *tree, const char *commit, const void *json, size_t len,
    size_t binlen);

/* render_recompress_cancel - a newer render of ns/name: drop what is pending for it */
void render_recompress_cancel(struct render_recompress *rr, const char *ns, const char *name);

/* render_recompress_resume - at start: the journal's renders not yet recompressed */
void render_recompress_resume(struct render_recompress *rr);

/* render_recompress_free - stop the worker (a running job is abandoned) and free rr */
void render_recompress_free(struct render_recompress *rr);

#endif
