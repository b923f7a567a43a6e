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
#include "daemons/publisher/publish_s3.h"

struct s3obj *
s3t_obj_find(struct s3t *t, const char *ns, const char *name)
{
	for (struct s3obj *o = t->objs; o != NULL; o = o->next)
		if (strcmp(o->ns, ns) == 0 && strcmp(o->name, name) == 0)
			return o;
	return NULL;
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
	o->next = t->objs;
	t->objs = o;
	t->nobjs++;
	return o;
}

void
s3t_obj_free(struct s3t *t, struct s3obj *o)
{
	for (struct s3obj **pp = &t->objs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			t->nobjs--;
			break;
		}
	}
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

int
s3t_doc_detach(yajl_val doc)
{
	const char *v = json_get_str(doc, "metadata", "annotations", DELETION_ANNOTATION, NULL);

	return v != NULL && strcmp(v, "detach") == 0;
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
	struct store *s = stage_store(t->st);
	char url[2000], loc[1500], msg[2100], when[40];
	struct buf b;
	struct jw w;
	int rv = 0;

	s3t_url(t, o->key, url, sizeof(url));
	s3t_location(t, o->key, loc, sizeof(loc));
	snprintf(msg, sizeof(msg), "Decofile delivered to %s", url);
	if (status_set_condition(s, stage_journal(t->st), "decofiles", o->ns, o->name, STAGE,
	    "Ready", "True", "S3Uploaded", msg) < 0)
		rv = -1;
	rfc3339_from(o->timestamp, when, sizeof(when));
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "contentHash");
	jw_str(&w, o->content_hash);
	jw_key(&w, "timestamp");
	jw_int(&w, o->timestamp);
	jw_key(&w, "lastUpdated");
	jw_str(&w, when);
	jw_key(&w, "location");
	jw_str(&w, loc);
	jw_key(&w, "s3URL");
	jw_str(&w, url);
	jw_key(&w, "format");
	jw_str(&w, "json");
	jw_end_obj(&w);
	if (status_set_fields(s, "decofiles", o->ns, o->name, STAGE, b.data) < 0)
		rv = -1;
	buf_free(&b);
	o->status_dirty = rv < 0;
	if (rv < 0)
		log_kv(LOG_WARN, "cannot write status; will retry", "ns", o->ns, "name",
		    o->name, "error", store_error(s), NULL);
	return rv;
}

void
s3t_not_ready(struct s3t *t, const char *ns, const char *name, const char *reason,
    const char *msg)
{
	status_set_condition(stage_store(t->st), stage_journal(t->st), "decofiles", ns, name,
	    STAGE, "Ready", "False", reason, msg);
}

/* published - the publisher's status fragment: hash, location, timestamp */
void
s3t_published(struct s3t *t, const char *ns, const char *name, char hash[65], char *loc,
    size_t loclen, int64_t *ts)
{
	yajl_val f = status_get_fragment(stage_store(t->st), "decofiles", ns, name, STAGE);
	const char *v;

	hash[0] = '\0';
	loc[0] = '\0';
	*ts = 0;
	if (f == NULL)
		return;
	if ((v = json_get_str(f, "contentHash", NULL)) != NULL && is_sha256_hex(v))
		snprintf(hash, 65, "%s", v);
	if ((v = json_get_str(f, "location", NULL)) != NULL)
		snprintf(loc, loclen, "%s", v);
	*ts = json_get_int(f, 0, "timestamp", NULL);
	yajl_tree_free(f);
}

