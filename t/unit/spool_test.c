/* spool_test - put/get by hash, idempotence, corruption, GC */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/spool.h"
#include "common/sync_group.h"
#include "common/util.h"
#include "t/tap.h"

static int
keep_first(void *arg, const char *hash)
{
	return strcmp(hash, (const char *)arg) == 0;
}

int
main(void)
{
	char dir[] = "/tmp/spool_test.XXXXXX", h1[65], h2[65], h3[65], path[4096];
	struct spool *sp;
	size_t len;
	char *data;

	if (mkdtemp(dir) == NULL)
		return 1;
	sp = spool_open(dir);
	ok(sp != NULL, "open");
	ok(spool_put(sp, "hello", 5, h1) == 0, "put");
	is_str(h1, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
	    "named by sha256");
	ok(spool_put(sp, "hello", 5, h2) == 0 && strcmp(h1, h2) == 0, "put again: same name");
	data = spool_get(sp, h1, &len);
	ok(data != NULL && len == 5 && memcmp(data, "hello", 5) == 0, "get");
	free(data);
	ok(spool_has(sp, h1), "has");
	sha256_hex("other", 5, h3);
	ok(spool_get(sp, h3, &len) == NULL && errno == ENOENT, "absent: ENOENT");
	ok(spool_get(sp, "../../etc/passwd", &len) == NULL && errno == EINVAL,
	    "not a hash: EINVAL");
	/* a corrupted blob is refused, not served */
	spool_path(sp, h1, path, sizeof(path));
	write_file_atomic(path, "jello", 5, 0600);
	ok(spool_get(sp, h1, &len) == NULL && errno == EIO, "corrupt blob: EIO");
	spool_put(sp, "a", 1, h2);
	spool_put(sp, "b", 1, h3);
	is_int(spool_gc(sp, 0, keep_first, h2), 2, "gc removes what is not kept");
	ok(spool_has(sp, h2) && !spool_has(sp, h3), "kept blob stays");

	/* stage, then commit: a blob shows under its hash only once committed */
	{
		char hs[3][65], *tmps[3];
		char got[65];

		ok(spool_stage(sp, "a", 1, hs[0], &tmps[0]) == 0 && tmps[0] == NULL,
		    "stage a blob already there: nothing to write");
		ok(spool_stage(sp, "one", 3, hs[1], &tmps[1]) == 0 && tmps[1] != NULL &&
		    spool_stage(sp, "two", 3, hs[2], &tmps[2]) == 0 && tmps[2] != NULL,
		    "stage two new blobs");
		sha256_hex("one", 3, got);
		is_str(hs[1], got, "staged under its sha256");
		ok(!spool_has(sp, hs[1]) && !spool_has(sp, hs[2]), "not there before the commit");
		is_int(spool_commit(sp, tmps, 3), 0, "commit");
		data = spool_get(sp, hs[1], &len);
		ok(data != NULL && len == 3 && memcmp(data, "one", 3) == 0 &&
		    spool_has(sp, hs[2]), "both there after it");
		free(data);
		ok(access(tmps[1], F_OK) < 0 && access(tmps[2], F_OK) < 0, "no temporary left");
		free(tmps[1]);
		free(tmps[2]);
	}
	/* staged blobs handed to a sync group (the fetcher's batches) */
	{
		char h[65], *tmp;

		ok(spool_stage(sp, "staged for a group", 18, h, &tmp) == 0 && tmp != NULL,
		    "stage a blob");
		is_int(spool_group(&tmp, 1), -1, "no group open: refused");
		sync_group_begin();
		is_int(spool_group(&tmp, 1), 0, "handed to the group");
		is_int(sync_group_files(), 1, "one file waits");
		ok(!spool_has(sp, h), "not under its hash before the flush");
		is_int(sync_group_flush(), 0, "flush");
		data = spool_get(sp, h, &len);
		ok(data != NULL && len == 18 && access(tmp, F_OK) < 0,
		    "under its hash after it, no temporary left");
		free(data);
		free(tmp);
	}
	/* a sync group: nothing under its name before the flush, all after */
	{
		char g1[65], g2[65], f[4096];

		sync_group_begin();
		ok(spool_put(sp, "grouped one", 11, g1) == 0 &&
		    spool_put(sp, "grouped two", 11, g2) == 0, "put in a group");
		snprintf(f, sizeof(f), "%s/plain", dir);
		ok(write_file_atomic(f, "x", 1, 0600) == 0, "a plain file in the group");
		ok(!spool_has(sp, g1) && !spool_has(sp, g2) && access(f, F_OK) < 0,
		    "nothing shows under its name before the flush");
		is_int(sync_group_files(), 3, "three files wait");
		is_int(sync_group_bytes(), 23, "... of 23 bytes");
		ok(sync_group_flush() == 0, "flush");
		ok(spool_has(sp, g1) && spool_has(sp, g2) && access(f, F_OK) == 0,
		    "all there after it");
		data = spool_get(sp, g2, &len);
		ok(data != NULL && len == 11 && memcmp(data, "grouped two", 11) == 0,
		    "with their bytes");
		free(data);
		ok(!sync_group_active(), "the group is closed");
		sync_group_begin();
		ok(spool_put(sp, "aborted", 7, g1) == 0, "put in a second group");
		sync_group_abort();
		ok(!spool_has(sp, g1), "an aborted group leaves nothing");
		ok(write_file_atomic(f, "y", 1, 0600) == 0 && (data = read_file(f, &len, 0)) &&
		    data[0] == 'y', "outside a group a write is immediate");
		free(data);
	}
	spool_close(sp);
	rm_rf(dir);
	return done_testing();
}
