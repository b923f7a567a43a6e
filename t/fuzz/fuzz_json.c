/*
 * fuzz_json - common/json.c, the parser under every other one: validation
 * (depth, duplicate keys, line/column), the tree, the writer and
 * compaction.  Invariants: validate and parse agree, and so do validate
 * and its full check alone (the fast pass adds no answer); what the writer and
 * json_compact produce validates again, compaction is idempotent, and
 * json_validate_compact answers as json_validate and writes json_compact's bytes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct json_error e;
	struct buf a, b;
	struct jw w;
	yajl_val v;
	int valid;

	memset(&e, 0, sizeof(e));
	valid = json_validate(text, size, &e) == 0;
	/* the fast first pass never accepts what the full check refuses */
	fuzz_check(valid == (json_validate_full(text, size, 0, NULL) == 0),
	    "json_validate and the full check alone agree");
	fuzz_check(valid || (e.line >= 1 && e.column >= 1 && e.msg[0] != '\0'),
	    "an error has a position and a message");
	buf_init(&a);
	buf_adds(&a, "x");
	fuzz_check((json_validate_compact(&a, text, size, 0, NULL) == 0) == valid &&
	    (valid || strcmp(a.data, "x") == 0),
	    "json_validate_compact gives json_validate's answer, writes nothing when it refuses");
	buf_free(&a);
	v = json_parse(text, size, NULL);
	fuzz_check((v != NULL) == valid, "json_validate and json_parse agree");
	if (v == NULL)
		return 0;
	buf_init(&a);
	jw_init(&w, &a);
	jw_value(&w, v);
	fuzz_check(json_validate(a.data, a.len, NULL) == 0, "the writer's output is JSON");
	buf_init(&b);
	json_compact(&b, text, size);
	fuzz_check(json_validate(b.data, b.len, NULL) == 0, "compacted text is JSON");
	buf_reset(&a);
	fuzz_check(json_validate_compact(&a, text, size, 0, NULL) == 0 && a.len == b.len &&
	    memcmp(a.data, b.data, a.len) == 0,
	    "json_validate_compact writes what json_compact does");
	buf_reset(&a);
	json_compact(&a, b.data, b.len);
	fuzz_check(a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
	    "compaction is idempotent");
	buf_free(&a);
	buf_free(&b);
	yajl_tree_free(v);
	return 0;
}
