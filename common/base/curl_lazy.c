/*
 * curl_lazy - libcurl loaded on first use, not at start.  Every program
 * links the store (whose etcd backend speaks HTTP) and the Kubernetes
 * client, so every program would map libcurl and what it brings (OpenSSL's
 * libssl, Kerberos, LDAP, libssh2, librtmp with GnuTLS, nghttp2...): some
 * 4 MiB of pages in each idle stage that, on a local store, never makes
 * an HTTP request (doc/benchmarks.md, "Idle stages").  These definitions of
 * the libcurl calls decod makes stand in for the library at link time
 * (the build does not link -lcurl) and forward to it, dlopen()ed the first
 * time any of them is called.  A libcurl that cannot be loaded is fatal
 * then, naming it: the program needed it and cannot do without.  Loading
 * it also runs curl_global_init, under pthread_once, so the programs' own
 * calls to it (counted by libcurl) need not come before their threads.
 *
 * The varargs calls forward their one argument by its type, which the
 * option's number gives (CURLOPTTYPE_*), as libcurl reads it itself.
 */
#include "config.h"

#define CURL_DISABLE_TYPECHECK 1

#include <pthread.h>
#include <stdarg.h>

#include <curl/curl.h>

#include "common/lazy_lib.h"
#include "common/log.h"

#define LIBCURL "libcurl.so.4"

/* the calls, as libcurl declares them: name, return type, parameters */
#define CURL_CALLS(X) \
	X(curl_easy_cleanup, void, (CURL *)) \
	X(curl_easy_escape, char *, (CURL *, const char *, int)) \
	X(curl_easy_getinfo, CURLcode, (CURL *, CURLINFO, ...)) \
	X(curl_easy_init, CURL *, (void)) \
	X(curl_easy_perform, CURLcode, (CURL *)) \
	X(curl_easy_reset, void, (CURL *)) \
	X(curl_easy_setopt, CURLcode, (CURL *, CURLoption, ...)) \
	X(curl_easy_strerror, const char *, (CURLcode)) \
	X(curl_free, void, (void *)) \
	X(curl_global_cleanup, void, (void)) \
	X(curl_global_init, CURLcode, (long)) \
	X(curl_multi_add_handle, CURLMcode, (CURLM *, CURL *)) \
	X(curl_multi_assign, CURLMcode, (CURLM *, curl_socket_t, void *)) \
	X(curl_multi_cleanup, CURLMcode, (CURLM *)) \
	X(curl_multi_info_read, CURLMsg *, (CURLM *, int *)) \
	X(curl_multi_init, CURLM *, (void)) \
	X(curl_multi_perform, CURLMcode, (CURLM *, int *)) \
	X(curl_multi_poll, CURLMcode, (CURLM *, struct curl_waitfd *, unsigned int, int, int *)) \
	X(curl_multi_remove_handle, CURLMcode, (CURLM *, CURL *)) \
	X(curl_multi_setopt, CURLMcode, (CURLM *, CURLMoption, ...)) \
	X(curl_multi_socket_action, CURLMcode, (CURLM *, curl_socket_t, int, int *)) \
	X(curl_multi_strerror, const char *, (CURLMcode)) \
	X(curl_multi_wakeup, CURLMcode, (CURLM *)) \
	X(curl_slist_append, struct curl_slist *, (struct curl_slist *, const char *)) \
	X(curl_slist_free_all, void, (struct curl_slist *)) \
	X(curl_url, CURLU *, (void)) \
	X(curl_url_cleanup, void, (CURLU *)) \
	X(curl_url_get, CURLUcode, (CURLU *, CURLUPart, char **, unsigned int)) \
	X(curl_url_set, CURLUcode, (CURLU *, CURLUPart, const char *, unsigned int))

static struct {
#define FIELD(name, ret, params) ret (*name) params;
	CURL_CALLS(FIELD)
#undef FIELD
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
load(void)
{
#define SYM(name, ret, params) { #name, (void **)&lib.name },
	static const struct lazy_sym syms[] = { CURL_CALLS(SYM) };
#undef SYM
	char err[512];

	if (lazy_lib_open(LIBCURL, syms, sizeof(syms) / sizeof(syms[0]), err, sizeof(err)) < 0)
		fatal("%s", err);
	/* here, once, before any thread's first call (libcurl counts later calls) */
	if (lib.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		fatal("%s: curl_global_init failed", LIBCURL);
}

#define L() pthread_once(&once, load)

void curl_easy_cleanup(CURL *c) { L(); lib.curl_easy_cleanup(c); }
char *curl_easy_escape(CURL *c, const char *s, int n) { L(); return lib.curl_easy_escape(c, s, n); }
CURL *curl_easy_init(void) { L(); return lib.curl_easy_init(); }
CURLcode curl_easy_perform(CURL *c) { L(); return lib.curl_easy_perform(c); }
void curl_easy_reset(CURL *c) { L(); lib.curl_easy_reset(c); }
const char *curl_easy_strerror(CURLcode rc) { L(); return lib.curl_easy_strerror(rc); }
void curl_free(void *p) { L(); lib.curl_free(p); }
void curl_global_cleanup(void) { L(); lib.curl_global_cleanup(); }
CURLcode curl_global_init(long flags) { L(); return lib.curl_global_init(flags); }
CURLMcode curl_multi_add_handle(CURLM *m, CURL *c) { L(); return lib.curl_multi_add_handle(m, c); }
CURLMcode curl_multi_assign(CURLM *m, curl_socket_t s, void *p)
{ L(); return lib.curl_multi_assign(m, s, p); }
CURLMcode curl_multi_cleanup(CURLM *m) { L(); return lib.curl_multi_cleanup(m); }
CURLMsg *curl_multi_info_read(CURLM *m, int *n) { L(); return lib.curl_multi_info_read(m, n); }
CURLM *curl_multi_init(void) { L(); return lib.curl_multi_init(); }
CURLMcode curl_multi_perform(CURLM *m, int *n) { L(); return lib.curl_multi_perform(m, n); }
CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd extra[], unsigned int nextra, int ms, int *ret)
{ L(); return lib.curl_multi_poll(m, extra, nextra, ms, ret); }
CURLMcode curl_multi_remove_handle(CURLM *m, CURL *c) { L(); return lib.curl_multi_remove_handle(m, c); }
CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *n)
{ L(); return lib.curl_multi_socket_action(m, s, ev, n); }
const char *curl_multi_strerror(CURLMcode rc) { L(); return lib.curl_multi_strerror(rc); }
CURLMcode curl_multi_wakeup(CURLM *m) { L(); return lib.curl_multi_wakeup(m); }
struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{ L(); return lib.curl_slist_append(l, s); }
void curl_slist_free_all(struct curl_slist *l) { L(); lib.curl_slist_free_all(l); }
CURLU *curl_url(void) { L(); return lib.curl_url(); }
void curl_url_cleanup(CURLU *u) { L(); lib.curl_url_cleanup(u); }
CURLUcode curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags)
{ L(); return lib.curl_url_get(u, what, part, flags); }
CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{ L(); return lib.curl_url_set(u, what, part, flags); }

CURLcode
curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
	va_list ap;
	CURLcode rc;

	L();
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = lib.curl_easy_setopt(c, opt, va_arg(ap, long));
	else if (opt >= CURLOPTTYPE_OFF_T && opt < CURLOPTTYPE_BLOB)
		rc = lib.curl_easy_setopt(c, opt, va_arg(ap, curl_off_t));
	else	/* object, function and blob pointers */
		rc = lib.curl_easy_setopt(c, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLMcode
curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
	va_list ap;
	CURLMcode rc;

	L();
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = lib.curl_multi_setopt(m, opt, va_arg(ap, long));
	else if (opt >= CURLOPTTYPE_OFF_T && opt < CURLOPTTYPE_BLOB)
		rc = lib.curl_multi_setopt(m, opt, va_arg(ap, curl_off_t));
	else
		rc = lib.curl_multi_setopt(m, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* every CURLINFO takes a pointer to where the answer goes */
CURLcode
curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
	va_list ap;
	CURLcode rc;

	L();
	va_start(ap, info);
	rc = lib.curl_easy_getinfo(c, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}
