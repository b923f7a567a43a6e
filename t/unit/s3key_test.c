/* s3key_test - the S3 object key and the ConfigMap name of SPEC §9, table-driven */
#include "config.h"

#include "common/s3key.h"
#include "t/tap.h"

int
main(void)
{
	static const struct {
		const char *label, *prefix, *ns, *dep, *want;
	} rows[] = {
		{ "no prefix", NULL, "sites-loja", "loja", "sites-loja/loja/decofile.json" },
		{ "empty prefix", "", "sites-loja", "loja", "sites-loja/loja/decofile.json" },
		{ "prefix", "decofiles", "ns", "d", "decofiles/ns/d/decofile.json" },
		{ "prefix slashes trimmed", "/a/b/", "ns", "d", "a/b/ns/d/decofile.json" },
		{ "only slashes", "//", "ns", "d", "ns/d/decofile.json" },
		{ "empty namespace refused", NULL, "", "d", NULL },
		{ "empty deployment refused", "p", "ns", "", NULL },
	};
	char out[256], tiny[8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = s3key_build(rows[i].prefix, rows[i].ns, rows[i].dep, out, sizeof(out));

		if (rows[i].want == NULL)
			is_int(rc, -1, "%s", rows[i].label);
		else {
			is_int(rc, 0, "%s: built", rows[i].label);
			is_str(out, rows[i].want, "%s", rows[i].label);
		}
	}
	is_int(s3key_build(NULL, "sites-loja", "loja", tiny, sizeof(tiny)), -1,
	    "a key that does not fit is refused");

	is_int(configmap_name("loja", out, sizeof(out)), 0, "configmap name built");
	is_str(out, "decofile-loja", "configmap name is decofile-<name>");
	is_int(configmap_name("", out, sizeof(out)), -1, "empty decofile name refused");
	is_int(configmap_name("a-long-name", tiny, sizeof(tiny)), -1,
	    "a configmap name that does not fit is refused");
	is_str(configmap_decofile("decofile-loja"), "loja", "configmap decofile-loja holds loja");
	ok(configmap_decofile("kube-root-ca.crt") == NULL, "another configmap holds no decofile");
	ok(configmap_decofile("decofile-") == NULL, "the bare prefix holds no decofile");
	return done_testing();
}
