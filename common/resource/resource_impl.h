/*
 * resource_impl - what resource.c (resources) and resource_status.c (their
 * status fragments) share.  Only those include this header.
 */
#ifndef DECOD_RESOURCE_IMPL_H
#define DECOD_RESOURCE_IMPL_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

struct store;

/*
 * resource_get_tree - read key from the store and parse it: 0 (*doc set,
 * free with yajl_tree_free), 1 absent, -1 error (store or JSON; message in
 * err)
 */
int resource_get_tree(struct store *s, const char *key, yajl_val *doc, char *err,
    size_t errlen);

#endif
