/*
 * webhook_tls - the webhook's certificate and key, given to GnuTLS per
 * handshake (libmicrohttpd's MHD_OPTION_HTTPS_CERT_CALLBACK), so a rotated
 * pair reaches every new connection without a restart, while connections
 * that already shook hands keep the pair they got until they close.
 */
#ifndef DECOD_WEBHOOK_TLS_H
#define DECOD_WEBHOOK_TLS_H

#include <stddef.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

struct wh_tls;

/*
 * wh_tls_new - load the PEM pair (the key must match the certificate);
 * NULL with a reason in err.  Only one may exist per process (GnuTLS's
 * callback has no argument).  wh_tls_free(NULL) is a no-op.
 */
struct wh_tls *wh_tls_new(const char *cert_file, const char *key_file, char *err,
    size_t errlen);
void wh_tls_free(struct wh_tls *t);

/*
 * wh_tls_check - re-read the pair when either file changed (rename or
 * rewrite).  1: new pair in use; 0: nothing changed; -1: changed but not
 * usable yet (half written, key and certificate disagree), the old pair
 * stays and err says why; it is tried again once a file changes again.
 */
int wh_tls_check(struct wh_tls *t, char *err, size_t errlen);

/* wh_tls_retrieve - the gnutls_certificate_retrieve_function2 to hand MHD */
int wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
    unsigned int *pcert_length, gnutls_privkey_t *pkey);

/* wh_tls_closed - a connection's session ended: release the pair it used */
void wh_tls_closed(gnutls_session_t session);

/* wh_tls_counts - pairs loaded since start, and pairs still held by sessions */
void wh_tls_counts(const struct wh_tls *t, unsigned long *loads, size_t *held);

/* wh_tls_fingerprint - sha256 of the certificate in use, hex (65 bytes) */
void wh_tls_fingerprint(const struct wh_tls *t, char *out, size_t len);

#endif
