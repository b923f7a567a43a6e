/*
 * publish_s3.h - the s3 target's own records, shared by publish_s3.c (the
 * target: requests, drift checks, deletion, start) and publish_s3_obj.c
 * (one record per object, its names and its status fragment).  Only
 * daemons/publisher/ includes this.
 */
#ifndef DECOD_PUBLISH_S3_H
#define DECOD_PUBLISH_S3_H

#include <stddef.h>
#include <stdint.h>

#include "common/journal.h"
#include "common/json.h"
#include "daemons/publisher/publish_record.h"

struct stage;
struct s3_client;
struct objtab;

#define STAGE PUBLISH_STAGE
#define TARGET "s3"
#define MAX_SPOOL_MISSES 5
#define START_SPREAD_MS 10000	/* first checks after start spread over this */
#define GONE_RETRY_MS 5000

enum op { OP_PUBLISH, OP_REPAIR, OP_CHECK, OP_DELETE };

struct s3obj {
	char ns[254];
	char name[254];
	char key[1100];
	char content_hash[65];		/* what we published ("" not yet) */
	char put_etag[130];		/* ETag our last PUT got ("" unknown) */
	char md5_etag[40];		/* "\"<md5 of the bytes>\"" ("" not computed) */
	int64_t timestamp;
	int detach;
	int nreq;			/* requests in flight */
	int putting;			/* a PUT is among them */
	unsigned gen;			/* bumped by each publish: older checks are stale */
	int64_t next_check;		/* monotonic ms */
	long repairs;
	int status_dirty;
	int gone;			/* Decofile deleted: object to be let go */
	int complained;
};

struct s3t {
	struct stage *st;
	struct s3_client *c;		/* NULL: not configured (cfg_err says why) */
	char cfg_err[512];
	char bucket[256], prefix[512], public_host[512];
	int64_t check_ms;
	int concurrency;
	int gc;
	int64_t timer;
	struct objtab *objs;		/* struct s3obj by Decofile */
	int64_t next_due;		/* no check is due before (monotonic ms) */
	long repairs, puts, heads;
};

/* one request in flight */
struct ctx {
	struct s3t *t;
	struct s3obj *o;
	enum op op;
	unsigned gen;
	struct journal_item it;		/* OP_PUBLISH */
	char hash[65];			/* content hash being put */
	char md5_etag[40];
	char detail[300];		/* OP_REPAIR: what was wrong */
	size_t len;			/* bytes being put (decod_published_bytes_total) */
};

/* s3t_obj_find - the record of ns/name, or NULL */
struct s3obj *s3t_obj_find(struct s3t *t, const char *ns, const char *name);
/* s3t_obj_get - the record of ns/name, made empty if there is none */
struct s3obj *s3t_obj_get(struct s3t *t, const char *ns, const char *name);
/* s3t_obj_free - drop o from the table and free it */
void s3t_obj_free(struct s3t *t, struct s3obj *o);
/* s3t_check_at - o's next drift check; keeps t->next_due the earliest of all */
void s3t_check_at(struct s3t *t, struct s3obj *o, int64_t when);
/* s3t_object_id - "decofile/<ns>/<name>", the journal's object name */
void s3t_object_id(const struct s3obj *o, char *out, size_t len);
/* s3t_location - "s3://<bucket>/<key>" */
void s3t_location(const struct s3t *t, const char *key, char *out, size_t len);
/* s3t_url - "https://<public host>/<key>" */
void s3t_url(const struct s3t *t, const char *key, char *out, size_t len);
/* s3t_md5_etag - the ETag S3 gives a single-part upload of data ("" on error) */
void s3t_md5_etag(const void *data, size_t len, char out[40]);
/* s3t_set_policy - o's deletion policy, audited when it changes */
void s3t_set_policy(struct s3t *t, struct s3obj *o, int detach);
/* s3t_write_status - Ready=True S3Uploaded and o's fields; 0, or -1 (o stays dirty) */
int s3t_write_status(struct s3t *t, struct s3obj *o);
/* s3t_not_ready - Ready=False with reason and msg */
void s3t_not_ready(struct s3t *t, const char *ns, const char *name, const char *reason,
    const char *msg);
#endif
