/*
 * proto_detail_test - the typed item details: what each stage's writer
 * produces (the exact text the journal shows), round trips, and a table
 * of malformed details each decoder must refuse with its reason.
 */
#include "config.h"

#include "proto/proto.h"
#include "t/tap.h"

#define H64 "9b74c9897bac770ffc029102a200c5de9b74c9897bac770ffc029102a200c5de"

enum which { RENDER, PUBLISH, NOTIFY };

static int
decode(enum which w, const char *s, char *err, size_t errlen)
{
	struct proto_render_detail r;
	struct proto_publish_detail p;
	struct proto_notify_detail n;

	switch (w) {
	case RENDER:
		return proto_render_detail_decode(s, &r, err, errlen);
	case PUBLISH:
		return proto_publish_detail_decode(s, &p, err, errlen);
	default:
		return proto_notify_detail_decode(s, &n, err, errlen);
	}
}

static void
test_writers(void)
{
	struct proto_render_detail r = { "git", "3f2a9c", 7 }, r2;
	struct proto_publish_detail p = { "bin", H64, "abc123" }, p2;
	struct proto_notify_detail n = { 1731598481, "abc123" }, n2;
	char out[PROTO_MAX_DETAIL + 1], err[256];

	ok(proto_render_detail_encode(&r, out, sizeof(out)) > 0, "render detail encodes");
	is_str(out, "source=git commit=3f2a9c generation=7", "... as the fetcher always wrote it");
	ok(proto_render_detail_decode(out, &r2, err, sizeof(err)) == 0 &&
	    strcmp(r2.source, "git") == 0 && strcmp(r2.commit, "3f2a9c") == 0 &&
	    r2.generation == 7, "... and decodes to the same fields");
	r.commit[0] = '\0';
	proto_render_detail_encode(&r, out, sizeof(out));
	is_str(out, "source=git generation=7", "no commit: left out");
	r.generation = -1;
	proto_render_detail_encode(&r, out, sizeof(out));
	is_str(out, "source=git", "no generation: left out");
	ok(proto_render_detail_decode("source=dir", &r2, err, sizeof(err)) == 0 &&
	    r2.generation == -1 && r2.commit[0] == '\0', "source alone decodes, the rest empty");

	ok(proto_publish_detail_encode(&p, out, sizeof(out)) > 0, "publish detail encodes");
	is_str(out, "format=bin bin=" H64 " commit=abc123", "... as the renderer always wrote it");
	ok(proto_publish_detail_decode(out, &p2, err, sizeof(err)) == 0 &&
	    strcmp(p2.format, "bin") == 0 && strcmp(p2.bin, H64) == 0 &&
	    strcmp(p2.commit, "abc123") == 0, "... and decodes to the same fields");
	p = (struct proto_publish_detail){ "json", "", "" };
	proto_publish_detail_encode(&p, out, sizeof(out));
	is_str(out, "format=json", "json without a commit");
	p = (struct proto_publish_detail){ "bin", "", "" };
	ok(proto_publish_detail_encode(&p, out, sizeof(out)) == -1, "bin without a bin hash: no");

	ok(proto_notify_detail_encode(&n, out, sizeof(out)) > 0, "notify detail encodes");
	is_str(out, "timestamp=1731598481 commit=abc123", "... as the publisher always wrote it");
	ok(proto_notify_detail_decode(out, &n2, err, sizeof(err)) == 0 &&
	    n2.timestamp == 1731598481 && strcmp(n2.commit, "abc123") == 0, "... and back");
	n.commit[0] = '\0';
	proto_notify_detail_encode(&n, out, sizeof(out));
	is_str(out, "timestamp=1731598481 commit=-", "no commit: written as commit=-");
	ok(proto_notify_detail_decode(out, &n2, err, sizeof(err)) == 0 && n2.commit[0] == '\0',
	    "commit=- decodes as none");
	ok(proto_notify_detail_decode("v=1 timestamp=5", &n2, err, sizeof(err)) == 0 &&
	    n2.timestamp == 5, "v=1 is accepted");
	r = (struct proto_render_detail){ "git", "has space", 1 };
	ok(proto_render_detail_encode(&r, out, sizeof(out)) == -1,
	    "an encoder refuses what its decoder would");
	memset(r.commit, 'c', sizeof(r.commit) - 1);
	r.commit[sizeof(r.commit) - 1] = '\0';
	ok(proto_render_detail_encode(&r, out, sizeof(out)) > 0, "a 127-byte commit fits");
}

static void
test_malformed(void)
{
	static char long_detail[PROTO_MAX_DETAIL + 20];
	static const struct { const char *label; enum which w; const char *in, *why; } rows[] = {
		{ "empty", RENDER, "", "no source" },
		{ "no source", RENDER, "commit=abc generation=1", "no source" },
		{ "unknown field", RENDER, "source=git color=red", "unknown field" },
		{ "field twice", RENDER, "source=git source=dir", "twice" },
		{ "not key=value", RENDER, "source=git banana", "not key=value" },
		{ "empty key", RENDER, "source=git =x", "not key=value" },
		{ "two spaces", RENDER, "source=git  commit=a", "not key=value" },
		{ "leading space", RENDER, " source=git", "not key=value" },
		{ "trailing space", RENDER, "source=git ", "trailing space" },
		{ "negative generation", RENDER, "source=git generation=-1", "whole number" },
		{ "generation not a number", RENDER, "source=git generation=7x", "whole number" },
		{ "generation overflows", RENDER, "source=git generation=99999999999999999999",
		  "whole number" },
		{ "empty source", RENDER, "source=", "space or control" },
		{ "control byte", RENDER, "source=g\001t", "space or control" },
		{ "source too long", RENDER, "source=abcdefghijklmnopqrstuvwxyz0123456789",
		  "longer than 31" },
		{ "version 2", RENDER, "v=2 source=git", "version 2" },
		{ "no format", PUBLISH, "commit=abc", "no format" },
		{ "format xml", PUBLISH, "format=xml", "not json or bin" },
		{ "bin without hash", PUBLISH, "format=bin", "needs bin" },
		{ "bin not hex", PUBLISH, "format=bin bin=xyz", "not a sha256" },
		{ "bin upper hex", PUBLISH, "format=bin bin=9B74C9897BAC770FFC029102A200C5DE"
		  "9B74C9897BAC770FFC029102A200C5DE", "not a sha256" },
		{ "no timestamp", NOTIFY, "commit=abc", "no timestamp" },
		{ "timestamp negative", NOTIFY, "timestamp=-5", "whole number" },
		{ "timestamp empty", NOTIFY, "timestamp=", "whole number" },
		{ "publish field in notify", NOTIFY, "timestamp=1 format=json", "unknown field" },
		{ "too long", NOTIFY, long_detail, "longer than 511" },
		{ "NULL", NOTIFY, NULL, "missing" },
	};
	char err[256];

	memcpy(long_detail, "timestamp=1 commit=", 19);
	memset(long_detail + 19, 'c', sizeof(long_detail) - 20);
	long_detail[sizeof(long_detail) - 1] = '\0';
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		err[0] = '\0';
		ok(decode(rows[i].w, rows[i].in, err, sizeof(err)) == -1 &&
		    strstr(err, rows[i].why) != NULL, "refuses %s (%s)", rows[i].label, err);
	}
}

int
main(void)
{
	test_writers();
	test_malformed();
	return done_testing();
}
