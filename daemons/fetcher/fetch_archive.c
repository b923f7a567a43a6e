/*
 * fetch_archive - the one archive reader the GitHub and OCI sources share.
 * It owns the libarchive handle and the running counts (entries, bytes out)
 * that the guards check while decompressing, chunk by chunk, so a bomb is
 * stopped after at most one chunk past the limit, never after it has
 * filled memory.  Only zip (for zipballs) and tar with no or gzip
 * compression (for layers) are enabled: no other format reaches libarchive.
 *
 * Names are read as UTF-8 whatever the process's locale.  libarchive
 * converts a zip entry flagged UTF-8 (as git archive and GitHub write any
 * non-ASCII name) and a pax "path" record to the current locale while it
 * reads the header; in the C locale the daemons run in that fails and the
 * entry has no name at all (archive_entry_pathname_utf8 is NULL too: the
 * name was never stored, so it is no fallback).  So each read runs with a
 * C.UTF-8 LC_CTYPE for its own thread only (uselocale), leaving the rest of
 * the fetcher, its other workers and the libraries they call in the locale
 * they started in; a process-wide setlocale would change them all.
 *
 * libarchive itself is loaded by the first read (archive_lazy.c); when it
 * cannot be, that read fails with the reason, as a broken archive does.
 */
#include "config.h"

#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/util.h"
#include "daemons/fetcher/archive_lazy.h"
#include "daemons/fetcher/fetch_archive.h"
#include "daemons/fetcher/fetch_keys.h"

#define CHUNK 65536
#define RATIO_FLOOR ((uint64_t)1 << 20)
#define SHOWN 1024		/* a name quoted by str_show */

struct walk {
	const struct fetch_archive_limits *lim;
	const char *what;
	size_t in_len;
	uint64_t out;		/* bytes decompressed or declared so far */
	struct fetch_result *res;
};

static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static locale_t utf8_locale;

static void
utf8_locale_make(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* why path cannot be taken (the name rule, then an archive's own), or NULL */
static const char *
bad_path(const char *p)
{
	const char *c, *why;

	if ((why = fetch_name_bad(p)) != NULL)
		return why;
	if (p[0] == '/')
		return "has an absolute path";
	for (c = p; *c != '\0'; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return "has a control character in its name";
		if (*c == '\\')
			return "has a backslash in its name";
	}
	for (c = p; c != NULL; c = strchr(c, '/')) {
		if (*c == '/')
			c++;
		if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
			return "has a \"..\" component (path traversal)";
	}
	return NULL;
}

/* the guards on bytes; 0 or -1 with res set */
static int
count(struct walk *w, const char *path, uint64_t n)
{
	w->out += n;
	if (w->lim->max_bytes > 0 && w->out > w->lim->max_bytes)
		return fetch_result_error(w->res, "FetchError",
		    "%s: refused: expands past %llu bytes (at %s)", w->what,
		    (unsigned long long)w->lim->max_bytes, path);
	if (w->lim->max_ratio > 0 && w->out > RATIO_FLOOR &&
	    w->out / (w->in_len ? w->in_len : 1) > w->lim->max_ratio)
		return fetch_result_error(w->res, "FetchError",
		    "%s: refused: compression ratio over %llu:1 (%llu bytes out of %zu, at %s)",
		    w->what, (unsigned long long)w->lim->max_ratio,
		    (unsigned long long)w->out, w->in_len, path);
	return 0;
}

/*
 * read_data - the entry's bytes into b, chunk by chunk.  Besides the
 * guards on the whole archive, the entry's own ratio: its bytes out
 * against the compressed bytes libarchive took from the input since its
 * header (archive_filter_bytes of the raw input), so one bomb entry in an
 * otherwise incompressible archive stops after its first MiB instead of
 * after max_archive_ratio times the whole archive.
 */
static int
read_data(struct archive *a, struct walk *w, const char *path, struct buf *b)
{
	char chunk[CHUNK];
	la_int64_t in0 = archive_filter_bytes(a, -1), in;
	uint64_t out = 0;
	la_ssize_t n;

	while ((n = archive_read_data(a, chunk, sizeof(chunk))) > 0) {
		if (count(w, path, (uint64_t)n) < 0)
			return -1;
		out += (uint64_t)n;
		in = archive_filter_bytes(a, -1) - in0;
		if (w->lim->max_ratio > 0 && out > RATIO_FLOOR &&
		    out / (uint64_t)(in > 0 ? in : 1) > w->lim->max_ratio)
			return fetch_result_error(w->res, "FetchError",
			    "%s: refused: compression ratio over %llu:1 (%llu bytes out of %lld, at %s)",
			    w->what, (unsigned long long)w->lim->max_ratio,
			    (unsigned long long)out, (long long)in, path);
		buf_add(b, chunk, (size_t)n);
	}
	if (n < 0)
		return fetch_result_error(w->res, "FetchError", "%s: %s: cannot read: %s",
		    w->what, path, archive_error_string(a));
	return 0;
}

/* the walk itself, under the UTF-8 locale */
static int
walk_archive(const void *data, size_t len, enum fetch_archive_kind kind,
    const struct fetch_archive_limits *lim, const char *what, fetch_archive_want_fn want,
    fetch_archive_file_fn file, void *arg, struct fetch_result *res)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	struct walk w = { lim, what, len, 0, res };
	uint64_t entries = 0;
	char shown[SHOWN], prev[SHOWN] = "";
	struct buf b;
	int rc = 0, r;

	if (kind == FETCH_ARCHIVE_ZIP) {
		archive_read_support_format_zip(a);
	} else {
		archive_read_support_format_tar(a);
		archive_read_support_filter_gzip(a);
	}
	if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
		rc = fetch_result_error(res, "FetchError", "%s: not a %s archive: %s", what,
		    kind == FETCH_ARCHIVE_ZIP ? "zip" : "tar", archive_error_string(a));
		archive_read_free(a);
		return rc;
	}
	buf_init(&b);
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK ||
	    r == ARCHIVE_WARN) {
		const char *path = archive_entry_pathname(e), *why;
		mode_t type = archive_entry_filetype(e);

		if (lim->max_entries > 0 && ++entries > lim->max_entries) {
			rc = fetch_result_error(res, "FetchError",
			    "%s: refused: more than %llu entries", what,
			    (unsigned long long)lim->max_entries);
			break;
		}
		if (path == NULL && r == ARCHIVE_WARN) {
			/*
			 * a name marked UTF-8 that is not: libarchive keeps no
			 * bytes of it, so the entry is named by its place
			 */
			rc = fetch_result_error(res, "FetchError",
			    "%s: refused: entry %llu%s%s%s has a name marked UTF-8 that is not "
			    "valid UTF-8", what, (unsigned long long)entries,
			    prev[0] ? " (the one after '" : "", prev, prev[0] ? "')" : "");
			break;
		}
		if ((why = bad_path(path)) != NULL) {
			rc = fetch_result_error(res, "FetchError", "%s: refused: entry '%s' %s",
			    what, str_show(path ? path : "", shown, sizeof(shown)), why);
			break;
		}
		snprintf(prev, sizeof(prev), "%s", path);
		if (archive_entry_symlink(e) != NULL || type == AE_IFLNK) {
			rc = fetch_result_error(res, "FetchError",
			    "%s: refused: entry '%s' is a symbolic link", what, path);
			break;
		}
		if (archive_entry_hardlink(e) != NULL) {
			rc = fetch_result_error(res, "FetchError",
			    "%s: refused: entry '%s' is a hard link", what, path);
			break;
		}
		if (type == AE_IFDIR) {
			if ((rc = want(arg, path, 1, res)) < 0)
				break;
			rc = 0;
			continue;
		}
		if (type != AE_IFREG) {
			rc = fetch_result_error(res, "FetchError",
			    "%s: refused: entry '%s' is not a regular file", what, path);
			break;
		}
		if ((rc = want(arg, path, 0, res)) < 0)
			break;
		if (rc == 0) {
			/* not read, but its declared size counts against the guards */
			if (archive_entry_size_is_set(e) &&
			    (rc = count(&w, path, (uint64_t)archive_entry_size(e))) < 0)
				break;
			rc = 0;
			continue;
		}
		buf_reset(&b);
		if ((rc = read_data(a, &w, path, &b)) < 0 ||
		    (rc = file(arg, path, b.data ? b.data : "", b.len, res)) < 0)
			break;
	}
	if (rc == 0 && r != ARCHIVE_EOF)
		rc = fetch_result_error(res, "FetchError", "%s: broken archive: %s", what,
		    archive_error_string(a) ? archive_error_string(a) : "read error");
	buf_free(&b);
	archive_read_free(a);
	return rc;
}

int
fetch_archive_read(const void *data, size_t len, enum fetch_archive_kind kind,
    const struct fetch_archive_limits *lim, const char *what, fetch_archive_want_fn want,
    fetch_archive_file_fn file, void *arg, struct fetch_result *res)
{
	char why[512];
	locale_t old;
	int rc;

	/* libarchive is mapped by the first archive, not at start (archive_lazy.h) */
	if (archive_lazy_load(why, sizeof(why)) < 0)
		return fetch_result_error(res, "FetchError", "%s: %s", what, why);
	pthread_once(&utf8_once, utf8_locale_make);
	if (utf8_locale == (locale_t)0)
		return fetch_result_error(res, "FetchError",
		    "%s: cannot read names as UTF-8: no C.UTF-8 locale (newlocale failed)", what);
	old = uselocale(utf8_locale);
	rc = walk_archive(data, len, kind, lim, what, want, file, arg, res);
	uselocale(old);
	return rc;
}
