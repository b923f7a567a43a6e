/*
 * s3 - a small S3 client for the publisher: PutObject, HeadObject and
 * DeleteObject, SigV4-signed (sigv4.h), on one curl multi handle that the
 * caller's loop drives, so a slow bucket never blocks the stage.  Many
 * requests fly at once over kept-alive connections, each with a deadline.
 *
 * Loop integration (as notify_engine): poll s3_client_fd() for reading, wake
 * after s3_client_timeout() at the latest, call s3_client_dispatch(); it
 * never blocks, and callbacks run inside it on the caller's thread.
 *
 * Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
 * from the environment, else the shared credentials file (re-read when it
 * changes, so rotated keys are picked up).  They are never logged and never
 * put in any result or error text.
 */
#ifndef DECOD_S3_H
#define DECOD_S3_H

#include <stddef.h>
#include <stdint.h>

struct s3_client;

struct s3_config {
	const char *bucket;		/* required */
	const char *region;		/* "" means us-east-1 */
	const char *endpoint;		/* AWS_ENDPOINT_URL: path-style; "": virtual-host on AWS */
	const char *credentials_file;	/* "": $HOME/.aws/credentials */
	const char *profile;		/* "": default */
	int64_t timeout_ms;		/* one request, all in (30 s) */
	int64_t connect_timeout_ms;	/* TCP+TLS connect (10 s) */
	int max_connections;		/* kept-alive connections to the host (16) */
};

enum s3_op { S3_PUT, S3_HEAD, S3_DELETE };

struct s3_result {
	enum s3_op op;
	int ok;			/* 2xx */
	long status;		/* HTTP status, 0 when no answer */
	char code[64];		/* S3 error code (<Code>), or ours: "NotFound", "RequestTimeout" ... */
	char message[256];	/* S3's <Message> or curl's error text */
	char etag[130];		/* ETag of the answer, quotes kept ("" none) */
	char content_hash[65];	/* x-amz-meta-decod-content-hash on HEAD ("" none) */
	int64_t ms;		/* how long it took */
};

/*
 * s3_done_fn - the request ended; r lives only during the call.  r is NULL
 * when s3_client_free drops the request unfinished (free arg, nothing else).
 */
typedef void (*s3_done_fn)(void *arg, const struct s3_result *r);

/*
 * s3_client_new - a client for cf (strings copied).  NULL with a reason in
 * err when the bucket is empty or the endpoint is not an http(s) URL.
 * Credentials are looked up per request (see s3_credentials_ok).
 */
struct s3_client *s3_client_new(const struct s3_config *cf, char *err, size_t errlen);
/* s3_client_free - drops what is in flight (callbacks get r == NULL); NULL: no-op */
void s3_client_free(struct s3_client *c);

int s3_client_fd(const struct s3_client *c);
/* s3_client_timeout - ms until s3_client_dispatch is due; -1: nothing pending */
int64_t s3_client_timeout(const struct s3_client *c);
/* s3_client_dispatch - drive curl; runs the callbacks of finished requests */
void s3_client_dispatch(struct s3_client *c);
/* s3_client_in_flight - requests started and not yet ended */
size_t s3_client_in_flight(const struct s3_client *c);

/*
 * s3_credentials_ok - 0 when credentials are there, else -1 with a reason
 * in err (that names where they were looked for, never their values).
 */
int s3_credentials_ok(struct s3_client *c, char *err, size_t errlen);

/*
 * s3_put - PutObject key with data (copied), Content-Type application/json,
 * Cache-Control no-cache, and content_hash (may be NULL) as the object's
 * x-amz-meta-decod-content-hash.  s3_head / s3_delete likewise.  Each
 * returns 0 when started (fn will be called exactly once, from
 * s3_client_dispatch), or -1 with err (no credentials, key too long).
 */
int s3_put(struct s3_client *c, const char *key, const void *data, size_t len,
    const char *content_hash, s3_done_fn fn, void *arg, char *err, size_t errlen);
int s3_head(struct s3_client *c, const char *key, s3_done_fn fn, void *arg, char *err,
    size_t errlen);
int s3_delete(struct s3_client *c, const char *key, s3_done_fn fn, void *arg, char *err,
    size_t errlen);

/*
 * s3_object_url - the URL requests for key go to: <endpoint>/<bucket>/<key>
 * (path-style) with an endpoint, https://<bucket>.s3.<region>.amazonaws.com/<key>
 * without.  Returns 0, or -1 when it does not fit.
 */
int s3_object_url(const struct s3_client *c, const char *key, char *out, size_t len);

/*
 * s3_error_code - copy <Code> and <Message> out of an S3 error document
 * (code "" when there is none).
 */
void s3_error_code(const char *xml, size_t len, char *code, size_t codelen, char *msg,
    size_t msglen);

#endif
