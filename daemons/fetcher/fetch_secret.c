/*
 * fetch_secret - credentials for the HTTP sources (github, oci), read at
 * each fetch so a rotated secret is used at once, and wiped from memory
 * when the fetch is done.  git's secrets go through GIT_ASKPASS instead
 * (fetch_git.c); neither ever reaches a log, argv or the environment.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "daemons/fetcher/fetch_secret.h"

char *
fetch_secret_read(const char *path, const char *key)
{
	char *p = NULL, *v;
	struct stat sb;
	size_t len;

	if (path == NULL)
		return NULL;
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		path = p = xasprintf("%s/%s", path, key);
	v = read_file(path, &len, 65536);
	free(p);
	while (v != NULL && len > 0 && strchr(" \t\r\n", v[len - 1]) != NULL)
		v[--len] = '\0';
	return v;
}

void
fetch_secret_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}
