/*
 * publish_record_test - what every publish target records alike and can be
 * checked without a stage: the deletion policy a Decofile asks for and the
 * notifier item's detail (table-driven).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "daemons/publisher/publish_record.h"
#include "proto/proto.h"
#include "t/tap.h"

int
main(void)
{
	static const struct {
		const char *label, *doc;
		int want;
	} policy[] = {
		{ "no metadata", "{}", 0 },
		{ "no annotations", "{\"metadata\":{\"name\":\"x\"}}", 0 },
		{ "other annotation", "{\"metadata\":{\"annotations\":{\"a\":\"detach\"}}}", 0 },
		{ "detach", "{\"metadata\":{\"annotations\":{\"deco.sites/deletion\":\"detach\"}}}", 1 },
		{ "delete", "{\"metadata\":{\"annotations\":{\"deco.sites/deletion\":\"delete\"}}}", 0 },
		{ "case matters", "{\"metadata\":{\"annotations\":{\"deco.sites/deletion\":\"Detach\"}}}", 0 },
		{ "not a string", "{\"metadata\":{\"annotations\":{\"deco.sites/deletion\":true}}}", 0 },
	};
	char longc[PROTO_MAX_COMMIT + 20];
	static const struct {
		const char *label, *commit;
		long long ts;
		const char *want;
	} notify[] = {
		{ "a commit", "abc123", 1731598481, "timestamp=1731598481 commit=abc123" },
		{ "none", "", 7, "timestamp=7 commit=-" },
		{ "none, written -", "-", 7, "timestamp=7 commit=-" },
		{ "one it cannot carry is left out, not the rollout", NULL, 9,
		    "timestamp=9 commit=-" },
		{ "a space is left out", "a b", 9, "timestamp=9 commit=-" },
	};
	char out[PROTO_MAX_DETAIL + 1];
	struct proto_notify_detail nd;
	char err[256];

	for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++) {
		yajl_val doc = json_parse(policy[i].doc, strlen(policy[i].doc), NULL);

		ok(doc != NULL, "%s: parsed", policy[i].label);
		is_int(publish_doc_detach(doc), policy[i].want, "policy: %s", policy[i].label);
		yajl_tree_free(doc);
	}

	memset(longc, 'a', sizeof(longc) - 1);
	longc[sizeof(longc) - 1] = '\0';
	for (size_t i = 0; i < sizeof(notify) / sizeof(notify[0]); i++) {
		publish_notify_detail(out, sizeof(out), notify[i].ts,
		    notify[i].commit != NULL ? notify[i].commit : longc);
		is_str(out, notify[i].want, "notify detail: %s", notify[i].label);
		ok(proto_notify_detail_decode(out, &nd, err, sizeof(err)) == 0 &&
		    nd.timestamp == notify[i].ts, "%s: the notifier reads it back", notify[i].label);
	}
	return done_testing();
}
