/*
 * fetch_keys - the block key of a file in a fetched tree (SPEC §9): its
 * base name (subfolders flattened), URL-decoded with form rules ('+' is a
 * space, %XX a byte), one ".json" stripped.  Only files whose decoded name
 * ends in ".json" are blocks; everything else (README.md, .gitkeep) is
 * ignored.
 */
#ifndef DECOD_FETCH_KEYS_H
#define DECOD_FETCH_KEYS_H

#include <stddef.h>

/*
 * fetch_key_from_path - the key of the file at path (a relative path in
 * the source).  Returns 0 with the key in out, 1 when the file is not a
 * block (decoded name does not end in ".json"), or -1 with a message naming the
 * file in err (malformed escape, NUL byte, empty key, too long).
 */
int fetch_key_from_path(const char *path, char *out, size_t outlen,
    char *err, size_t errlen);

/*
 * fetch_form_decode - decode s with form rules into out (NUL-terminated);
 * 0, or -1 on a malformed escape, a decoded NUL byte or no room.
 */
int fetch_form_decode(const char *s, char *out, size_t outlen);

/* fetch_key_inline - an inline key is taken as written; 0 or -1 (empty, NUL) */
int fetch_key_inline(const char *key, size_t len, char *err, size_t errlen);

#endif
