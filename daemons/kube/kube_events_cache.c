/*
 * kube_events_cache - see kube_events_cache.h: a hash of chains plus a
 * doubly linked list, most recently used at the head.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/util.h"
#include "daemons/kube/kube_events_cache.h"

struct kev_cache {
	size_t cap, len, nb;
	uint64_t evicted;
	struct kev_entry **b;
	struct kev_entry *head, *tail;
};

struct kev_cache *
kev_cache_new(size_t cap)
{
	struct kev_cache *c = xcalloc(1, sizeof(*c));

	c->cap = cap > 0 ? cap : 1;
	c->nb = c->cap * 2;
	c->b = xcalloc(c->nb, sizeof(*c->b));
	return c;
}

static void
entry_free(struct kev_entry *e)
{
	free(e->key);
	free(e->val);
	free(e);
}

void
kev_cache_free(struct kev_cache *c)
{
	struct kev_entry *e, *n;

	if (c == NULL)
		return;
	for (e = c->head; e != NULL; e = n) {
		n = e->next;
		entry_free(e);
	}
	free(c->b);
	free(c);
}

static void
unlink_lru(struct kev_cache *c, struct kev_entry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
push_head(struct kev_cache *c, struct kev_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head != NULL)
		c->head->prev = e;
	c->head = e;
	if (c->tail == NULL)
		c->tail = e;
}

static struct kev_entry **
slot(struct kev_cache *c, const char *key)
{
	struct kev_entry **s;

	for (s = &c->b[str_hash(key) % c->nb]; *s != NULL; s = &(*s)->hnext)
		if (strcmp((*s)->key, key) == 0)
			break;
	return s;
}

struct kev_entry *
kev_cache_get(struct kev_cache *c, const char *key)
{
	struct kev_entry *e = *slot(c, key);

	if (e != NULL && e != c->head) {
		unlink_lru(c, e);
		push_head(c, e);
	}
	return e;
}

struct kev_entry *
kev_cache_put(struct kev_cache *c, const char *key)
{
	struct kev_entry **s, *e = kev_cache_get(c, key);

	if (e != NULL)
		return e;
	if (c->len >= c->cap && (e = c->tail) != NULL) {
		s = slot(c, e->key);
		*s = e->hnext;
		unlink_lru(c, e);
		entry_free(e);
		c->len--;
		c->evicted++;
	}
	e = xcalloc(1, sizeof(*e));
	e->key = xstrdup(key);
	s = slot(c, key);
	*s = e;
	push_head(c, e);
	c->len++;
	return e;
}

void
kev_entry_set_val(struct kev_entry *e, const char *val)
{
	free(e->val);
	e->val = val != NULL ? xstrdup(val) : NULL;
}

struct kev_entry *
kev_cache_lru_head(struct kev_cache *c)
{
	return c->head;
}

struct kev_entry *
kev_entry_next(struct kev_entry *e)
{
	return e->next;
}

size_t
kev_cache_len(const struct kev_cache *c)
{
	return c->len;
}

uint64_t
kev_cache_evicted(const struct kev_cache *c)
{
	return c->evicted;
}
