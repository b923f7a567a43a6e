/*
 * archive_lazy - the libarchive calls fetch_archive.c makes, defined here
 * and forwarded to libarchive.so.13 once archive_lazy_load has opened it
 * (see archive_lazy.h).  Unlike libcurl (curl_lazy.c), a libarchive that
 * cannot be loaded stops nothing: the fetch that wanted it fails with the
 * reason, the other sources go on.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/lazy_lib.h"
#include "common/log.h"
#include "daemons/fetcher/archive_lazy.h"

/* the calls, as libarchive declares them: name, return type, parameters */
#define ARCHIVE_CALLS(X) \
	X(archive_entry_filetype, __LA_MODE_T, (struct archive_entry *)) \
	X(archive_entry_hardlink, const char *, (struct archive_entry *)) \
	X(archive_entry_pathname, const char *, (struct archive_entry *)) \
	X(archive_entry_size, la_int64_t, (struct archive_entry *)) \
	X(archive_entry_size_is_set, int, (struct archive_entry *)) \
	X(archive_entry_symlink, const char *, (struct archive_entry *)) \
	X(archive_error_string, const char *, (struct archive *)) \
	X(archive_filter_bytes, la_int64_t, (struct archive *, int)) \
	X(archive_read_data, la_ssize_t, (struct archive *, void *, size_t)) \
	X(archive_read_free, int, (struct archive *)) \
	X(archive_read_new, struct archive *, (void)) \
	X(archive_read_next_header, int, (struct archive *, struct archive_entry **)) \
	X(archive_read_open_memory, int, (struct archive *, const void *, size_t)) \
	X(archive_read_support_filter_gzip, int, (struct archive *)) \
	X(archive_read_support_format_tar, int, (struct archive *)) \
	X(archive_read_support_format_zip, int, (struct archive *))

static struct {
#define FIELD(name, ret, params) ret (*name) params;
	ARCHIVE_CALLS(FIELD)
#undef FIELD
} lib;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *soname = ARCHIVE_LAZY_LIB;
static int loaded;		/* under mu; once 1, lib is read without it */

int
archive_lazy_load(char *err, size_t errlen)
{
#define SYM(name, ret, params) { #name, (void **)&lib.name },
	static const struct lazy_sym syms[] = { ARCHIVE_CALLS(SYM) };
#undef SYM
	int rc = 0;

	pthread_mutex_lock(&mu);
	if (!loaded) {
		if (lazy_lib_open(soname, syms, sizeof(syms) / sizeof(syms[0]), err,
		    errlen) == 0)
			loaded = 1;
		else
			rc = -1;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

void
archive_lazy_library(const char *name)
{
	pthread_mutex_lock(&mu);
	if (!loaded)
		soname = name;
	pthread_mutex_unlock(&mu);
}

/*
 * need - load libarchive for a call made before archive_lazy_load (fatal
 * if it cannot be).  fetch_archive_read loads first, so in the fetcher
 * this does not happen; in a program that also links -larchive (the
 * archive test writes its archives), these definitions take libarchive's
 * own internal calls too, and forward them to it.
 */
static void
need(void)
{
	char err[512];

	if (archive_lazy_load(err, sizeof(err)) < 0)
		fatal("%s", err);
}

#define CALL(name) (lib.name != NULL ? lib.name : (need(), lib.name))

__LA_MODE_T archive_entry_filetype(struct archive_entry *e) { return CALL(archive_entry_filetype)(e); }
const char *archive_entry_hardlink(struct archive_entry *e) { return CALL(archive_entry_hardlink)(e); }
const char *archive_entry_pathname(struct archive_entry *e) { return CALL(archive_entry_pathname)(e); }
la_int64_t archive_entry_size(struct archive_entry *e) { return CALL(archive_entry_size)(e); }
int archive_entry_size_is_set(struct archive_entry *e) { return CALL(archive_entry_size_is_set)(e); }
const char *archive_entry_symlink(struct archive_entry *e) { return CALL(archive_entry_symlink)(e); }
const char *archive_error_string(struct archive *a) { return CALL(archive_error_string)(a); }
la_int64_t archive_filter_bytes(struct archive *a, int n) { return CALL(archive_filter_bytes)(a, n); }
la_ssize_t archive_read_data(struct archive *a, void *p, size_t n) { return CALL(archive_read_data)(a, p, n); }
int archive_read_free(struct archive *a) { return CALL(archive_read_free)(a); }
struct archive *archive_read_new(void) { return CALL(archive_read_new)(); }
int archive_read_next_header(struct archive *a, struct archive_entry **e)
{ return CALL(archive_read_next_header)(a, e); }
int archive_read_open_memory(struct archive *a, const void *p, size_t n)
{ return CALL(archive_read_open_memory)(a, p, n); }
int archive_read_support_filter_gzip(struct archive *a) { return CALL(archive_read_support_filter_gzip)(a); }
int archive_read_support_format_tar(struct archive *a) { return CALL(archive_read_support_format_tar)(a); }
int archive_read_support_format_zip(struct archive *a) { return CALL(archive_read_support_format_zip)(a); }
