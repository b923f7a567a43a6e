/*
 * store_local_lock - the local store's job locks: a lock is an flock on
 * its file under locks/ (the key's path, ".lock" last), taken without
 * waiting and holding the holder's identity for whoever is refused it.
 * A process keeps the fds of the locks it holds in a hash table on the
 * backend (struct local); closing a fd, or the process dying, lets go.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/store_local.h"
#include "common/util.h"

/* held_free - let a job lock go: empty its file (no holder named) and close it */
static void
held_free(struct held *h)
{
	(void)ftruncate(h->fd, 0);
	close(h->fd);
	free(h->rel);
	free(h);
}

static struct held **
held_bucket(struct local *l, const char *rel)
{
	return &l->hbucket[str_hash(rel) % LOCAL_HELD_BUCKETS];
}

/*
 * local_try_lock - take key's lock without waiting: 1 ours (already held
 * counts), 0 someone else's (*holder, if asked, their identity, malloc'd),
 * -1 error with the store error set
 */
int
local_try_lock(void *be, const char *key, char **holder)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], who[256], *path, *dir, *slash;
	const char *id = store_identity(l->s);
	struct held *h;
	ssize_t n = 0;
	int fd;

	if (local_clean_key(l, "lock", key, rel, 0) < 0)
		return -1;
	for (h = *held_bucket(l, rel); h != NULL; h = h->hnext)
		if (strcmp(h->rel, rel) == 0)
			return 1;
	path = local_enc_path(l->locks, rel, ".lock");
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	/* the lock's folder nearly always exists (a restart: the file too) */
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 && errno == ENOENT &&
	    mkdir_p(dir, 0700) == 0)
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		store_set_error(l->s, "lock %s: %s: %s", key, path, strerror(errno));
		free(dir);
		free(path);
		return -1;
	}
	free(dir);
	free(path);
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		struct stat sb;

		/* a lock let go is an empty file already: no truncation (ext4's is dear) */
		if ((fstat(fd, &sb) < 0 || sb.st_size > 0) && ftruncate(fd, 0) < 0) {
			store_set_error(l->s, "lock %s: truncate: %s", key, strerror(errno));
			close(fd);
			return -1;
		}
		if (pwrite(fd, id, strlen(id), 0) < 0) {
			store_set_error(l->s, "lock %s: write: %s", key, strerror(errno));
			close(fd);
			return -1;
		}
		h = xcalloc(1, sizeof(*h));
		h->rel = xstrdup(rel);
		h->fd = fd;
		h->hnext = *held_bucket(l, h->rel);
		*held_bucket(l, h->rel) = h;
		return 1;
	}
	if (errno != EWOULDBLOCK) {
		store_set_error(l->s, "lock %s: flock: %s", key, strerror(errno));
		close(fd);
		return -1;
	}
	/* the holder writes its identity just after taking the lock */
	for (int i = 0; i < 50 && (n = pread(fd, who, sizeof(who) - 1, 0)) <= 0; i++)
		usleep(2000);
	close(fd);
	if (holder != NULL) {
		who[n > 0 ? n : 0] = '\0';
		*holder = xstrdup(n > 0 ? who : "unknown");
	}
	return 0;
}

/* local_try_lock_many - flocks are local calls: one local_try_lock per key */
int
local_try_lock_many(void *be, const char *const *keys, size_t n, int *results)
{
	int rv = 0;

	for (size_t i = 0; i < n; i++) {
		int r = local_try_lock(be, keys[i], NULL);

		results[i] = r == 1;
		if (r < 0)
			rv = -1;
	}
	return rv;
}

/* local_unlock - let key's lock go if this backend holds it; 0, -1 on a bad key */
int
local_unlock(void *be, const char *key)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF];
	struct held **hp, *h;

	if (local_clean_key(l, "unlock", key, rel, 0) < 0)
		return -1;
	for (hp = held_bucket(l, rel); (h = *hp) != NULL; hp = &h->hnext)
		if (strcmp(h->rel, rel) == 0) {
			*hp = h->hnext;
			held_free(h);
			break;
		}
	return 0;
}

/* local_locks_release - let every lock this backend holds go */
void
local_locks_release(struct local *l)
{
	for (size_t i = 0; i < LOCAL_HELD_BUCKETS; i++)
		while (l->hbucket[i] != NULL) {
			struct held *h = l->hbucket[i];

			l->hbucket[i] = h->hnext;
			held_free(h);
		}
}
