/*
 * fetch_archive_test - the archive guards, table-driven over archives built
 * here with libarchive's writer (zip and tar, plain and gzip): good paths
 * pass; "..", absolute, backslash, symlink, hard link, device, too many
 * entries, too many bytes and a bomb (ratio) are refused with a message
 * naming the entry; non-ASCII names written the way git archive and Go's
 * tar writer do (a zip's UTF-8 flag, pax path records) are read as UTF-8
 * while the test runs in the C locale, as the daemons do, and a name that
 * is not UTF-8 is refused, quoted so the message is UTF-8; one bomb entry
 * behind incompressible ones stops after its first MiB; and the GitHub
 * zipball rules (root folder, plain prefix, flattened keys) and OCI
 * reference parsing; and a libarchive that cannot be loaded fails the read
 * with the reason (archive_lazy.c), the next read loading the real one.
 */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/json.h"
#include "common/spool.h"
#include "common/util.h"
#include "daemons/fetcher/archive_lazy.h"
#include "daemons/fetcher/fetch_archive.h"
#include "daemons/fetcher/fetch_github.h"
#include "daemons/fetcher/fetch_oci.h"
#include "t/tap.h"

/*
 * an entry to write: type 'f' file, 'd' folder, 'l' symlink, 'h' hard link,
 * 'c' device, 'r' a file of zeros pseudo-random (incompressible) bytes
 */
struct ent {
	char type;
	const char *path;
	const char *data;	/* file data, or link target */
	size_t zeros;		/* > 0: data is that many spaces (or random bytes) */
};

static struct buf *outb;

static la_ssize_t
w_cb(struct archive *a, void *arg, const void *p, size_t n)
{
	(void)a;
	(void)arg;
	buf_add(outb, p, n);
	return (la_ssize_t)n;
}

/*
 * build an archive of ents into b; format 'z' zip, 't' tar, 'g' tar+gzip,
 * 'u' ustar (names as raw bytes); 'Z' and 'P' are a zip and a pax tar
 * written in a UTF-8 locale, as git archive and Go's archive/tar write
 * non-ASCII names: the zip's UTF-8 flag, pax "path" records
 */
static void
build(struct buf *b, char format, const struct ent *ents)
{
	locale_t utf8 = (locale_t)0, old = (locale_t)0;
	struct archive *a;

	if (format == 'Z' || format == 'P') {
		utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
		if (utf8 == (locale_t)0) {
			printf("Bail out! no C.UTF-8 locale\n");
			exit(1);
		}
		old = uselocale(utf8);
	}
	a = archive_write_new();
	buf_init(b);
	outb = b;
	if (format == 'z' || format == 'Z') {
		archive_write_set_format_zip(a);
	} else if (format == 'u') {
		archive_write_set_format_ustar(a);
	} else {
		archive_write_set_format_pax_restricted(a);
		if (format == 'g')
			archive_write_add_filter_gzip(a);
	}
	archive_write_open(a, NULL, NULL, w_cb, NULL);
	for (const struct ent *e = ents; e->path != NULL; e++) {
		struct archive_entry *ae = archive_entry_new();
		char *big = NULL;
		size_t len = 0;

		archive_entry_set_pathname(ae, e->path);
		archive_entry_set_perm(ae, 0644);
		switch (e->type) {
		case 'd':
			archive_entry_set_filetype(ae, AE_IFDIR);
			break;
		case 'l':
			archive_entry_set_filetype(ae, AE_IFLNK);
			archive_entry_set_symlink(ae, e->data);
			break;
		case 'h':
			archive_entry_set_filetype(ae, AE_IFREG);
			archive_entry_set_hardlink(ae, e->data);
			break;
		case 'c':
			archive_entry_set_filetype(ae, AE_IFCHR);
			break;
		default:
			archive_entry_set_filetype(ae, AE_IFREG);
			if (e->zeros > 0) {
				uint32_t x = 2463534242u;

				big = xmalloc(e->zeros);
				memset(big, ' ', e->zeros);
				for (size_t k = 0; e->type == 'r' && k < e->zeros; k++) {
					x ^= x << 13;
					x ^= x >> 17;
					x ^= x << 5;
					big[k] = (char)(x >> 24);
				}
				len = e->zeros;
			} else {
				len = strlen(e->data);
			}
			archive_entry_set_size(ae, (la_int64_t)len);
		}
		archive_write_header(a, ae);
		if (e->type == 'f' || e->type == 'r')
			archive_write_data(a, big != NULL ? big : e->data, len);
		free(big);
		archive_entry_free(ae);
	}
	archive_write_close(a);
	archive_write_free(a);
	if (utf8 != (locale_t)0) {
		uselocale(old);
		freelocale(utf8);
	}
}

/* every occurrence of from (n bytes) in b replaced by to (n bytes) */
static void
patch(struct buf *b, const char *from, const char *to, size_t n)
{
	for (size_t i = 0; i + n <= b->len; i++)
		if (memcmp(b->data + i, from, n) == 0)
			memcpy(b->data + i, to, n);
}

/* the "N bytes out" of a ratio refusal, or -1 */
static long long
bytes_out(const char *err)
{
	const char *p = strstr(err, "(");
	long long n;

	return p != NULL && sscanf(p, "(%lld bytes out", &n) == 1 ? n : -1;
}

struct seen {
	struct buf names;
};

static int
want_all(void *arg, const char *path, int is_dir, struct fetch_result *res)
{
	struct seen *s = arg;

	(void)res;
	if (!is_dir)
		buf_printf(&s->names, "%s;", path);
	return !is_dir;
}

static int
file_ok(void *arg, const char *path, const void *data, size_t len, struct fetch_result *res)
{
	(void)arg;
	(void)path;
	(void)data;
	(void)len;
	(void)res;
	return 0;
}

int
main(void)
{
	static const struct ent good[] = {
		{ 'd', "root/", NULL, 0 }, { 'f', "root/a.json", "{}", 0 },
		{ 'f', "root/sub/b.json", "[1]", 0 }, { 0, NULL, NULL, 0 } };
	static const struct ent slip[] = {
		{ 'f', "root/a.json", "{}", 0 }, { 'f', "root/../../x.json", "{}", 0 },
		{ 0, NULL, NULL, 0 } };
	static const struct ent dotdot_end[] = { { 'f', "a/..", "{}", 0 }, { 0, NULL, NULL, 0 } };
	static const struct ent absol[] = { { 'f', "/etc/x.json", "{}", 0 }, { 0, NULL, NULL, 0 } };
	static const struct ent bslash[] = { { 'f', "a\\..\\x.json", "{}", 0 },
		{ 0, NULL, NULL, 0 } };
	static const struct ent link[] = { { 'l', "root/l.json", "/etc/passwd", 0 },
		{ 0, NULL, NULL, 0 } };
	static const struct ent hard[] = { { 'f', "root/a.json", "{}", 0 },
		{ 'h', "root/h.json", "root/a.json", 0 }, { 0, NULL, NULL, 0 } };
	static const struct ent dev[] = { { 'c', "root/dev", NULL, 0 }, { 0, NULL, NULL, 0 } };
	static const struct ent bomb[] = { { 'f', "root/bomb.json", NULL, 32 << 20 },
		{ 0, NULL, NULL, 0 } };
	static const struct ent dots[] = { { 'f', "root/..x/a..b.json", "{}", 0 },
		{ 0, NULL, NULL, 0 } };
	/* real sites' block names: Portuguese, Chinese, an emoji, percent-encoded */
	static const struct ent intl[] = { { 'd', "root/", NULL, 0 },
		{ 'f', "root/P\xc3\xa1gina Institucional.json", "{}", 0 },
		{ 'f', "root/\xe9\xa6\x96\xe9\xa1\xb5.json", "{}", 0 },
		{ 'f', "root/\xf0\x9f\x8e\x89 Promo\xc3\xa7\xc3\xa3o.json", "{}", 0 },
		{ 'f', "root/Home%20Page.json", "{}", 0 }, { 0, NULL, NULL, 0 } };
	static const char *intl_seen = "root/P\xc3\xa1gina Institucional.json;"
	    "root/\xe9\xa6\x96\xe9\xa1\xb5.json;root/\xf0\x9f\x8e\x89 Promo\xc3\xa7\xc3\xa3o.json;"
	    "root/Home%20Page.json;";
	static const struct ent latin1[] = { { 'd', "root/", NULL, 0 },
		{ 'f', "root/a.json", "{}", 0 }, { 'f', "root/caf\xe9.json", "{}", 0 },
		{ 0, NULL, NULL, 0 } };
	/* a bomb behind 3 MiB that does not compress: the whole archive's ratio is ~11:1 */
	static const struct ent hidden_bomb[] = { { 'd', "root/", NULL, 0 },
		{ 'r', "root/photo.bin", NULL, 3 << 20 },
		{ 'f', "root/bomb.json", NULL, 32 << 20 }, { 0, NULL, NULL, 0 } };
	struct ent many[40];
	static const struct {
		const char *label;
		char format;
		const struct ent *ents;
		int rc;
		const char *msg;	/* substring of the error, or the names seen */
	} rows[] = {
		{ "zip: good", 'z', good, 0, "root/a.json;root/sub/b.json;" },
		{ "tar: good", 't', good, 0, "root/a.json;root/sub/b.json;" },
		{ "tar+gzip: good", 'g', good, 0, "root/a.json;root/sub/b.json;" },
		{ "dots inside names are fine", 'z', dots, 0, "root/..x/a..b.json;" },
		{ "zip: zip-slip", 'z', slip, -1, "entry 'root/../../x.json' has a \"..\" component" },
		{ "tar: zip-slip", 't', slip, -1, "entry 'root/../../x.json' has a \"..\"" },
		{ "a trailing ..", 't', dotdot_end, -1, "has a \"..\" component" },
		{ "absolute path", 't', absol, -1, "entry '/etc/x.json' has an absolute path" },
		{ "tar: backslash", 't', bslash, -1, "has a backslash in its name" },
		/* libarchive reads a zip's backslashes as folder separators */
		{ "zip: backslash traversal", 'z', bslash, -1, "entry 'a/../x.json' has a \"..\"" },
		{ "zip: symlink", 'z', link, -1, "entry 'root/l.json' is a symbolic link" },
		{ "tar: symlink", 't', link, -1, "entry 'root/l.json' is a symbolic link" },
		{ "tar: hard link", 't', hard, -1, "entry 'root/h.json' is a hard link" },
		{ "tar: device", 't', dev, -1, "entry 'root/dev' is not a regular file" },
		{ "zip: bomb", 'z', bomb, -1, "compression ratio over 100:1" },
		{ "tar+gzip: bomb", 'g', bomb, -1, "compression ratio over 100:1" },
		{ "zip flagged UTF-8 (git archive): names", 'Z', intl, 0, NULL },
		{ "pax path records (Go's tar): names", 'P', intl, 0, NULL },
		{ "tar+gzip: UTF-8 names", 'g', intl, 0, NULL },
		{ "ustar: a Latin-1 name is refused, quoted", 'u', latin1, -1,
		  "entry 'root/caf\\xe9.json' has a name that is not valid UTF-8" },
		{ "zip: a Latin-1 name is refused, quoted", 'z', latin1, -1,
		  "entry 'root/caf\\xe9.json' has a name that is not valid UTF-8" },
		{ "zip: one bomb entry behind incompressible ones", 'z', hidden_bomb, -1,
		  "compression ratio over 100:1" },
		{ "tar+gzip: one bomb entry behind incompressible ones", 'g', hidden_bomb, -1,
		  "compression ratio over 100:1" },
	};
	struct fetch_archive_limits lim = { 30, 64 << 20, 100 };
	struct fetch_result res;
	struct spool *sp;
	char tmp[256], host[256], name[256], ref[256];
	struct buf b;
	int rc;

	/*
	 * libarchive is loaded by the first read (archive_lazy.c): one that
	 * cannot be loaded fails the read with the reason, it does not stop
	 * the program; the next read loads the real one.  First of all: the
	 * writer below loads it too (its calls go through archive_lazy.c's)
	 */
	archive_lazy_library("libarchive-missing.so.13");
	memset(&res, 0, sizeof(res));
	rc = fetch_archive_read("PK", 2, FETCH_ARCHIVE_ZIP, &lim, "zipball", want_all,
	    file_ok, NULL, &res);
	ok(rc == -1 && strcmp(res.reason, "FetchError") == 0 && strstr(res.error,
	    "zipball: cannot load libarchive-missing.so.13") != NULL,
	    "libarchive missing: the read fails with the reason: %s", rc < 0 ? res.error : "");
	archive_lazy_library(ARCHIVE_LAZY_LIB);
	build(&b, 'z', good);
	{
		struct seen s;

		buf_init(&s.names);
		memset(&res, 0, sizeof(res));
		rc = fetch_archive_read(b.data, b.len, FETCH_ARCHIVE_ZIP, &lim, "zipball",
		    want_all, file_ok, &s, &res);
		is_int(rc, 0, "libarchive there again: the next read loads it (%s)",
		    rc < 0 ? res.error : "");
		buf_free(&s.names);
	}
	buf_free(&b);

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct seen s;

		buf_init(&s.names);
		build(&b, rows[i].format, rows[i].ents);
		memset(&res, 0, sizeof(res));
		rc = fetch_archive_read(b.data, b.len, strchr("zZ", rows[i].format) != NULL ? FETCH_ARCHIVE_ZIP :
		    FETCH_ARCHIVE_TAR, &lim, "test", want_all, file_ok, &s, &res);
		is_int(rc, rows[i].rc, "%s: rc (%s)", rows[i].label, rc < 0 ? res.error : "");
		if (rows[i].rc == 0) {
			is_str(s.names.data, rows[i].msg ? rows[i].msg : intl_seen,
			    "%s: files seen", rows[i].label);
		} else if (rc < 0) {
			ok(strstr(res.error, rows[i].msg) != NULL && strcmp(res.reason,
			    "FetchError") == 0, "%s: FetchError \"%s\"", rows[i].label, res.error);
			ok(utf8_valid(res.error, strlen(res.error)), "%s: the message is UTF-8",
			    rows[i].label);
		}
		if (rows[i].ents == hidden_bomb) {
			/* stopped as it streamed: at most one chunk past the first MiB */
			long long n = bytes_out(res.error);

			ok(n > 0 && n <= (1 << 20) + 65536, "%s: stopped after %lld bytes out",
			    rows[i].label, n);
		}
		buf_free(&s.names);
		buf_free(&b);
	}

	/* too many entries; too many bytes (no ratio limit) */
	for (int i = 0; i < 39; i++) {
		many[i].type = 'f';
		many[i].path = xasprintf("root/%02d.json", i);
		many[i].data = "{}";
		many[i].zeros = 0;
	}
	many[39].path = NULL;
	build(&b, 'z', many);
	{
		struct seen s;

		buf_init(&s.names);
		rc = fetch_archive_read(b.data, b.len, FETCH_ARCHIVE_ZIP, &lim, "test", want_all,
		    file_ok, &s, &res);
		ok(rc == -1 && strstr(res.error, "more than 30 entries") != NULL,
		    "too many entries: %s", res.error);
		buf_free(&s.names);
	}
	buf_free(&b);
	build(&b, 't', bomb);
	{
		struct fetch_archive_limits small = { 0, 1 << 20, 0 };
		struct seen s;

		buf_init(&s.names);
		rc = fetch_archive_read(b.data, b.len, FETCH_ARCHIVE_TAR, &small, "test", want_all,
		    file_ok, &s, &res);
		ok(rc == -1 && strstr(res.error, "expands past 1048576 bytes") != NULL,
		    "too many bytes: %s", res.error);
		buf_free(&s.names);
	}
	buf_free(&b);
	/* a zip flagged UTF-8 whose name is not: libarchive keeps no bytes of it */
	build(&b, 'Z', intl);
	patch(&b, "\xc3\xa1gina", "\xff\xfegina", 6);
	{
		struct seen s;

		buf_init(&s.names);
		rc = fetch_archive_read(b.data, b.len, FETCH_ARCHIVE_ZIP, &lim, "test", want_all,
		    file_ok, &s, &res);
		ok(rc == -1 && strstr(res.error, "entry 2 (the one after 'root/') has a name "
		    "marked UTF-8 that is not valid UTF-8") != NULL,
		    "flagged UTF-8, but not: refused, named by its place: %d %s", rc, rc < 0 ? res.error : s.names.data);
		buf_free(&s.names);
	}
	buf_free(&b);
	rc = fetch_archive_read("not an archive", 14, FETCH_ARCHIVE_ZIP, &lim, "test", want_all,
	    file_ok, NULL, &res);
	is_int(rc, -1, "garbage is refused");

	/* the zipball rules */
	snprintf(tmp, sizeof(tmp), "/tmp/fetch_archive_test.%ld", (long)getpid());
	sp = spool_open(tmp);
	{
		static const struct ent zb[] = {
			{ 'd', "acme-loja-abc1234/", NULL, 0 },
			{ 'f', "acme-loja-abc1234/.deco/blocks/Header.json", "{\"h\":1}", 0 },
			{ 'f', "acme-loja-abc1234/.deco/blocks/pages/Home+Page.json", "[]", 0 },
			{ 'f', "acme-loja-abc1234/.deco/blocks2/Extra.json", "{}", 0 },
			{ 'f', "acme-loja-abc1234/.deco/blocks/README.md", "x", 0 },
			{ 'f', "acme-loja-abc1234/Top.json", "{}", 0 },
			{ 0, NULL, NULL, 0 } };
		static const struct ent outside[] = {
			{ 'd', "acme-loja-abc1234/", NULL, 0 },
			{ 'f', "other-root/x.json", "{}", 0 }, { 0, NULL, NULL, 0 } };
		const char *sha = "0123456789abcdef0123456789abcdef01234567";
		struct fetch_limits fl = { 1 << 20, 4 << 20, 0 };
		yajl_val doc, e;
		char *man;
		size_t len;

		build(&b, 'z', zb);
		rc = fetch_github_zip_tree(sp, b.data, b.len, "/.deco/blocks", sha, &fl, &lim, &res);
		is_int(rc, 0, "zipball: read");
		is_int((long long)res.entries, 3, "zipball: blocks under the plain prefix (blocks2 too)");
		is_str(res.commit, sha, "zipball: commit is the sha");
		man = spool_get(sp, res.tree_hash, &len);
		doc = man != NULL ? json_parse(man, len, NULL) : NULL;
		e = json_get(doc, "entries", NULL);
		ok(e != NULL && YAJL_IS_ARRAY(e) && e->u.array.len == 3, "zipball: manifest entries");
		if (e != NULL && YAJL_IS_ARRAY(e) && e->u.array.len == 3) {
			is_str(json_get_str(e->u.array.values[0], "key", NULL), "Extra", "key 1");
			is_str(json_get_str(e->u.array.values[1], "key", NULL), "Header", "key 2");
			is_str(json_get_str(e->u.array.values[1], "path", NULL),
			    ".deco/blocks/Header.json", "path is under the root folder");
			is_str(json_get_str(e->u.array.values[2], "key", NULL), "Home Page",
			    "flattened and form-decoded");
		}
		yajl_tree_free(doc);
		free(man);
		buf_free(&b);
		build(&b, 'z', zb);
		rc = fetch_github_zip_tree(sp, b.data, b.len, NULL, sha, &fl, &lim, &res);
		is_int((long long)res.entries, 4, "zipball: no path takes every block");
		buf_free(&b);
		build(&b, 'z', outside);
		rc = fetch_github_zip_tree(sp, b.data, b.len, "", sha, &fl, &lim, &res);
		ok(rc == -1 && strstr(res.error, "outside its root folder") != NULL,
		    "zipball: an entry outside the root folder is refused");
		buf_free(&b);
	}
	rm_rf(tmp);

	/* OCI references */
	{
		static const struct {
			const char *in, *host, *name, *ref;
		} refs[] = {
			{ "registry.example/loja/decofile:prod", "registry.example", "loja/decofile", "prod" },
			{ "127.0.0.1:5000/a/b", "127.0.0.1:5000", "a/b", "latest" },
			{ "localhost/x:1.0", "localhost", "x", "1.0" },
			{ "alpine", "registry-1.docker.io", "library/alpine", "latest" },
			{ "acme/site:v2", "registry-1.docker.io", "acme/site", "v2" },
			{ "r.io/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			  "r.io", "a", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
			{ "r.io/A/b:x", NULL, NULL, NULL },
			{ "r.io/a/../b:x", NULL, NULL, NULL },
			{ "r.io/a:b?c", NULL, NULL, NULL },
			{ "r.io/a@sha256:xyz", NULL, NULL, NULL },
			{ "", NULL, NULL, NULL },
		};

		for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
			rc = fetch_oci_parse_ref(refs[i].in, host, sizeof(host), name, sizeof(name),
			    ref, sizeof(ref));
			if (refs[i].host == NULL) {
				is_int(rc, -1, "oci ref '%s' refused", refs[i].in);
				continue;
			}
			is_int(rc, 0, "oci ref '%s' parses", refs[i].in);
			is_str(host, refs[i].host, "  host");
			is_str(name, refs[i].name, "  name");
			is_str(ref, refs[i].ref, "  reference");
		}
	}
	for (int i = 0; i < 39; i++)
		free((char *)many[i].path);
	spool_close(sp);
	return done_testing();
}
