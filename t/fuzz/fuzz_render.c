/*
 * fuzz_render - the renderer's block merge and validation (SPEC §9) as a
 * git remote's blocks reach it: the input is split at NUL bytes into up to
 * 8 blocks, each with a key and layer taken from its first byte (so keys
 * repeat, within and across layers).  Invariant: a merge that succeeds
 * yields one JSON object no deeper than the limit.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "daemons/renderer/render_merge.h"
#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "Header", "Footer", "Home Page", "a\"b", "é",
		"x\n", "", "Header" };
	struct render_input in[8];
	struct render_error e;
	char hash[SHA256_HEX_LEN + 1];
	struct buf out;
	size_t n = 0, start = 0;

	for (size_t i = 0; i <= size && n < 8; i++) {
		if (i < size && data[i] != 0)
			continue;
		if (i > start) {
			unsigned char c = data[start];

			in[n].key = keys[c & 7];
			in[n].path = keys[(c >> 3) & 7];
			in[n].layer = (c & 0x40) ? (int)((c >> 3) & 1) : RENDER_LAYER_OWN;
			in[n].data = (const char *)data + start + 1;
			in[n].len = i - start - 1;
			n++;
		}
		start = i + 1;
	}
	buf_init(&out);
	if (render_merge(in, n, &out, hash, &e) == 0) {
		fuzz_check(out.len >= 2 && out.data[0] == '{', "a merge is one object");
		fuzz_check(json_validate(out.data, out.len, NULL) == 0,
		    "the merged document is JSON within the depth limit");
	} else {
		fuzz_check(e.count > 0 && e.msg[0] != '\0', "a refusal says why");
	}
	buf_free(&out);
	return 0;
}
