/*
 * render_brotli - brotli through the streaming encoder, so the output grows
 * as it is produced instead of reserving the worst case up front (that
 * matters for a 100 MB decofile), and base64 for decofile.bin.
 */
#include "config.h"

#include <string.h>

#include <brotli/decode.h>
#include <brotli/encode.h>

#include "common/hash.h"
#include "daemons/renderer/render_brotli.h"

int
render_brotli_compress(const void *in, size_t len, int quality, int lgwin,
    struct buf *out)
{
	BrotliEncoderState *s;
	const uint8_t *next_in = in;
	size_t avail_in = len, base = out->len;
	int rv = 0;

	if (quality < BROTLI_MIN_QUALITY || quality > BROTLI_MAX_QUALITY ||
	    lgwin < BROTLI_MIN_WINDOW_BITS || lgwin > BROTLI_MAX_WINDOW_BITS)
		return -1;
	s = BrotliEncoderCreateInstance(NULL, NULL, NULL);
	if (s == NULL)
		return -1;
	BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, (uint32_t)quality);
	BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN, (uint32_t)lgwin);
	BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT,
	    len > (1u << 30) ? (1u << 30) : (uint32_t)len);
	for (;;) {
		size_t avail_out;
		uint8_t *next_out;

		buf_grow(out, len / 8 + 65536);
		avail_out = out->cap - out->len - 1;
		next_out = (uint8_t *)out->data + out->len;
		if (!BrotliEncoderCompressStream(s, BROTLI_OPERATION_FINISH,
		    &avail_in, &next_in, &avail_out, &next_out, NULL)) {
			rv = -1;
			break;
		}
		out->len = (size_t)((char *)next_out - out->data);
		out->data[out->len] = '\0';
		if (BrotliEncoderIsFinished(s))
			break;
	}
	BrotliEncoderDestroyInstance(s);
	if (rv < 0) {
		out->len = base;
		out->data[base] = '\0';
	}
	return rv;
}

int
render_brotli_decompress(const void *in, size_t len, size_t max,
    struct buf *out)
{
	BrotliDecoderState *s;
	BrotliDecoderResult r;
	const uint8_t *next_in = in;
	size_t avail_in = len, base = out->len;
	int rv = -1;

	s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
	if (s == NULL)
		return -1;
	for (;;) {
		size_t avail_out;
		uint8_t *next_out;

		buf_grow(out, len * 4 + 65536);
		avail_out = out->cap - out->len - 1;
		next_out = (uint8_t *)out->data + out->len;
		r = BrotliDecoderDecompressStream(s, &avail_in, &next_in,
		    &avail_out, &next_out, NULL);
		out->len = (size_t)((char *)next_out - out->data);
		out->data[out->len] = '\0';
		if (max > 0 && out->len - base > max)
			break;
		if (r == BROTLI_DECODER_RESULT_SUCCESS) {
			rv = avail_in == 0 ? 0 : -1;	/* trailing garbage */
			break;
		}
		if (r != BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
			break;	/* error, or truncated input */
	}
	BrotliDecoderDestroyInstance(s);
	if (rv < 0) {
		out->len = base;
		out->data[base] = '\0';
	}
	return rv;
}

char *
render_bin(const void *json, size_t len, int quality, int lgwin, size_t *outlen)
{
	struct buf br;
	char *b64;

	buf_init(&br);
	if (render_brotli_compress(json, len, quality, lgwin, &br) < 0) {
		buf_free(&br);
		return NULL;
	}
	b64 = base64_encode(br.data, br.len, 0);
	buf_free(&br);
	if (outlen != NULL)
		*outlen = strlen(b64);
	return b64;
}
