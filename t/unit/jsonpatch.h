/*
 * jsonpatch - a small RFC 6902 applier (add, remove, replace, test) on
 * yajl trees, for tests only: the webhook's patches are checked by
 * applying them, not by comparing their text.
 */
#ifndef DECOD_T_JSONPATCH_H
#define DECOD_T_JSONPATCH_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

/*
 * jsonpatch_apply - apply the patch (a JSON array of operations) to *doc in
 * place; 0, or -1 with err (the document may be half patched then).
 */
int jsonpatch_apply(yajl_val *doc, const char *patch, size_t len, char *err, size_t errlen);

/* jsonpatch_at - the value at a dotted path ("a.b.0.c"; numbers index arrays), or NULL */
yajl_val jsonpatch_at(yajl_val doc, const char *path);

#endif
