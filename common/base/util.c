/*
 * util - allocation, buffers, files and clocks.  Allocation failure aborts:
 * a daemon that cannot get memory has nothing sensible left to do, and the
 * supervisor restarts it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "common/sync_group.h"
#include "common/util.h"

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

void *
xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);

	if (p == NULL)
		abort();
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	va_end(ap);
	return p;
}

void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void
buf_grow(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	if (b->cap == 0)
		b->cap = 256;
	while (b->cap < need)
		b->cap *= 2;
	b->data = xrealloc(b->data, b->cap);
}

void
buf_add(struct buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void
buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *
buf_steal(struct buf *b, size_t *len)
{
	char *p;

	if (b->data == NULL)
		buf_grow(b, 0), b->data[0] = '\0';
	p = b->data;
	if (len != NULL)
		*len = b->len;
	buf_init(b);
	return p;
}

char *
read_file(const char *path, size_t *len, size_t max)
{
	char *data;
	int fd, saved;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	data = read_fd(fd, len, max);
	saved = errno;
	close(fd);
	errno = saved;
	return data;
}

char *
read_fd(int fd, size_t *len, size_t max)
{
	struct buf b;
	char tmp[65536];
	ssize_t n;
	int saved;

	buf_init(&b);
	buf_grow(&b, 0);
	b.data[0] = '\0';
	for (;;) {
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		if (max != 0 && b.len + (size_t)n > max) {
			errno = EFBIG;
			goto fail;
		}
		buf_add(&b, tmp, (size_t)n);
	}
	if (len != NULL)
		*len = b.len;
	return b.data;
fail:
	saved = errno;
	buf_free(&b);
	errno = saved;
	return NULL;
}

/* fsync_dir - make a rename in dir durable */
static void
fsync_dir(const char *path)
{
	char dir[4096];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

int
write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[4096];
	int fd, saved;
	static unsigned seq;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%u", path,
	    (long)getpid(), seq++) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)) < 0)
		return -1;
	if (write_all(fd, data, len) < 0)
		goto fail;
	if (fchmod(fd, mode) < 0 || (!sync_group_active() && fsync(fd) < 0))
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (sync_group_active()) {
		sync_group_add(tmp, path, len);	/* synced and renamed at the flush */
		return 0;
	}
	if (rename(tmp, path) < 0)
		goto fail;
	fsync_dir(path);
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = saved;
	return -1;
}

/* mkdir_down - mkdir_p from the root down, one mkdir per component */
static int
mkdir_down(const char *path, mode_t mode)
{
	char tmp[4096];
	size_t len = strlen(path);

	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int
mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];
	char *cut[256];
	size_t len, n = 0;

	if ((len = strlen(path)) == 0 || len >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, len + 1);
	/*
	 * From the deepest folder up: the folder of a store value or spool
	 * blob nearly always exists, and then this is one mkdir, not one per
	 * component (each takes its parent's lock in the kernel).
	 */
	for (;;) {
		char *p;

		if (mkdir(tmp, mode) == 0 || errno == EEXIST)
			break;
		if (errno != ENOENT || (p = strrchr(tmp, '/')) == NULL || p == tmp)
			return -1;
		if (n == sizeof(cut) / sizeof(cut[0]))
			return mkdir_down(path, mode);	/* deeper than anyone nests */
		while (p > tmp && p[-1] == '/')	/* "a//b" */
			p--;
		if (p == tmp)
			return -1;
		*p = '\0';
		cut[n++] = p;
	}
	/* then back down, each parent now there */
	while (n > 0) {
		char *p = cut[--n];

		*p = '/';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -1;
	}
	return 0;
}

int
rm_rf(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	char sub[4096];
	int rv = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (rm_rf(sub) < 0)
			rv = -1;
	}
	closedir(d);
	if (rmdir(path) < 0 && errno != ENOENT)
		rv = -1;
	return rv;
}

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void
rfc3339_from(int64_t unix_s, char *out, size_t len)
{
	time_t t = (time_t)unix_s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
rfc3339_now(char *out, size_t len)
{
	rfc3339_from(wall_ms() / 1000, out, len);
}

/*
 * scan_number - read a plain decimal "12", "1.5", ".5" or "1e3" after
 * optional blanks (no sign, no hex, no nan/inf: strtod takes all of those,
 * and a cast of a non-finite or huge double to an integer is undefined).
 * Sets *v and returns the first byte after the number, or NULL if none.
 */
static const char *
scan_number(const char *s, double *v)
{
	const char *p;
	int digits = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	p = s;

	while (*p >= '0' && *p <= '9') {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return NULL;
	if ((*p == 'e' || *p == 'E') && (p[1] >= '0' && p[1] <= '9'))
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (p - s > 32)
		return NULL;
	{
		char tmp[40];

		memcpy(tmp, s, (size_t)(p - s));
		tmp[p - s] = '\0';
		errno = 0;
		*v = strtod(tmp, NULL);
	}
	if (errno != 0 || !isfinite(*v) || *v < 0)
		return NULL;
	return p;
}

int
parse_duration_ms(const char *s, int64_t *ms)
{
	const char *end;
	double v, mult = 1000;

	if (s == NULL || (end = scan_number(s, &v)) == NULL)
		return -1;
	if (*end == '\0' || strcmp(end, "s") == 0)
		mult = 1000;
	else if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (strcmp(end, "m") == 0)
		mult = 60000;
	else if (strcmp(end, "h") == 0)
		mult = 3600000;
	else
		return -1;
	/* 9e15 ms (285,000 years) is exact in a double and far below INT64_MAX */
	if (!(v * mult <= 9.0e15))
		return -1;
	*ms = (int64_t)(v * mult + 0.5);
	return 0;
}

int
parse_size(const char *s, uint64_t *bytes)
{
	static const struct { const char *sfx; double mult; } units[] = {
		{ "", 1 }, { "b", 1 }, { "k", 1e3 }, { "kb", 1e3 },
		{ "kib", 1024.0 }, { "m", 1e6 }, { "mb", 1e6 },
		{ "mib", 1048576.0 }, { "g", 1e9 }, { "gb", 1e9 },
		{ "gib", 1073741824.0 },
	};
	char low[8];
	const char *end;
	double v;
	size_t i;

	if (s == NULL || (end = scan_number(s, &v)) == NULL)
		return -1;
	while (*end == ' ')
		end++;
	if (strlen(end) >= sizeof(low))
		return -1;
	for (i = 0; end[i]; i++)
		low[i] = (end[i] >= 'A' && end[i] <= 'Z') ? end[i] + 32 : end[i];
	low[i] = '\0';
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(low, units[i].sfx) == 0) {
			/* 2^63: every value below converts to uint64_t exactly */
			if (!(v * units[i].mult < 9223372036854775808.0))
				return -1;
			*bytes = (uint64_t)(v * units[i].mult + 0.5);
			return 0;
		}
	}
	return -1;
}

int
path_clean(const char *in, char *out, size_t outlen, const char **why)
{
	size_t o = 0, seglen;
	const char *p = in, *seg, *dummy;

	if (why == NULL)
		why = &dummy;
	*why = "is not a clean relative path";
	if (in == NULL || *in == '/' || outlen == 0)
		return -1;
	if (strlen(in) > PATH_REL_MAX) {
		*why = "longer than 1024 bytes";
		return -1;
	}
	for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
		if (*c < 0x20 || *c == 0x7f) {
			*why = "contains a control byte";
			return -1;
		}
		if (*c == '\\') {
			*why = "contains a backslash";
			return -1;
		}
	}
	while (*p) {
		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		seglen = (size_t)(p - seg);
		if (seglen == 0 || (seglen == 1 && seg[0] == '.'))
			continue;
		if (seglen == 2 && seg[0] == '.' && seg[1] == '.') {
			*why = "contains a \"..\" component";
			return -1;
		}
		if (seglen > PATH_COMP_MAX) {
			*why = "has a component longer than 253 bytes";
			return -1;
		}
		if (o + seglen + 2 > outlen) {
			*why = "is too long for its buffer";
			return -1;
		}
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, seg, seglen);
		o += seglen;
	}
	if (o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

int
path_clean_rel(const char *in, char *out, size_t outlen)
{
	return path_clean(in, out, outlen, NULL);
}

int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

int
set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	return fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0 ? -1 : 0;
}

int
url_has_credentials(const char *url)
{
	const char *scheme, *host, *end, *at;
	size_t slen;

	if (url == NULL || (scheme = strstr(url, "://")) == NULL)
		return 0;
	slen = (size_t)(scheme - url);
	host = scheme + 3;
	end = host + strcspn(host, "/?#");
	for (at = end; at > host && at[-1] != '@'; at--)
		;
	if (at == host)
		return 0;	/* no userinfo */
	if ((slen == 4 && strncasecmp(url, "http", 4) == 0) ||
	    (slen == 5 && strncasecmp(url, "https", 5) == 0) ||
	    (slen == 3 && strncasecmp(url, "ftp", 3) == 0) ||
	    (slen == 4 && strncasecmp(url, "ftps", 4) == 0))
		return 1;
	return memchr(host, ':', (size_t)(at - host)) != NULL;
}

size_t
utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;	/* a continuation byte, an overlong lead, past U+10FFFF */
	if (n < len)
		return 0;
	/* the second byte's range rules out overlongs, surrogates and > U+10FFFF */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int
utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if ((k = utf8_seq(p + i, n - i)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

void
utf8_cut_tail(char *s)
{
	size_t n = strlen(s), i = n, cont = 0;
	unsigned char c;

	while (i > 0 && cont < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80) {
		i--;
		cont++;
	}
	if (i == 0)
		return;
	c = (unsigned char)s[i - 1];
	if (c < 0xc0)		/* ASCII (or stray continuation bytes): nothing cut short */
		return;
	if ((c >= 0xf0 && cont < 3) || (c >= 0xe0 && c < 0xf0 && cont < 2) ||
	    (c < 0xe0 && cont < 1))
		s[i - 1] = '\0';
}

const char *
str_show(const char *s, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, k;

	if (outlen == 0)
		return out;
	while (i < n) {
		char tmp[5];
		size_t tl;

		k = utf8_seq(p + i, n - i);
		if (k == 1 && p[i] == '\\') {
			memcpy(tmp, "\\\\", 2);
			tl = 2;
		} else if (k == 0 || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
			tl = 4;
			k = 1;
		} else {
			memcpy(tmp, p + i, k);
			tl = k;
		}
		if (o + tl >= outlen)
			break;
		memcpy(out + o, tmp, tl);
		o += tl;
		i += k;
	}
	out[o] = '\0';
	return out;
}

/*
 * listen_addr_parse - "HOST:PORT", "[V6]:PORT" or ":PORT" into an address;
 * 0 or -1.
 */
int
listen_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[256], port[16];
	struct addrinfo hints, *ai;
	const char *colon;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (end == NULL || end[1] != ':')
			return -1;
		snprintf(host, sizeof(host), "%.*s", (int)(end - s - 1), s + 1);
		colon = end + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL)
			return -1;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	}
	snprintf(port, sizeof(port), "%s", colon + 1);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &ai) != 0)
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*sl = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}
