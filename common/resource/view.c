/*
 * view - Decofiles as decoctl status/describe and the web stage show them
 * (see view.h).  Reads the store and the journal; writes nothing.  What a
 * reader sees is the merged status of every stage's fragment, and never a
 * credential that an old record kept in a URL.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "common/view.h"

static void
merged_text(struct store *s, const char *plural, const char *ns, const char *name,
    struct buf *b)
{
	buf_adds(b, "");
	if (ns == NULL || name == NULL || resource_status_merged(s, plural, ns, name, b) < 0 ||
	    b->len == 0) {
		buf_reset(b);
		buf_adds(b, "{}");
	}
}

yajl_val
view_merged_status(struct store *s, const char *plural, const char *ns, const char *name)
{
	struct buf b;
	yajl_val v;

	buf_init(&b);
	merged_text(s, plural, ns, name, &b);
	v = json_parse(b.data, b.len, NULL);
	if (v == NULL)
		v = json_parse("{}", 2, NULL);
	buf_free(&b);
	return v;
}

yajl_val
view_with_status(struct store *s, const char *plural, yajl_val doc)
{
	struct buf b, st;
	struct jw w;
	yajl_val v;

	buf_init(&st);
	merged_text(s, plural, json_get_str(doc, "metadata", "namespace", NULL),
	    json_get_str(doc, "metadata", "name", NULL), &st);
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	for (size_t i = 0; YAJL_IS_OBJECT(doc) && i < doc->u.object.len; i++) {
		if (strcmp(doc->u.object.keys[i], "status") == 0)
			continue;
		jw_key(&w, doc->u.object.keys[i]);
		jw_value(&w, doc->u.object.values[i]);
	}
	jw_key(&w, "status");
	jw_raw(&w, st.data, st.len);
	jw_end_obj(&w);
	v = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	buf_free(&st);
	if (v != NULL)
		view_redact(v);
	return v;
}

static void
redact_urls(yajl_val v, int depth)
{
	if (v == NULL || depth > json_get_max_depth())
		return;
	if (YAJL_IS_ARRAY(v)) {
		for (size_t i = 0; i < v->u.array.len; i++)
			redact_urls(v->u.array.values[i], depth + 1);
		return;
	}
	if (!YAJL_IS_OBJECT(v))
		return;
	for (size_t i = 0; i < v->u.object.len; i++) {
		yajl_val x = v->u.object.values[i];

		if (strcmp(v->u.object.keys[i], "url") == 0 && YAJL_IS_STRING(x) &&
		    url_has_credentials(x->u.string)) {
			char *str = x->u.string, *scheme = strstr(str, "://"), *host, *end, *at;

			host = scheme + 3;
			end = host + strcspn(host, "/?#");
			for (at = end; at > host && at[-1] != '@'; at--)
				;
			x->u.string = xasprintf("%.*s***%s", (int)(host - str), str, at - 1);
			free(str);
		} else {
			redact_urls(x, depth + 1);
		}
	}
}

void
view_redact(yajl_val v)
{
	redact_urls(v, 0);
}

yajl_val
view_condition(yajl_val status, const char *type)
{
	yajl_val conds = json_get(status, "conditions", NULL);

	if (!YAJL_IS_ARRAY(conds))
		return NULL;
	for (size_t i = 0; i < conds->u.array.len; i++) {
		const char *t = json_get_str(conds->u.array.values[i], "type", NULL);

		if (t != NULL && strcmp(t, type) == 0)
			return conds->u.array.values[i];
	}
	return NULL;
}

const char *
view_condition_status(yajl_val status, const char *type)
{
	const char *s = json_get_str(view_condition(status, type), "status", NULL);

	return s ? s : "-";
}

void
view_status_message(yajl_val st, char *out, size_t len)
{
	static const char *const types[] = { "Syncing", "Ready", "PodsNotified" };

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		yajl_val cv = view_condition(st, types[i]);
		const char *status = json_get_str(cv, "status", NULL);
		const char *reason = json_get_str(cv, "reason", NULL);
		const char *msg = json_get_str(cv, "message", NULL);

		if (status == NULL || strcmp(status, "False") != 0)
			continue;
		snprintf(out, len, "%s%s%s", reason ? reason : "", reason && msg ? ": " : "",
		    msg ? msg : "");
		for (char *p = out; *p; p++)	/* one table line */
			if (*p == '\n' || *p == '\r' || *p == '\t')
				*p = ' ';
		return;
	}
}

char *
view_lock_owner(struct store *s, const char *ns, const char *name)
{
	char *key = key_lock(ns, name), *v = NULL;
	size_t len;

	if (store_get(s, key, &v, &len) != 0 || len == 0) {
		free(v);
		v = NULL;
	}
	free(key);
	return v;
}

/* the replicas on the current hash, counted from their newest acks */
static void
count_ack(void *arg, const struct journal_ack_row *a)
{
	view_row_ack(arg, a->content_hash, a->confirmed);
}

void
view_row_ack(struct view_row *r, const char *content_hash, int confirmed)
{
	r->have_replicas = 1;
	r->replicas_total++;
	if (r->hash != NULL && strcmp(content_hash, r->hash) == 0 && confirmed)
		r->replicas_confirmed++;
}

static void view_row_fill(struct view_row *r, const struct view_doc *d);

void
view_row(struct store *s, struct journal *j, yajl_val doc, const char *default_target,
    struct view_row *r)
{
	struct view_doc d;

	memset(r, 0, sizeof(*r));
	view_doc_of(doc, default_target, &d);
	r->st = view_merged_status(s, "decofiles", d.ns, d.name);
	view_row_fill(r, &d);
	r->owner = r->ns && r->name ? view_lock_owner(s, r->ns, r->name) : NULL;
	if (j != NULL && r->ns != NULL && r->name != NULL) {
		if (journal_acks_each(j, r->ns, r->name, count_ack, r) >= 0) {
			r->have_replicas = 1;
		} else {
			r->have_replicas = 0;
			r->replicas_confirmed = r->replicas_total = 0;
		}
	}
}

void
view_doc_of(yajl_val doc, const char *default_target, struct view_doc *d)
{
	d->ns = json_get_str(doc, "metadata", "namespace", NULL);
	d->name = json_get_str(doc, "metadata", "name", NULL);
	d->created_at = json_get_str(doc, "metadata", "created_at", NULL);
	d->source = decofile_source(doc);
	d->target = decofile_target(doc, default_target);
	d->suspended = decofile_suspended(doc);
	d->generation = json_get_int(doc, 0, "metadata", "generation", NULL);
}

/* view_row_fill - r's fields from d and r->st (read already) */
static void
view_row_fill(struct view_row *r, const struct view_doc *d)
{
	r->ns = d->ns;
	r->name = d->name;
	r->created_at = d->created_at;
	r->source = d->source;
	r->target = d->target;
	r->suspended = d->suspended;
	r->generation = d->generation;
	r->commit = json_get_str(r->st, "githubCommit", NULL);
	r->hash = json_get_str(r->st, "contentHash", NULL);
	r->location = json_get_str(r->st, "location", NULL);
	r->timestamp = json_get_int(r->st, 0, "timestamp", NULL);
	r->observed_generation = json_get_int(r->st, 0, "observedGeneration", NULL);
	r->ready = view_condition_status(r->st, "Ready");
	r->syncing = view_condition_status(r->st, "Syncing");
	r->pods_notified = view_condition_status(r->st, "PodsNotified");
	view_status_message(r->st, r->message, sizeof(r->message));
}

void
view_row_assemble(struct view_row *r, const struct view_doc *d, const struct store_kv *frags,
    size_t nfrags, const char *owner)
{
	struct buf t;

	memset(r, 0, sizeof(*r));
	buf_init(&t);
	resource_status_merge_kvs(frags, nfrags, &t);
	r->st = json_parse(t.data, t.len, NULL);
	if (r->st == NULL)
		r->st = json_parse("{}", 2, NULL);
	buf_free(&t);
	view_row_fill(r, d);
	r->owner = owner != NULL && *owner != '\0' ? xstrdup(owner) : NULL;
}

void
view_row_free(struct view_row *r)
{
	free(r->owner);
	yajl_tree_free(r->st);
	memset(r, 0, sizeof(*r));
}

void
view_row_json(const struct view_row *r, struct jw *w)
{
	jw_obj(w);
	jw_key(w, "namespace");
	jw_str(w, r->ns);
	jw_key(w, "name");
	jw_str(w, r->name);
	jw_key(w, "source");
	jw_str(w, r->source);
	jw_key(w, "commit");
	jw_str(w, r->commit);
	jw_key(w, "contentHash");
	jw_str(w, r->hash);
	jw_key(w, "target");
	jw_str(w, r->target);
	jw_key(w, "suspended");
	jw_bool(w, r->suspended);
	jw_key(w, "location");
	jw_str(w, r->location);
	jw_key(w, "timestamp");
	jw_int(w, r->timestamp);
	jw_key(w, "generation");
	jw_int(w, r->generation);
	jw_key(w, "observedGeneration");
	jw_int(w, r->observed_generation);
	jw_key(w, "ready");
	jw_str(w, r->ready);
	jw_key(w, "podsNotified");
	jw_str(w, r->pods_notified);
	jw_key(w, "syncing");
	jw_str(w, r->syncing);
	jw_key(w, "message");
	jw_str(w, r->message);
	jw_key(w, "owner");
	jw_str(w, r->owner);
	if (r->have_replicas) {
		jw_key(w, "replicasConfirmed");
		jw_int(w, r->replicas_confirmed);
		jw_key(w, "replicasTotal");
		jw_int(w, r->replicas_total);
	}
	jw_end_obj(w);
}

/* describe's replicas: the newest ack of each, and whether it is on the current hash */
static void
replica_json(void *arg, const struct journal_ack_row *r)
{
	struct jw *w = ((void **)arg)[0];
	const char *hash = ((void **)arg)[1];

	jw_obj(w);
	jw_key(w, "replica");
	jw_str(w, r->replica);
	jw_key(w, "contentHash");
	jw_str(w, r->content_hash);
	jw_key(w, "result");
	jw_str(w, r->result);
	jw_key(w, "at");
	jw_str(w, r->at);
	jw_key(w, "current");
	jw_bool(w, hash != NULL && strcmp(r->content_hash, hash) == 0 && r->confirmed);
	jw_end_obj(w);
}

static void
inventory_json(void *arg, const struct journal_inventory_row *r)
{
	struct jw *w = arg;

	jw_obj(w);
	jw_key(w, "target");
	jw_str(w, r->target);
	jw_key(w, "location");
	jw_str(w, r->location);
	jw_key(w, "contentHash");
	jw_str(w, r->content_hash);
	jw_key(w, "updatedAt");
	jw_str(w, r->updated_at);
	jw_end_obj(w);
}

static void
history_json(void *arg, const char *at, const char *event, const char *detail)
{
	struct jw *w = arg;

	jw_obj(w);
	jw_key(w, "at");
	jw_str(w, at);
	jw_key(w, "event");
	jw_str(w, event);
	jw_key(w, "detail");
	jw_str(w, detail);
	jw_end_obj(w);
}

int
view_describe_json(struct store *s, struct journal *j, yajl_val doc, int history_limit,
    struct jw *w)
{
	const char *ns = json_get_str(doc, "metadata", "namespace", NULL);
	const char *name = json_get_str(doc, "metadata", "name", NULL);
	yajl_val full = view_with_status(s, "decofiles", doc);
	void *rarg[2];

	if (full == NULL)
		return -1;
	rarg[0] = w;
	rarg[1] = (void *)json_get_str(full, "status", "contentHash", NULL);
	jw_obj(w);
	jw_key(w, "decofile");
	jw_value(w, full);
	jw_key(w, "replicas");
	jw_arr(w);
	if (j != NULL)
		(void)journal_acks_each(j, ns, name, replica_json, rarg);
	jw_end_arr(w);
	jw_key(w, "inventory");
	jw_arr(w);
	if (j != NULL)
		(void)journal_inventory_each(j, NULL, ns, name, inventory_json, w);
	jw_end_arr(w);
	jw_key(w, "events");
	jw_arr(w);
	if (j != NULL)
		(void)journal_history_each(j, ns, name, history_limit, history_json, w);
	jw_end_arr(w);
	jw_end_obj(w);
	yajl_tree_free(full);
	return 0;
}
