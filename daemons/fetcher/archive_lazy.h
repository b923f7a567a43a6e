/*
 * archive_lazy - libarchive loaded on the first archive a fetch reads (a
 * GitHub zipball, an OCI layer), not at start: an idle fetcher whose
 * sources are inline, dir or git never maps it, nor what it links
 * (libxml2 and ICU with libstdc++, liblzma, libzstd, nettle, libacl...;
 * doc/benchmarks.md, "Idle stages").  archive_lazy.c defines the libarchive
 * calls fetch_archive.c makes (the fetcher does not link -larchive) and
 * forwards them to libarchive.so.13, opened by archive_lazy_load.
 */
#ifndef DECOD_ARCHIVE_LAZY_H
#define DECOD_ARCHIVE_LAZY_H

#include <stddef.h>

#define ARCHIVE_LAZY_LIB "libarchive.so.13"

/*
 * archive_lazy_load - make sure libarchive is loaded; call it before any
 * archive_* call (any thread).  0, or -1 with why in err (the library is
 * missing or lacks a call): the caller fails its item with that; the
 * next call tries again, so installing the library needs no restart.
 */
int archive_lazy_load(char *err, size_t errlen);

/*
 * archive_lazy_library - load soname instead of ARCHIVE_LAZY_LIB from now
 * on, if not loaded yet (for the tests: a library that is not there)
 */
void archive_lazy_library(const char *soname);

#endif
