/* hash_test - sha256 vectors, base64 both alphabets, HMAC vector */
#include "config.h"

#include <stdlib.h>

#include "common/hash.h"
#include "t/tap.h"

int
main(void)
{
	static const struct { const char *in; const char *std; const char *url; } b64[] = {
		{ "", "", "" }, { "f", "Zg==", "Zg" }, { "fo", "Zm8=", "Zm8" },
		{ "foo", "Zm9v", "Zm9v" }, { "foob", "Zm9vYg==", "Zm9vYg" },
		{ "\xfb\xff", "+/8=", "-_8" },
	};
	char hex[65], *e;
	unsigned char mac[32], *d;
	size_t n;
	struct sha256_ctx *c;

	sha256_hex("", 0, hex);
	is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	    "sha256 of empty");
	sha256_hex("abc", 3, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "sha256 of abc");
	c = sha256_new();
	sha256_update(c, "a", 1);
	sha256_update(c, "bc", 2);
	sha256_final(c, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "streaming sha256 matches");
	ok(is_sha256_hex(hex), "is_sha256_hex accepts a hash");
	ok(!is_sha256_hex("ABC"), "is_sha256_hex refuses others");
	for (size_t i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
		size_t len = strlen(b64[i].in);

		e = base64_encode(b64[i].in, len, 0);
		is_str(e, b64[i].std, "base64 std \"%s\"", b64[i].std);
		free(e);
		e = base64_encode(b64[i].in, len, 1);
		is_str(e, b64[i].url, "base64 url \"%s\"", b64[i].url);
		free(e);
		d = base64_decode(b64[i].std, strlen(b64[i].std), &n);
		ok(d != NULL && n == len && memcmp(d, b64[i].in, len) == 0, "decode std");
		free(d);
		d = base64_decode(b64[i].url, strlen(b64[i].url), &n);
		ok(d != NULL && n == len && memcmp(d, b64[i].in, len) == 0, "decode url");
		free(d);
	}
	ok(base64_decode("a!b=", 4, &n) == NULL, "bad base64 refused");
	/* RFC 4231 test case 2 */
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	hex_encode(mac, 32, hex);
	is_str(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
	    "HMAC-SHA256 RFC 4231 case 2");
	ok(random_bytes(mac, 32) == 0, "random bytes");
	return done_testing();
}
