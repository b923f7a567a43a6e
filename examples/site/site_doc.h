/*
 * site_doc - the reference replica's document: loading a decofile folder
 * (decofile.json, decofile.bin, or its block files merged) and reading a
 * top-level member out of a validated JSON text.  No state of the site.
 */
#ifndef SITE_DOC_H
#define SITE_DOC_H

#include <stddef.h>
#include <stdint.h>

/* site_read_ts - the leading integer of a timestamp file; -1 if absent or bad */
int64_t site_read_ts(const char *path);
/*
 * site_load_dir - the decofile held by dir: decofile.json, decofile.bin, or else
 * the *.json block files merged (key = file name without .json, ascending
 * bytes).  Returns a new compact JSON text or NULL with err set.
 */
char *site_load_dir(const char *dir, size_t *len, char *err, size_t errlen);
/*
 * site_member_raw - the raw bytes of top-level member key of a validated JSON
 * object text; 0 with *vp and *vlen set, -1 absent or not an object.
 */
int site_member_raw(const char *text, size_t len, const char *key, const char **vp,
    size_t *vlen);
/*
 * site_doc_page - the small HTML page of GET /: the document's title (a top-level
 * "title", else the first block's), its hash, timestamp, source and block
 * names, escaped.  A new string.
 */
char *site_doc_page(const char *doc, size_t len, const char *sha, const char *ts,
    const char *source);

#endif
