/*
 * fuzz_proto - the nng messages between stages (proto/): a message from a
 * peer is checked whole before use.  Invariant: what decodes re-encodes to
 * a message that decodes to the same fields.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m, m2;
	unsigned char out[65536];
	char err[256];
	int n;

	memset(&m, 0, sizeof(m));
	if (proto_decode(data, size, &m, err, sizeof(err)) < 0) {
		fuzz_check(err[0] != '\0', "a refusal says why");
		return 0;
	}
	n = proto_encode(&m, out, sizeof(out));
	fuzz_check(n > 0, "a decoded message encodes");
	memset(&m2, 0, sizeof(m2));
	fuzz_check(proto_decode(out, (size_t)n, &m2, err, sizeof(err)) == 0,
	    "a re-encoded message decodes");
	fuzz_check(m2.type == m.type && m2.item_id == m.item_id &&
	    strcmp(m2.kind, m.kind) == 0 && strcmp(m2.ns, m.ns) == 0 &&
	    strcmp(m2.name, m.name) == 0 && strcmp(m2.hash, m.hash) == 0,
	    "every field survives a round trip");
	fuzz_check((size_t)n == size && memcmp(out, data, size) == 0,
	    "a message that decodes is the one encoding of its fields");
	return 0;
}
