/*
 * fuzz_proto - everything proto/ decodes: the nng messages between stages,
 * the typed item details of each receiving stage and the tree manifest.
 * Every input goes through every decoder.  Invariants: a message that
 * decodes is the one encoding of its fields; a detail or a manifest that
 * decodes encodes again, and that decodes to the same fields.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/manifest.h"
#include "proto/proto.h"
#include "t/fuzz/fuzz.h"

/* details - the three typed item details, round trip */
static void
details(const char *s)
{
	struct proto_render_detail r, r2;
	struct proto_publish_detail p, p2;
	struct proto_notify_detail n, n2;
	char out[PROTO_MAX_DETAIL + 1], err[256];

	memset(&r, 0, sizeof(r));
	if (proto_render_detail_decode(s, &r, err, sizeof(err)) == 0) {
		fuzz_check(proto_render_detail_encode(&r, out, sizeof(out)) > 0,
		    "a render detail that decodes encodes");
		memset(&r2, 0, sizeof(r2));
		fuzz_check(proto_render_detail_decode(out, &r2, err, sizeof(err)) == 0 &&
		    strcmp(r.source, r2.source) == 0 && strcmp(r.commit, r2.commit) == 0 &&
		    r.generation == r2.generation, "a render detail round trip");
	}
	memset(&p, 0, sizeof(p));
	if (proto_publish_detail_decode(s, &p, err, sizeof(err)) == 0) {
		fuzz_check(proto_publish_detail_encode(&p, out, sizeof(out)) > 0,
		    "a publish detail that decodes encodes");
		memset(&p2, 0, sizeof(p2));
		fuzz_check(proto_publish_detail_decode(out, &p2, err, sizeof(err)) == 0 &&
		    strcmp(p.format, p2.format) == 0 && strcmp(p.bin, p2.bin) == 0 &&
		    strcmp(p.commit, p2.commit) == 0, "a publish detail round trip");
	}
	memset(&n, 0, sizeof(n));
	if (proto_notify_detail_decode(s, &n, err, sizeof(err)) == 0) {
		fuzz_check(proto_notify_detail_encode(&n, out, sizeof(out)) > 0,
		    "a notify detail that decodes encodes");
		memset(&n2, 0, sizeof(n2));
		fuzz_check(proto_notify_detail_decode(out, &n2, err, sizeof(err)) == 0 &&
		    n.timestamp == n2.timestamp && strcmp(n.commit, n2.commit) == 0,
		    "a notify detail round trip");
	}
}

/* tree - the manifest, round trip */
static void
tree(const char *text, size_t len)
{
	struct manifest t, t2;
	struct buf out;
	char err[256];

	memset(&t, 0, sizeof(t));
	if (manifest_decode(text, len, &t, err, sizeof(err)) < 0) {
		fuzz_check(err[0] != '\0' && t.n == 0, "a refused manifest says why, is empty");
		return;
	}
	if (t.source[0] == '\0') {
		/* proto.h: a source-less manifest is read (hand-made), never written */
		manifest_free(&t);
		return;
	}
	buf_init(&out);
	fuzz_check(manifest_encode(&t, &out, err, sizeof(err)) == 0,
	    "a manifest that decodes encodes");
	memset(&t2, 0, sizeof(t2));
	fuzz_check(manifest_decode(out.data, out.len, &t2, err, sizeof(err)) == 0 &&
	    t2.n == t.n && strcmp(t.source, t2.source) == 0 &&
	    strcmp(t.commit, t2.commit) == 0, "a manifest round trip");
	for (size_t i = 0; i < t.n; i++)
		fuzz_check(strcmp(t.e[i].key, t2.e[i].key) == 0 &&
		    strcmp(t.e[i].path, t2.e[i].path) == 0 &&
		    strcmp(t.e[i].blob, t2.e[i].blob) == 0, "every entry survives");
	manifest_free(&t2);
	manifest_free(&t);
	buf_free(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m, m2;
	unsigned char out[65536];
	char err[256];
	int n;

	char *text = xstrndup((const char *)data, size);

	details(text);
	free(text);
	tree((const char *)data, size);
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
