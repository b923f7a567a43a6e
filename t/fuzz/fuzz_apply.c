/*
 * fuzz_apply - decoctl apply's input: YAML (libyaml events, anchors and
 * aliases, the core schema) or JSON, one or many documents, then the
 * checks resource_put makes and the YAML printer of decoctl get.  The
 * first byte picks the file name (.yaml, .json, or neither: sniffed).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_yaml.h"
#include "common/json.h"
#include "common/resource.h"
#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "x.yaml", "x.json", "-" };
	static const struct yaml_opts opts = { RESOURCE_MAX_SIZE, 0 };	/* decoctl's */
	static FILE *null;
	struct yaml_docs docs = { NULL, 0 };
	struct yaml_error e;
	char err[512];

	if (size == 0)
		return 0;
	if (null == NULL)
		null = fopen("/dev/null", "w");
	memset(&e, 0, sizeof(e));
	if (yaml_read_docs(names[data[0] % 3], (const char *)data + 1, size - 1, &opts,
	    &docs, &e) < 0) {
		fuzz_check(e.msg[0] != '\0', "a refusal says why");
		yaml_docs_free(&docs);
		return 0;
	}
	for (size_t i = 0; i < docs.n; i++) {
		const char *json = docs.v[i].json;
		yajl_val v = json_parse(json, strlen(json), NULL);
		struct buf unk;

		fuzz_check(v != NULL, "every document read is JSON within the limits");
		fuzz_check(strlen(json) <= RESOURCE_MAX_SIZE + 16, "aliases stay within 1 MiB");
		buf_init(&unk);
		buf_adds(&unk, "");
		(void)resource_unknown_fields(v, &unk);
		buf_free(&unk);
		if (YAJL_IS_OBJECT(v)) {
			const char *kind = json_get_str(v, "kind", NULL);
			const char *plural = kind ? resource_kind_plural(kind) : NULL;
			const char *name = json_get_str(v, "metadata", "name", NULL);

			if (plural != NULL && name != NULL)
				(void)resource_validate(v, plural, name, "default", err,
				    sizeof(err));
		}
		(void)cli_print_yaml(null, v);
		(void)cli_print_json(null, v);
		yajl_tree_free(v);
	}
	yaml_docs_free(&docs);
	return 0;
}
