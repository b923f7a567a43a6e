/*
 * fetch_archive - reads a zip (GitHub zipball) or a tar, plain or gzip
 * (OCI layer) held in memory, with libarchive, under guards against hostile
 * archives: entries with ".." or absolute paths, links, devices, too many
 * entries, too many bytes once decompressed, and a compression ratio past
 * a limit (zip bombs, of the whole archive and of each entry as it streams)
 * are refused before any block is handed on.  Names are read as UTF-8
 * whatever the process's locale.
 */
#ifndef DECOD_FETCH_ARCHIVE_H
#define DECOD_FETCH_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "daemons/fetcher/fetch_tree.h"

enum fetch_archive_kind {
	FETCH_ARCHIVE_ZIP,
	FETCH_ARCHIVE_TAR,	/* plain or gzip-compressed */
};

struct fetch_archive_limits {
	uint64_t max_entries;	/* entries of any type (0: no limit) */
	uint64_t max_bytes;	/* decompressed bytes, declared or read (0: none) */
	uint64_t max_ratio;	/* decompressed bytes per archive byte, checked
				 * once more than 1 MiB came out, for the whole
				 * archive and for each entry read (0: none) */
};

/*
 * every entry that passed the guards, in archive order: a folder (is_dir,
 * only -1 counts) or a regular file: 1 wanted (its bytes are read), 0
 * skipped, -1 stop (res filled)
 */
typedef int (*fetch_archive_want_fn)(void *arg, const char *path, int is_dir,
    struct fetch_result *res);
/* the bytes of a wanted file: 0, or -1 to stop (res filled) */
typedef int (*fetch_archive_file_fn)(void *arg, const char *path, const void *data,
    size_t len, struct fetch_result *res);

/*
 * fetch_archive_read - walk every entry of the archive in data/len.  Every
 * path is checked (the name rule of fetch_name_bad: empty, not UTF-8; then
 * absolute, "..", backslash, control bytes: refused, the name quoted with
 * str_show),
 * so are links and special files; folders and regular files go to want(),
 * and a wanted file's bytes to file().  what names the archive in messages.  0 when the
 * whole archive was read, or -1 with res->reason FetchError (hostile or
 * broken archive) or whatever the callbacks set.  Nothing is kept.
 */
int fetch_archive_read(const void *data, size_t len, enum fetch_archive_kind kind,
    const struct fetch_archive_limits *lim, const char *what, fetch_archive_want_fn want,
    fetch_archive_file_fn file, void *arg, struct fetch_result *res);

#endif
