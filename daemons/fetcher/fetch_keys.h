/*
 * fetch_keys - the block key of a file in a fetched tree (SPEC §9): its
 * base name (subfolders flattened), URL-decoded with form rules ('+' is a
 * space, %XX a byte), one ".json" stripped.  Only files whose decoded name
 * ends in ".json" are blocks; everything else (README.md, .gitkeep) is
 * ignored.  Every name from outside (an archive entry, a git tree path, a
 * folder entry, an OCI title, an inline key) and every key meets one rule,
 * fetch_name_bad, here and nowhere else.
 */
#ifndef DECOD_FETCH_KEYS_H
#define DECOD_FETCH_KEYS_H

#include <stddef.h>

/*
 * fetch_name_bad - the one rule for a name from outside and for a block
 * key: not empty and valid UTF-8, because every name and key ends up in
 * JSON (the tree manifest, the status, the published document), which can
 * hold nothing else.  Returns why name cannot be taken, a static phrase
 * completing "entry 'NAME' ...", or NULL.  Quote a refused name with
 * str_show (common/util.h) so the message is valid UTF-8 itself.
 */
const char *fetch_name_bad(const char *name);

/*
 * fetch_key_from_path - the key of the file at path (a relative path in
 * the source).  Returns 0 with the key in out, 1 when the file is not a
 * block (decoded name does not end in ".json"), or -1 with a message naming the
 * file in err (a path fetch_name_bad refuses, whether a block or not; a
 * malformed escape, NUL byte, empty key, too long, a decoded key that is
 * not valid UTF-8).
 */
int fetch_key_from_path(const char *path, char *out, size_t outlen,
    char *err, size_t errlen);

/*
 * fetch_form_decode - decode s with form rules into out (NUL-terminated);
 * 0, or -1 on a malformed escape, a decoded NUL byte or no room.
 */
int fetch_form_decode(const char *s, char *out, size_t outlen);

/*
 * fetch_key_inline - an inline key is taken as written; 0 or -1 (empty,
 * NUL, not valid UTF-8)
 */
int fetch_key_inline(const char *key, size_t len, char *err, size_t errlen);

#endif
