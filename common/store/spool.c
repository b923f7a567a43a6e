/*
 * spool - content-addressed blob files.  The name of a blob is the sha256
 * of its bytes, so writing is idempotent and reading can verify.  Blobs are
 * spread over 256 subfolders by their first two hex digits.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/spool.h"
#include "common/sync_group.h"
#include "common/util.h"

struct spool {
	char *dir;
};

struct spool *
spool_open(const char *dir)
{
	struct spool *sp;

	if (mkdir_p(dir, 0700) < 0)
		return NULL;
	sp = xcalloc(1, sizeof(*sp));
	sp->dir = xstrdup(dir);
	return sp;
}

void
spool_close(struct spool *sp)
{
	if (sp == NULL)
		return;
	free(sp->dir);
	free(sp);
}

int
spool_path(struct spool *sp, const char *hash, char *out, size_t outlen)
{
	if (!is_sha256_hex(hash))
		return -1;
	if ((size_t)snprintf(out, outlen, "%s/%.2s/%s", sp->dir, hash, hash) >= outlen)
		return -1;
	return 0;
}

int
spool_has(struct spool *sp, const char *hash)
{
	char path[4096];

	return spool_path(sp, hash, path, sizeof(path)) == 0 && access(path, F_OK) == 0;
}

/*
 * spool_slot - hash data; path is where its blob goes, its folder made.
 * 1: the blob is there already, 0: to be written, -1 with errno.
 */
static int
spool_slot(struct spool *sp, const void *data, size_t len, char *hash, char *path,
    size_t plen)
{
	char sub[4096];

	sha256_hex(data, len, hash);
	if (spool_path(sp, hash, path, plen) < 0)
		return -1;
	if (access(path, F_OK) == 0)
		return 1;
	snprintf(sub, sizeof(sub), "%s/%.2s", sp->dir, hash);
	if (mkdir(sub, 0700) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int
spool_put(struct spool *sp, const void *data, size_t len, char *hash)
{
	char path[4096];
	int rc = spool_slot(sp, data, len, hash, path, sizeof(path));

	return rc != 0 ? (rc > 0 ? 0 : -1) : write_file_atomic(path, data, len, 0600);
}

int
spool_stage(struct spool *sp, const void *data, size_t len, char *hash, char **tmp)
{
	static unsigned seq;
	char path[4096];
	int fd, saved, rc;

	*tmp = NULL;
	if ((rc = spool_slot(sp, data, len, hash, path, sizeof(path))) != 0)
		return rc > 0 ? 0 : -1;
	*tmp = xasprintf("%s.tmp.%ld.%u", path, (long)getpid(),
	    __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if ((fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		goto fail;
	if (write_all(fd, data, len) < 0) {
		saved = errno;
		close(fd);
		unlink(*tmp);
		errno = saved;
		goto fail;
	}
	if (close(fd) < 0) {
		saved = errno;
		unlink(*tmp);
		errno = saved;
		goto fail;
	}
	return 0;
fail:
	saved = errno;
	free(*tmp);
	*tmp = NULL;
	errno = saved;
	return -1;
}

/* staged_name - the blob's own name from the temporary one spool_stage made */
static int
staged_name(const char *tmp, char *path, size_t len)
{
	const char *slash = strrchr(tmp, '/'), *dot;

	if (slash == NULL || (dot = strstr(slash, ".tmp.")) == NULL ||
	    (size_t)(dot - tmp) >= len) {
		errno = EINVAL;
		return -1;
	}
	memcpy(path, tmp, (size_t)(dot - tmp));
	path[dot - tmp] = '\0';
	return 0;
}

/* hex2 - the folder of a blob (its hash's first two hex digits) as 0..255, -1: not hex */
static int
hex2(const char *h)
{
	static const char hex[] = "0123456789abcdef";
	const char *a, *b;

	if (h[0] == '\0' || h[1] == '\0' || (a = strchr(hex, h[0])) == NULL ||
	    (b = strchr(hex, h[1])) == NULL)
		return -1;
	return (int)((a - hex) * 16 + (b - hex));
}

int
spool_commit(struct spool *sp, char **tmps, size_t n)
{
	char path[4096], dir[4096];
	uint64_t synced[4] = { 0 };	/* folders fsync'd, by their 256 names */
	int rv = 0;

	/* every file's data first: on ext4 the first fsync commits them all */
	for (size_t i = 0; i < n && rv == 0; i++) {
		int fd;

		if (tmps[i] == NULL)
			continue;
		if ((fd = open(tmps[i], O_RDONLY | O_CLOEXEC)) < 0 || fsync(fd) < 0)
			rv = -1;
		if (fd >= 0)
			close(fd);
	}
	/* then the names, and each folder once */
	for (size_t i = 0; i < n; i++) {
		if (tmps[i] == NULL)
			continue;
		if (rv == 0 && (staged_name(tmps[i], path, sizeof(path)) < 0 ||
		    rename(tmps[i], path) < 0))
			rv = -1;
		if (rv < 0)
			unlink(tmps[i]);
	}
	for (size_t i = 0; i < n && rv == 0; i++) {
		const char *base;
		int b, fd;

		if (tmps[i] == NULL || staged_name(tmps[i], path, sizeof(path)) < 0)
			continue;
		base = strrchr(path, '/') + 1;
		if ((b = hex2(base)) >= 0) {
			if (synced[b / 64] & (UINT64_C(1) << (b % 64)))
				continue;
			synced[b / 64] |= UINT64_C(1) << (b % 64);
		}
		snprintf(dir, sizeof(dir), "%s/%.2s", sp->dir, base);
		if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			(void)fsync(fd);
			close(fd);
		}
	}
	return rv;
}

int
spool_group(char **tmps, size_t n)
{
	char path[4096];

	if (!sync_group_active()) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (tmps[i] == NULL)
			continue;
		if (staged_name(tmps[i], path, sizeof(path)) < 0)
			return -1;
		sync_group_add(tmps[i], path, 0);	/* 0: the group's byte cap is the renderer's */
	}
	return 0;
}

char *
spool_get(struct spool *sp, const char *hash, size_t *len)
{
	char path[4096], got[SHA256_HEX_LEN + 1];
	size_t n;
	char *data;

	if (spool_path(sp, hash, path, sizeof(path)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if ((data = read_file(path, &n, 0)) == NULL)
		return NULL;
	sha256_hex(data, n, got);
	if (strcmp(got, hash) != 0) {
		free(data);
		errno = EIO;
		return NULL;
	}
	if (len != NULL)
		*len = n;
	return data;
}

long
spool_gc(struct spool *sp, int64_t min_age_ms, int (*keep)(void *arg, const char *hash),
    void *arg)
{
	char sub[4096], path[4096];
	struct dirent *de, *fe;
	struct stat st;
	DIR *d, *f;
	long removed = 0;
	int64_t now = wall_ms();

	if ((d = opendir(sp->dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", sp->dir,
		    de->d_name) >= sizeof(sub) || (f = opendir(sub)) == NULL)
			continue;
		while ((fe = readdir(f)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", sub,
			    fe->d_name) >= sizeof(path) || stat(path, &st) < 0)
				continue;
			if (now - (int64_t)st.st_mtime * 1000 < min_age_ms)
				continue;
			/* temp files left by a crash, or blobs nobody refers to */
			if (!is_sha256_hex(fe->d_name) || !keep(arg, fe->d_name)) {
				if (unlink(path) == 0)
					removed++;
			}
		}
		closedir(f);
	}
	closedir(d);
	return removed;
}
