/*
 * acl_cred - a tenant's credentials: the password (32 bytes from openssl's
 * CSPRNG, URL-safe base64 with padding) and, off Kubernetes, the env file
 * <dir>/<namespace>.env that a site's loader reads:
 *   LOADER_CACHE_REDIS_USERNAME=<user>
 *   LOADER_CACHE_REDIS_PASSWORD=<password>
 * written 0600 and atomically (temp file, fsync, rename).
 */
#ifndef DECOD_ACL_CRED_H
#define DECOD_ACL_CRED_H

#include <stddef.h>

#define ACL_PW_RAW 32
#define ACL_PW_LEN 44		/* base64 of 32 bytes, padded */
#define ACL_USER_MAX 64

/*
 * acl_password_encode - raw bytes as URL-safe base64 with '=' padding into
 * out (4 * ceil(n / 3) + 1 bytes).  0, or -1 when out is too small.
 */
int acl_password_encode(const unsigned char *raw, size_t n, char *out, size_t outlen);

/* acl_password_new - a fresh password into out (ACL_PW_LEN + 1); 0, or -1 (no entropy) */
int acl_password_new(char *out, size_t outlen);

/* acl_password_valid - 1 if s looks like one of ours (reusable), else 0 */
int acl_password_valid(const char *s);

/* acl_env_path - "<dir>/<ns>.env" into out; 0, or -1 when it does not fit */
int acl_env_path(const char *dir, const char *ns, char *out, size_t outlen);

/*
 * acl_env_format - the file's text for user and password; caller frees
 * (and should wipe: it holds the password).
 */
char *acl_env_format(const char *user, const char *password);

/*
 * acl_env_write - write the env file of ns in dir (made 0700 if missing):
 * mode 0600, temp file, fsync, rename.  0, or -1 with errno.
 */
int acl_env_write(const char *dir, const char *ns, const char *user, const char *password);

/*
 * acl_env_read - read ns's env file: 0 (user and password filled; user may
 * be NULL), 1 none, -1 unreadable or malformed (errno).
 */
int acl_env_read(const char *dir, const char *ns, char *user, size_t userlen,
    char *password, size_t pwlen);

/* acl_env_remove - delete ns's env file; 0 (absent is fine) or -1 */
int acl_env_remove(const char *dir, const char *ns);

#endif
