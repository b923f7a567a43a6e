/*
 * sigv4 - AWS Signature Version 4 for the S3 target, on openssl: the
 * canonical request (URI encoded once per segment, query sorted and
 * strictly encoded, headers lower-cased, trimmed and sorted), the string to
 * sign, the derived key and the Authorization header.  Pure functions of
 * their input: no clock, no I/O, so AWS's published vectors test them.
 */
#ifndef DECOD_SIGV4_H
#define DECOD_SIGV4_H

#include <stddef.h>

struct buf;

struct sigv4_header {
	const char *name;	/* any case; the same name twice joins with ',' */
	const char *value;	/* trimmed, inner runs of spaces collapsed */
};

struct sigv4_req {
	const char *method;		/* "GET", "PUT", ... */
	const char *path;		/* NOT encoded: "/bucket/ns/dep/decofile.json" */
	const char *query;		/* as on the wire (encoded), no '?'; NULL: none */
	const struct sigv4_header *headers;	/* every header to sign, host included */
	size_t nheaders;
	const char *payload_hash;	/* lowercase hex sha256 of the body, or UNSIGNED-PAYLOAD */
	const char *amz_date;		/* "YYYYMMDDTHHMMSSZ", also sent as x-amz-date */
	const char *region;
	const char *service;		/* "s3" */
	const char *access_key;
	const char *secret_key;		/* never copied into any output */
	int normalize_path;		/* 1 for every service but s3: drop . and .., // */
};

struct sigv4_out {
	char *canonical;		/* the canonical request (malloc'd) */
	char *string_to_sign;		/* (malloc'd) */
	char *authorization;		/* the Authorization header value (malloc'd) */
	char signature[65];
};

/*
 * sigv4_sign - sign r into out.  Returns 0, or -1 when an input is missing
 * or malformed (no date, a header name with a space or colon, more than 64
 * headers).  The caller frees out with sigv4_out_free.
 */
int sigv4_sign(const struct sigv4_req *r, struct sigv4_out *out);

/* sigv4_out_free - free what sigv4_sign allocated; safe on a zeroed out */
void sigv4_out_free(struct sigv4_out *out);

/*
 * sigv4_uri_encode - append s to b percent-encoded as SigV4 wants (every
 * byte except A-Z a-z 0-9 - . _ ~ as %XX upper-case; '/' kept when
 * keep_slash).  Used for the wire URL too, so the two never differ.
 */
void sigv4_uri_encode(struct buf *b, const char *s, size_t len, int keep_slash);

/* sigv4_amz_date - format unix seconds t as "YYYYMMDDTHHMMSSZ" (17 bytes) */
void sigv4_amz_date(long long t, char out[17]);

#endif
