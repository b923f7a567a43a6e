/*
 * fuzz_conf - the configuration file every program reads (decod.conf:
 * "name = value" lines, quotes, comments, typed values with bounds),
 * through conf_load_file on a memory file.  Invariant: a file that loads
 * gives every setting a readable value.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/conf.h"
#include "t/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	static FILE *null;
	const struct conf_setting *s;
	struct conf *cf;

	if (fd < 0) {
		if ((fd = memfd_create("decod-fuzz-conf", 0)) < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		null = fopen("/dev/null", "w");
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	cf = conf_new();
	if (conf_load_file(cf, path, 1, null) == 0) {
		for (s = conf_settings(); s->name != NULL; s++) {
			switch (s->type) {
			case CONF_INT:
				(void)conf_get_int(cf, s->name);
				break;
			case CONF_DURATION:
				(void)conf_get_ms(cf, s->name);
				break;
			case CONF_SIZE:
				(void)conf_get_size(cf, s->name);
				break;
			case CONF_BOOL:
				(void)conf_get_bool(cf, s->name);
				break;
			default:
				fuzz_check(conf_get(cf, s->name) != NULL, "a value");
			}
		}
	}
	conf_free(cf);
	return 0;
}
