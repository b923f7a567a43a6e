/*
 * render_tree - what a render starts from: a fetched tree loaded from the
 * spool (its manifest decoded, every blob it names read; the bytes owned
 * until render_tree_free) and the names of the templates a Decofile lists.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/spool.h"
#include "common/util.h"
#include "daemons/renderer/render_tree.h"

void
render_tree_free(struct render_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free((char *)t->in[i].data);
	free(t->in);
	manifest_free(&t->pt);
	memset(t, 0, sizeof(*t));
}

int
render_tree_load(struct spool *sp, const char *hash, int layer, struct render_tree *t,
    int *missing, char *why, size_t whylen)
{
	char err[512];
	size_t len;
	char *text;

	memset(t, 0, sizeof(*t));
	snprintf(t->hash, sizeof(t->hash), "%s", hash);
	*missing = 0;
	if ((text = spool_get(sp, hash, &len)) == NULL) {
		*missing = errno == ENOENT;
		snprintf(why, whylen, "tree manifest %s: %s", hash, strerror(errno));
		return -1;
	}
	if (manifest_decode(text, len, &t->pt, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "tree manifest %s is malformed: %s", hash, err);
		free(text);
		render_tree_free(t);
		return -1;
	}
	free(text);
	t->in = xcalloc(t->pt.n ? t->pt.n : 1, sizeof(*t->in));
	for (size_t i = 0; i < t->pt.n; i++) {
		const struct manifest_entry *e = &t->pt.e[i];
		struct render_input *r = &t->in[t->n];

		r->key = e->key;
		r->path = e->path;
		r->layer = layer;
		if ((r->data = spool_get(sp, e->blob, &r->len)) == NULL) {
			*missing = errno == ENOENT;
			snprintf(why, whylen, "%s: blob %s: %s", r->path, e->blob, strerror(errno));
			render_tree_free(t);
			return -1;
		}
		t->n++;
	}
	return 0;
}

int
render_template_names(yajl_val doc, char names[][254], size_t max, char *why,
    size_t whylen)
{
	yajl_val list = json_get(doc, "spec", "templates", NULL);
	size_t n = 0;

	if (list == NULL || YAJL_IS_NULL(list))
		return 0;
	if (!YAJL_IS_ARRAY(list)) {
		snprintf(why, whylen, "spec.templates must be a list of names");
		return -1;
	}
	for (size_t i = 0; i < list->u.array.len; i++) {
		yajl_val v = list->u.array.values[i];
		const char *s = YAJL_IS_STRING(v) ? v->u.string : json_get_str(v, "name", NULL);

		if (s == NULL || *s == '\0' || strlen(s) > 253 || n == max) {
			snprintf(why, whylen, "spec.templates[%zu] is not a template name", i);
			return -1;
		}
		snprintf(names[n++], 254, "%s", s);
	}
	return (int)n;
}
