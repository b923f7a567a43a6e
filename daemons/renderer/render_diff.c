/*
 * render_diff - two rendered documents compared block by block and key by
 * key (render_diff.h).  Objects are walked in byte order of their keys, so
 * the result does not depend on how either side ordered them; values are
 * equal when their JSON is (numbers by the bytes written, objects whatever
 * their key order).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemons/renderer/render_diff.h"
#include "daemons/renderer/render_merge.h"

struct kix {
	const char *key;
	size_t ix;
};

static int
kix_cmp(const void *a, const void *b)
{
	const struct kix *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : x->ix < y->ix ? -1 : x->ix > y->ix;
}

/* sorted - the indexes of object v's keys in byte order of the key (caller frees) */
static size_t *
sorted(yajl_val v)
{
	size_t n = v->u.object.len, *ix = xcalloc(n + 1, sizeof(*ix));
	struct kix *k = xcalloc(n + 1, sizeof(*k));

	for (size_t i = 0; i < n; i++) {
		k[i].key = v->u.object.keys[i];
		k[i].ix = i;
	}
	qsort(k, n, sizeof(*k), kix_cmp);
	for (size_t i = 0; i < n; i++)
		ix[i] = k[i].ix;
	free(k);
	return ix;
}

/* member - the value of key k in object v, or NULL */
static yajl_val
member(yajl_val v, const char *k)
{
	for (size_t i = 0; i < v->u.object.len; i++)
		if (strcmp(v->u.object.keys[i], k) == 0)
			return v->u.object.values[i];
	return NULL;
}

/* equal - a and b are the same JSON value */
static int
equal(yajl_val a, yajl_val b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case yajl_t_string:
		return strcmp(a->u.string, b->u.string) == 0;
	case yajl_t_number:
		return strcmp(a->u.number.r, b->u.number.r) == 0;
	case yajl_t_array:
		if (a->u.array.len != b->u.array.len)
			return 0;
		for (size_t i = 0; i < a->u.array.len; i++)
			if (!equal(a->u.array.values[i], b->u.array.values[i]))
				return 0;
		return 1;
	case yajl_t_object:
		if (a->u.object.len != b->u.object.len)
			return 0;
		for (size_t i = 0; i < a->u.object.len; i++) {
			yajl_val o = member(b, a->u.object.keys[i]);

			if (o == NULL || !equal(a->u.object.values[i], o))
				return 0;
		}
		return 1;
	default:
		return 1;	/* true, false, null: the type says it all */
	}
}

/*
 * walk - objects a and b in byte order of their keys: fn(arg, key, va, vb)
 * for each key of either (va or vb NULL on the side it is missing)
 */
static void
walk(yajl_val a, yajl_val b, void (*fn)(void *, const char *, yajl_val, yajl_val),
    void *arg)
{
	size_t *ia = sorted(a), *ib = sorted(b), i = 0, k = 0;
	size_t na = a->u.object.len, nb = b->u.object.len;

	while (i < na || k < nb) {
		const char *ka = i < na ? a->u.object.keys[ia[i]] : NULL;
		const char *kb = k < nb ? b->u.object.keys[ib[k]] : NULL;
		int c = ka == NULL ? 1 : kb == NULL ? -1 : strcmp(ka, kb);

		fn(arg, c <= 0 ? ka : kb, c <= 0 ? a->u.object.values[ia[i]] : NULL,
		    c >= 0 ? b->u.object.values[ib[k]] : NULL);
		/* a key twice in one object: each copy is walked once */
		i += c <= 0;
		k += c >= 0;
	}
	free(ia);
	free(ib);
}

struct keys_acc {
	struct rdiff_block *blk;
	size_t cap;
	const char *parent;	/* depth 2: the first segment */
};

static void
add_key(struct keys_acc *acc, char op, const char *seg0, const char *seg1)
{
	struct rdiff_block *blk = acc->blk;
	struct rdiff_key *k;

	if (blk->nkeys == acc->cap) {
		acc->cap = acc->cap ? acc->cap * 2 : 8;
		blk->keys = xrealloc(blk->keys, acc->cap * sizeof(*blk->keys));
	}
	k = &blk->keys[blk->nkeys++];
	k->op = op;
	k->nseg = seg1 ? 2 : 1;
	k->seg[0] = seg0;
	k->seg[1] = seg1;
}

static void
key2(void *arg, const char *key, yajl_val a, yajl_val b)
{
	struct keys_acc *acc = arg;

	if (a == NULL || b == NULL)
		add_key(acc, a ? RDIFF_REMOVED : RDIFF_ADDED, acc->parent, key);
	else if (!equal(a, b))
		add_key(acc, RDIFF_CHANGED, acc->parent, key);
}

static void
key1(void *arg, const char *key, yajl_val a, yajl_val b)
{
	struct keys_acc *acc = arg;

	if (a == NULL || b == NULL) {
		add_key(acc, a ? RDIFF_REMOVED : RDIFF_ADDED, key, NULL);
	} else if (YAJL_IS_OBJECT(a) && YAJL_IS_OBJECT(b)) {
		acc->parent = key;
		walk(a, b, key2, acc);
	} else if (!equal(a, b)) {
		add_key(acc, RDIFF_CHANGED, key, NULL);
	}
}

struct blocks_acc {
	struct render_diff *d;
	size_t cap;
};

static void
block(void *arg, const char *name, yajl_val a, yajl_val b)
{
	struct blocks_acc *acc = arg;
	struct render_diff *d = acc->d;
	struct rdiff_block *blk;
	struct keys_acc ka;

	if (a != NULL && b != NULL && equal(a, b))
		return;
	if (d->n == acc->cap) {
		acc->cap = acc->cap ? acc->cap * 2 : 8;
		d->blocks = xrealloc(d->blocks, acc->cap * sizeof(*d->blocks));
	}
	blk = &d->blocks[d->n++];
	memset(blk, 0, sizeof(*blk));
	blk->name = name;
	if (a == NULL || b == NULL) {
		blk->op = a ? RDIFF_REMOVED : RDIFF_ADDED;
		if (a)
			d->removed++;
		else
			d->added++;
		return;
	}
	blk->op = RDIFF_CHANGED;
	d->changed++;
	if (!YAJL_IS_OBJECT(a) || !YAJL_IS_OBJECT(b)) {
		blk->whole = 1;
		return;
	}
	memset(&ka, 0, sizeof(ka));
	ka.blk = blk;
	walk(a, b, key1, &ka);
	d->keys += blk->nkeys;
}

int
render_diff_docs(const char *old, size_t oldlen, const char *new, size_t newlen,
    struct render_diff *d, char *why, size_t whylen)
{
	struct json_error je;
	struct blocks_acc acc;

	memset(d, 0, sizeof(*d));
	d->old = json_parse(old, oldlen, &je);
	if (!YAJL_IS_OBJECT(d->old)) {
		snprintf(why, whylen, "the current document is not a JSON object");
		render_diff_free(d);
		return -1;
	}
	d->new = json_parse(new, newlen, &je);
	if (!YAJL_IS_OBJECT(d->new)) {
		snprintf(why, whylen, "the new document is not a JSON object");
		render_diff_free(d);
		return -1;
	}
	acc.d = d;
	acc.cap = 0;
	walk(d->old, d->new, block, &acc);
	return 0;
}

void
render_diff_free(struct render_diff *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->blocks[i].keys);
	free(d->blocks);
	if (d->old)
		yajl_tree_free(d->old);
	if (d->new)
		yajl_tree_free(d->new);
	memset(d, 0, sizeof(*d));
}

void
render_diff_summary(struct buf *b, const struct render_diff *d)
{
	buf_printf(b, "%zu block%s changed (%zu key%s), %zu added, %zu removed", d->changed,
	    d->changed == 1 ? "" : "s", d->keys, d->keys == 1 ? "" : "s", d->added,
	    d->removed);
}

/* plain - seg may be shown bare in a dotted path */
static int
plain(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (*s == '.' || *s == '"' || *s == '\\' || *s == ' ' ||
		    (unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

void
render_diff_path(struct buf *b, const struct rdiff_key *k)
{
	for (int i = 0; i < k->nseg; i++) {
		if (i > 0)
			buf_add(b, ".", 1);
		if (plain(k->seg[i]))
			buf_adds(b, k->seg[i]);
		else
			render_key_escape(b, k->seg[i], strlen(k->seg[i]));
	}
}

const char *
render_diff_op_name(char op)
{
	return op == RDIFF_ADDED ? "added" : op == RDIFF_REMOVED ? "removed" : "changed";
}

void
render_diff_json(struct jw *w, const struct render_diff *d)
{
	jw_arr(w);
	for (size_t i = 0; i < d->n; i++) {
		const struct rdiff_block *blk = &d->blocks[i];

		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, blk->name);
		jw_key(w, "change");
		jw_str(w, render_diff_op_name(blk->op));
		if (blk->op == RDIFF_CHANGED) {
			if (blk->whole) {
				jw_key(w, "replaced");
				jw_bool(w, 1);
			}
			jw_key(w, "keys");
			jw_arr(w);
			for (size_t k = 0; k < blk->nkeys; k++) {
				jw_obj(w);
				jw_key(w, "path");
				jw_arr(w);
				for (int s = 0; s < blk->keys[k].nseg; s++)
					jw_str(w, blk->keys[k].seg[s]);
				jw_end_arr(w);
				jw_key(w, "change");
				jw_str(w, render_diff_op_name(blk->keys[k].op));
				jw_end_obj(w);
			}
			jw_end_arr(w);
		}
		jw_end_obj(w);
	}
	jw_end_arr(w);
}
