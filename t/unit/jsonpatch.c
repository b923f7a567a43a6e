/*
 * jsonpatch - RFC 6902 on yajl trees, for tests.  Nodes are made with
 * malloc in yajl's own layout so yajl_tree_free() frees a patched tree;
 * values are copied out of the parsed patch, never shared.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "t/unit/jsonpatch.h"

static yajl_val
clone(yajl_val v)
{
	yajl_val c = xcalloc(1, sizeof(*c));

	c->type = v->type;
	switch (v->type) {
	case yajl_t_string:
		c->u.string = xstrdup(v->u.string);
		break;
	case yajl_t_number:
		c->u.number = v->u.number;
		c->u.number.r = xstrdup(v->u.number.r);
		break;
	case yajl_t_object:
		c->u.object.len = v->u.object.len;
		c->u.object.keys = xcalloc(v->u.object.len + 1, sizeof(char *));
		c->u.object.values = xcalloc(v->u.object.len + 1, sizeof(yajl_val));
		for (size_t i = 0; i < v->u.object.len; i++) {
			c->u.object.keys[i] = xstrdup(v->u.object.keys[i]);
			c->u.object.values[i] = clone(v->u.object.values[i]);
		}
		break;
	case yajl_t_array:
		c->u.array.len = v->u.array.len;
		c->u.array.values = xcalloc(v->u.array.len + 1, sizeof(yajl_val));
		for (size_t i = 0; i < v->u.array.len; i++)
			c->u.array.values[i] = clone(v->u.array.values[i]);
		break;
	default:
		break;
	}
	return c;
}

/* token - the next reference token of a JSON pointer, unescaped; NULL at the end */
static const char *
token(const char **p, char *out, size_t len)
{
	size_t n = 0;

	if (**p != '/')
		return NULL;
	(*p)++;
	while (**p != '\0' && **p != '/' && n + 1 < len) {
		if (**p == '~' && (*p)[1] == '1') {
			out[n++] = '/';
			*p += 2;
		} else if (**p == '~' && (*p)[1] == '0') {
			out[n++] = '~';
			*p += 2;
		} else {
			out[n++] = *(*p)++;
		}
	}
	out[n] = '\0';
	return out;
}

static int
member(yajl_val o, const char *k)
{
	for (size_t i = 0; i < o->u.object.len; i++)
		if (strcmp(o->u.object.keys[i], k) == 0)
			return (int)i;
	return -1;
}

static int
index_of(const char *t, size_t len, int allow_end)
{
	char *end;
	long n;

	if (allow_end && strcmp(t, "-") == 0)
		return (int)len;
	n = strtol(t, &end, 10);
	if (*t == '\0' || *end != '\0' || n < 0 || (size_t)n > len)
		return -1;
	return (int)n;
}

static int
apply_one(yajl_val *doc, const char *op, const char *path, yajl_val value, char *err,
    size_t errlen)
{
	yajl_val parent = NULL, cur = *doc;
	char tok[512], last[512];
	const char *p = path;
	int i;

	if (*path == '\0') {
		snprintf(err, errlen, "whole-document ops are not supported");
		return -1;
	}
	/* walk to the parent of the last token */
	last[0] = '\0';
	while (token(&p, tok, sizeof(tok)) != NULL) {
		if (*p == '\0') {
			snprintf(last, sizeof(last), "%s", tok);
			parent = cur;
			break;
		}
		if (YAJL_IS_OBJECT(cur) && (i = member(cur, tok)) >= 0)
			cur = cur->u.object.values[i];
		else if (YAJL_IS_ARRAY(cur) && (i = index_of(tok, cur->u.array.len, 0)) >= 0 &&
		    (size_t)i < cur->u.array.len)
			cur = cur->u.array.values[i];
		else {
			snprintf(err, errlen, "%s: path does not exist", path);
			return -1;
		}
	}
	if (parent == NULL) {
		snprintf(err, errlen, "%s: bad pointer", path);
		return -1;
	}
	if (YAJL_IS_OBJECT(parent)) {
		size_t n = parent->u.object.len;

		i = member(parent, last);
		if (strcmp(op, "test") == 0) {
			struct buf a, b;
			struct jw wa, wb;
			int same;

			if (i < 0) {
				snprintf(err, errlen, "%s: test of a missing member", path);
				return -1;
			}
			buf_init(&a);
			buf_init(&b);
			jw_init(&wa, &a);
			jw_init(&wb, &b);
			jw_value(&wa, parent->u.object.values[i]);
			jw_value(&wb, value);
			same = strcmp(a.data, b.data) == 0;
			buf_free(&a);
			buf_free(&b);
			if (!same)
				snprintf(err, errlen, "%s: test failed", path);
			return same ? 0 : -1;
		}
		if (strcmp(op, "remove") == 0 || strcmp(op, "replace") == 0) {
			if (i < 0) {
				snprintf(err, errlen, "%s: %s of a missing member", path, op);
				return -1;
			}
			if (strcmp(op, "replace") == 0) {
				yajl_tree_free(parent->u.object.values[i]);
				parent->u.object.values[i] = clone(value);
				return 0;
			}
			free((char *)parent->u.object.keys[i]);
			yajl_tree_free(parent->u.object.values[i]);
			memmove(&parent->u.object.keys[i], &parent->u.object.keys[i + 1],
			    (n - i - 1) * sizeof(char *));
			memmove(&parent->u.object.values[i], &parent->u.object.values[i + 1],
			    (n - i - 1) * sizeof(yajl_val));
			parent->u.object.len--;
			return 0;
		}
		if (strcmp(op, "add") != 0) {
			snprintf(err, errlen, "op %s not supported", op);
			return -1;
		}
		if (i >= 0) {
			yajl_tree_free(parent->u.object.values[i]);
			parent->u.object.values[i] = clone(value);
			return 0;
		}
		parent->u.object.keys = xrealloc((void *)parent->u.object.keys,
		    (n + 1) * sizeof(char *));
		parent->u.object.values = xrealloc(parent->u.object.values,
		    (n + 1) * sizeof(yajl_val));
		parent->u.object.keys[n] = xstrdup(last);
		parent->u.object.values[n] = clone(value);
		parent->u.object.len++;
		return 0;
	}
	if (YAJL_IS_ARRAY(parent)) {
		size_t n = parent->u.array.len;

		i = index_of(last, n, strcmp(op, "add") == 0);
		if (i < 0 || (strcmp(op, "add") != 0 && (size_t)i >= n)) {
			snprintf(err, errlen, "%s: index out of range", path);
			return -1;
		}
		if (strcmp(op, "add") == 0) {
			parent->u.array.values = xrealloc(parent->u.array.values,
			    (n + 1) * sizeof(yajl_val));
			memmove(&parent->u.array.values[i + 1], &parent->u.array.values[i],
			    (n - i) * sizeof(yajl_val));
			parent->u.array.values[i] = clone(value);
			parent->u.array.len++;
			return 0;
		}
		if (strcmp(op, "replace") == 0) {
			yajl_tree_free(parent->u.array.values[i]);
			parent->u.array.values[i] = clone(value);
			return 0;
		}
		if (strcmp(op, "remove") == 0) {
			yajl_tree_free(parent->u.array.values[i]);
			memmove(&parent->u.array.values[i], &parent->u.array.values[i + 1],
			    (n - i - 1) * sizeof(yajl_val));
			parent->u.array.len--;
			return 0;
		}
		snprintf(err, errlen, "op %s not supported on arrays", op);
		return -1;
	}
	snprintf(err, errlen, "%s: parent is not a container", path);
	return -1;
}

int
jsonpatch_apply(yajl_val *doc, const char *patch, size_t len, char *err, size_t errlen)
{
	yajl_val ops = json_parse(patch, len, NULL);
	int rc = 0;

	if (ops == NULL || !YAJL_IS_ARRAY(ops)) {
		snprintf(err, errlen, "the patch is not a JSON array");
		yajl_tree_free(ops);
		return -1;
	}
	for (size_t i = 0; i < ops->u.array.len && rc == 0; i++) {
		yajl_val o = ops->u.array.values[i];
		const char *op = json_get_str(o, "op", NULL), *path = json_get_str(o, "path", NULL);
		yajl_val v = json_get(o, "value", NULL);

		if (op == NULL || path == NULL || (strcmp(op, "remove") != 0 && v == NULL)) {
			snprintf(err, errlen, "operation %zu lacks op, path or value", i);
			rc = -1;
			break;
		}
		rc = apply_one(doc, op, path, v, err, errlen);
	}
	yajl_tree_free(ops);
	return rc;
}

yajl_val
jsonpatch_at(yajl_val doc, const char *path)
{
	char part[256];
	const char *p = path;

	while (doc != NULL && *p != '\0') {
		size_t n = strcspn(p, ".");

		snprintf(part, sizeof(part), "%.*s", (int)n, p);
		p += n;
		if (*p == '.')
			p++;
		if (YAJL_IS_OBJECT(doc)) {
			int i = member(doc, part);

			doc = i >= 0 ? doc->u.object.values[i] : NULL;
		} else if (YAJL_IS_ARRAY(doc)) {
			int i = index_of(part, doc->u.array.len, 0);

			doc = i >= 0 && (size_t)i < doc->u.array.len ? doc->u.array.values[i] : NULL;
		} else {
			doc = NULL;
		}
	}
	return doc;
}
