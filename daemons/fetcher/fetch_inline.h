/* fetch_inline - the inline source: spec.inline.value, one block per key */
#ifndef DECOD_FETCH_INLINE_H
#define DECOD_FETCH_INLINE_H

#include <yajl/yajl_tree.h>

#include "daemons/fetcher/fetch_tree.h"

/*
 * fetch_inline - value must be an object {key: JSON value}; each value is
 * written compact into the spool under its key as written (no URL
 * decoding), path "inline:<key>".  0 with res filled, or -1 with
 * res->reason/error.
 */
int fetch_inline(struct spool *sp, const struct fetch_limits *lim, yajl_val value,
    struct fetch_result *res);

#endif
