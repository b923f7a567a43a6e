/*
 * kube_events_test - the Kubernetes Events' pure parts: the bounded LRU
 * of what was emitted (eviction order, a get refreshes), which condition
 * changes make which Event, the note's shape that repeats compare, and
 * the Event body (fields, the note bounded to 1 KiB).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "daemons/kube/kube_events_cache.h"
#include "daemons/kube/kube_front_int.h"
#include "t/tap.h"

static void
test_cache(void)
{
	struct kev_cache *c = kev_cache_new(3);
	struct kev_entry *e;
	char k[32];
	int i;

	e = kev_cache_put(c, "a");
	ok(e != NULL && e->val == NULL && e->count == 0, "put: a new entry, empty");
	kev_entry_set_val(e, "ev.1");
	e->count = 7;
	ok(kev_cache_put(c, "a") == e && e->count == 7, "put of a key present: the same entry");
	kev_cache_put(c, "b");
	kev_cache_put(c, "c");
	is_int(kev_cache_len(c), 3, "three keys");
	ok(kev_cache_get(c, "a") != NULL, "a read: a is the most recently used");
	kev_cache_put(c, "d");	/* evicts b, the least recently used */
	is_int(kev_cache_len(c), 3, "bounded at 3");
	ok(kev_cache_get(c, "b") == NULL, "the least recently used (b) went");
	ok(kev_cache_get(c, "a") != NULL && kev_cache_get(c, "c") != NULL &&
	    kev_cache_get(c, "d") != NULL, "a, c, d stay");
	is_int(kev_cache_evicted(c), 1, "one eviction counted");
	is_str(kev_cache_lru_head(c)->key, "d", "the walk starts at the most recent");
	kev_cache_free(c);

	c = kev_cache_new(4096);
	for (i = 0; i < 10000; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		kev_cache_put(c, k)->count = (uint32_t)i;
	}
	is_int(kev_cache_len(c), 4096, "10,000 keys: 4096 kept");
	ok(kev_cache_get(c, "key-9999") != NULL && kev_cache_get(c, "key-9999")->count == 9999,
	    "the newest kept");
	ok(kev_cache_get(c, "key-5903") == NULL && kev_cache_get(c, "key-5904") != NULL,
	    "the oldest dropped, exactly past the bound");
	kev_cache_free(c);
}

static void
test_event_of(void)
{
	const char *r, *t, *a;

	ok(kf_event_of("Syncing", "False", "FetchError", &r, &t, &a) &&
	    strcmp(r, "FetchError") == 0 && strcmp(t, "Warning") == 0, "fetch failure: Warning FetchError");
	ok(kf_event_of("Syncing", "False", "ValidationError", &r, &t, &a) &&
	    strcmp(r, "ValidationError") == 0 && strcmp(t, "Warning") == 0,
	    "validation error: Warning ValidationError");
	ok(!kf_event_of("Syncing", "True", "Fetched", &r, &t, &a), "a fetch that works: none");
	ok(!kf_event_of("Syncing", "False", "Suspended", &r, &t, &a), "suspended: none");
	ok(kf_event_of("Ready", "True", "ConfigMapCreated", &r, &t, &a) &&
	    strcmp(r, "Published") == 0 && strcmp(t, "Normal") == 0,
	    "Ready=True (any target's reason): Normal Published");
	ok(kf_event_of("Ready", "False", "PublishError", &r, &t, &a) &&
	    strcmp(r, "PublishError") == 0 && strcmp(t, "Warning") == 0, "Ready=False: Warning");
	ok(kf_event_of("Drifted", "True", "Repaired", &r, &t, &a) && strcmp(r, "Repaired") == 0 &&
	    strcmp(t, "Normal") == 0, "drift repaired: Repaired, Normal");
	ok(!kf_event_of("Drifted", "False", "InSync", &r, &t, &a), "in sync: none");
	ok(kf_event_of("PodsNotified", "True", "AllNotified", &r, &t, &a) &&
	    strcmp(t, "Normal") == 0, "rollout done: Normal");
	ok(kf_event_of("PodsNotified", "False", "NotifyFailed", &r, &t, &a) &&
	    strcmp(t, "Warning") == 0, "rollout failed: Warning");
	ok(!kf_event_of("Ready", "Unknown", "Pending", &r, &t, &a), "Unknown: none");
	ok(!kf_event_of("Burst-x", "True", "Probe", &r, &t, &a), "another condition: none");
}

static void
test_shape_body(void)
{
	char *a = kf_note_shape("Failed to connect to 127.0.0.1 port 44951 after 0 ms");
	char *b = kf_note_shape("Failed to connect to 127.0.0.1 port 44951 after 12 ms");
	char *c = kf_note_shape("Bad.json:4:2: parse error");
	char note[3000], *body;
	yajl_val cr, ev;
	size_t len;

	ok(strcmp(a, b) == 0, "notes differing in numbers only: one shape");
	is_str(a, "Failed to connect to #.#.#.# port # after # ms", "... digits as #");
	ok(strcmp(a, c) != 0, "another message: another shape");
	free(a);
	free(b);
	free(c);

	{
		const char *crs = "{\"metadata\":{\"name\":\"loja\",\"namespace\":\"sites-loja\","
		    "\"uid\":\"u-1\",\"resourceVersion\":\"42\"}}";

		cr = json_parse(crs, strlen(crs), NULL);
	}
	memset(note, 'x', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	note[1023] = (char)0xc3;	/* a two-byte character across the bound */
	note[1024] = (char)0xa9;
	body = kf_event_body("loja.1", "Decofile", cr, "Published", "Normal", "Publish", note,
	    "pod-0", "2026-12-05T22:00:00.000001Z", &len);
	ev = json_parse(body, len, NULL);
	ok(ev != NULL, "the body is JSON");
	is_str(json_get_str(ev, "apiVersion", NULL), "events.k8s.io/v1", "events.k8s.io/v1");
	is_str(json_get_str(ev, "metadata", "namespace", NULL), "sites-loja", "in the CR's namespace");
	is_str(json_get_str(ev, "regarding", "uid", NULL), "u-1", "regarding: uid");
	is_str(json_get_str(ev, "regarding", "resourceVersion", NULL), "42", "... resourceVersion");
	is_str(json_get_str(ev, "regarding", "kind", NULL), "Decofile", "... kind");
	is_str(json_get_str(ev, "reportingController", NULL), "deco.sites/decod",
	    "reportingController");
	is_str(json_get_str(ev, "reportingInstance", NULL), "pod-0", "reportingInstance");
	is_int(strlen(json_get_str(ev, "note", NULL)), 1023,
	    "the note bounded to 1 KiB, cut before a split character");
	yajl_tree_free(ev);
	free(body);
	yajl_tree_free(cr);
}

int
main(void)
{
	test_cache();
	test_event_of();
	test_shape_body();
	return done_testing();
}
