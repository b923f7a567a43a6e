/*
 * sync_group - write_file_atomic's syncs grouped (see sync_group.h).
 * The group is thread-local: only the thread that opened it defers its
 * writes, so a library thread writing a file meanwhile still gets its
 * fsyncs.  syncfs where it works; fsync of each file and each folder
 * once where it does not.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/sync_group.h"
#include "common/util.h"

struct entry {
	char *tmp, *path;
	dev_t dev;
};

static __thread int active;
static __thread struct entry *ents;
static __thread size_t nents, cap, bytes;

void
sync_group_begin(void)
{
	active = 1;
	nents = 0;
	bytes = 0;
}

int
sync_group_active(void)
{
	return active;
}

void
sync_group_add(const char *tmp, const char *path, size_t len)
{
	struct stat sb;

	if (nents == cap) {
		cap = cap ? cap * 2 : 64;
		ents = xrealloc(ents, cap * sizeof(*ents));
	}
	ents[nents].tmp = xstrdup(tmp);
	ents[nents].path = xstrdup(path);
	ents[nents].dev = stat(tmp, &sb) == 0 ? sb.st_dev : 0;
	nents++;
	bytes += len;
}

size_t
sync_group_bytes(void)
{
	return bytes;
}

size_t
sync_group_files(void)
{
	return nents;
}

static void
clear(void)
{
	for (size_t i = 0; i < nents; i++) {
		free(ents[i].tmp);
		free(ents[i].path);
	}
	nents = 0;
	bytes = 0;
	active = 0;
}

/* sync_path - fsync the file or folder at path; 0 or -1 */
static int
sync_path(const char *path, int flags)
{
	int fd, rv;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | flags)) < 0)
		return -1;
	rv = fsync(fd);
	close(fd);
	return rv;
}

/* parent - path's folder into dir */
static void
parent(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/*
 * sync_all - make every entry durable under its tmp (names 0) or its name
 * (names 1): syncfs once per filesystem, or each file's fsync (names 0) or
 * each folder's once (names 1) where syncfs fails
 */
static int
sync_all(int names)
{
	char dir[4096], seen[4096];

	for (size_t i = 0; i < nents; i++) {
		int fd, first = 1, rv;

		for (size_t k = 0; k < i; k++)
			if (ents[k].dev == ents[i].dev)
				first = 0;
		if (!first)
			continue;
		parent(names ? ents[i].path : ents[i].tmp, dir, sizeof(dir));
		if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -1;
		rv = syncfs(fd);
		close(fd);
		if (rv == 0)
			continue;
		/* no syncfs: each file (or folder) of this filesystem */
		seen[0] = '\0';
		for (size_t k = i; k < nents; k++) {
			if (ents[k].dev != ents[i].dev)
				continue;
			if (!names) {
				if (sync_path(ents[k].tmp, 0) < 0)
					return -1;
				continue;
			}
			parent(ents[k].path, dir, sizeof(dir));
			if (strcmp(dir, seen) == 0)
				continue;
			snprintf(seen, sizeof(seen), "%s", dir);
			(void)sync_path(dir, O_DIRECTORY);
		}
	}
	return 0;
}

int
sync_group_flush(void)
{
	int rv = 0, saved = 0;

	active = 0;
	if (nents == 0)
		return 0;
	if (sync_all(0) < 0) {
		saved = errno;
		rv = -1;
	}
	for (size_t i = 0; i < nents; i++) {
		if (rv == 0 && rename(ents[i].tmp, ents[i].path) < 0) {
			saved = errno;
			rv = -1;
		}
		if (rv < 0)
			unlink(ents[i].tmp);
	}
	if (rv == 0 && sync_all(1) < 0) {
		saved = errno;
		rv = -1;
	}
	clear();
	errno = saved;
	return rv;
}

void
sync_group_abort(void)
{
	for (size_t i = 0; i < nents; i++)
		unlink(ents[i].tmp);
	clear();
}
