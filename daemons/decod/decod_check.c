/*
 * decod_check - the configuration errors start-up would otherwise meet
 * one stage at a time, as deaths and restarts with a growing delay: a store
 * URL no backend reads, a stage without a program, a libexec_dir that is
 * not there.  `decod --check-config` prints them; decod itself refuses to
 * start with them (and a reload with them keeps the running config).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/store.h"
#include "common/util.h"
#include "daemons/decod/decod.h"

/* stage_name_ok - a stage name is a program name: [a-z0-9_-], not too long */
static int
stage_name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len >= sizeof(((struct child *)0)->name))
		return 0;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		    *p == '-'))
			return 0;
	return 1;
}

/* check_stages - every stage named once, each a program decod can run */
static int
check_stages(const struct conf *cf, FILE *errs)
{
	const char *dir = conf_get(cf, "libexec_dir");
	char *list = xstrdup(conf_get(cf, "stages")), *save = NULL, path[4096];
	const char **seen = NULL;
	struct stat sb;
	size_t n = 0;
	int bad = 0, dir_ok;

	if (stat(dir, &sb) < 0) {
		fprintf(errs, "libexec_dir: %s: %s\n", dir, strerror(errno));
		bad++;
	} else if (!S_ISDIR(sb.st_mode)) {
		fprintf(errs, "libexec_dir: %s is not a folder\n", dir);
		bad++;
	}
	dir_ok = bad == 0;
	for (char *s = strtok_r(list, " ,", &save); s; s = strtok_r(NULL, " ,", &save)) {
		int twice = 0;

		for (size_t i = 0; i < n; i++)
			twice |= strcmp(seen[i], s) == 0;
		seen = xrealloc(seen, (n + 1) * sizeof(*seen));
		seen[n++] = s;
		if (twice) {
			fprintf(errs, "stages: %s is named twice\n", s);
			bad++;
		} else if (!stage_name_ok(s)) {
			fprintf(errs, "stages: \"%s\" is not a stage name ([a-z0-9_-])\n", s);
			bad++;
		} else if (dir_ok) {
			snprintf(path, sizeof(path), "%s/%s", dir, s);
			if (stat(path, &sb) < 0) {
				fprintf(errs, "stages: %s: no program %s (%s)\n", s, path,
				    strerror(errno));
				bad++;
			} else if (!S_ISREG(sb.st_mode) || access(path, X_OK) < 0) {
				fprintf(errs, "stages: %s: %s is not an executable file\n", s, path);
				bad++;
			}
		}
	}
	if (n == 0) {
		fprintf(errs, "stages: names no stage\n");
		bad++;
	}
	free(seen);
	free(list);
	return bad;
}

int
decod_check(const struct conf *cf, FILE *errs)
{
	char err[512];
	int bad = 0;

	if (store_url_check(conf_get(cf, "store"), err, sizeof(err)) < 0) {
		fprintf(errs, "%s\n", err);
		bad++;
	}
	return bad + check_stages(cf, errs);
}
