/*
 * fuzz_archive - the fetcher's archive reader (daemons/fetcher/
 * fetch_archive.c), which takes GitHub zipballs and OCI layers from the
 * network: each input is read as a zip and as a tar (plain or gzip) under
 * small limits.  Whatever the bytes, every path handed on must be relative,
 * valid UTF-8, free of ".." components and backslashes, the bytes handed
 * on must stay within the limit, and a refusal must say why in a message
 * that is UTF-8 itself.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/fetcher/fetch_archive.h"
#include "t/fuzz/fuzz.h"

struct seen {
	uint64_t bytes;
};

static int
want(void *arg, const char *path, int is_dir, struct fetch_result *res)
{
	(void)arg;
	(void)res;
	fuzz_check(path != NULL && path[0] != '\0' && path[0] != '/', "a relative path");
	fuzz_check(strchr(path, '\\') == NULL, "no backslash");
	fuzz_check(utf8_valid(path, strlen(path)), "a UTF-8 path");
	fuzz_check(strcmp(path, "..") != 0 && strncmp(path, "../", 3) != 0 &&
	    strstr(path, "/../") == NULL, "no .. component");
	return !is_dir;
}

static int
file(void *arg, const char *path, const void *data, size_t len, struct fetch_result *res)
{
	struct seen *s = arg;

	(void)path;
	(void)res;
	fuzz_check(data != NULL, "file data");
	s->bytes += len;
	fuzz_check(s->bytes <= (8u << 20) + 65536, "bytes handed on stay within the limit");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct fetch_archive_limits lim = { 2000, 8u << 20, 100 };
	struct fetch_result res;

	for (int k = 0; k < 2; k++) {
		struct seen s = { 0 };
		int rc;

		memset(&res, 0, sizeof(res));
		rc = fetch_archive_read(data, size, k == 0 ? FETCH_ARCHIVE_ZIP : FETCH_ARCHIVE_TAR,
		    &lim, "fuzz", want, file, &s, &res);
		if (rc < 0) {
			fuzz_check(res.reason != NULL && res.error[0] != '\0', "a refusal says why");
			fuzz_check(utf8_valid(res.error, strlen(res.error)), "a UTF-8 refusal");
		}
	}
	return 0;
}
