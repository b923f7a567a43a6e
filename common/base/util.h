/*
 * util - small things every program needs: allocation that aborts on
 * failure, a growable byte buffer, whole-file reads, atomic file writes,
 * monotonic and wall clocks, and safe path joining.
 */
#ifndef DECOD_UTIL_H
#define DECOD_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* xasprintf - allocate and format; caller frees */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* seterr - format into err[errlen], the error out-parameter of a call; NULL or 0: nothing */
void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* buf - growable buffer; data is always NUL-terminated past len */
struct buf {
	char *data;
	size_t len;
	size_t cap;
};
void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
void buf_grow(struct buf *b, size_t extra);
void buf_add(struct buf *b, const void *p, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_addc(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* buf_steal - take ownership of the data (caller frees); b is reset */
char *buf_steal(struct buf *b, size_t *len);

/*
 * read_file - read a whole file into a new NUL-terminated buffer.
 * Returns NULL with errno set on failure; *len gets the size when non-NULL.
 * max (0: unlimited) bounds the size: larger files fail with EFBIG.
 */
char *read_file(const char *path, size_t *len, size_t max);
/* read_fd - the same from an open fd, read from where it is to its end (fd stays open) */
char *read_fd(int fd, size_t *len, size_t max);

/* write_all - all of data to fd (a short write or EINTR goes on); 0 or -1 with errno */
int write_all(int fd, const void *data, size_t len);

/*
 * write_file_atomic - write data to path via a temp file in the same
 * folder, fsync, rename, fsync of the folder.  mode is the file mode.
 * Returns 0 or -1 with errno set; on failure path is untouched.  While
 * a sync group is open (sync_group.h) the fsyncs and the rename wait for
 * its flush.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* mkdir_p - create a folder and its parents with mode; 0 or -1 */
int mkdir_p(const char *path, mode_t mode);

/* rm_rf - remove a file or a folder tree; absent is fine; 0 or -1 */
int rm_rf(const char *path);

/* now_ms - monotonic milliseconds; wall_ms - unix epoch milliseconds */
int64_t now_ms(void);
int64_t wall_ms(void);

/* rfc3339_now - "2026-12-02T10:00:00Z" into out (>= 32 bytes) */
void rfc3339_now(char *out, size_t len);
void rfc3339_from(int64_t unix_s, char *out, size_t len);

/*
 * parse_duration_ms - "15s", "500ms", "2m", "1h", "1.5s"; a bare number is
 * seconds.  Returns 0 and sets *ms, or -1 if malformed, signed (negative),
 * not finite (nan, inf), hexadecimal or over 9e15 ms.
 */
int parse_duration_ms(const char *s, int64_t *ms);

/*
 * url_has_credentials - the URL carries a secret in its userinfo: any
 * "user@" or "user:password@" of an http(s)/ftp(s) URL (a lone user there is
 * usually a token), a "user:password@" of any other scheme ("ssh://git@"
 * is only a user name).  scp-like "git@host:path" has no scheme: 0.
 */
int url_has_credentials(const char *url);

/*
 * parse_size - "2.5MB", "1MiB", "4096", "10k".  Returns 0 and sets *bytes,
 * or -1 if malformed, signed, not finite, hexadecimal or 2^63 bytes or more.
 */
int parse_size(const char *s, uint64_t *bytes);

/* a key or relative path: at most 1024 bytes, each component at most 253
 * (a Kubernetes name; the local store adds 2 bytes of suffix to each) */
#define PATH_REL_MAX 1024
#define PATH_COMP_MAX 253

/*
 * path_clean - the one validator of store keys and relative paths: collapse
 * "//" and "./"; refuse "..", absolute paths, control bytes, backslashes,
 * components over PATH_COMP_MAX and paths over PATH_REL_MAX.  Writes the
 * cleaned path into out (outlen bytes).  0, or -1 with *why (if non-NULL)
 * set to a static phrase that completes "key ... " in an error message.
 */
int path_clean(const char *in, char *out, size_t outlen, const char **why);
/* path_clean_rel - path_clean without the reason; 0 or -1 */
int path_clean_rel(const char *in, char *out, size_t outlen);

/*
 * utf8_valid - s[0..n) is well-formed UTF-8 (RFC 3629: shortest forms only,
 * no surrogates, nothing past U+10FFFF); 1 or 0.  The one check for text
 * that must go into JSON (names from outside, keys).
 */
int utf8_valid(const char *s, size_t n);
/* utf8_seq - the length of the well-formed UTF-8 sequence at s (n >= 1 bytes left; 1 for ASCII), 0 if none */
size_t utf8_seq(const unsigned char *s, size_t n);

/*
 * utf8_cut_tail - s, cut short by a snprintf, ends on a whole character:
 * a lead byte and fewer continuation bytes than it announces are dropped.
 */
void utf8_cut_tail(char *s);

/*
 * str_show - s as it may be quoted in a message or a log line: valid UTF-8
 * is kept, a backslash is doubled, every other byte (not UTF-8, a control
 * byte) is written \xHH.  Always NUL-terminated in out, cut at outlen on a
 * whole character.  Returns out.
 */
const char *str_show(const char *s, char *out, size_t outlen);

/* set_nonblock, set_cloexec - fcntl helpers; 0 or -1 */
int set_nonblock(int fd);
int set_cloexec(int fd);

/*
 * listen_addr_parse - "HOST:PORT", "[V6]:PORT" or ":PORT" (any address)
 * into *ss and *sl, as a listener binds it; 0 or -1
 */
int listen_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *sl);

#endif
