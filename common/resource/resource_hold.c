/*
 * resource_hold - a Decofile's hold: spec.suspend (as Flux's: no fetch,
 * no publish of anything new) and the deco.sites/rollback-to annotation
 * (publish that earlier version again, then hold it).  decoctl writes
 * them, kubectl can too; the fetcher acts on them and consumes the
 * annotation.  Both rewrite a document here so they agree on its shape.
 * Also the operator's other request, "fetch now" (decofile_request_sync),
 * which decoctl sync and the web stage's push receivers both make.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

int
decofile_request_sync(struct store *s, const char *ns, const char *name)
{
	char nonce[32], *key;
	int rc;

	/* a new value every time: the fetcher's watch sees a put and fetches */
	snprintf(nonce, sizeof(nonce), "%lld", (long long)wall_ms());
	key = key_sync(ns, name);
	rc = store_put(s, key, nonce, strlen(nonce));
	free(key);
	return rc;
}

int
decofile_suspended(yajl_val doc)
{
	return json_get_bool(doc, 0, "spec", "suspend", NULL);
}

const char *
resource_mirror_uid(yajl_val doc)
{
	return json_get_str(doc, "metadata", "annotations", RESOURCE_MIRROR_ANNOTATION, NULL);
}

const char *
resource_own_annotation(yajl_val doc)
{
	yajl_val a = json_get(doc, "metadata", "annotations", NULL);

	if (!YAJL_IS_OBJECT(a))
		return NULL;
	for (size_t i = 0; i < a->u.object.len; i++)
		if (strncmp(a->u.object.keys[i], RESOURCE_OWN_PREFIX,
		    sizeof(RESOURCE_OWN_PREFIX) - 1) == 0)
			return a->u.object.keys[i];
	return NULL;
}

const char *
decofile_rollback_to(yajl_val doc)
{
	yajl_val a = json_get(doc, "metadata", "annotations", NULL);

	if (!YAJL_IS_OBJECT(a))
		return NULL;
	for (size_t i = 0; i < a->u.object.len; i++)
		if (strcmp(a->u.object.keys[i], DECOFILE_ROLLBACK_ANNOTATION) == 0 &&
		    YAJL_IS_STRING(a->u.object.values[i]))
			return a->u.object.values[i]->u.string;
	return NULL;
}

int
decofile_template_apply(yajl_val doc)
{
	yajl_val a = json_get(doc, "metadata", "annotations", NULL);

	if (!YAJL_IS_OBJECT(a))
		return 0;
	for (size_t i = 0; i < a->u.object.len; i++)
		if (strcmp(a->u.object.keys[i], DECOFILE_APPLY_ANNOTATION) == 0)
			return YAJL_IS_STRING(a->u.object.values[i]) &&
			    strcmp(a->u.object.values[i]->u.string, "true") == 0;
	return 0;
}

/* copy_except - the members of object v except key skip, into an open object */
static void
copy_except(struct jw *w, yajl_val v, const char *skip)
{
	for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++) {
		if (strcmp(v->u.object.keys[i], skip) == 0)
			continue;
		jw_key(w, v->u.object.keys[i]);
		jw_value(w, v->u.object.values[i]);
	}
}

yajl_val
resource_hold_doc(yajl_val doc, int suspend, const char *rollback_to)
{
	struct buf b;
	struct jw w;
	yajl_val out;

	if (!YAJL_IS_OBJECT(doc) || !YAJL_IS_OBJECT(json_get(doc, "metadata", NULL)) ||
	    !YAJL_IS_OBJECT(json_get(doc, "spec", NULL)))
		return NULL;
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	for (size_t i = 0; i < doc->u.object.len; i++) {
		const char *k = doc->u.object.keys[i];
		yajl_val v = doc->u.object.values[i];

		jw_key(&w, k);
		if (strcmp(k, "metadata") == 0) {
			jw_obj(&w);
			copy_except(&w, v, "annotations");
			jw_key(&w, "annotations");
			jw_obj(&w);
			copy_except(&w, json_get(v, "annotations", NULL),
			    DECOFILE_ROLLBACK_ANNOTATION);
			if (rollback_to != NULL) {
				jw_key(&w, DECOFILE_ROLLBACK_ANNOTATION);
				jw_str(&w, rollback_to);
			}
			jw_end_obj(&w);
			jw_end_obj(&w);
		} else if (strcmp(k, "spec") == 0) {
			jw_obj(&w);
			copy_except(&w, v, "suspend");
			if (suspend) {
				jw_key(&w, "suspend");
				jw_bool(&w, 1);
			}
			jw_end_obj(&w);
		} else {
			jw_value(&w, v);
		}
	}
	jw_end_obj(&w);
	out = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	return out;
}

yajl_val
resource_annotation_doc(yajl_val doc, const char *key, const char *value)
{
	struct buf b;
	struct jw w;
	yajl_val out;

	if (!YAJL_IS_OBJECT(doc) || !YAJL_IS_OBJECT(json_get(doc, "metadata", NULL)))
		return NULL;
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	for (size_t i = 0; i < doc->u.object.len; i++) {
		const char *k = doc->u.object.keys[i];
		yajl_val v = doc->u.object.values[i];

		jw_key(&w, k);
		if (strcmp(k, "metadata") != 0) {
			jw_value(&w, v);
			continue;
		}
		jw_obj(&w);
		copy_except(&w, v, "annotations");
		jw_key(&w, "annotations");
		jw_obj(&w);
		copy_except(&w, json_get(v, "annotations", NULL), key);
		if (value != NULL) {
			jw_key(&w, key);
			jw_str(&w, value);
		}
		jw_end_obj(&w);
		jw_end_obj(&w);
	}
	jw_end_obj(&w);
	out = json_parse(b.data, b.len, NULL);
	buf_free(&b);
	return out;
}
