/*
 * spool - content-addressed blob files.  The name of a blob is the sha256
 * of its bytes, so writing is idempotent and reading can verify.  Blobs are
 * spread over 256 subfolders by their first two hex digits.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/spool.h"
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

int
spool_put(struct spool *sp, const void *data, size_t len, char *hash)
{
	char path[4096], sub[4096];

	sha256_hex(data, len, hash);
	if (spool_path(sp, hash, path, sizeof(path)) < 0)
		return -1;
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(sub, sizeof(sub), "%s/%.2s", sp->dir, hash);
	if (mkdir(sub, 0700) < 0 && errno != EEXIST)
		return -1;
	return write_file_atomic(path, data, len, 0600);
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
