/*
 * lazy_lib - a shared library loaded on first use rather than at start,
 * so an idle program does not map it and what it pulls in
 * (doc/benchmarks.md, "Idle stages").  curl_lazy.c (libcurl, every
 * program) and the fetcher's archive_lazy.c (libarchive) each define the
 * library's calls decod makes, forwarding to the pointers this fills.
 */
#ifndef DECOD_LAZY_LIB_H
#define DECOD_LAZY_LIB_H

#include <stddef.h>

struct lazy_sym {
	const char *name;	/* the symbol, as the library exports it */
	void **slot;		/* where its address goes */
};

/*
 * lazy_lib_open - dlopen() lib (RTLD_NOW | RTLD_LOCAL) and set every
 * syms[i].slot to the address of syms[i].name in it.  0, or -1 with why
 * in err (the library cannot be found or loaded, or lacks a symbol): the
 * library is then closed again and the slots are not to be used.  The
 * caller serialises calls (pthread_once or a mutex); nothing is unloaded.
 */
int lazy_lib_open(const char *lib, const struct lazy_sym *syms, size_t n, char *err,
    size_t errlen);

#endif
