/*
 * stage_health - the heartbeat file a stage's loop keeps fresh, and the
 * probe that reads it (stage_health.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/log.h"
#include "common/stage_health.h"

void
stage_alive_path(struct conf *cf, const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s.alive", conf_get(cf, "runtime_dir"), name);
}

int
stage_alive_touch(const char *path)
{
	char line[32];
	int fd, n;

	if (utimensat(AT_FDCWD, path, NULL, 0) == 0)
		return 0;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		log_kv(LOG_WARN, "cannot write the heartbeat file", "path", path, "error",
		    strerror(errno), NULL);
		return -1;
	}
	n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (write(fd, line, (size_t)n) != n) {
		log_kv(LOG_WARN, "cannot write the heartbeat file", "path", path, "error",
		    strerror(errno), NULL);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int
stage_health_check(struct conf *cf, const char *name, long max_age)
{
	char path[4096];
	struct stat sb;
	long age;

	stage_alive_path(cf, name, path, sizeof(path));
	if (stat(path, &sb) < 0) {
		printf("%s: not ready (%s: %s)\n", name, path, strerror(errno));
		return 1;
	}
	age = (long)(time(NULL) - sb.st_mtime);
	if (age > max_age) {
		printf("%s: not alive (heartbeat %lds old, limit %lds)\n", name, age, max_age);
		return 1;
	}
	printf("%s: ok (heartbeat %lds old)\n", name, age < 0 ? 0 : age);
	return 0;
}
