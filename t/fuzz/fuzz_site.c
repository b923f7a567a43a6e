/*
 * fuzz_site - the reference replica's push reload body (SPEC §4.4),
 * through the same steps handle_push takes once the token passed: parse
 * (depth and duplicate keys), the "decofile" member's raw bytes, compaction
 * and installing it as the served document.  Reached by including site.c
 * (its main renamed).
 */
#include "config.h"

#define main site_main
int site_main(int argc, char **argv);
#include "examples/site/site.c"
#undef main

#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data, *v;
	struct buf doc;
	yajl_val tree;
	size_t vlen;

	json_set_max_depth(JSON_MAX_DEPTH_DEFAULT + 1);
	if ((tree = json_parse(body, size, NULL)) == NULL)
		return 0;
	if (YAJL_IS_OBJECT(tree) && YAJL_IS_OBJECT(json_get(tree, "decofile", NULL)) &&
	    site_member_raw(body, size, "decofile", &v, &vlen) == 0) {
		fuzz_check(v >= body && v + vlen <= body + size, "the member lies in the body");
		fuzz_check(json_validate(v, vlen, NULL) == 0, "the member is the object");
		buf_init(&doc);
		json_compact(&doc, v, vlen);
		pthread_mutex_lock(&site.mu);
		vlen = doc.len;
		set_doc(buf_steal(&doc, NULL), vlen, "1", "push");
		pthread_mutex_unlock(&site.mu);
	}
	yajl_tree_free(tree);
	return 0;
}
