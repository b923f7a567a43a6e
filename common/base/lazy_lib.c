/*
 * lazy_lib - dlopen() a library and look up the calls a program makes of
 * it, in one go (see lazy_lib.h).  What to do when that fails is the
 * caller's: curl_lazy.c stops the program, archive_lazy.c fails the item.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>

#include "common/lazy_lib.h"

int
lazy_lib_open(const char *lib, const struct lazy_sym *syms, size_t n, char *err,
    size_t errlen)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	const char *why;

	if (h == NULL) {
		why = dlerror();
		snprintf(err, errlen, "cannot load %s: %s", lib, why ? why : "not found");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if ((*syms[i].slot = dlsym(h, syms[i].name)) == NULL) {
			snprintf(err, errlen, "%s has no %s", lib, syms[i].name);
			for (size_t k = 0; k < i; k++)
				*syms[k].slot = NULL;
			dlclose(h);
			return -1;
		}
	}
	return 0;
}
