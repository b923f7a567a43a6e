/*
 * store_local - the "local:/dir" store backend: a tree of files on one
 * machine, for single hosts and tests.  Owns the folder layout below, the
 * value file format and the revision counter; the flock job locks are in
 * store_local_lock.c, the watch (inotify, polling as a fallback) in
 * store_local_watch.c.
 *
 * Layout under the root (created 0700):
 *   kv/     values.  Key "/a/b/c" is the file kv/a.d/b.d/c.v: every folder
 *           component gets ".d" and the last one ".v", so "/a" (kv/a.v) and
 *           "/a/b" (kv/a.d/b.v) coexist and no key can name a folder.  A key
 *           component is therefore at most 253 bytes.
 *   tmp/    files being written; a put writes here and renames into kv/, so
 *           readers and watchers only ever see whole files.
 *   locks/  job lock files, same encoding with ".lock"; flock'd while held,
 *           holding the holder's identity.
 *   rev     the revision counter (text), flock'd around every mutation, so
 *           mutations from every process on the root are serialised.
 * A value file is "DKV1 <revision> <expiry unix ms, 0: none>\n" then the
 * value bytes; a file without that header (dropped in by hand) reads as a
 * plain value with revision 0.  Keys are cleaned relative paths (no "..",
 * no control bytes); they come back with one leading "/".
 *
 * A prefix (list, delete_prefix, watch) is a path: "/a/b" names the key
 * "/a/b" itself and the keys under "/a/b/"; "/a/b/" only the keys under
 * it; neither matches "/a/bc".  "" and "/" name every key.  The watch reports states, not every write: a key written and
 * removed between two dispatches may be reported as nothing, and several
 * writes between two dispatches as one PUT with the latest value.  PUT
 * events carry the value's revision; DELETE events carry 0 (unknown).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "common/store_local.h"
#include "common/util.h"

#define LOCAL_VALUE_MAX (64u << 20)
#define LOCAL_MAGIC "DKV1 "


/* ---- keys and paths ---- */

/* printable - a short copy of key fit for an error message */
static const char *
printable(const char *key, char *out, size_t outlen)
{
	size_t o = 0;

	if (key == NULL)
		return "(null)";
	for (const unsigned char *p = (const unsigned char *)key; *p && o + 4 < outlen; p++)
		out[o++] = (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p;
	if (o + 4 >= outlen && key[o] != '\0')
		out[o++] = '.', out[o++] = '.', out[o++] = '.';
	out[o] = '\0';
	return out;
}

/*
 * local_clean_key - turn key into the cleaned relative path rel (LOCAL_REL_BUF
 * bytes) by path_clean, the one key validator; empty_ok allows "" and "/"
 * (every key, for prefixes).  0 or -1 with the store error set.
 */
int
local_clean_key(struct local *l, const char *what, const char *key, char *rel, int empty_ok)
{
	char pk[80];
	const char *k = key, *why;

	if (key == NULL) {
		store_set_error(l->s, "%s: no key", what);
		return -1;
	}
	while (*k == '/')
		k++;
	if (*k == '\0') {
		if (empty_ok) {
			rel[0] = '\0';
			return 0;
		}
		store_set_error(l->s, "%s: empty key", what);
		return -1;
	}
	if (path_clean(k, rel, LOCAL_REL_BUF, &why) < 0) {
		store_set_error(l->s, "%s: key \"%s\" %s", what, printable(key, pk, sizeof(pk)),
		    why);
		return -1;
	}
	return 0;
}

/*
 * local_enc_path - base/rel with ".d" on folder components and suffix on
 * the last (malloc'd)
 */
char *
local_enc_path(const char *base, const char *rel, const char *suffix)
{
	struct buf b;
	const char *p = rel, *seg;

	buf_init(&b);
	buf_adds(&b, base);
	while (*p) {
		seg = p;
		while (*p && *p != '/')
			p++;
		buf_addc(&b, '/');
		buf_add(&b, seg, (size_t)(p - seg));
		if (*p == '/') {
			buf_adds(&b, ".d");
			p++;
		} else
			buf_adds(&b, suffix);
	}
	return buf_steal(&b, NULL);
}

/* local_has_suffix - name ends with the two-byte suffix sfx and has a stem */
int
local_has_suffix(const char *name, const char *sfx)
{
	size_t n = strlen(name);

	return n > 2 && strcmp(name + n - 2, sfx) == 0;
}

/* local_prefix_self - whether a prefix names its own key too (no trailing "/") */
int
local_prefix_self(const char *prefix)
{
	size_t n = prefix != NULL ? strlen(prefix) : 0;

	return n == 0 || prefix[n - 1] != '/';
}

/* local_key_matches - key is pkey's own key (self) or under it */
int
local_key_matches(const char *pkey, int self, const char *key)
{
	size_t n = strlen(pkey);

	return n == 0 || (strncmp(key, pkey, n) == 0 &&
	    ((self && key[n] == '\0') || key[n] == '/'));
}

/* local_ts_ns - a timespec in nanoseconds */
int64_t
local_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void
fsync_dirpath(const char *path)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* ---- value files ---- */

/*
 * local_read_value - read the value file at path.  0: *val (malloc'd,
 * NUL-terminated; caller frees) with its revision and expiry; 1: absent;
 * -1: error with errno set.
 */
int
local_read_value(const char *path, char **val, size_t *vlen, int64_t *rev, int64_t *exp)
{
	int fd, rv, saved;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 1 : -1;
	rv = local_read_value_fd(fd, val, vlen, rev, exp);
	saved = errno;
	close(fd);
	errno = saved;
	return rv;
}

int
local_read_value_fd(int fd, char **val, size_t *vlen, int64_t *rev, int64_t *exp)
{
	char *data, *nl, *end;
	size_t len, hlen;
	long long r, e;

	if ((data = read_fd(fd, &len, LOCAL_VALUE_MAX + 128)) == NULL)
		return -1;
	*rev = 0;
	*exp = 0;
	if (len >= sizeof(LOCAL_MAGIC) - 1 &&
	    memcmp(data, LOCAL_MAGIC, sizeof(LOCAL_MAGIC) - 1) == 0 &&
	    (nl = memchr(data, '\n', len < 64 ? len : 64)) != NULL) {
		*nl = '\0';
		errno = 0;
		r = strtoll(data + sizeof(LOCAL_MAGIC) - 1, &end, 10);
		if (errno == 0 && *end == ' ') {
			e = strtoll(end + 1, &end, 10);
			if (errno == 0 && *end == '\0' && r >= 0 && e >= 0) {
				*rev = r;
				*exp = e;
				hlen = (size_t)(nl - data) + 1;
				memmove(data, data + hlen, len - hlen + 1);
				len -= hlen;
			} else
				*nl = '\n';
		} else
			*nl = '\n';
	}
	*val = data;
	*vlen = len;
	return 0;
}

/* local_expired - an expiry (unix ms, 0: none) has passed */
int
local_expired(int64_t exp)
{
	return exp != 0 && exp <= wall_ms();
}

/* ---- the revision counter and mutation lock ---- */

static int
mut_lock(struct local *l)
{
	while (flock(l->revfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static void
mut_unlock(struct local *l)
{
	(void)flock(l->revfd, LOCK_UN);
}

int64_t
local_rev(struct local *l)
{
	char b[32];
	ssize_t n = pread(l->revfd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return 0;
	b[n] = '\0';
	return strtoll(b, NULL, 10);
}

/* rev_bump - next revision; call with the mutation lock held */
static int64_t
rev_bump(struct local *l)
{
	char b[32];
	int64_t r = local_rev(l) + 1;

	snprintf(b, sizeof(b), "%020" PRId64 "\n", r);
	(void)pwrite(l->revfd, b, strlen(b), 0);
	return r;
}

/* prune_dirs - remove now-empty folders of rel's parents, deepest first */
static void
prune_dirs(struct local *l, const char *rel)
{
	char parent[LOCAL_REL_BUF], *slash, *dir;

	snprintf(parent, sizeof(parent), "%s", rel);
	while ((slash = strrchr(parent, '/')) != NULL) {
		*slash = '\0';
		dir = local_enc_path(l->kv, parent, ".d");
		if (rmdir(dir) < 0) {
			free(dir);
			return;
		}
		free(dir);
	}
}

/*
 * local_expire_rel - remove rel's value file if it is still expired (another
 * process may have written it again meanwhile).  1 removed, 0 not.
 */
int
local_expire_rel(struct local *l, const char *rel)
{
	char *path = local_enc_path(l->kv, rel, ".v"), *val;
	size_t vlen;
	int64_t rev, exp;
	int removed = 0;

	if (mut_lock(l) < 0) {
		free(path);
		return 0;
	}
	if (local_read_value(path, &val, &vlen, &rev, &exp) == 0) {
		free(val);
		if (local_expired(exp) && unlink(path) == 0) {
			rev_bump(l);
			prune_dirs(l, rel);
			removed = 1;
		}
	}
	mut_unlock(l);
	free(path);
	return removed;
}

/* ---- open, close ---- */

static void local_close(void *be);

static void *
local_open(struct store *s, const char *spec, const struct conf *cf)
{
	struct local *l;
	const char *dir = spec;

	(void)cf;
	if (strncmp(dir, "//", 2) == 0)	/* local:///var/x is /var/x */
		dir += 2;
	if (*dir == '\0') {
		store_set_error(s, "local: needs a folder (local:/var/lib/decod/store)");
		return NULL;
	}
	l = xcalloc(1, sizeof(*l));
	l->s = s;
	l->revfd = -1;
	l->root = xstrdup(dir);
	l->kv = xasprintf("%s/kv", dir);
	l->tmp = xasprintf("%s/tmp", dir);
	l->locks = xasprintf("%s/locks", dir);
	l->revpath = xasprintf("%s/rev", dir);
	if (s->no_create && access(l->revpath, F_OK) < 0) {
		/* a reader: an absent store is said, not made empty */
		s->missing = errno == ENOENT;
		store_set_error(s, "no store at %s (%s)", l->root, strerror(errno));
		local_close(l);
		return NULL;
	}
	if (mkdir_p(l->root, 0700) < 0 || mkdir_p(l->kv, 0700) < 0 ||
	    mkdir_p(l->tmp, 0700) < 0 || mkdir_p(l->locks, 0700) < 0) {
		store_set_error(s, "cannot create folder %s: %s", l->root, strerror(errno));
		local_close(l);
		return NULL;
	}
	if ((l->revfd = open(l->revpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		store_set_error(s, "cannot open %s: %s", l->revpath, strerror(errno));
		local_close(l);
		return NULL;
	}
	return l;
}

static void
local_close(void *be)
{
	struct local *l = be;
	if (l == NULL)
		return;
	local_locks_release(l);
	if (l->revfd >= 0)
		close(l->revfd);
	free(l->root);
	free(l->kv);
	free(l->tmp);
	free(l->locks);
	free(l->revpath);
	free(l);
}

/* ---- put, get, delete ---- */

/*
 * write_tmp - the value into a new temporary file, fsync'd when sync.  The
 * caller renames it into place (one rename: a temporary name of its own
 * needs no second rename nor the fsync of the temporary folder).
 */
static int
write_tmp(const char *tmp, const void *data, size_t len, int sync)
{
	int fd, saved;

	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return -1;
	if (write_all(fd, data, len) < 0)
		goto fail;
	if (sync && fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

static int local_put_sync(void *be, const char *key, const void *val, size_t len, int ttl_s,
    int sync);

static int
local_put(void *be, const char *key, const void *val, size_t len, int ttl_s)
{
	return local_put_sync(be, key, val, len, ttl_s, 1);
}

/* local_put_volatile - no fsync: the page cache has it, a crash of decod loses nothing */
static int
local_put_volatile(void *be, const char *key, const void *val, size_t len)
{
	return local_put_sync(be, key, val, len, 0, 0);
}

static int
local_put_sync(void *be, const char *key, const void *val, size_t len, int ttl_s, int sync)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], hdr[64], *path, *dir, *tmp, *slash;
	struct buf b;
	int64_t rev, exp;
	int rv = -1, moved;

	if (local_clean_key(l, "put", key, rel, 0) < 0)
		return -1;
	if (len > LOCAL_VALUE_MAX) {
		store_set_error(l->s, "put %s: value of %zu bytes is over the %u limit",
		    key, len, LOCAL_VALUE_MAX);
		return -1;
	}
	path = local_enc_path(l->kv, rel, ".v");
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	tmp = xasprintf("%s/w.%ld.%u", l->tmp, (long)getpid(), l->seq++);
	buf_init(&b);
	if (mut_lock(l) < 0) {
		store_set_error(l->s, "put %s: lock %s: %s", key, l->revpath, strerror(errno));
		goto out;
	}
	rev = rev_bump(l);
	exp = ttl_s > 0 ? wall_ms() + (int64_t)ttl_s * 1000 : 0;
	snprintf(hdr, sizeof(hdr), "%s%" PRId64 " %" PRId64 "\n", LOCAL_MAGIC, rev, exp);
	buf_adds(&b, hdr);
	buf_add(&b, val, len);
	if (write_tmp(tmp, b.data, b.len, sync) < 0) {
		store_set_error(l->s, "put %s: write %s: %s", key, path, strerror(errno));
		(void)unlink(tmp);
		goto unlock;
	}
	/* the key's folder nearly always exists: make it only when missing */
	moved = rename(tmp, path) == 0;
	if (!moved && errno == ENOENT) {
		if (mkdir_p(dir, 0700) < 0) {
			store_set_error(l->s, "put %s: mkdir %s: %s", key, dir, strerror(errno));
			(void)unlink(tmp);
			goto unlock;
		}
		moved = rename(tmp, path) == 0;
	}
	if (!moved) {
		store_set_error(l->s, "put %s: write %s: %s", key, path, strerror(errno));
		(void)unlink(tmp);
		goto unlock;
	}
	if (sync)
		fsync_dirpath(dir);
	rv = 0;
unlock:
	mut_unlock(l);
out:
	buf_free(&b);
	free(tmp);
	free(dir);
	free(path);
	return rv;
}

static int
local_get(void *be, const char *key, char **val, size_t *len)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], *path, *v;
	size_t vlen;
	int64_t rev, exp;
	int rv;

	*val = NULL;
	if (len != NULL)
		*len = 0;
	if (local_clean_key(l, "get", key, rel, 0) < 0)
		return -1;
	path = local_enc_path(l->kv, rel, ".v");
	rv = local_read_value(path, &v, &vlen, &rev, &exp);
	if (rv < 0)
		store_set_error(l->s, "get %s: %s: %s", key, path, strerror(errno));
	free(path);
	if (rv != 0)
		return rv;
	if (local_expired(exp)) {
		free(v);
		(void)local_expire_rel(l, rel);
		return 1;
	}
	*val = v;
	if (len != NULL)
		*len = vlen;
	return 0;
}

static int
local_del(void *be, const char *key)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], *path;
	int rv = 0;

	if (local_clean_key(l, "delete", key, rel, 0) < 0)
		return -1;
	path = local_enc_path(l->kv, rel, ".v");
	if (mut_lock(l) < 0) {
		store_set_error(l->s, "delete %s: lock: %s", key, strerror(errno));
		free(path);
		return -1;
	}
	if (unlink(path) == 0) {
		rev_bump(l);
		prune_dirs(l, rel);
	} else if (errno != ENOENT && errno != ENOTDIR) {
		store_set_error(l->s, "delete %s: %s: %s", key, path, strerror(errno));
		rv = -1;
	}
	mut_unlock(l);
	free(path);
	return rv;
}

/* ---- walking the tree ---- */

typedef void (*walk_fn)(void *arg, const char *key, const char *path);

/* walk - call fn for every value file under dir (whose key path is dkey) */
static void
walk(const char *dir, const char *dkey, walk_fn fn, void *arg)
{
	DIR *d;
	struct dirent *de;
	char *sub, *key;
	size_t n;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		n = strlen(de->d_name);
		if (local_has_suffix(de->d_name, ".d")) {
			sub = xasprintf("%s/%s", dir, de->d_name);
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			walk(sub, key, fn, arg);
			free(sub);
			free(key);
		} else if (local_has_suffix(de->d_name, ".v")) {
			sub = xasprintf("%s/%s", dir, de->d_name);
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			fn(arg, key, sub);
			free(sub);
			free(key);
		}
	}
	closedir(d);
}

/* walk_prefix - fn for every key under rel, and rel itself when self */
static void
walk_prefix(struct local *l, const char *rel, int self, walk_fn fn, void *arg)
{
	char *path, *key;

	if (rel[0] == '\0') {
		walk(l->kv, "", fn, arg);
		return;
	}
	key = xasprintf("/%s", rel);
	path = local_enc_path(l->kv, rel, ".v");
	if (self && access(path, F_OK) == 0)
		fn(arg, key, path);
	free(path);
	path = local_enc_path(l->kv, rel, ".d");
	walk(path, key, fn, arg);
	free(path);
	free(key);
}

/* rmdirs - remove the empty folders of a tree, deepest first */
static void
rmdirs(const char *dir, int self)
{
	DIR *d;
	struct dirent *de;
	char *sub;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (local_has_suffix(de->d_name, ".d")) {
			sub = xasprintf("%s/%s", dir, de->d_name);
			rmdirs(sub, 1);
			free(sub);
		}
	closedir(d);
	if (self)
		(void)rmdir(dir);
}

struct list_acc {
	struct local *l;
	struct store_kv *kvs;
	size_t n, cap;
	char **stale;		/* local_expired keys to remove afterwards */
	size_t nstale;
	long removed;
	int err;
};

static void
list_one(void *arg, const char *key, const char *path)
{
	struct list_acc *a = arg;
	char *val;
	size_t vlen;
	int64_t rev, exp;
	int rv = local_read_value(path, &val, &vlen, &rev, &exp);

	if (rv == 1)
		return;
	if (rv < 0) {
		store_set_error(a->l->s, "list: %s: %s", path, strerror(errno));
		a->err = 1;
		return;
	}
	if (local_expired(exp)) {
		free(val);
		a->stale = xrealloc(a->stale, (a->nstale + 1) * sizeof(char *));
		a->stale[a->nstale++] = xstrdup(key + 1);
		return;
	}
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->kvs = xrealloc(a->kvs, a->cap * sizeof(*a->kvs));
	}
	a->kvs[a->n].key = xstrdup(key);
	a->kvs[a->n].value = val;
	a->kvs[a->n].vlen = vlen;
	a->kvs[a->n].mod_revision = rev;
	a->n++;
}

static int
kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_kv *)a)->key, ((const struct store_kv *)b)->key);
}

static int
local_list(void *be, const char *prefix, struct store_list *out)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF];
	struct list_acc a;

	if (local_clean_key(l, "list", prefix, rel, 1) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.l = l;
	out->revision = local_rev(l);
	walk_prefix(l, rel, local_prefix_self(prefix), list_one, &a);
	for (size_t i = 0; i < a.nstale; i++) {
		(void)local_expire_rel(l, a.stale[i]);
		free(a.stale[i]);
	}
	free(a.stale);
	if (a.err) {
		struct store_list tmp = { a.kvs, a.n, 0 };

		store_list_free(&tmp);
		return -1;
	}
	if (a.n > 1)
		qsort(a.kvs, a.n, sizeof(*a.kvs), kv_cmp);
	out->kvs = a.kvs;
	out->n = a.n;
	return 0;
}

static void
del_one(void *arg, const char *key, const char *path)
{
	struct list_acc *a = arg;
	char *val;
	size_t vlen;
	int64_t rev, exp;
	int live;

	(void)key;
	if (local_read_value(path, &val, &vlen, &rev, &exp) != 0)
		return;
	free(val);
	live = !local_expired(exp);
	if (unlink(path) == 0)
		a->removed += live;
	else if (errno != ENOENT) {
		store_set_error(a->l->s, "delete prefix: %s: %s", path, strerror(errno));
		a->err = 1;
	}
}

static long
local_del_prefix(void *be, const char *prefix)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], *dir;
	struct list_acc a;

	if (local_clean_key(l, "delete prefix", prefix, rel, 1) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.l = l;
	if (mut_lock(l) < 0) {
		store_set_error(l->s, "delete prefix %s: lock: %s", prefix, strerror(errno));
		return -1;
	}
	walk_prefix(l, rel, local_prefix_self(prefix), del_one, &a);
	dir = rel[0] ? local_enc_path(l->kv, rel, ".d") : xstrdup(l->kv);
	rmdirs(dir, rel[0] != '\0');
	free(dir);
	if (rel[0])
		prune_dirs(l, rel);
	rev_bump(l);
	mut_unlock(l);
	return a.err ? -1 : a.removed;
}

const struct store_ops store_local_ops = {
	.scheme = "local",
	.open = local_open,
	.close = local_close,
	.put = local_put,
	.put_volatile = local_put_volatile,
	.get = local_get,
	.del = local_del,
	.del_prefix = local_del_prefix,
	.list = local_list,
	.watch_new = local_watch_new,
	.watch_new_list = local_watch_new_list,
	.watch_fd = local_watch_fd,
	.watch_timeout_ms = local_watch_timeout_ms,
	.watch_dispatch = local_watch_dispatch,
	.watch_free = local_watch_free,
	.try_lock = local_try_lock,
	.try_lock_many = local_try_lock_many,
	.unlock = local_unlock,
};
