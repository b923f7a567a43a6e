/*
 * resource_status - a resource's status in the store (see resource.h):
 * each stage writes its own fragment (its fields and its conditions, a
 * condition's lastTransitionTime moving only when its status or message
 * does, the moves journaled), readers merge every stage's fragments into
 * one status, and the resource's removal takes them all.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/condition.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/resource_impl.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"

yajl_val
status_get_fragment(struct store *s, const char *plural, const char *ns,
    const char *name, const char *stage)
{
	char *key = key_status(plural, ns, name, stage), err[256];
	yajl_val doc = NULL;

	if (resource_get_tree(s, key, &doc, err, sizeof(err)) < 0)
		log_kv(LOG_WARN, "status fragment unreadable; rewriting it", "key", key,
		    "error", err, NULL);
	free(key);
	if (doc != NULL && !YAJL_IS_OBJECT(doc)) {
		yajl_tree_free(doc);
		doc = NULL;
	}
	return doc;
}

/* frag_write - fields (except conditions) from `fields` over `old` (a null
 * field removes it), with conditions from `conds` (a written JSON array;
 * NULL: old's) */
static void
frag_write(struct buf *b, yajl_val old, yajl_val fields, const char *conds)
{
	struct jw w;

	jw_init(&w, b);
	jw_obj(&w);
	for (size_t i = 0; old != NULL && i < old->u.object.len; i++) {
		const char *k = old->u.object.keys[i];

		if (strcmp(k, "conditions") == 0 || json_get(fields, k, NULL) != NULL)
			continue;
		jw_key(&w, k);
		jw_value(&w, old->u.object.values[i]);
	}
	for (size_t i = 0; fields != NULL && i < fields->u.object.len; i++) {
		/* null removes the field, as in a merge patch */
		if (strcmp(fields->u.object.keys[i], "conditions") == 0 ||
		    YAJL_IS_NULL(fields->u.object.values[i]))
			continue;
		jw_key(&w, fields->u.object.keys[i]);
		jw_value(&w, fields->u.object.values[i]);
	}
	jw_key(&w, "conditions");
	if (conds != NULL)
		jw_raw(&w, conds, strlen(conds));
	else if (json_get(old, "conditions", NULL) != NULL)
		jw_value(&w, json_get(old, "conditions", NULL));
	else
		jw_raw(&w, "[]", 2);
	jw_end_obj(&w);
}

static void
write_condition(struct jw *w, const char *type, const char *status, const char *reason,
    const char *message, const char *when)
{
	jw_obj(w);
	jw_key(w, "type");
	jw_str(w, type);
	jw_key(w, "status");
	jw_str(w, status);
	jw_key(w, "reason");
	jw_str(w, reason);
	jw_key(w, "message");
	jw_str(w, message);
	jw_key(w, "lastTransitionTime");
	jw_str(w, when);
	jw_end_obj(w);
}

/*
 * conds_with - frag's conditions with type set (into b); *moved: status or
 * message changed (or it is new)
 */
static void
conds_with(struct buf *b, yajl_val frag, const char *type, const char *status,
    const char *reason, const char *message, int *moved)
{
	yajl_val conds = json_get(frag, "conditions", NULL);
	int found = 0;
	char now[40];
	struct jw w;

	*moved = 0;
	rfc3339_now(now, sizeof(now));
	jw_init(&w, b);
	jw_arr(&w);
	for (size_t i = 0; conds != NULL && YAJL_IS_ARRAY(conds) && i < conds->u.array.len; i++) {
		yajl_val c = conds->u.array.values[i];
		const char *t = json_get_str(c, "type", NULL);
		const char *os, *om, *orr, *when;

		if (t == NULL)
			continue;
		if (strcmp(t, type) != 0) {
			jw_value(&w, c);
			continue;
		}
		found = 1;
		os = json_get_str(c, "status", NULL);
		om = json_get_str(c, "message", NULL);
		orr = json_get_str(c, "reason", NULL);
		when = json_get_str(c, "lastTransitionTime", NULL);
		if (os && om && strcmp(os, status) == 0 && strcmp(om, message) == 0) {
			if (orr && strcmp(orr, reason) == 0)
				jw_value(&w, c);	/* nothing at all changed */
			else
				write_condition(&w, type, status, reason, message,
				    when ? when : now);
			continue;
		}
		*moved = 1;
		write_condition(&w, type, status, reason, message, now);
	}
	if (!found) {
		*moved = 1;
		write_condition(&w, type, status, reason, message, now);
	}
	jw_end_arr(&w);
}

char *
status_fragment_build(const char *old, size_t oldlen, const char *fields_json,
    const char *type, const char *status, const char *reason, const char *message,
    int *changed, int *moved)
{
	yajl_val frag = NULL, fields = NULL;
	struct buf b, conds, canon;
	int mv = 0;

	if (fields_json != NULL && ((fields = json_parse(fields_json, strlen(fields_json),
	    NULL)) == NULL || !YAJL_IS_OBJECT(fields))) {
		log_kv(LOG_ERROR, "status fields: not a JSON object (a bug)", NULL);
		yajl_tree_free(fields);
		return NULL;
	}
	if (type != NULL && (status == NULL || reason == NULL || message == NULL)) {
		log_kv(LOG_ERROR, "status condition without status, reason or message (a bug)",
		    NULL);
		yajl_tree_free(fields);
		return NULL;
	}
	/* written all the same: the status matters more than the runbook's gap */
	if (type != NULL && !condition_known(type, reason))
		log_kv(LOG_ERROR, "condition reason missing from common/condition.h and "
		    "doc/runbook.md (a bug)", "type", type, "reason", reason, NULL);
	if (old != NULL && oldlen > 0 && (frag = json_parse(old, oldlen, NULL)) != NULL &&
	    !YAJL_IS_OBJECT(frag)) {
		yajl_tree_free(frag);
		frag = NULL;
	}
	buf_init(&b);
	buf_init(&conds);
	if (type != NULL)
		conds_with(&conds, frag, type, status, reason, message, &mv);
	frag_write(&b, frag, fields, type != NULL ? conds.data : NULL);
	if (changed != NULL) {
		buf_init(&canon);
		frag_write(&canon, frag, NULL, NULL);
		*changed = frag == NULL || strcmp(b.data, canon.data) != 0;
		buf_free(&canon);
	}
	if (moved != NULL)
		*moved = mv;
	buf_free(&conds);
	yajl_tree_free(frag);
	yajl_tree_free(fields);
	return buf_steal(&b, NULL);
}

/* frag_text - stage's fragment as stored (NULL: none, or unreadable: logged) */
static char *
frag_text(struct store *s, const char *key, size_t *len)
{
	char *v = NULL;
	int rc = store_get(s, key, &v, len);

	if (rc < 0)
		log_kv(LOG_WARN, "status fragment unreadable; rewriting it", "key", key,
		    "error", store_error(s), NULL);
	return rc == 0 ? v : NULL;
}

/*
 * record_moved - journal the conditions that moved, all in one transaction
 * (one commit for the fragment, not one per condition); a failure is logged
 */
static void
record_moved(struct journal *j, const char *plural, const char *ns, const char *name,
    const struct status_cond *conds, const int *moved, size_t n)
{
	size_t i, nmoved = 0;
	int ok = 1, own = 0;

	for (i = 0; i < n; i++)
		nmoved += moved[i] != 0;
	if (nmoved == 0)
		return;
	/* one condition is one transaction already (journal_record_condition) */
	if (nmoved > 1) {
		if (journal_begin(j) < 0)
			ok = 0;
		else
			own = 1;
	}
	for (i = 0; ok && i < n; i++)
		if (moved[i] && journal_record_condition(j, plural, ns, name, conds[i].type,
		    conds[i].status, conds[i].reason, conds[i].message) < 0)
			ok = 0;
	if (own && !ok)
		journal_rollback(j);
	else if (own && journal_commit(j) < 0)
		ok = 0;
	if (!ok)
		log_kv(LOG_WARN, "journal: cannot record condition", "error",
		    journal_error(j), NULL);
}

/*
 * frag_set - build fields (NULL: none) and conds[0..n) on stage's stored
 * fragment and write it once, when it changed (always when force); the
 * conditions that moved are journaled
 */
static int
frag_set(struct store *s, struct journal *j, const char *plural, const char *ns,
    const char *name, const char *stage, const char *fields_json,
    const struct status_cond *conds, size_t n, int force)
{
	char *key = key_status(plural, ns, name, stage), *text;
	size_t len = 0;
	int changed = 0, rc = 0;
	int *moved = xcalloc(n + 1, sizeof(*moved));

	text = frag_text(s, key, &len);
	for (size_t i = 0; i == 0 || i < n; i++) {
		char *next;
		int ch = 0;

		/* the fields with the first condition, then each other one */
		next = status_fragment_build(text, text != NULL ? strlen(text) : 0,
		    i == 0 ? fields_json : NULL, i < n ? conds[i].type : NULL,
		    i < n ? conds[i].status : NULL, i < n ? conds[i].reason : NULL,
		    i < n ? conds[i].message : NULL, &ch, &moved[i]);
		free(text);
		if ((text = next) == NULL) {
			free(moved);
			free(key);
			return -1;
		}
		changed |= ch;
	}
	if (changed || force) {
		if ((rc = store_put_volatile(s, key, text, strlen(text))) < 0)
			log_kv(LOG_ERROR, "cannot write status", "key", key, "error",
			    store_error(s), NULL);
		else
			rc = 1;
	}
	/* Ready of a decofile as a gauge, written or already so */
	for (size_t i = 0; rc >= 0 && i < n; i++)
		if (strcmp(plural, "decofiles") == 0 && strcmp(conds[i].type, "Ready") == 0)
			metrics_decofile_ready(ns, name, conds[i].status);
	if (rc == 1 && j != NULL)
		record_moved(j, plural, ns, name, conds, moved, n);
	free(text);
	free(moved);
	free(key);
	return rc;
}

int
status_set_condition(struct store *s, struct journal *j, const char *plural,
    const char *ns, const char *name, const char *stage, const char *type,
    const char *status, const char *reason, const char *message)
{
	struct status_cond c = { type, status, reason, message };

	return frag_set(s, j, plural, ns, name, stage, NULL, &c, 1, 0);
}

int
status_set(struct store *s, struct journal *j, const char *plural, const char *ns,
    const char *name, const char *stage, const char *fields_json,
    const struct status_cond *conds, size_t n)
{
	return frag_set(s, j, plural, ns, name, stage, fields_json, conds, n, 0);
}

int
status_set_fields(struct store *s, const char *plural, const char *ns, const char *name,
    const char *stage, const char *fields_json)
{
	if (fields_json == NULL)
		return -1;
	return frag_set(s, NULL, plural, ns, name, stage, fields_json, NULL, 0, 1) < 0 ? -1 : 0;
}

/* cond_wins - should condition a replace b of the same type in the merge? */
static int
cond_wins(yajl_val a, yajl_val b)
{
	const char *sa = json_get_str(a, "status", NULL);
	const char *sb = json_get_str(b, "status", NULL);
	const char *ta = json_get_str(a, "lastTransitionTime", NULL);
	const char *tb = json_get_str(b, "lastTransitionTime", NULL);
	int fa = sa && strcmp(sa, "False") == 0, fb = sb && strcmp(sb, "False") == 0;

	if (fa != fb)
		return fa;
	return ta && tb && strcmp(ta, tb) > 0;
}

int
resource_status_merged(struct store *s, const char *plural, const char *ns,
    const char *name, struct buf *out)
{
	char *prefix = key_status_prefix(plural, ns, name);
	struct store_list l;

	if (store_list(s, prefix, &l) < 0) {
		free(prefix);
		return -1;
	}
	free(prefix);
	resource_status_merge_kvs(l.kvs, l.n, out);
	store_list_free(&l);
	return 0;
}

void
resource_status_merge_kvs(const struct store_kv *kvs, size_t n, struct buf *out)
{
	struct { size_t n; const struct store_kv *kvs; } l = { n, kvs };
	yajl_val *frags;
	yajl_val conds[64];
	size_t nconds = 0;
	struct jw w;

	frags = xcalloc(l.n + 1, sizeof(*frags));
	for (size_t i = 0; i < l.n; i++) {
		frags[i] = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL);
		if (frags[i] != NULL && !YAJL_IS_OBJECT(frags[i])) {
			yajl_tree_free(frags[i]);
			frags[i] = NULL;
		}
	}
	jw_init(&w, out);
	jw_obj(&w);
	for (size_t i = 0; i < l.n; i++) {
		yajl_val f = frags[i];

		for (size_t k = 0; f != NULL && k < f->u.object.len; k++) {
			const char *key = f->u.object.keys[k];
			yajl_val v = f->u.object.values[k];
			int later = 0;

			if (strcmp(key, "conditions") == 0) {
				for (size_t c = 0; YAJL_IS_ARRAY(v) && c < v->u.array.len; c++) {
					yajl_val cv = v->u.array.values[c];
					const char *t = json_get_str(cv, "type", NULL);
					size_t m;

					if (t == NULL)
						continue;
					for (m = 0; m < nconds; m++)
						if (strcmp(json_get_str(conds[m], "type", NULL), t) == 0)
							break;
					if (m == nconds && nconds < 64)
						conds[nconds++] = cv;
					else if (m < nconds && cond_wins(cv, conds[m]))
						conds[m] = cv;
				}
				continue;
			}
			/* a field two fragments set: the later stage name wins */
			for (size_t o = i + 1; o < l.n && !later; o++)
				if (json_get(frags[o], key, NULL) != NULL)
					later = 1;
			if (later)
				continue;
			jw_key(&w, key);
			jw_value(&w, v);
		}
	}
	jw_key(&w, "conditions");
	jw_arr(&w);
	for (size_t m = 0; m < nconds; m++)
		jw_value(&w, conds[m]);
	jw_end_arr(&w);
	jw_end_obj(&w);
	for (size_t i = 0; i < l.n; i++)
		yajl_tree_free(frags[i]);
	free(frags);
}

int
status_delete(struct store *s, const char *plural, const char *ns, const char *name)
{
	char *prefix = key_status_prefix(plural, ns, name);
	long n = store_delete_prefix(s, prefix);

	free(prefix);
	if (n >= 0 && strcmp(plural, "decofiles") == 0)
		metrics_decofile_gone(ns, name);
	return n < 0 ? -1 : 0;
}
