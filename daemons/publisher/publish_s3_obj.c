/*
 * publish_s3_obj - the s3 target's record of each object it published:
 * found or made by Decofile, its journal and S3 names, the ETag a
 * single-part upload gets, its deletion policy, and the publisher's status
 * fragment it writes and reads back.  No request is made here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/util.h"
#include "daemons/publisher/objtab.h"
#include "daemons/publisher/publish_record.h"
#include "daemons/publisher/publish_s3.h"

struct s3obj *
s3t_obj_find(struct s3t *t, const char *ns, const char *name)
{
	return objtab_get(t->objs, ns, name);
}

struct s3obj *
s3t_obj_get(struct s3t *t, const char *ns, const char *name)
{
	struct s3obj *o = s3t_obj_find(t, ns, name);

	if (o != NULL)
		return o;
	o = xcalloc(1, sizeof(*o));
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	objtab_put(t->objs, ns, name, o);
	return o;
}

void
s3t_obj_free(struct s3t *t, struct s3obj *o)
{
	objtab_del(t->objs, o->ns, o->name);
	free(o);
}

/* check_at - o's next drift check; keeps t->next_due the earliest of all */
void
s3t_check_at(struct s3t *t, struct s3obj *o, int64_t when)
{
	o->next_check = when;
	if (when < t->next_due)
		t->next_due = when;
}

void
s3t_object_id(const struct s3obj *o, char *out, size_t len)
{
	journal_obj(out, len, "decofile", o->ns, o->name);
}

void
s3t_location(const struct s3t *t, const char *key, char *out, size_t len)
{
	snprintf(out, len, "s3://%s/%s", t->bucket, key);
}

void
s3t_url(const struct s3t *t, const char *key, char *out, size_t len)
{
	snprintf(out, len, "https://%s/%s", t->public_host, key);
}

/* md5_etag - the ETag S3 gives a single-part upload of data: "\"<md5 hex>\"" */
void
s3t_md5_etag(const void *data, size_t len, char out[40])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[33];

	if (EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL) != 1 || mdlen != 16) {
		out[0] = '\0';
		return;
	}
	hex_encode(md, 16, hex);
	snprintf(out, 40, "\"%s\"", hex);
}

void
s3t_set_policy(struct s3t *t, struct s3obj *o, int detach)
{
	char obj[600];

	if (o->detach == detach)
		return;
	o->detach = detach;
	s3t_object_id(o, obj, sizeof(obj));
	journal_audit(stage_journal(t->st), STAGE, obj, "deletion-policy",
	    detach ? "deletion=detach" : "deletion=delete");
}

/* ---- status ---- */

int
s3t_write_status(struct s3t *t, struct s3obj *o)
{
	char url[2000], loc[1500], msg[2100];
	struct status_cond ready = { "Ready", "True", "S3Uploaded", msg };
	struct publish_status ps = { .hash = o->content_hash, .timestamp = o->timestamp,
		.location = loc, .s3_url = url, .format = "json" };

	s3t_url(t, o->key, url, sizeof(url));
	s3t_location(t, o->key, loc, sizeof(loc));
	snprintf(msg, sizeof(msg), "Decofile delivered to %s", url);
	o->status_dirty = publish_status_write(t->st, o->ns, o->name, &ps, &ready, 1) < 0;
	return o->status_dirty ? -1 : 0;
}

void
s3t_not_ready(struct s3t *t, const char *ns, const char *name, const char *reason,
    const char *msg)
{
	status_set_condition(stage_store(t->st), stage_journal(t->st), "decofiles", ns, name,
	    STAGE, "Ready", "False", reason, msg);
}
