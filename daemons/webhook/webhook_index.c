/*
 * webhook_index - two chained hash tables of strings: Decofiles keyed by
 * "ns/name" (each also threaded on a "ns/deploymentId" chain so a lookup by
 * deploymentId costs one bucket), and injected Services keyed by "ns/name".
 * It owns every string in it.  Single-threaded: the stage's loop only.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/util.h"
#include "daemons/webhook/webhook_index.h"

struct df {
	char *key;		/* ns/name */
	char *dkey;		/* ns/deploymentId */
	char *ns;
	struct wh_decofile pub;	/* name and target point into owned strings */
	char *name, *target;
	struct df *next;	/* in by_name bucket */
	struct df *dnext;	/* in by_dep bucket */
};

struct svc {
	char *key;		/* ns/name */
	char *ns, *name, *decofile;
	struct svc *next;
};

struct wh_index {
	struct df **by_name, **by_dep;
	size_t ndf, dfcap;
	struct svc **svcs;
	size_t nsvc, svccap;
};

struct wh_index *
wh_index_new(void)
{
	struct wh_index *ix = xcalloc(1, sizeof(*ix));

	ix->dfcap = ix->svccap = 64;
	ix->by_name = xcalloc(ix->dfcap, sizeof(*ix->by_name));
	ix->by_dep = xcalloc(ix->dfcap, sizeof(*ix->by_dep));
	ix->svcs = xcalloc(ix->svccap, sizeof(*ix->svcs));
	return ix;
}

static void
df_free(struct df *d)
{
	free(d->key);
	free(d->dkey);
	free(d->ns);
	free(d->name);
	free(d->target);
	free(d);
}

static void
svc_free(struct svc *s)
{
	free(s->key);
	free(s->ns);
	free(s->name);
	free(s->decofile);
	free(s);
}

void
wh_index_free(struct wh_index *ix)
{
	if (ix == NULL)
		return;
	for (size_t i = 0; i < ix->dfcap; i++) {
		for (struct df *d = ix->by_name[i], *n; d != NULL; d = n) {
			n = d->next;
			df_free(d);
		}
	}
	for (size_t i = 0; i < ix->svccap; i++) {
		for (struct svc *s = ix->svcs[i], *n; s != NULL; s = n) {
			n = s->next;
			svc_free(s);
		}
	}
	free(ix->by_name);
	free(ix->by_dep);
	free(ix->svcs);
	free(ix);
}

/* df_grow - double both Decofile tables when they average two per bucket */
static void
df_grow(struct wh_index *ix)
{
	size_t cap = ix->dfcap * 2;
	struct df **bn = xcalloc(cap, sizeof(*bn)), **bd = xcalloc(cap, sizeof(*bd));

	for (size_t i = 0; i < ix->dfcap; i++) {
		for (struct df *d = ix->by_name[i], *n; d != NULL; d = n) {
			size_t h = str_hash(d->key) % cap, g = str_hash(d->dkey) % cap;

			n = d->next;
			d->next = bn[h];
			bn[h] = d;
			d->dnext = bd[g];
			bd[g] = d;
		}
	}
	free(ix->by_name);
	free(ix->by_dep);
	ix->by_name = bn;
	ix->by_dep = bd;
	ix->dfcap = cap;
}

/* df_unlink - take ns/name out of both tables; the entry or NULL */
static struct df *
df_unlink(struct wh_index *ix, const char *key)
{
	struct df **pp, *d;

	for (pp = &ix->by_name[str_hash(key) % ix->dfcap]; (d = *pp) != NULL; pp = &d->next)
		if (strcmp(d->key, key) == 0)
			break;
	if (d == NULL)
		return NULL;
	*pp = d->next;
	for (pp = &ix->by_dep[str_hash(d->dkey) % ix->dfcap]; *pp != NULL; pp = &(*pp)->dnext) {
		if (*pp == d) {
			*pp = d->dnext;
			break;
		}
	}
	ix->ndf--;
	return d;
}

int
wh_index_put_decofile(struct wh_index *ix, const char *ns, const char *name,
    const char *json, size_t len, const char *def_target)
{
	char *key = xasprintf("%s/%s", ns, name);
	struct df *d;
	yajl_val doc;
	size_t h;

	if ((d = df_unlink(ix, key)) != NULL)
		df_free(d);
	if (json == NULL || (doc = json_parse(json, len, NULL)) == NULL) {
		free(key);
		return -1;
	}
	d = xcalloc(1, sizeof(*d));
	d->key = key;
	d->ns = xstrdup(ns);
	d->name = xstrdup(name);
	d->target = xstrdup(decofile_target(doc, def_target));
	d->dkey = xasprintf("%s/%s", ns, decofile_deployment_id(doc));
	d->pub.name = d->name;
	d->pub.target = d->target;
	yajl_tree_free(doc);
	if (ix->ndf >= 2 * ix->dfcap)
		df_grow(ix);
	h = str_hash(d->key) % ix->dfcap;
	d->next = ix->by_name[h];
	ix->by_name[h] = d;
	h = str_hash(d->dkey) % ix->dfcap;
	d->dnext = ix->by_dep[h];
	ix->by_dep[h] = d;
	ix->ndf++;
	return 0;
}

void
wh_index_del_decofile(struct wh_index *ix, const char *ns, const char *name)
{
	char *key = xasprintf("%s/%s", ns, name);
	struct df *d = df_unlink(ix, key);

	if (d != NULL)
		df_free(d);
	free(key);
}

const struct wh_decofile *
wh_index_find(struct wh_index *ix, const char *ns, const char *dep)
{
	char *dkey = xasprintf("%s/%s", ns, dep);
	struct df *best = NULL;

	for (struct df *d = ix->by_dep[str_hash(dkey) % ix->dfcap]; d != NULL; d = d->dnext)
		if (strcmp(d->dkey, dkey) == 0 && (best == NULL || strcmp(d->name, best->name) < 0))
			best = d;
	free(dkey);
	return best != NULL ? &best->pub : NULL;
}

static struct svc **
svc_slot(struct wh_index *ix, const char *key)
{
	struct svc **pp;

	for (pp = &ix->svcs[str_hash(key) % ix->svccap]; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->key, key) == 0)
			break;
	return pp;
}

static void
svc_grow(struct wh_index *ix)
{
	size_t cap = ix->svccap * 2;
	struct svc **t = xcalloc(cap, sizeof(*t));

	for (size_t i = 0; i < ix->svccap; i++) {
		for (struct svc *s = ix->svcs[i], *n; s != NULL; s = n) {
			size_t h = str_hash(s->key) % cap;

			n = s->next;
			s->next = t[h];
			t[h] = s;
		}
	}
	free(ix->svcs);
	ix->svcs = t;
	ix->svccap = cap;
}

int
wh_index_set_service(struct wh_index *ix, const char *ns, const char *svc,
    const char *decofile)
{
	char *key = xasprintf("%s/%s", ns, svc);
	struct svc **pp = svc_slot(ix, key), *s;

	if ((s = *pp) != NULL) {
		free(key);
		if (strcmp(s->decofile, decofile) == 0)
			return 0;
		free(s->decofile);
		s->decofile = xstrdup(decofile);
		return 1;
	}
	if (ix->nsvc >= 2 * ix->svccap) {
		svc_grow(ix);
		pp = svc_slot(ix, key);
	}
	s = xcalloc(1, sizeof(*s));
	s->key = key;
	s->ns = xstrdup(ns);
	s->name = xstrdup(svc);
	s->decofile = xstrdup(decofile);
	*pp = s;
	ix->nsvc++;
	return 1;
}

int
wh_index_drop_service(struct wh_index *ix, const char *ns, const char *svc)
{
	char *key = xasprintf("%s/%s", ns, svc);
	struct svc **pp = svc_slot(ix, key), *s = *pp;

	free(key);
	if (s == NULL)
		return 0;
	*pp = s->next;
	svc_free(s);
	ix->nsvc--;
	return 1;
}

const char *
wh_index_service(struct wh_index *ix, const char *ns, const char *svc)
{
	char *key = xasprintf("%s/%s", ns, svc);
	struct svc *s = *svc_slot(ix, key);

	free(key);
	return s != NULL ? s->decofile : NULL;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t
wh_index_users(struct wh_index *ix, const char *ns, const char *name, struct buf *out,
    size_t max)
{
	const char **names = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < ix->svccap; i++) {
		for (struct svc *s = ix->svcs[i]; s != NULL; s = s->next) {
			if (strcmp(s->ns, ns) != 0 || strcmp(s->decofile, name) != 0)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				names = xrealloc(names, cap * sizeof(*names));
			}
			names[n++] = s->name;
		}
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && i < max; i++) {
		if (i > 0)
			buf_adds(out, ", ");
		buf_adds(out, names[i]);
	}
	free(names);
	return n;
}

void
wh_index_counts(const struct wh_index *ix, size_t *decofiles, size_t *services)
{
	*decofiles = ix->ndf;
	*services = ix->nsvc;
}
