/*
 * acl_cred - passwords and the env files that carry them to a site.  The
 * password is made from RAND_bytes (via random_bytes) and kept only in the
 * env file and in memory; nothing here logs.  A password already in the
 * file is reused, so a restart or a resync never changes credentials.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/util.h"
#include "daemons/acl/acl_cred.h"

#define ENV_USER "LOADER_CACHE_REDIS_USERNAME="
#define ENV_PASS "LOADER_CACHE_REDIS_PASSWORD="

/* wipe - zero n bytes the compiler may not skip */
static void
wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n-- > 0)
		*v++ = 0;
}

int
acl_password_encode(const unsigned char *raw, size_t n, char *out, size_t outlen)
{
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t need = 4 * ((n + 2) / 3) + 1, i;
	char *o = out;

	if (outlen < need)
		return -1;
	for (i = 0; i + 2 < n; i += 3) {
		*o++ = a[raw[i] >> 2];
		*o++ = a[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)];
		*o++ = a[((raw[i + 1] & 15) << 2) | (raw[i + 2] >> 6)];
		*o++ = a[raw[i + 2] & 63];
	}
	if (i + 1 == n) {
		*o++ = a[raw[i] >> 2];
		*o++ = a[(raw[i] & 3) << 4];
		*o++ = '=';
		*o++ = '=';
	} else if (i + 2 == n) {
		*o++ = a[raw[i] >> 2];
		*o++ = a[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)];
		*o++ = a[(raw[i + 1] & 15) << 2];
		*o++ = '=';
	}
	*o = '\0';
	return 0;
}

int
acl_password_new(char *out, size_t outlen)
{
	unsigned char raw[ACL_PW_RAW];
	int rv;

	if (random_bytes(raw, sizeof(raw)) < 0)
		return -1;
	rv = acl_password_encode(raw, sizeof(raw), out, outlen);
	wipe(raw, sizeof(raw));
	return rv;
}

int
acl_password_valid(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n != ACL_PW_LEN || s[n - 1] != '=')
		return 0;
	for (size_t i = 0; i + 1 < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

int
acl_env_path(const char *dir, const char *ns, char *out, size_t outlen)
{
	if (strchr(ns, '/') != NULL || strcmp(ns, "..") == 0 || strcmp(ns, ".") == 0 ||
	    *ns == '\0')
		return -1;
	return (size_t)snprintf(out, outlen, "%s/%s.env", dir, ns) < outlen ? 0 : -1;
}

char *
acl_env_format(const char *user, const char *password)
{
	return xasprintf(ENV_USER "%s\n" ENV_PASS "%s\n", user, password);
}

int
acl_env_write(const char *dir, const char *ns, const char *user, const char *password)
{
	char path[4096], *text;
	int rv, saved;

	if (acl_env_path(dir, ns, path, sizeof(path)) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (mkdir_p(dir, 0700) < 0)
		return -1;
	text = acl_env_format(user, password);
	rv = write_file_atomic(path, text, strlen(text), 0600);
	saved = errno;
	wipe(text, strlen(text));
	free(text);
	errno = saved;
	return rv;
}

int
acl_env_read(const char *dir, const char *ns, char *user, size_t userlen,
    char *password, size_t pwlen)
{
	char path[4096], *text, *line, *save = NULL;
	int have_user = 0, have_pw = 0;
	size_t len;

	if (acl_env_path(dir, ns, path, sizeof(path)) < 0) {
		errno = EINVAL;
		return -1;
	}
	if ((text = read_file(path, &len, 4096)) == NULL)
		return errno == ENOENT ? 1 : -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, ENV_USER, strlen(ENV_USER)) == 0) {
			const char *v = line + strlen(ENV_USER);

			if (user != NULL && strlen(v) < userlen) {
				memcpy(user, v, strlen(v) + 1);
				have_user = 1;
			} else if (user == NULL) {
				have_user = 1;
			}
		} else if (strncmp(line, ENV_PASS, strlen(ENV_PASS)) == 0) {
			const char *v = line + strlen(ENV_PASS);

			if (strlen(v) < pwlen) {
				memcpy(password, v, strlen(v) + 1);
				have_pw = 1;
			}
		}
	}
	wipe(text, len);
	free(text);
	if (!have_user || !have_pw) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int
acl_env_remove(const char *dir, const char *ns)
{
	char path[4096];

	if (acl_env_path(dir, ns, path, sizeof(path)) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return -1;
	return 0;
}
