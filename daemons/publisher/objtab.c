/*
 * objtab - an open-addressing hash table (linear probing, FNV-1a over
 * "ns\0name") from a Decofile's namespace and name to a target's record of
 * it.  Deleted slots become tombstones, so a walk that deletes as it goes
 * meets every other value once; the table grows (and drops its tombstones)
 * when three quarters of its slots are taken.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/publisher/objtab.h"

#define MIN_CAP 16

struct slot {
	char *key;		/* "ns\0name\0"; NULL: empty or tombstone */
	void *v;		/* NULL with key NULL: empty; TOMB: tombstone */
	uint64_t h;
};

struct objtab {
	struct slot *s;
	size_t cap;		/* a power of two */
	size_t len;		/* live keys */
	size_t used;		/* live keys and tombstones */
};

static char tomb;
#define TOMB ((void *)&tomb)

/* hash - FNV-1a 64 of ns, a NUL, and name */
static uint64_t
hash(const char *ns, const char *name)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)ns; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	h *= 1099511628211ULL;	/* the NUL between them */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

static int
key_eq(const char *key, const char *ns, const char *name)
{
	size_t nl = strlen(ns);

	return memcmp(key, ns, nl + 1) == 0 && strcmp(key + nl + 1, name) == 0;
}

/* find - the slot holding ns/name, or NULL */
static struct slot *
find(const struct objtab *t, const char *ns, const char *name, uint64_t h)
{
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		struct slot *s = &t->s[i];

		if (s->key == NULL && s->v == NULL)
			return NULL;
		if (s->key != NULL && s->h == h && key_eq(s->key, ns, name))
			return s;
	}
}

/* rehash - into cap slots (live keys only) */
static void
rehash(struct objtab *t, size_t cap)
{
	struct slot *old = t->s;
	size_t oldcap = t->cap;

	t->s = xcalloc(cap, sizeof(*t->s));
	t->cap = cap;
	t->used = t->len;
	for (size_t i = 0; i < oldcap; i++) {
		size_t j;

		if (old[i].key == NULL)
			continue;
		for (j = old[i].h & (cap - 1); t->s[j].key != NULL; j = (j + 1) & (cap - 1))
			;
		t->s[j] = old[i];
	}
	free(old);
}

struct objtab *
objtab_new(void)
{
	struct objtab *t = xcalloc(1, sizeof(*t));

	t->cap = MIN_CAP;
	t->s = xcalloc(t->cap, sizeof(*t->s));
	return t;
}

void
objtab_free(struct objtab *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->s[i].key);
	free(t->s);
	free(t);
}

void *
objtab_get(const struct objtab *t, const char *ns, const char *name)
{
	struct slot *s = find(t, ns, name, hash(ns, name));

	return s != NULL ? s->v : NULL;
}

void
objtab_put(struct objtab *t, const char *ns, const char *name, void *v)
{
	uint64_t h = hash(ns, name);
	struct slot *s = find(t, ns, name, h);
	size_t nl = strlen(ns), ml = strlen(name), i;

	if (s != NULL) {
		s->v = v;
		return;
	}
	if ((t->used + 1) * 4 > t->cap * 3)
		rehash(t, (t->len + 1) * 2 > t->cap ? t->cap * 2 : t->cap);
	/* a tombstone on the way is reused: the key is not further on (find said so) */
	for (i = h & (t->cap - 1); t->s[i].key != NULL; i = (i + 1) & (t->cap - 1))
		;
	s = &t->s[i];
	if (s->v == NULL)
		t->used++;
	s->key = xmalloc(nl + ml + 2);
	memcpy(s->key, ns, nl + 1);
	memcpy(s->key + nl + 1, name, ml + 1);
	s->h = h;
	s->v = v;
	t->len++;
}

void *
objtab_del(struct objtab *t, const char *ns, const char *name)
{
	struct slot *s = find(t, ns, name, hash(ns, name));
	void *v;

	if (s == NULL)
		return NULL;
	v = s->v;
	free(s->key);
	s->key = NULL;
	s->v = TOMB;
	t->len--;
	return v;
}

size_t
objtab_len(const struct objtab *t)
{
	return t->len;
}

void *
objtab_next(const struct objtab *t, size_t *cursor)
{
	while (*cursor < t->cap) {
		struct slot *s = &t->s[(*cursor)++];

		if (s->key != NULL)
			return s->v;
	}
	return NULL;
}
