/*
 * store_local_spare - value files rewritten without a new inode.  A put
 * normally writes a new file and renames it over the key's, freeing the
 * old inode.  On an ext4 without a journal, each file created looks at
 * every inode freed in the last half minute (ext4's recently_deleted), and
 * a cold start that rewrote 10,000 CRs' status fragments spent 40% of the
 * fetcher's CPU and 28% of the renderer's creating files.  So a volatile
 * put writes this handle's spare file in place and exchanges it with the
 * key's (renameat2 RENAME_EXCHANGE): the key's old inode becomes the next
 * spare.  A reader that opened that inode before the exchange may read it
 * while the next put rewrites it: such values carry a checksum of their
 * bytes in the header ("DKV1 rev exp sum"), and local_read_value reads a
 * torn one again.  An inode whose header has no checksum is never
 * rewritten in place (a reader could not tell), and a file system that
 * cannot exchange gets the rename as before.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/store_local.h"
#include "common/util.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

uint64_t
local_value_sum(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* summed - the file at fd is empty or has a checksummed header: safe to rewrite */
static int
summed(int fd)
{
	char h[80];
	ssize_t n = pread(fd, h, sizeof(h) - 1, 0);
	char *nl;
	int spaces = 0;

	if (n == 0)
		return 1;
	if (n < 0)
		return 0;
	h[n] = '\0';
	if ((nl = strchr(h, '\n')) == NULL || strncmp(h, LOCAL_MAGIC, sizeof(LOCAL_MAGIC) - 1) != 0)
		return 0;
	for (char *p = h; p < nl; p++)
		spaces += *p == ' ';
	return spaces == 3;	/* "DKV1 rev exp sum" */
}

/* spare_open - this handle's spare, made when missing or not safe to rewrite */
static int
spare_open(struct local *l)
{
	int fd;

	if (l->spare == NULL)
		l->spare = xasprintf("%s/s.%ld.%u", l->tmp, (long)getpid(), l->seq++);
	if ((fd = open(l->spare, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -1;
	if (!summed(fd)) {
		close(fd);
		if (unlink(l->spare) < 0 && errno != ENOENT)
			return -1;
		fd = open(l->spare, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	return fd;
}

int
local_put_recycled(struct local *l, const char *path, const char *dir, const void *data,
    size_t len)
{
	struct stat st;
	int fd, rv;

	if (l->spare_off)
		return 1;
	if ((fd = spare_open(l)) < 0)
		return 1;
	if (pwrite(fd, data, len, 0) != (ssize_t)len ||
	    (fstat(fd, &st) == 0 && st.st_size > (off_t)len && ftruncate(fd, (off_t)len) < 0)) {
		close(fd);
		return 1;
	}
	close(fd);
	if ((rv = renameat2(AT_FDCWD, l->spare, AT_FDCWD, path, RENAME_EXCHANGE)) == 0)
		return 0;	/* the key's old inode is the spare now */
	if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)
		l->spare_off = 1;	/* no exchange here: renames from now on */
	else if (errno != ENOENT)
		return -1;
	/* a new key (or no exchange): the spare becomes the key's file */
	if (rename(l->spare, path) < 0) {
		if (errno != ENOENT || mkdir_p(dir, 0700) < 0 || rename(l->spare, path) < 0)
			return -1;
	}
	return 0;
}

void
local_spare_close(struct local *l)
{
	if (l->spare != NULL)
		(void)unlink(l->spare);
	free(l->spare);
	l->spare = NULL;
}

void
local_spares_sweep(struct local *l)
{
	DIR *d;
	struct dirent *de;
	long pid;
	unsigned n;
	char *p;

	if ((d = opendir(l->tmp)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		/* a spare of a process that is gone (crashed: it did not remove it) */
		if (sscanf(de->d_name, "s.%ld.%u", &pid, &n) != 2 || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		p = xasprintf("%s/%s", l->tmp, de->d_name);
		(void)unlink(p);
		free(p);
	}
	closedir(d);
}
