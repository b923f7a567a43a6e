/*
 * kube_events_cache - a bounded LRU of what the front door emitted as
 * Kubernetes Events: per key (a condition of a CR, or an Event's
 * regarding/reason/note) a small record.  At most `cap` keys; adding one
 * more drops the least recently used.  Pure (no I/O), unit-tested.
 */
#ifndef DECOD_KUBE_EVENTS_CACHE_H
#define DECOD_KUBE_EVENTS_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct kev_entry {
	char *key;
	char *val;		/* a condition's last "status|reason|message", or an Event's name */
	uint32_t count;		/* times observed (an Event's series.count) */
	uint32_t sent_count;	/* count the API server last got */
	int64_t last_sent_ms;	/* monotonic ms of the last POST/PATCH */
	char last_obs[40];	/* lastObservedTime (RFC 3339, micro) */
	/* private */
	struct kev_entry *hnext, *prev, *next;
};

struct kev_cache;

struct kev_cache *kev_cache_new(size_t cap);
void kev_cache_free(struct kev_cache *c);
/* kev_cache_get - key's entry (now the most recently used) or NULL */
struct kev_entry *kev_cache_get(struct kev_cache *c, const char *key);
/* kev_cache_put - key's entry, made (val NULL, count 0) when absent; may evict the LRU one */
struct kev_entry *kev_cache_put(struct kev_cache *c, const char *key);
/* kev_entry_set_val - replace e's val (copied) */
void kev_entry_set_val(struct kev_entry *e, const char *val);
/* kev_cache_lru_head, kev_entry_next - walk from the most recently used (no get/put meanwhile) */
struct kev_entry *kev_cache_lru_head(struct kev_cache *c);
struct kev_entry *kev_entry_next(struct kev_entry *e);
size_t kev_cache_len(const struct kev_cache *c);
uint64_t kev_cache_evicted(const struct kev_cache *c);

#endif
