/*
 * webhook_tls - owns the loaded certificate/key pairs.  A pair is
 * reference-counted: the current one holds a reference, and so does every
 * TLS session that was handed it (GnuTLS keeps pointers to it for the
 * session's life), so a rotated-out pair is freed when its last
 * connection closes.  Files are noticed by (device, inode, size, mtime),
 * which catches both a rename into place and a rewrite.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "common/util.h"
#include "daemons/webhook/webhook_tls.h"

#define MAX_CHAIN	16
#define MAX_PEM		(1u << 20)

struct pair {
	gnutls_pcert_st pcert[MAX_CHAIN];
	unsigned int npcert;
	gnutls_privkey_t key;
	char fp[65];
	int refs;
};

struct sess {
	gnutls_session_t s;
	struct pair *p;
};

struct filesig {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct wh_tls {
	char *cert_file, *key_file;
	struct pair *cur;
	struct filesig sig[2];		/* of the files last tried */
	struct sess *sess;
	size_t nsess, cap;
	unsigned long loads;
};

static struct wh_tls *the_tls;

static void
pair_unref(struct pair *p)
{
	if (p == NULL || --p->refs > 0)
		return;
	for (unsigned int i = 0; i < p->npcert; i++)
		gnutls_pcert_deinit(&p->pcert[i]);
	if (p->key != NULL)
		gnutls_privkey_deinit(p->key);
	free(p);
}

static int
sig_of(const char *path, struct filesig *s)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (stat(path, &st) < 0)
		return -1;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime = st.st_mtim;
	return 0;
}

static int
sig_eq(const struct filesig *a, const struct filesig *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* same_key - the certificate's public key is the private key's */
static int
same_key(gnutls_pubkey_t cert_pub, gnutls_privkey_t key)
{
	gnutls_pubkey_t kp;
	unsigned char a[8192], b[8192];
	size_t alen = sizeof(a), blen = sizeof(b);
	int ok = 0;

	if (gnutls_pubkey_init(&kp) < 0)
		return 0;
	if (gnutls_pubkey_import_privkey(kp, key, 0, 0) == 0 &&
	    gnutls_pubkey_export(cert_pub, GNUTLS_X509_FMT_DER, a, &alen) == 0 &&
	    gnutls_pubkey_export(kp, GNUTLS_X509_FMT_DER, b, &blen) == 0)
		ok = alen == blen && memcmp(a, b, alen) == 0;
	gnutls_pubkey_deinit(kp);
	return ok;
}

/* load - read and check a pair; NULL with err */
static struct pair *
load(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
	struct pair *p = xcalloc(1, sizeof(*p));
	gnutls_datum_t d;
	unsigned char dig[32];
	size_t clen, klen;
	char *cert = NULL, *key = NULL;
	int rv;

	p->refs = 1;
	if ((cert = read_file(cert_file, &clen, MAX_PEM)) == NULL) {
		snprintf(err, errlen, "%s: %s", cert_file, strerror(errno));
		goto fail;
	}
	if ((key = read_file(key_file, &klen, MAX_PEM)) == NULL) {
		snprintf(err, errlen, "%s: %s", key_file, strerror(errno));
		goto fail;
	}
	d.data = (unsigned char *)cert;
	d.size = (unsigned int)clen;
	p->npcert = MAX_CHAIN;
	if ((rv = gnutls_pcert_list_import_x509_raw(p->pcert, &p->npcert, &d,
	    GNUTLS_X509_FMT_PEM, 0)) < 0 || p->npcert == 0) {
		p->npcert = 0;
		snprintf(err, errlen, "%s: no usable certificate (%s)", cert_file,
		    rv < 0 ? gnutls_strerror(rv) : "empty");
		goto fail;
	}
	if ((rv = gnutls_privkey_init(&p->key)) < 0) {
		snprintf(err, errlen, "privkey: %s", gnutls_strerror(rv));
		goto fail;
	}
	d.data = (unsigned char *)key;
	d.size = (unsigned int)klen;
	if ((rv = gnutls_privkey_import_x509_raw(p->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		snprintf(err, errlen, "%s: no usable private key (%s)", key_file,
		    gnutls_strerror(rv));
		goto fail;
	}
	if (!same_key(p->pcert[0].pubkey, p->key)) {
		snprintf(err, errlen, "%s does not match the certificate in %s", key_file,
		    cert_file);
		goto fail;
	}
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, p->pcert[0].cert.data, p->pcert[0].cert.size,
	    dig) == 0) {
		for (int i = 0; i < 32; i++)
			snprintf(p->fp + 2 * i, 3, "%02x", dig[i]);
	}
	explicit_bzero(key, klen);
	free(key);
	free(cert);
	return p;
fail:
	if (key != NULL) {
		explicit_bzero(key, klen);
		free(key);
	}
	free(cert);
	pair_unref(p);
	return NULL;
}

struct wh_tls *
wh_tls_new(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
	struct wh_tls *t;
	struct pair *p;

	if (the_tls != NULL) {
		snprintf(err, errlen, "TLS already set up");
		return NULL;
	}
	t = xcalloc(1, sizeof(*t));
	sig_of(cert_file, &t->sig[0]);
	sig_of(key_file, &t->sig[1]);
	if ((p = load(cert_file, key_file, err, errlen)) == NULL) {
		free(t);
		return NULL;
	}
	t->cert_file = xstrdup(cert_file);
	t->key_file = xstrdup(key_file);
	t->cur = p;
	t->loads = 1;
	the_tls = t;
	return t;
}

void
wh_tls_free(struct wh_tls *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->nsess; i++)
		pair_unref(t->sess[i].p);
	pair_unref(t->cur);
	free(t->sess);
	free(t->cert_file);
	free(t->key_file);
	if (the_tls == t)
		the_tls = NULL;
	free(t);
}

int
wh_tls_check(struct wh_tls *t, char *err, size_t errlen)
{
	struct filesig s[2];
	struct pair *p;

	sig_of(t->cert_file, &s[0]);
	sig_of(t->key_file, &s[1]);
	if (sig_eq(&s[0], &t->sig[0]) && sig_eq(&s[1], &t->sig[1]))
		return 0;
	t->sig[0] = s[0];
	t->sig[1] = s[1];
	if ((p = load(t->cert_file, t->key_file, err, errlen)) == NULL)
		return -1;
	/*
	 * A writer may still be busy: the pair read now is only sure once the
	 * files have not moved while we read them.
	 */
	sig_of(t->cert_file, &s[0]);
	sig_of(t->key_file, &s[1]);
	if (!sig_eq(&s[0], &t->sig[0]) || !sig_eq(&s[1], &t->sig[1])) {
		pair_unref(p);
		memset(&t->sig, 0, sizeof(t->sig));
		snprintf(err, errlen, "the files changed while being read");
		return -1;
	}
	if (strcmp(p->fp, t->cur->fp) == 0) {
		pair_unref(p);
		return 0;
	}
	pair_unref(t->cur);
	t->cur = p;
	t->loads++;
	return 1;
}

int
wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
    unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct wh_tls *t = the_tls;
	struct sess *e = NULL;

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (t == NULL || t->cur == NULL)
		return -1;
	for (size_t i = 0; i < t->nsess; i++)
		if (t->sess[i].s == session)
			e = &t->sess[i];
	if (e == NULL) {
		if (t->nsess == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->sess = xrealloc(t->sess, t->cap * sizeof(*t->sess));
		}
		e = &t->sess[t->nsess++];
		e->s = session;
		e->p = NULL;
	}
	if (e->p != t->cur) {
		pair_unref(e->p);
		e->p = t->cur;
		e->p->refs++;
	}
	*pcert = e->p->pcert;
	*pcert_length = e->p->npcert;
	*pkey = e->p->key;
	return 0;
}

void
wh_tls_closed(gnutls_session_t session)
{
	struct wh_tls *t = the_tls;

	if (t == NULL || session == NULL)
		return;
	for (size_t i = 0; i < t->nsess; i++) {
		if (t->sess[i].s == session) {
			pair_unref(t->sess[i].p);
			t->sess[i] = t->sess[--t->nsess];
			return;
		}
	}
}

void
wh_tls_counts(const struct wh_tls *t, unsigned long *loads, size_t *held)
{
	*loads = t->loads;
	*held = t->nsess;
}

void
wh_tls_fingerprint(const struct wh_tls *t, char *out, size_t len)
{
	snprintf(out, len, "%s", t->cur->fp);
}
