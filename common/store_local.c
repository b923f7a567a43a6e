/*
 * store_local - the "local:/dir" store backend: a tree of files on one
 * machine, for single hosts and tests.  Owns the folder layout below, the
 * value file format, the revision counter, inotify watches (polling as a
 * fallback) and flock job locks.
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
#include <sys/inotify.h>
#include <sys/stat.h>

#include "common/store_impl.h"
#include "common/util.h"

#define LOCAL_KEY_MAX 1024		/* as path_clean_rel */
#define LOCAL_COMP_MAX 253		/* 255 minus the ".d"/".v" suffix */
#define LOCAL_REL_BUF (LOCAL_KEY_MAX + 8)	/* room for path_clean_rel's output */
#define LOCAL_VALUE_MAX (64u << 20)
#define LOCAL_MAGIC "DKV1 "
#define LOCAL_POLL_MS 500
#define LOCAL_RESCAN_MS 30000

struct held {
	char *rel;
	int fd;
	struct held *next;
};

struct local {
	struct store *s;
	char *root, *kv, *tmp, *locks, *revpath;
	int revfd;
	unsigned seq;
	struct held *held;
};

/* known - what a watch last saw of one key */
struct known {
	char *key;
	int64_t rev, exp;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns, ctime_ns;
	int seen;
};

struct wdir {
	int wd;
	char *path, *dkey;
};

/* pending - a change found by a scan, applied in revision order */
struct pending {
	char *key;
	int del;
	char *val;
	size_t vlen;
	int64_t rev, exp;
	struct stat st;
};

struct plist {
	struct pending *v;
	size_t n, cap;
};

struct lwatch {
	struct local *l;
	char *pkey;		/* "/a/b", or "" for every key */
	int self;		/* the key pkey itself is watched too */
	int ifd;		/* inotify, or -1 when polling */
	struct wdir *dirs;
	size_t ndirs, capdirs;
	struct known *known;	/* sorted by key */
	size_t nknown, capknown;
	int64_t next_scan;	/* monotonic ms */
	int need_rescan;
};

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

/* key_problem - why in (leading "/" stripped) is not a usable key */
static const char *
key_problem(const char *in)
{
	const char *p = in, *seg;
	size_t n;

	if (strlen(in) > LOCAL_KEY_MAX)
		return "longer than 1024 bytes";
	for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			return "contains a control byte";
		if (*c == '\\')
			return "contains a backslash";
	}
	while (*p) {
		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - seg);
		if (n == 2 && seg[0] == '.' && seg[1] == '.')
			return "contains a \"..\" component";
		if (n > LOCAL_COMP_MAX)
			return "has a component longer than 253 bytes";
	}
	return "is not a clean relative path";
}

/*
 * clean_key - turn key into the cleaned relative path rel (LOCAL_KEY_MAX+1
 * bytes); empty_ok allows "" and "/" (every key, for prefixes).  0 or -1
 * with the store error set.
 */
static int
clean_key(struct local *l, const char *what, const char *key, char *rel, int empty_ok)
{
	char pk[80];
	const char *k = key, *seg, *p;

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
	if (path_clean_rel(k, rel, LOCAL_REL_BUF) < 0)
		goto bad;
	for (p = rel; *p;) {
		seg = p;
		while (*p && *p != '/')
			p++;
		if ((size_t)(p - seg) > LOCAL_COMP_MAX)
			goto bad;
		if (*p == '/')
			p++;
	}
	return 0;
bad:
	store_set_error(l->s, "%s: key \"%s\" %s", what, printable(key, pk, sizeof(pk)),
	    key_problem(k));
	return -1;
}

/* enc_path - base/rel with ".d" on folder components and suffix on the last */
static char *
enc_path(const char *base, const char *rel, const char *suffix)
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

/* has_suffix - name ends with the two-byte suffix sfx and has a stem */
static int
has_suffix(const char *name, const char *sfx)
{
	size_t n = strlen(name);

	return n > 2 && strcmp(name + n - 2, sfx) == 0;
}

/* prefix_self - whether a prefix names its own key too (no trailing "/") */
static int
prefix_self(const char *prefix)
{
	size_t n = prefix != NULL ? strlen(prefix) : 0;

	return n == 0 || prefix[n - 1] != '/';
}

static int
key_matches(const char *pkey, int self, const char *key)
{
	size_t n = strlen(pkey);

	return n == 0 || (strncmp(key, pkey, n) == 0 &&
	    ((self && key[n] == '\0') || key[n] == '/'));
}

static int64_t
ts_ns(const struct timespec *ts)
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
 * read_value - read the value file at path.  0: *val (malloc'd,
 * NUL-terminated; caller frees) with its revision and expiry; 1: absent;
 * -1: error with errno set.
 */
static int
read_value(const char *path, char **val, size_t *vlen, int64_t *rev, int64_t *exp)
{
	char *data, *nl, *end;
	size_t len, hlen;
	long long r, e;

	if ((data = read_file(path, &len, LOCAL_VALUE_MAX + 128)) == NULL)
		return errno == ENOENT || errno == ENOTDIR ? 1 : -1;
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

static int
expired(int64_t exp)
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

static int64_t
rev_read(struct local *l)
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
	int64_t r = rev_read(l) + 1;

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
		dir = enc_path(l->kv, parent, ".d");
		if (rmdir(dir) < 0) {
			free(dir);
			return;
		}
		free(dir);
	}
}

/*
 * expire_rel - remove rel's value file if it is still expired (another
 * process may have written it again meanwhile).  1 removed, 0 not.
 */
static int
expire_rel(struct local *l, const char *rel)
{
	char *path = enc_path(l->kv, rel, ".v"), *val;
	size_t vlen;
	int64_t rev, exp;
	int removed = 0;

	if (mut_lock(l) < 0) {
		free(path);
		return 0;
	}
	if (read_value(path, &val, &vlen, &rev, &exp) == 0) {
		free(val);
		if (expired(exp) && unlink(path) == 0) {
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
	struct held *h, *next;

	if (l == NULL)
		return;
	for (h = l->held; h != NULL; h = next) {
		next = h->next;
		(void)ftruncate(h->fd, 0);
		close(h->fd);
		free(h->rel);
		free(h);
	}
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

static int
local_put(void *be, const char *key, const void *val, size_t len, int ttl_s)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], hdr[64], *path, *dir, *tmp, *slash;
	struct buf b;
	int64_t rev, exp;
	int rv = -1;

	if (clean_key(l, "put", key, rel, 0) < 0)
		return -1;
	if (len > LOCAL_VALUE_MAX) {
		store_set_error(l->s, "put %s: value of %zu bytes is over the %u limit",
		    key, len, LOCAL_VALUE_MAX);
		return -1;
	}
	path = enc_path(l->kv, rel, ".v");
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
	if (mkdir_p(dir, 0700) < 0) {
		store_set_error(l->s, "put %s: mkdir %s: %s", key, dir, strerror(errno));
		goto unlock;
	}
	if (write_file_atomic(tmp, b.data, b.len, 0600) < 0 || rename(tmp, path) < 0) {
		store_set_error(l->s, "put %s: write %s: %s", key, path, strerror(errno));
		(void)unlink(tmp);
		goto unlock;
	}
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
	if (clean_key(l, "get", key, rel, 0) < 0)
		return -1;
	path = enc_path(l->kv, rel, ".v");
	rv = read_value(path, &v, &vlen, &rev, &exp);
	if (rv < 0)
		store_set_error(l->s, "get %s: %s: %s", key, path, strerror(errno));
	free(path);
	if (rv != 0)
		return rv;
	if (expired(exp)) {
		free(v);
		(void)expire_rel(l, rel);
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

	if (clean_key(l, "delete", key, rel, 0) < 0)
		return -1;
	path = enc_path(l->kv, rel, ".v");
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
		if (has_suffix(de->d_name, ".d")) {
			sub = xasprintf("%s/%s", dir, de->d_name);
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			walk(sub, key, fn, arg);
			free(sub);
			free(key);
		} else if (has_suffix(de->d_name, ".v")) {
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
	path = enc_path(l->kv, rel, ".v");
	if (self && access(path, F_OK) == 0)
		fn(arg, key, path);
	free(path);
	path = enc_path(l->kv, rel, ".d");
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
		if (has_suffix(de->d_name, ".d")) {
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
	char **stale;		/* expired keys to remove afterwards */
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
	int rv = read_value(path, &val, &vlen, &rev, &exp);

	if (rv == 1)
		return;
	if (rv < 0) {
		store_set_error(a->l->s, "list: %s: %s", path, strerror(errno));
		a->err = 1;
		return;
	}
	if (expired(exp)) {
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

	if (clean_key(l, "list", prefix, rel, 1) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.l = l;
	out->revision = rev_read(l);
	walk_prefix(l, rel, prefix_self(prefix), list_one, &a);
	for (size_t i = 0; i < a.nstale; i++) {
		(void)expire_rel(l, a.stale[i]);
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
	if (read_value(path, &val, &vlen, &rev, &exp) != 0)
		return;
	free(val);
	live = !expired(exp);
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

	if (clean_key(l, "delete prefix", prefix, rel, 1) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.l = l;
	if (mut_lock(l) < 0) {
		store_set_error(l->s, "delete prefix %s: lock: %s", prefix, strerror(errno));
		return -1;
	}
	walk_prefix(l, rel, prefix_self(prefix), del_one, &a);
	dir = rel[0] ? enc_path(l->kv, rel, ".d") : xstrdup(l->kv);
	rmdirs(dir, rel[0] != '\0');
	free(dir);
	if (rel[0])
		prune_dirs(l, rel);
	rev_bump(l);
	mut_unlock(l);
	return a.err ? -1 : a.removed;
}

/* ---- watch ---- */

static struct known *
known_find(struct lwatch *w, const char *key, size_t *pos)
{
	size_t lo = 0, hi = w->nknown, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(w->known[mid].key, key);
		if (c == 0) {
			if (pos)
				*pos = mid;
			return &w->known[mid];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	return NULL;
}

static struct known *
known_add(struct lwatch *w, const char *key)
{
	size_t pos;
	struct known *k;

	if ((k = known_find(w, key, &pos)) != NULL)
		return k;
	if (w->nknown == w->capknown) {
		w->capknown = w->capknown ? w->capknown * 2 : 32;
		w->known = xrealloc(w->known, w->capknown * sizeof(*w->known));
	}
	memmove(&w->known[pos + 1], &w->known[pos], (w->nknown - pos) * sizeof(*w->known));
	w->nknown++;
	k = &w->known[pos];
	memset(k, 0, sizeof(*k));
	k->key = xstrdup(key);
	return k;
}

static void
known_del(struct lwatch *w, struct known *k)
{
	size_t pos = (size_t)(k - w->known);

	free(k->key);
	memmove(&w->known[pos], &w->known[pos + 1], (w->nknown - pos - 1) * sizeof(*w->known));
	w->nknown--;
}

static int
same_file(const struct known *k, const struct stat *st)
{
	return k->dev == st->st_dev && k->ino == st->st_ino && k->size == st->st_size &&
	    k->mtime_ns == ts_ns(&st->st_mtim) && k->ctime_ns == ts_ns(&st->st_ctim);
}

static void
plist_push(struct plist *pl, struct pending *p)
{
	if (pl->n == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 16;
		pl->v = xrealloc(pl->v, pl->cap * sizeof(*pl->v));
	}
	pl->v[pl->n++] = *p;
}

/* probe - compare the file of key with what the watch knows; queue a change */
static void
probe(struct lwatch *w, const char *key, const char *path, struct plist *pl)
{
	struct known *k = known_find(w, key, NULL);
	struct pending p;
	struct stat st;
	int rv;

	memset(&p, 0, sizeof(p));
	if (k != NULL)
		k->seen = 1;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (k != NULL) {
			p.key = xstrdup(key);
			p.del = 1;
			plist_push(pl, &p);
		}
		return;
	}
	if (k != NULL && same_file(k, &st) && !expired(k->exp))
		return;
	rv = read_value(path, &p.val, &p.vlen, &p.rev, &p.exp);
	if (rv != 0 || expired(p.exp)) {
		free(rv == 0 ? p.val : NULL);
		p.val = NULL;
		if (k == NULL)
			return;
		p.del = 1;
	}
	p.key = xstrdup(key);
	p.st = st;
	plist_push(pl, &p);
}

static int
pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->del != y->del)
		return y->del - x->del;	/* deletions first */
	return x->rev < y->rev ? -1 : x->rev > y->rev;
}

/*
 * apply - record the queued changes and, when emit, report them.  Changes
 * from inotify keep their order; a rescan (sorted) cannot know it, so it
 * reports deletions first, then writes in revision order.
 */
static void
apply(struct lwatch *w, struct store_watch *sw, struct plist *pl, int emit, int sorted)
{
	struct store_event ev;
	struct known *k;
	int changed;

	if (sorted && pl->n > 1)
		qsort(pl->v, pl->n, sizeof(*pl->v), pending_cmp);
	for (size_t i = 0; i < pl->n; i++) {
		struct pending *p = &pl->v[i];

		memset(&ev, 0, sizeof(ev));
		ev.key = p->key;
		k = known_find(w, p->key, NULL);
		if (p->del) {
			if (k != NULL) {
				known_del(w, k);
				ev.type = STORE_EV_DELETE;
				if (emit)
					store_emit(sw, &ev);
			}
		} else {
			changed = k == NULL || k->rev != p->rev || p->rev == 0;
			k = known_add(w, p->key);
			k->rev = p->rev;
			k->exp = p->exp;
			k->dev = p->st.st_dev;
			k->ino = p->st.st_ino;
			k->size = p->st.st_size;
			k->mtime_ns = ts_ns(&p->st.st_mtim);
			k->ctime_ns = ts_ns(&p->st.st_ctim);
			k->seen = 1;
			if (emit && changed) {
				ev.type = STORE_EV_PUT;
				ev.value = p->val;
				ev.vlen = p->vlen;
				ev.revision = p->rev;
				store_emit(sw, &ev);
			}
		}
		free(p->key);
		free(p->val);
	}
	pl->n = 0;
}

/* dir_relevant - a folder with key path dkey may hold keys under the prefix */
static int
dir_relevant(const char *pkey, const char *dkey)
{
	size_t pn = strlen(pkey), dn = strlen(dkey);

	if (pn == 0 || dn == 0)
		return 1;
	if (dn <= pn)
		return strncmp(pkey, dkey, dn) == 0 && (pkey[dn] == '\0' || pkey[dn] == '/');
	return strncmp(dkey, pkey, pn) == 0 && dkey[pn] == '/';
}

static void
wdir_set(struct lwatch *w, int wd, const char *path, const char *dkey)
{
	size_t i;

	for (i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == wd)
			break;
	if (i == w->ndirs) {
		if (w->ndirs == w->capdirs) {
			w->capdirs = w->capdirs ? w->capdirs * 2 : 16;
			w->dirs = xrealloc(w->dirs, w->capdirs * sizeof(*w->dirs));
		}
		w->ndirs++;
	} else {
		free(w->dirs[i].path);
		free(w->dirs[i].dkey);
	}
	w->dirs[i].wd = wd;
	w->dirs[i].path = xstrdup(path);
	w->dirs[i].dkey = xstrdup(dkey);
}

static void
wdir_drop(struct lwatch *w, int wd)
{
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == wd) {
			free(w->dirs[i].path);
			free(w->dirs[i].dkey);
			w->dirs[i] = w->dirs[--w->ndirs];
			return;
		}
}

static void
go_polling(struct lwatch *w)
{
	if (w->ifd >= 0)
		close(w->ifd);
	w->ifd = -1;
	for (size_t i = 0; i < w->ndirs; i++) {
		free(w->dirs[i].path);
		free(w->dirs[i].dkey);
	}
	w->ndirs = 0;
}

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | \
	IN_CLOSE_WRITE | IN_DELETE_SELF | IN_ONLYDIR)

/* scan_dir - watch dir (when inotify is on) and probe every relevant key */
static void
scan_dir(struct lwatch *w, const char *dir, const char *dkey, struct plist *pl)
{
	DIR *d;
	struct dirent *de;
	char *sub, *key;
	size_t n;
	int wd;

	if (!dir_relevant(w->pkey, dkey))
		return;
	if (w->ifd >= 0) {
		if ((wd = inotify_add_watch(w->ifd, dir, WATCH_MASK)) >= 0)
			wdir_set(w, wd, dir, dkey);
		else if (errno == ENOENT || errno == ENOTDIR)
			return;
		else
			go_polling(w);	/* ENOSPC and friends */
	}
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (has_suffix(de->d_name, ".d")) {
			sub = xasprintf("%s/%s", dir, de->d_name);
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			scan_dir(w, sub, key, pl);
			free(sub);
			free(key);
		} else if (has_suffix(de->d_name, ".v")) {
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			if (key_matches(w->pkey, w->self, key)) {
				sub = xasprintf("%s/%s", dir, de->d_name);
				probe(w, key, sub, pl);
				free(sub);
			}
			free(key);
		}
	}
	closedir(d);
}

/* rescan - look at the whole prefix again; keys gone since are deleted */
static void
rescan(struct lwatch *w, struct store_watch *sw, int emit)
{
	struct plist pl = { NULL, 0, 0 };
	struct pending p;

	for (size_t i = 0; i < w->nknown; i++)
		w->known[i].seen = 0;
	scan_dir(w, w->l->kv, "", &pl);
	for (size_t i = 0; i < w->nknown; i++)
		if (!w->known[i].seen) {
			memset(&p, 0, sizeof(p));
			p.key = xstrdup(w->known[i].key);
			p.del = 1;
			plist_push(&pl, &p);
		}
	apply(w, sw, &pl, emit, 1);
	free(pl.v);
	w->need_rescan = 0;
	w->next_scan = now_ms() + (w->ifd >= 0 ? LOCAL_RESCAN_MS : LOCAL_POLL_MS);
}

static void local_watch_free(void *wbe);

static void *
local_watch_new(void *be, struct store_watch *sw, const char *prefix, int64_t from_rev)
{
	struct local *l = be;
	struct lwatch *w;
	char rel[LOCAL_REL_BUF];
	const char *poll_env = getenv("DECOD_STORE_LOCAL_POLL");

	(void)from_rev;		/* no history is kept: events from now on */
	if (clean_key(l, "watch", prefix, rel, 1) < 0)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->l = l;
	w->pkey = rel[0] ? xasprintf("/%s", rel) : xstrdup("");
	w->self = prefix_self(prefix);
	w->ifd = -1;
	if (poll_env == NULL || strcmp(poll_env, "1") != 0) {
		if ((w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
			w->ifd = -1;	/* fall back to polling */
	}
	rescan(w, sw, 0);
	return w;
}

static int
local_watch_fd(void *wbe)
{
	return ((struct lwatch *)wbe)->ifd;
}

static int
local_watch_timeout_ms(void *wbe)
{
	struct lwatch *w = wbe;
	int64_t t = w->next_scan - now_ms(), wall = wall_ms();

	for (size_t i = 0; i < w->nknown; i++)
		if (w->known[i].exp != 0 && w->known[i].exp - wall + 5 < t)
			t = w->known[i].exp - wall + 5;
	if (t < 0)
		t = 0;
	return (int)t;
}

/* inotify_event_do - act on one inotify event */
static void
inotify_event_do(struct lwatch *w, const struct inotify_event *ie, struct plist *pl)
{
	const struct wdir *d = NULL;
	char *path, *key;
	size_t n;

	if (ie->mask & IN_Q_OVERFLOW) {
		w->need_rescan = 1;
		return;
	}
	if (ie->mask & IN_IGNORED) {
		wdir_drop(w, ie->wd);
		return;
	}
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == ie->wd)
			d = &w->dirs[i];
	if (d == NULL || ie->len == 0 || ie->name[0] == '\0')
		return;
	n = strlen(ie->name);
	if (ie->mask & IN_ISDIR) {
		if (!has_suffix(ie->name, ".d"))
			return;
		if (ie->mask & (IN_CREATE | IN_MOVED_TO)) {
			path = xasprintf("%s/%s", d->path, ie->name);
			key = xasprintf("%s/%.*s", d->dkey, (int)(n - 2), ie->name);
			scan_dir(w, path, key, pl);	/* may invalidate d */
			free(path);
			free(key);
		} else if (ie->mask & IN_MOVED_FROM)
			w->need_rescan = 1;
		return;
	}
	if (!has_suffix(ie->name, ".v"))
		return;
	key = xasprintf("%s/%.*s", d->dkey, (int)(n - 2), ie->name);
	if (key_matches(w->pkey, w->self, key)) {
		path = xasprintf("%s/%s", d->path, ie->name);
		probe(w, key, path, pl);
		free(path);
	}
	free(key);
}

static int
local_watch_dispatch(void *wbe, struct store_watch *sw)
{
	struct lwatch *w = wbe;
	struct plist pl = { NULL, 0, 0 };
	char evbuf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ie;
	struct store_event ev;
	ssize_t n;
	int64_t wall;

	while (w->ifd >= 0) {
		n = read(w->ifd, evbuf, sizeof(evbuf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN) {
				store_set_error(w->l->s, "watch: inotify read: %s", strerror(errno));
				go_polling(w);
				w->need_rescan = 1;
			}
			break;
		}
		for (char *p = evbuf; p < evbuf + n; p += sizeof(*ie) + ie->len) {
			ie = (const struct inotify_event *)p;
			inotify_event_do(w, ie, &pl);
		}
		/* apply per read so a later event sees the effect of an earlier one */
		apply(w, sw, &pl, 1, 0);
	}
	apply(w, sw, &pl, 1, 0);
	free(pl.v);
	/* expiries: nobody may read the key, so the watch removes it itself */
	wall = wall_ms();
	for (size_t i = 0; i < w->nknown;) {
		struct known *k = &w->known[i];
		char *rel;

		if (k->exp == 0 || k->exp > wall) {
			i++;
			continue;
		}
		rel = k->key + 1;
		(void)expire_rel(w->l, rel);
		memset(&ev, 0, sizeof(ev));
		ev.type = STORE_EV_DELETE;
		ev.key = k->key;
		store_emit(sw, &ev);
		known_del(w, k);
	}
	if (w->need_rescan || now_ms() >= w->next_scan)
		rescan(w, sw, 1);
	return 0;
}

static void
local_watch_free(void *wbe)
{
	struct lwatch *w = wbe;

	if (w == NULL)
		return;
	go_polling(w);
	for (size_t i = 0; i < w->nknown; i++)
		free(w->known[i].key);
	free(w->known);
	free(w->dirs);
	free(w->pkey);
	free(w);
}

/* ---- job locks ---- */

static int
local_try_lock(void *be, const char *key, char **holder)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF], who[256], *path, *dir, *slash;
	const char *id = store_identity(l->s);
	struct held *h;
	ssize_t n = 0;
	int fd;

	if (clean_key(l, "lock", key, rel, 0) < 0)
		return -1;
	for (h = l->held; h != NULL; h = h->next)
		if (strcmp(h->rel, rel) == 0)
			return 1;
	path = enc_path(l->locks, rel, ".lock");
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	if (mkdir_p(dir, 0700) < 0 ||
	    (fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		store_set_error(l->s, "lock %s: %s: %s", key, path, strerror(errno));
		free(dir);
		free(path);
		return -1;
	}
	free(dir);
	free(path);
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		if (ftruncate(fd, 0) < 0 || pwrite(fd, id, strlen(id), 0) < 0) {
			store_set_error(l->s, "lock %s: write: %s", key, strerror(errno));
			close(fd);
			return -1;
		}
		h = xcalloc(1, sizeof(*h));
		h->rel = xstrdup(rel);
		h->fd = fd;
		h->next = l->held;
		l->held = h;
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
static int
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

static int
local_unlock(void *be, const char *key)
{
	struct local *l = be;
	char rel[LOCAL_REL_BUF];
	struct held **hp, *h;

	if (clean_key(l, "unlock", key, rel, 0) < 0)
		return -1;
	for (hp = &l->held; (h = *hp) != NULL; hp = &h->next)
		if (strcmp(h->rel, rel) == 0) {
			*hp = h->next;
			(void)ftruncate(h->fd, 0);
			close(h->fd);
			free(h->rel);
			free(h);
			break;
		}
	return 0;
}

const struct store_ops store_local_ops = {
	.scheme = "local",
	.open = local_open,
	.close = local_close,
	.put = local_put,
	.get = local_get,
	.del = local_del,
	.del_prefix = local_del_prefix,
	.list = local_list,
	.watch_new = local_watch_new,
	.watch_fd = local_watch_fd,
	.watch_timeout_ms = local_watch_timeout_ms,
	.watch_dispatch = local_watch_dispatch,
	.watch_free = local_watch_free,
	.try_lock = local_try_lock,
	.try_lock_many = local_try_lock_many,
	.unlock = local_unlock,
};
