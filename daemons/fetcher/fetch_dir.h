/* fetch_dir - the dir source: every block file under a local folder */
#ifndef DECOD_FETCH_DIR_H
#define DECOD_FETCH_DIR_H

#include "daemons/fetcher/fetch_tree.h"

/*
 * fetch_dir - walk root (recursively; ".git" folders skipped) and put
 * every block file (fetch_keys rules) into the spool; paths in the
 * manifest are relative to root.  A symbolic link is followed only when
 * it resolves inside root; one that escapes is an error naming it.  Caps
 * of lim apply (TooLarge).  0 with res filled, or -1 with res->reason and
 * a message naming the file.
 */
int fetch_dir(struct spool *sp, const struct fetch_limits *lim, const char *root,
    struct fetch_result *res);

#endif
