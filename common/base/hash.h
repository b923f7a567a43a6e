/*
 * hash - sha256 (bare lowercase hex), base64 (standard and URL-safe) and
 * random bytes, all on openssl's libcrypto.
 */
#ifndef DECOD_HASH_H
#define DECOD_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

/* sha256_hex - hash len bytes into out (65 bytes: 64 hex + NUL) */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

/* sha256 streaming: new, update, final (final frees the context) */
struct sha256_ctx;
struct sha256_ctx *sha256_new(void);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, char out[SHA256_HEX_LEN + 1]);
/* sha256_copy - make dst (from sha256_new) hash on from where src is */
void sha256_copy(struct sha256_ctx *dst, const struct sha256_ctx *src);

/* hmac_sha256 - raw 32-byte MAC */
void hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
    unsigned char out[32]);

/* hex_encode - 2*len hex chars + NUL into out */
void hex_encode(const unsigned char *in, size_t len, char *out);

/* str_hash - FNV-1a (64 bits) of a string: for hash tables, not for security */
uint64_t str_hash(const char *s);

/* is_sha256_hex - nonzero when s is exactly 64 lowercase hex chars */
int is_sha256_hex(const char *s);

/*
 * base64_encode - standard (url=0, padded) or URL-safe (url=1, unpadded)
 * alphabet.  Returns a new NUL-terminated string; caller frees.
 */
char *base64_encode(const void *data, size_t len, int url);

/*
 * base64_decode - accepts both alphabets, padding optional.  Returns a new
 * buffer (NUL-terminated for convenience) and its size in *outlen, or NULL
 * if the input is not base64.  Caller frees.
 */
unsigned char *base64_decode(const char *in, size_t inlen, size_t *outlen);

/* random_bytes - cryptographic random bytes; 0 or -1 */
int random_bytes(void *out, size_t len);

#endif
