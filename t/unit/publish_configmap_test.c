/*
 * publish_configmap_test - the configmap target's pure parts: the apply
 * body (owner reference or none, the two keys), the 1 MiB size rule, the
 * "holds exactly what we published" test and the content hash read back
 * from a decofile.bin (base64 of brotli).
 */
#include "config.h"

#include <brotli/encode.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/util.h"
#include "daemons/publisher/publish_configmap.h"
#include "t/tap.h"

static char *
bin_of(const char *json)
{
	size_t n = BrotliEncoderMaxCompressedSize(strlen(json)) + 16;
	uint8_t *out = xmalloc(n);
	char *b64;

	BrotliEncoderCompress(5, 22, BROTLI_MODE_TEXT, strlen(json), (const uint8_t *)json,
	    &n, out);
	b64 = base64_encode(out, n, 0);
	free(out);
	return b64;
}

int
main(void)
{
	static const struct {
		const char *label, *data;
		int ts_ok_want, extra_want;
	} rows[] = {
		{ "exactly ours", "{\"decofile.bin\":\"%s\",\"timestamp.txt\":\"100\"}", 1, 0 },
		{ "a key added", "{\"decofile.bin\":\"%s\",\"timestamp.txt\":\"100\",\"x\":\"y\"}", 0, 1 },
		{ "timestamp changed", "{\"decofile.bin\":\"%s\",\"timestamp.txt\":\"101\"}", 0, 0 },
		{ "timestamp missing", "{\"decofile.bin\":\"%s\"}", 0, 0 },
		{ "bin changed", "{\"decofile.bin\":\"AAAA%s\",\"timestamp.txt\":\"100\"}", 0, 0 },
	};
	const char *doc = "{\"A\":1,\"B\":\"\xc3\xbc\"}";
	char *b64 = bin_of(doc), bsha[65], csha[65], got[65], *body, *text;
	yajl_val v, cm;
	size_t len;
	int extra;

	sha256_hex(b64, strlen(b64), bsha);
	sha256_hex(doc, strlen(doc), csha);

	body = publish_configmap_body("sites-loja", "loja", "uid-1", b64, strlen(b64), 100, &len);
	v = json_parse(body, len, NULL);
	ok(v != NULL, "the apply body is JSON");
	is_str(json_get_str(v, "kind", NULL), "ConfigMap", "kind");
	is_str(json_get_str(v, "metadata", "name", NULL), "decofile-loja", "name decofile-<name>");
	is_str(json_get_str(v, "metadata", "namespace", NULL), "sites-loja", "namespace");
	{
		yajl_val refs = json_get(v, "metadata", "ownerReferences", NULL);
		yajl_val r0 = refs != NULL && YAJL_IS_ARRAY(refs) && refs->u.array.len == 1 ?
		    refs->u.array.values[0] : NULL;

		ok(r0 != NULL, "one owner reference");
		is_str(json_get_str(r0, "kind", NULL), "Decofile", "owner kind");
		is_str(json_get_str(r0, "apiVersion", NULL), "deco.sites/v1alpha1", "owner apiVersion");
		is_str(json_get_str(r0, "uid", NULL), "uid-1", "owner uid");
		ok(json_get_bool(r0, 0, "controller", NULL) && json_get_bool(r0, 0,
		    "blockOwnerDeletion", NULL), "controller and blockOwnerDeletion");
	}
	is_str(json_get_str(v, "data", "timestamp.txt", NULL), "100", "timestamp.txt: seconds, no newline");
	is_str(json_get_str(v, "data", "decofile.bin", NULL), b64, "decofile.bin as given");
	is_int(json_get(v, "data", NULL)->u.object.len, 2, "two keys, no more");
	ok(publish_configmap_holds(v, bsha, 100, NULL), "the body holds what it publishes");
	ok(publish_configmap_content(v, got) == 0, "content readable");
	is_str(got, csha, "content hash of the JSON inside decofile.bin");
	yajl_tree_free(v);
	free(body);

	body = publish_configmap_body("ns", "x", NULL, "QQ==", 4, 7, &len);
	v = json_parse(body, len, NULL);
	ok(json_get(v, "metadata", "ownerReferences", NULL) == NULL, "no uid: no owner reference (detach)");
	ok(publish_configmap_content(v, got) == -1, "a decofile.bin that is not brotli is refused");
	yajl_tree_free(v);
	free(body);

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *at = strstr(rows[i].data, "%s");
		char *data = xasprintf("%.*s%s%s", (int)(at - rows[i].data), rows[i].data, b64,
		    at + 2);

		text = xasprintf("{\"metadata\":{\"name\":\"decofile-x\"},\"data\":%s}", data);
		cm = json_parse(text, strlen(text), NULL);
		is_int(publish_configmap_holds(cm, bsha, 100, &extra), rows[i].ts_ok_want, "holds: %s",
		    rows[i].label);
		is_int(extra, rows[i].extra_want, "extra keys: %s", rows[i].label);
		yajl_tree_free(cm);
		free(text);
		free(data);
	}
	text = xasprintf("{\"data\":{\"decofile.bin\":\"%s\",\"timestamp.txt\":\"100\"},"
	    "\"binaryData\":{\"x\":\"AA==\"}}", b64);
	cm = json_parse(text, strlen(text), NULL);
	ok(!publish_configmap_holds(cm, bsha, 100, &extra) && extra == 1, "binaryData counts as extra");
	yajl_tree_free(cm);
	free(text);

	is_int(publish_configmap_size(10, 1731598481), 12 + 10 + 13 + 10, "size counts keys and values");
	ok(publish_configmap_size(1048576 - 35, 1731598481) <= PUBLISH_CONFIGMAP_MAX &&
	    publish_configmap_size(1048576 - 34, 1731598481) > PUBLISH_CONFIGMAP_MAX,
	    "1 MiB is the limit");
	free(b64);
	return done_testing();
}
