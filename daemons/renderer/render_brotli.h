/*
 * render_brotli - the compressed form of a rendered decofile: brotli of the
 * JSON, then standard base64 (the `decofile.bin` the Deco runtime reads).
 */
#ifndef DECOD_RENDER_BROTLI_H
#define DECOD_RENDER_BROTLI_H

#include <stddef.h>

#include "common/util.h"

/*
 * Defaults, chosen by measurement (doc/benchmarks.md): quality 8 renders
 * the 4.2 MB benchmark decofile in about 0.1 s at 6.9 % of the JSON;
 * quality 11 (about 5 s, 5.4 %) is the slow, smallest setting.  The window
 * stays at most 24 (standard brotli: every decoder reads it); it only
 * matters above 4 MB of JSON.
 */
#define RENDER_BROTLI_QUALITY	8
#define RENDER_BROTLI_WINDOW	24
#define RENDER_BROTLI_QUALITY_SLOW	11
#define RENDER_BROTLI_WINDOW_SLOW	24

/*
 * render_brotli_compress - append brotli(in) to out at quality (0..11) and
 * window (10..24).  0, or -1 if the encoder refuses the parameters.
 */
int render_brotli_compress(const void *in, size_t len, int quality, int lgwin,
    struct buf *out);

/*
 * render_brotli_decompress - append the decoded stream to out, refusing
 * more than max bytes of output (0: no limit).  0, or -1 if the input is
 * not a complete brotli stream or is too large.
 */
int render_brotli_decompress(const void *in, size_t len, size_t max,
    struct buf *out);

/*
 * render_bin - the decofile.bin text: standard base64 of brotli(json).
 * Returns a new NUL-terminated string (caller frees) with its length in
 * *outlen, or NULL on bad parameters.
 */
char *render_bin(const void *json, size_t len, int quality, int lgwin,
    size_t *outlen);

#endif
