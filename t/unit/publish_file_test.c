/*
 * publish_file_test - the file target: layout, atomic replace, format
 * switch, hostile names, skip on same content, drift repair.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/util.h"
#include "daemons/publisher/publish_file.h"
#include "t/tap.h"

static char root[4096];

static char *
slurp(const char *a, const char *b, const char *f)
{
	char p[8192];

	snprintf(p, sizeof(p), "%s/%s/%s/%s", root, a, b, f);
	return read_file(p, NULL, 0);
}

static int
exists(const char *a, const char *b, const char *f)
{
	char p[8192];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s/%s/%s", root, a, b, f);
	return lstat(p, &st) == 0;
}

static int
count_entries(const char *dir)
{
	char cmd[4200];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	if ((f = popen(cmd, "r")) != NULL) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}

static int
pub(const char *ns, const char *name, const char *fmt, const char *data,
    int64_t ts, int flags, struct publish_file_res *res)
{
	struct publish_file_req rq = { root, ns, name, fmt, data, strlen(data), ts, flags, 0 };
	char err[256] = "";
	int rv = publish_file(&rq, res, err, sizeof(err));

	if (rv < 0)
		diag("publish_file: %s", err);
	return rv;
}

static void
test_layout(void)
{
	struct publish_file_res r;
	char *s, want[4200];

	is_int(pub("sites-loja", "loja", "json", "{\"a\":1}", 1731598481,
	    PUBLISH_FILE_KEEP_TS, &r), 0, "first publish");
	ok(r.wrote_doc && r.wrote_ts, "document and timestamp written");
	snprintf(want, sizeof(want), "file://%s/sites-loja/loja/decofile.json", root);
	is_str(r.location, want, "location is file://<root>/<ns>/<name>/decofile.json");
	s = slurp("sites-loja", "loja", "decofile.json");
	is_str(s, "{\"a\":1}", "document bytes");
	free(s);
	s = slurp("sites-loja", "loja", "timestamp.txt");
	is_str(s, "1731598481", "timestamp.txt: unix seconds, no newline");
	free(s);
	is_int(r.timestamp, 1731598481, "result timestamp");
}

static void
test_skip_same(void)
{
	struct publish_file_res r;
	char *s;

	is_int(pub("sites-loja", "loja", "json", "{\"a\":1}", 1731599999,
	    PUBLISH_FILE_KEEP_TS, &r), 0, "same content again");
	ok(!r.wrote_doc && !r.wrote_ts && !r.removed, "nothing rewritten");
	is_int(r.timestamp, 1731598481, "timestamp on disk kept (redo after crash)");
	is_str(r.detail, "", "no drift detail");
	s = slurp("sites-loja", "loja", "timestamp.txt");
	is_str(s, "1731598481", "timestamp.txt untouched");
	free(s);
}

static void
test_keep_after(void)
{
	struct publish_file_req rq = { root, "sites-loja", "loja", "json", "{\"a\":1}", 7,
	    1731598490, PUBLISH_FILE_KEEP_TS, 1731598481 };
	struct publish_file_res r;
	char err[256], *s;

	is_int(publish_file(&rq, &r, err, sizeof(err)), 0, "same content, keep_after = disk ts");
	ok(!r.wrote_doc && r.wrote_ts, "a timestamp not newer than keep_after is replaced");
	s = slurp("sites-loja", "loja", "timestamp.txt");
	is_str(s, "1731598490", "new timestamp written (crash between document and timestamp)");
	free(s);
	rq.keep_after = 0;
	rq.timestamp = 1731598495;
	is_int(publish_file(&rq, &r, err, sizeof(err)), 0, "again, keep_after 0");
	ok(!r.wrote_ts && r.timestamp == 1731598490, "newer timestamp on disk kept");
}

static void
test_replace(void)
{
	struct publish_file_res r;
	struct stat st1, st2;
	char p[4200], *s;

	snprintf(p, sizeof(p), "%s/sites-loja/loja/decofile.json", root);
	stat(p, &st1);
	is_int(pub("sites-loja", "loja", "json", "{\"a\":2}", 1731598500,
	    PUBLISH_FILE_KEEP_TS, &r), 0, "new content");
	ok(r.wrote_doc && r.wrote_ts, "both rewritten");
	stat(p, &st2);
	ok(st1.st_ino != st2.st_ino, "replaced by rename (new inode), not in place");
	s = slurp("sites-loja", "loja", "decofile.json");
	is_str(s, "{\"a\":2}", "new bytes");
	free(s);
	s = slurp("sites-loja", "loja", "timestamp.txt");
	is_str(s, "1731598500", "new timestamp");
	free(s);
	snprintf(p, sizeof(p), "%s/sites-loja/loja", root);
	is_int(count_entries(p), 2, "no temp files left");
}

static void
test_format_switch(void)
{
	struct publish_file_res r;
	char *s;

	is_int(pub("sites-loja", "loja", "bin", "G1sAAB4=", 1731598600,
	    PUBLISH_FILE_KEEP_TS, &r), 0, "switch to bin");
	ok(exists("sites-loja", "loja", "decofile.bin"), "decofile.bin present");
	ok(!exists("sites-loja", "loja", "decofile.json"), "decofile.json removed");
	ok(r.removed, "removal reported");
	s = slurp("sites-loja", "loja", "decofile.bin");
	is_str(s, "G1sAAB4=", "bin bytes as given");
	free(s);
	is_int(pub("sites-loja", "loja", "bin", "G1sAAB4=", 1731598700,
	    PUBLISH_FILE_KEEP_TS, &r), 0, "same bin again");
	ok(!r.wrote_doc && !r.wrote_ts, "bin skipped by hashing the file");
	is_int(pub("sites-loja", "loja", "json", "{}", 1731598800,
	    PUBLISH_FILE_KEEP_TS, &r), 0, "back to json");
	ok(exists("sites-loja", "loja", "decofile.json") &&
	    !exists("sites-loja", "loja", "decofile.bin"), "only decofile.json left");
}

static void
test_drift(void)
{
	struct publish_file_res r;
	char p[4200], *s;

	snprintf(p, sizeof(p), "%s/sites-loja/loja/decofile.json", root);
	write_file_atomic(p, "{\"hacked\":1}", 12, 0644);
	is_int(pub("sites-loja", "loja", "json", "{}", 1731598800, 0, &r), 0, "repair");
	ok(r.wrote_doc && !r.wrote_ts, "document put back, timestamp was right");
	is_str(r.detail, "decofile.json:modified", "drift detail");
	s = read_file(p, NULL, 0);
	is_str(s, "{}", "published bytes back");
	free(s);

	snprintf(p, sizeof(p), "%s/sites-loja/loja/timestamp.txt", root);
	unlink(p);
	is_int(pub("sites-loja", "loja", "json", "{}", 1731598800, 0, &r), 0, "repair ts");
	is_str(r.detail, "timestamp.txt:missing", "missing timestamp detected");
	s = read_file(p, NULL, 0);
	is_str(s, "1731598800", "timestamp back");
	free(s);

	/* a symlink in place of the document is replaced, its target untouched */
	char outside[4200];
	snprintf(outside, sizeof(outside), "%s/outside.txt", root);
	write_file_atomic(outside, "keep", 4, 0644);
	snprintf(p, sizeof(p), "%s/sites-loja/loja/decofile.json", root);
	unlink(p);
	ok(symlink(outside, p) == 0, "planted symlink");
	is_int(pub("sites-loja", "loja", "json", "{}", 1731598800, 0, &r), 0, "repair link");
	is_str(r.detail, "decofile.json:not-a-file", "symlink seen as drift");
	s = read_file(outside, NULL, 0);
	is_str(s, "keep", "symlink target not written");
	free(s);
	struct stat st;
	ok(lstat(p, &st) == 0 && S_ISREG(st.st_mode), "document is a regular file again");

	/* a symlinked namespace folder is replaced by a real one */
	char elsewhere[4200], nsdir[4200];
	snprintf(elsewhere, sizeof(elsewhere), "%s/../publish-elsewhere", root);
	mkdir(elsewhere, 0755);
	snprintf(nsdir, sizeof(nsdir), "%s/evil", root);
	ok(symlink(elsewhere, nsdir) == 0, "planted folder symlink");
	is_int(pub("evil", "x", "json", "{}", 1, 0, &r), 0, "publish below it");
	ok(lstat(nsdir, &st) == 0 && S_ISDIR(st.st_mode), "namespace is a real folder");
	is_int(count_entries(elsewhere), 0, "nothing written outside root");
	rmdir(elsewhere);
}

static void
test_hostile(void)
{
	static const struct {
		const char *ns, *name, *fmt, *label;
	} rows[] = {
		{ "..", "x", "json", "ns .." },
		{ "a", "..", "json", "name .." },
		{ "a", "../../etc", "json", "name with slashes" },
		{ "a/b", "x", "json", "ns with slash" },
		{ "", "x", "json", "empty ns" },
		{ "a", "", "json", "empty name" },
		{ "a", ".hidden", "json", "leading dot" },
		{ "A", "x", "json", "upper case" },
		{ "a", "x\n", "json", "control byte" },
		{ "a", "x", "yaml", "unknown format" },
		{ "a", "x", "../json", "format with slash" },
	};
	struct publish_file_res r;
	struct publish_file_req rq;
	char err[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		rq = (struct publish_file_req){ root, rows[i].ns, rows[i].name,
		    rows[i].fmt, "{}", 2, 1, 0, 0 };
		err[0] = '\0';
		is_int(publish_file(&rq, &r, err, sizeof(err)), -1, "refused: %s", rows[i].label);
		ok(err[0] != '\0', "with a message: %s", err);
	}
	rq = (struct publish_file_req){ "relative/root", "a", "x", "json", "{}", 2, 1, 0, 0 };
	is_int(publish_file(&rq, &r, err, sizeof(err)), -1, "relative root refused");
}

static void
test_remove(void)
{
	struct publish_file_res r;
	char p[4200], err[256];
	struct stat st;

	pub("sites-two", "a", "json", "{}", 5, 0, &r);
	pub("sites-two", "b", "json", "{}", 5, 0, &r);
	is_int(publish_file_remove(root, "sites-two", "a", err, sizeof(err)), 0, "remove a");
	ok(!exists("sites-two", "a", "."), "folder a gone");
	ok(exists("sites-two", "b", "decofile.json"), "sibling b kept");
	is_int(publish_file_remove(root, "sites-two", "b", err, sizeof(err)), 0, "remove b");
	snprintf(p, sizeof(p), "%s/sites-two", root);
	ok(lstat(p, &st) < 0, "empty namespace folder removed");
	is_int(publish_file_remove(root, "sites-two", "b", err, sizeof(err)), 0,
	    "removing again is fine");
	is_int(publish_file_remove(root, "..", "b", err, sizeof(err)), -1, "hostile remove refused");
}

static void
test_sig(void)
{
	struct publish_file_res r;
	struct publish_file_sig s;
	char p[4200];

	pub("sites-sig", "a", "json", "{}", 5, 0, &r);
	snprintf(p, sizeof(p), "%s/sites-sig/a/decofile.json", root);
	ok(publish_file_sig(p, &s) == 0 && publish_file_sig_eq(&s, &r.doc_sig),
	    "fingerprint stable while untouched");
	FILE *f = fopen(p, "w");
	fputs("{ }", f);
	fclose(f);
	publish_file_sig(p, &s);
	ok(!publish_file_sig_eq(&s, &r.doc_sig), "fingerprint moves on an in-place write");
}

int
main(void)
{
	char tmpl[] = "/tmp/publish_file_test.XXXXXX";
	char cmd[4200];

	if (mkdtemp(tmpl) == NULL)
		return 1;
	snprintf(root, sizeof(root), "%s/published", tmpl);
	test_layout();
	test_skip_same();
	test_keep_after();
	test_replace();
	test_format_switch();
	test_drift();
	test_hostile();
	test_remove();
	test_sig();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		diag("cleanup failed");
	return done_testing();
}
