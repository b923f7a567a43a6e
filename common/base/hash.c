/*
 * hash - digests and encodings on libcrypto.  Content hashes are the key of
 * everything idempotent in decod, so they are always bare lowercase hex.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/hash.h"
#include "common/util.h"

struct sha256_ctx {
	EVP_MD_CTX *md;
};

void
hex_encode(const unsigned char *in, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * len] = '\0';
}

struct sha256_ctx *
sha256_new(void)
{
	struct sha256_ctx *c = xmalloc(sizeof(*c));

	if ((c->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1)
		abort();
	return c;
}

void
sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
	if (EVP_DigestUpdate(c->md, data, len) != 1)
		abort();
}

void
sha256_final(struct sha256_ctx *c, char out[SHA256_HEX_LEN + 1])
{
	unsigned char md[32];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(c->md, md, &n) != 1 || n != 32)
		abort();
	hex_encode(md, 32, out);
	EVP_MD_CTX_free(c->md);
	free(c);
}

void
sha256_copy(struct sha256_ctx *dst, const struct sha256_ctx *src)
{
	if (EVP_MD_CTX_copy_ex(dst->md, src->md) != 1)
		abort();
}

void
sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
	unsigned char md[32];
	unsigned int n = 0;

	if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1)
		abort();
	hex_encode(md, 32, out);
}

void
hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
    unsigned char out[32])
{
	unsigned int n = 32;

	if (HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &n) == NULL)
		abort();
}

uint64_t
str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int
is_sha256_hex(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == SHA256_HEX_LEN;
}

char *
base64_encode(const void *data, size_t len, int url)
{
	static const char std[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char urlsafe[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *a = url ? urlsafe : std;
	const unsigned char *p = data;
	char *out = xmalloc(4 * ((len + 2) / 3) + 1), *o = out;
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		*o++ = a[p[i] >> 2];
		*o++ = a[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
		*o++ = a[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
		*o++ = a[p[i + 2] & 63];
	}
	if (i < len) {
		*o++ = a[p[i] >> 2];
		if (i + 1 < len) {
			*o++ = a[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			*o++ = a[(p[i + 1] & 15) << 2];
		} else {
			*o++ = a[(p[i] & 3) << 4];
			if (!url)
				*o++ = '=';
		}
		if (!url)
			*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int
b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

unsigned char *
base64_decode(const char *in, size_t inlen, size_t *outlen)
{
	unsigned char *out = xmalloc(inlen / 4 * 3 + 4);
	size_t o = 0, n = 0;
	unsigned acc = 0;
	int v;

	while (inlen > 0 && in[inlen - 1] == '=')
		inlen--;
	for (size_t i = 0; i < inlen; i++) {
		if ((v = b64val((unsigned char)in[i])) < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		if (++n == 4) {
			out[o++] = (unsigned char)(acc >> 16);
			out[o++] = (unsigned char)(acc >> 8);
			out[o++] = (unsigned char)acc;
			n = 0;
			acc = 0;
		}
	}
	if (n == 1) {
		free(out);
		return NULL;
	}
	if (n == 2) {
		out[o++] = (unsigned char)(acc >> 4);
	} else if (n == 3) {
		out[o++] = (unsigned char)(acc >> 10);
		out[o++] = (unsigned char)(acc >> 2);
	}
	out[o] = '\0';
	if (outlen != NULL)
		*outlen = o;
	return out;
}

int
random_bytes(void *out, size_t len)
{
	return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}
