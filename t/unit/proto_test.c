/* proto_test - encode/decode round trip and every kind of malformed message */
#include "config.h"

#include "proto/proto.h"
#include "t/tap.h"

int
main(void)
{
	struct proto_msg m, out;
	unsigned char buf[PROTO_MAX_LEN], bad[PROTO_MAX_LEN];
	char err[256];
	int n;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_ITEM;
	m.item_id = 0x0102030405060708ULL;
	strcpy(m.kind, "decofile");
	strcpy(m.ns, "sites-loja");
	strcpy(m.name, "loja");
	strcpy(m.hash, "9b74c9897bac770ffc029102a200c5de9b74c9897bac770ffc029102a200c5de");
	n = proto_encode(&m, buf, sizeof(buf));
	is_int(n, 24 + 8 + 10 + 4 + 64, "encoded size");
	ok(proto_decode(buf, (size_t)n, &out, err, sizeof(err)) == 0, "decodes");
	ok(out.item_id == m.item_id && strcmp(out.ns, "sites-loja") == 0 &&
	    strcmp(out.name, "loja") == 0 && strcmp(out.hash, m.hash) == 0 &&
	    strcmp(out.kind, "decofile") == 0, "round trip keeps every field");

	{
		const struct { const char *label; int off; int val; int len_delta;
		    const char *why; } rows[] = {
			{ "bad magic", 0, 'X', 0, "magic" },
			{ "version 2", 4, 2, 0, "version" },
			{ "type 9", 5, 9, 0, "type" },
			{ "flags", 7, 1, 0, "flags" },
			{ "truncated", -1, 0, -1, "does not match" },
			{ "trailing byte", -1, 0, 1, "does not match" },
			{ "hash length 10", 23, 10, 0, "too long" },
			{ "control byte", 24, 1, 0, "control" },
			{ "short header", -1, 0, -(n - 10), "shorter" },
		};
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			memcpy(bad, buf, (size_t)n);
			if (rows[i].off >= 0)
				bad[rows[i].off] = (unsigned char)rows[i].val;
			err[0] = '\0';
			ok(proto_decode(bad, (size_t)(n + rows[i].len_delta), &out, err,
			    sizeof(err)) == -1 && strstr(err, rows[i].why) != NULL,
			    "rejects %s (%s)", rows[i].label, err);
		}
	}
	memcpy(bad, buf, (size_t)n);
	bad[n - 1] = 'G';
	ok(proto_decode(bad, (size_t)n, &out, err, sizeof(err)) == -1, "non-hex hash refused");
	m.item_id = 0;
	n = proto_encode(&m, buf, sizeof(buf));
	ok(proto_decode(buf, (size_t)n, &out, err, sizeof(err)) == -1, "item without id refused");
	memset(m.name, 'a', sizeof(m.name) - 1);
	m.name[sizeof(m.name) - 1] = '\0';
	m.item_id = 1;
	ok(proto_encode(&m, buf, sizeof(buf)) > 0, "253-byte name fits");
	return done_testing();
}
