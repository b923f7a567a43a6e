/*
 * replay - the driver that runs a harness without libFuzzer: every file
 * named on the command line (a folder: every file in it) is one input.
 * `make check` runs it over t/fuzz/seeds/<target> and t/fuzz/regress/<target>
 * so a crash that fuzzing once found stays fixed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "t/fuzz/fuzz.h"

static int
run_file(const char *path)
{
	size_t len = 0;
	char *data = read_file(path, &len, 64u << 20);

	if (data == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	free(data);
	return 0;
}

int
main(int argc, char **argv)
{
	int n = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat sb;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
			if ((d = opendir(argv[i])) == NULL)
				continue;
			while ((de = readdir(d)) != NULL) {
				char *p;

				if (de->d_name[0] == '.')
					continue;
				p = xasprintf("%s/%s", argv[i], de->d_name);
				bad += run_file(p) < 0;
				n++;
				free(p);
			}
			closedir(d);
		} else {
			bad += run_file(argv[i]) < 0;
			n++;
		}
	}
	printf("%d inputs replayed\n", n);
	return bad ? 1 : 0;
}
