/*
 * publish_file - the publisher's `file` target.  Owns the layout under
 * file_root (<root>/<ns>/<name>/decofile.{json|bin} + timestamp.txt), the
 * order of writes (document, then timestamp, then removal of the other
 * format) and the check "does the target already hold these bytes", which
 * always hashes what is on disk: the journal says what we wrote, the disk
 * says what is there now.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/publisher/publish_file.h"

#define TS_FILE "timestamp.txt"
#define TS_MAX 32

/* note - append one finding to the drift detail */
static void
note(struct publish_file_res *res, const char *what, const char *how)
{
	size_t n = strlen(res->detail);

	snprintf(res->detail + n, sizeof(res->detail) - n, "%s%s:%s",
	    n ? "," : "", what, how);
}

/* printable - a short, printable copy of untrusted text for messages */
static const char *
printable(const char *s, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; s && s[i] && i + 4 < outlen && i < 64; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (s && s[i] && i + 4 < outlen)
		out[i++] = '.', out[i++] = '.', out[i++] = '.';
	out[i] = '\0';
	return out;
}

int
publish_file_paths(const char *root, const char *ns, const char *name,
    const char *format, struct publish_file_res *res, char *err, size_t errlen)
{
	char pb[80];

	if (root == NULL || root[0] != '/') {
		seterr(err, errlen, "file_root must be an absolute path");
		return -1;
	}
	if (ns == NULL || !name_valid(ns)) {
		seterr(err, errlen, "invalid namespace \"%s\"", printable(ns, pb, sizeof(pb)));
		return -1;
	}
	if (name == NULL || !name_valid(name)) {
		seterr(err, errlen, "invalid name \"%s\"", printable(name, pb, sizeof(pb)));
		return -1;
	}
	if (format == NULL || (strcmp(format, "json") != 0 && strcmp(format, "bin") != 0)) {
		seterr(err, errlen, "unknown format \"%s\" (json or bin)",
		    printable(format, pb, sizeof(pb)));
		return -1;
	}
	if ((size_t)snprintf(res->dir, sizeof(res->dir), "%s/%s/%s", root, ns, name)
	    >= sizeof(res->dir) - 32) {
		seterr(err, errlen, "path too long under %s", root);
		return -1;
	}
	snprintf(res->path, sizeof(res->path), "%s/decofile.%s", res->dir, format);
	snprintf(res->location, sizeof(res->location), "file://%s", res->path);
	return 0;
}

int
publish_file_sig(const char *path, struct publish_file_sig *sig)
{
	struct stat st;

	memset(sig, 0, sizeof(*sig));
	if (lstat(path, &st) < 0)
		return -1;
	sig->dev = st.st_dev;
	sig->ino = st.st_ino;
	sig->size = S_ISREG(st.st_mode) ? st.st_size : -1;
	sig->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	sig->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	return 0;
}

int
publish_file_sig_eq(const struct publish_file_sig *a, const struct publish_file_sig *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns &&
	    a->ino != 0;
}

/*
 * real_dir - make path a real folder: a symlink, file or anything else in
 * its place is removed first, so writes below never leave root.  0 or -1.
 */
static int
real_dir(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		if (unlink(path) < 0 && errno != ENOENT)
			return -1;
	} else if (errno != ENOENT) {
		return -1;
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/*
 * hash_regular - sha256 of the regular file at path into out.  0 hashed,
 * 1 absent, 2 present but not a regular file (symlink, folder, fifo), -1
 * read error.
 */
static int
hash_regular(const char *path, char out[SHA256_HEX_LEN + 1])
{
	struct stat st;
	struct sha256_ctx *c;
	char chunk[65536];
	ssize_t n;
	int fd;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 1 : -1;
	if (!S_ISREG(st.st_mode))
		return 2;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 1 : errno == ELOOP ? 2 : -1;
	c = sha256_new();
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sha256_update(c, chunk, (size_t)n);
	}
	sha256_final(c, out);
	close(fd);
	return n < 0 ? -1 : 0;
}

/* read_ts - timestamp.txt's value; 0 valid, 1 absent, 2 present but not a timestamp */
static int
read_ts(const char *path, int64_t *ts)
{
	struct stat st;
	char b[TS_MAX + 1];
	ssize_t n;
	int fd;
	int64_t v = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 1 : 2;
	if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > TS_MAX)
		return 2;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		return 2;
	n = read(fd, b, TS_MAX);
	close(fd);
	if (n <= 0 || n > 19)
		return 2;
	for (ssize_t i = 0; i < n; i++) {
		if (b[i] < '0' || b[i] > '9')
			return 2;
		v = v * 10 + (b[i] - '0');
	}
	*ts = v;
	return 0;
}

/* clear_path - remove whatever is at path (file, link, folder); 0 or -1 */
static int
clear_path(const char *path)
{
	return rm_rf(path);
}

/*
 * sweep_tmp - remove temp files a killed write_file_atomic left behind
 * ("<file>.tmp.<pid>.<seq>"); they are ours, not drift.
 */
static void
sweep_tmp(const char *dir)
{
	DIR *d;
	struct dirent *de;
	char p[4400];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if ((strncmp(de->d_name, "decofile.", 9) == 0 ||
		    strncmp(de->d_name, TS_FILE ".", sizeof(TS_FILE)) == 0) &&
		    strstr(de->d_name, ".tmp.") != NULL) {
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	}
	closedir(d);
}

int
publish_file(const struct publish_file_req *req, struct publish_file_res *res,
    char *err, size_t errlen)
{
	char want[SHA256_HEX_LEN + 1], have[SHA256_HEX_LEN + 1];
	char nsdir[4096], tspath[4400], other[4400], tsbuf[TS_MAX];
	const char *ofmt;
	struct stat st;
	int64_t ts = 0;
	int rv, tsrv;

	memset(res, 0, sizeof(*res));
	if (publish_file_paths(req->root, req->ns, req->name, req->format, res,
	    err, errlen) < 0)
		return -1;
	if (req->timestamp < 0) {
		seterr(err, errlen, "negative timestamp");
		return -1;
	}
	snprintf(nsdir, sizeof(nsdir), "%s/%s", req->root, req->ns);
	if (mkdir_p(req->root, 0755) < 0 || real_dir(nsdir) < 0 || real_dir(res->dir) < 0) {
		seterr(err, errlen, "cannot create %s: %s", res->dir, strerror(errno));
		return -1;
	}
	sweep_tmp(res->dir);

	/* 1. the document */
	sha256_hex(req->data, req->len, want);
	rv = hash_regular(res->path, have);
	if (rv < 0) {
		seterr(err, errlen, "cannot read %s: %s", res->path, strerror(errno));
		return -1;
	}
	if (rv != 0 || strcmp(have, want) != 0) {
		note(res, strrchr(res->path, '/') + 1,
		    rv == 1 ? "missing" : rv == 2 ? "not-a-file" : "modified");
		if (rv == 2 && clear_path(res->path) < 0) {
			seterr(err, errlen, "cannot remove %s: %s", res->path, strerror(errno));
			return -1;
		}
		if (write_file_atomic(res->path, req->data, req->len, 0644) < 0) {
			seterr(err, errlen, "cannot write %s: %s", res->path, strerror(errno));
			return -1;
		}
		res->wrote_doc = 1;
	}

	/* 2. timestamp.txt, last of the writes */
	snprintf(tspath, sizeof(tspath), "%s/" TS_FILE, res->dir);
	tsrv = read_ts(tspath, &ts);
	if (tsrv == 0 && !res->wrote_doc && (req->flags & PUBLISH_FILE_KEEP_TS) &&
	    ts > req->keep_after) {
		res->timestamp = ts;
	} else if (tsrv == 0 && ts == req->timestamp) {
		res->timestamp = ts;
	} else {
		if (!res->wrote_doc)
			note(res, TS_FILE, tsrv == 1 ? "missing" : "modified");
		if (tsrv == 2 && lstat(tspath, &st) == 0 && !S_ISREG(st.st_mode) &&
		    clear_path(tspath) < 0) {
			seterr(err, errlen, "cannot remove %s: %s", tspath, strerror(errno));
			return -1;
		}
		snprintf(tsbuf, sizeof(tsbuf), "%lld", (long long)req->timestamp);
		if (write_file_atomic(tspath, tsbuf, strlen(tsbuf), 0644) < 0) {
			seterr(err, errlen, "cannot write %s: %s", tspath, strerror(errno));
			return -1;
		}
		res->timestamp = req->timestamp;
		res->wrote_ts = 1;
	}

	/* 3. the other format goes */
	ofmt = strcmp(req->format, "json") == 0 ? "bin" : "json";
	snprintf(other, sizeof(other), "%s/decofile.%s", res->dir, ofmt);
	if (lstat(other, &st) == 0) {
		if (clear_path(other) < 0) {
			seterr(err, errlen, "cannot remove %s: %s", other, strerror(errno));
			return -1;
		}
		note(res, strrchr(other, '/') + 1, "removed");
		res->removed = 1;
	}

	publish_file_sig(res->path, &res->doc_sig);
	publish_file_sig(tspath, &res->ts_sig);
	return 0;
}

int
publish_file_remove(const char *root, const char *ns, const char *name,
    char *err, size_t errlen)
{
	struct publish_file_res r;
	char nsdir[4096];

	if (publish_file_paths(root, ns, name, "json", &r, err, errlen) < 0)
		return -1;
	if (rm_rf(r.dir) < 0) {
		seterr(err, errlen, "cannot remove %s: %s", r.dir, strerror(errno));
		return -1;
	}
	snprintf(nsdir, sizeof(nsdir), "%s/%s", root, ns);
	if (rmdir(nsdir) < 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST) {
		seterr(err, errlen, "cannot remove %s: %s", nsdir, strerror(errno));
		return -1;
	}
	return 0;
}
