/*
 * store_contract - the behaviour every store backend must have, written
 * against store.h only.  It runs on the store named by DECOD_TEST_STORE
 * (e.g. etcd:http://127.0.0.1:2379), or on local: in a new temporary folder.
 * Every key lives under a prefix unique to the run, so it can share a store
 * with other users; it removes that prefix at the end.
 *
 * Prefix rule checked here: "/p/a" lists "/p/a" and "/p/a/..." but never
 * "/p/ab"; "/p/a/" lists only "/p/a/...".  Watches are pumped after each
 * change, as a daemon's loop would: a backend may coalesce the changes
 * made between two dispatches (local does), so no test depends on that.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/store.h"
#include "common/util.h"
#include "t/tap.h"

#define MAX_EV 64

struct seen {
	int n;
	struct {
		enum store_event_type type;
		char key[512];
		char val[256];
		size_t vlen;
	} ev[MAX_EV];
};

static char P[256];		/* the run's unique prefix */
static char *tmpdir;		/* local: folder we made, removed at the end */

static void
on_event(void *arg, const struct store_event *ev)
{
	struct seen *s = arg;

	if (s->n >= MAX_EV)
		return;
	s->ev[s->n].type = ev->type;
	snprintf(s->ev[s->n].key, sizeof(s->ev[0].key), "%s", ev->key ? ev->key : "");
	s->ev[s->n].vlen = ev->vlen;
	if (ev->type == STORE_EV_PUT && ev->value != NULL)
		snprintf(s->ev[s->n].val, sizeof(s->ev[0].val), "%.*s", (int)ev->vlen, ev->value);
	s->n++;
}

/* pump - drive the watch once, waiting at most max_ms */
static int
pump(struct store_watch *w, int max_ms)
{
	int fd = store_watch_fd(w), t = store_watch_timeout_ms(w);
	struct pollfd pfd = { fd, POLLIN, 0 };

	if (t < 0 || t > max_ms)
		t = max_ms;
	if (fd >= 0)
		(void)poll(&pfd, 1, t);
	else
		usleep((useconds_t)t * 1000);
	return store_watch_dispatch(w);
}

/* wait_events - pump until s holds n events or ms pass; returns s->n */
static int
wait_events(struct store_watch *w, struct seen *s, int n, int ms)
{
	int64_t end = now_ms() + ms;

	while (s->n < n && now_ms() < end)
		if (pump(w, 100) < 0)
			break;
	return s->n;
}

/* wait_both - wait_events on two watches; 1 if both got their counts */
static int
wait_both(struct store_watch *w, struct seen *s, int n, struct store_watch *w2,
    struct seen *s2, int n2)
{
	int a = wait_events(w, s, n, 10000), b = wait_events(w2, s2, n2, 10000);

	if (a != n || b != n2) {
		diag("watch w/ has %d events (want %d), watch w has %d (want %d):", a, n, b, n2);
		for (int i = 0; i < b; i++)
			diag("  w event %d: %s %s", i, s2->ev[i].type == STORE_EV_PUT ? "put" :
			    "delete", s2->ev[i].key + strlen(P));
	}
	return a == n && b == n2;
}

static char *
K(const char *rest)
{
	static char b[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(b[i], sizeof(b[i]), "%s/%s", P, rest);
	return b[i];
}

static struct store *
open_store(void)
{
	const char *url = getenv("DECOD_TEST_STORE");
	char err[512], *u = NULL;
	struct store *s;

	if (url == NULL || *url == '\0') {
		if (tmpdir == NULL) {
			char tmpl[] = "/tmp/decod-contract.XXXXXX";

			if (mkdtemp(tmpl) == NULL) {
				printf("Bail out! mkdtemp: %s\n", strerror(errno));
				exit(1);
			}
			tmpdir = xstrdup(tmpl);
		}
		url = u = xasprintf("local:%s", tmpdir);
	}
	if ((s = store_open(url, NULL, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		exit(1);
	}
	free(u);
	return s;
}

/* get_is - key holds want (NULL: absent) */
static void
get_is(struct store *s, const char *key, const char *want, const char *label)
{
	char *v = NULL;
	size_t len = 0;
	int rv = store_get(s, key, &v, &len);

	if (want == NULL)
		is_int(rv, 1, "%s: %s is absent", label, key);
	else {
		is_int(rv, 0, "%s: %s is found", label, key);
		is_str(rv == 0 ? v : NULL, want, "%s: %s value", label, key);
		is_int(len, strlen(want), "%s: %s length", label, key);
	}
	if (rv < 0)
		diag("store_get: %s", store_error(s));
	free(v);
}

static void
put(struct store *s, const char *key, const char *val)
{
	if (store_put(s, key, val, strlen(val)) < 0)
		diag("store_put %s: %s", key, store_error(s));
}

/* list_is - the keys under prefix, in order, are exactly want (NULL-ended) */
static void
list_is(struct store *s, const char *prefix, const char *const *want, const char *label)
{
	struct store_list l;
	struct buf got, exp;

	buf_init(&got);
	buf_init(&exp);
	if (store_list(s, prefix, &l) < 0) {
		ok(0, "%s: list %s: %s", label, prefix, store_error(s));
		return;
	}
	for (size_t i = 0; i < l.n; i++)
		buf_printf(&got, "%s%s", i ? " " : "", l.kvs[i].key + strlen(P));
	for (size_t i = 0; want[i] != NULL; i++)
		buf_printf(&exp, "%s%s", i ? " " : "", want[i]);
	is_str(got.data ? got.data : "", exp.data ? exp.data : "", "%s: list %s", label,
	    prefix + strlen(P));
	store_list_free(&l);
	buf_free(&got);
	buf_free(&exp);
}

static void
test_basic(struct store *s)
{
	char *v = NULL;
	size_t len = 0;
	const char bin[] = { 'a', '\0', 'b', '\n', (char)0xff };

	put(s, K("k1"), "v1");
	get_is(s, K("k1"), "v1", "put then get");
	get_is(s, K("never"), NULL, "absent key");
	put(s, K("k1"), "value two");
	get_is(s, K("k1"), "value two", "overwrite");
	is_int(store_put(s, K("bin"), bin, sizeof(bin)), 0, "put binary value");
	is_int(store_get(s, K("bin"), &v, &len), 0, "get binary value");
	ok(len == sizeof(bin) && v != NULL && memcmp(v, bin, sizeof(bin)) == 0,
	    "binary value comes back byte for byte (%zu bytes)", len);
	ok(v != NULL && v[len] == '\0', "value is NUL-terminated");
	free(v);
	v = NULL;
	is_int(store_put(s, K("empty"), "", 0), 0, "put empty value");
	is_int(store_get(s, K("empty"), &v, &len), 0, "empty value is found");
	is_int(len, 0, "empty value has length 0");
	free(v);
	is_int(store_delete(s, K("k1")), 0, "delete");
	get_is(s, K("k1"), NULL, "after delete");
	is_int(store_delete(s, K("k1")), 0, "delete of an absent key is fine");
	is_int(store_delete(s, K("never/there")), 0, "delete of an absent deep key is fine");
}

static void
test_list(struct store *s)
{
	static const char *const all[] = { "/l/a", "/l/a-b", "/l/a/x", "/l/b", NULL };
	static const char *const a_self[] = { "/l/a", "/l/a/x", NULL };
	static const char *const a_under[] = { "/l/a/x", NULL };
	static const char *const none[] = { NULL };
	struct store_list l;

	/* written out of order; listed in byte order */
	put(s, K("l/b"), "B");
	put(s, K("l/a/x"), "AX");
	put(s, K("l/a-b"), "AB");
	put(s, K("l/a"), "A");
	put(s, K("lx"), "sibling");
	put(s, K("lz/a"), "other");
	list_is(s, K("l"), all, "sorted, siblings excluded");
	list_is(s, K("l/"), all, "trailing slash");
	list_is(s, K("l/a"), a_self, "key and its children, not /l/a-b");
	list_is(s, K("l/a/"), a_under, "children only");
	list_is(s, K("l/nothing"), none, "empty prefix");
	if (store_list(s, K("l/"), &l) == 0) {
		ok(l.n == 4 && strcmp(l.kvs[0].value, "A") == 0 && l.kvs[0].vlen == 1 &&
		    strcmp(l.kvs[3].value, "B") == 0, "list carries values");
		store_list_free(&l);
	} else
		ok(0, "list: %s", store_error(s));
	put(s, K("rev/1"), "x");
	put(s, K("rev/2"), "y");
	if (store_list(s, K("rev/"), &l) == 0 && l.n == 2) {
		ok(l.kvs[1].mod_revision > l.kvs[0].mod_revision,
		    "a later put has a higher mod_revision (%lld > %lld)",
		    (long long)l.kvs[1].mod_revision, (long long)l.kvs[0].mod_revision);
		ok(l.revision >= l.kvs[1].mod_revision, "list revision covers its keys");
		store_list_free(&l);
	} else
		ok(0, "list rev/: %s", store_error(s));
}

static void
test_delete_prefix(struct store *s)
{
	put(s, K("d/1"), "1");
	put(s, K("d/2"), "2");
	put(s, K("d/x/3"), "3");
	put(s, K("d"), "self");
	put(s, K("dx"), "sibling");
	is_int(store_delete_prefix(s, K("d/")), 3, "delete prefix d/ counts its keys");
	list_is(s, K("d"), (const char *const[]){ "/d", NULL }, "after delete prefix d/");
	list_is(s, K(""), (const char *const[]){ "/bin", "/d", "/dx", "/empty", "/l/a",
	    "/l/a-b", "/l/a/x", "/l/b", "/lx", "/lz/a", "/rev/1", "/rev/2", NULL },
	    "other keys untouched");
	is_int(store_delete_prefix(s, K("d")), 1, "delete prefix d takes the key itself");
	get_is(s, K("dx"), "sibling", "sibling survives");
	is_int(store_delete_prefix(s, K("nothing/here")), 0, "delete of an empty prefix is 0");
}

static void
test_ttl(struct store *s)
{
	struct seen ev;
	struct store_watch *w;
	char *v = NULL;
	size_t len;
	int64_t start = now_ms(), gone = 0;
	int rv = 0, found_delete = 0;

	memset(&ev, 0, sizeof(ev));
	w = store_watch_new(s, K("t/"), 0, on_event, &ev);
	ok(w != NULL, "watch for ttl keys");
	if (w == NULL) {
		diag("%s", store_error(s));
		return;
	}
	is_int(store_put_ttl(s, K("t/keep"), "k", 1, 2), 0, "put with ttl");
	put(s, K("t/keep"), "kept");	/* a plain put drops the ttl */
	is_int(store_put_ttl(s, K("t/a"), "a", 1, 2), 0, "put with ttl 2s");
	is_int(store_put_ttl(s, K("t/zero"), "z", 1, 0), -1, "ttl 0 is refused");
	is_int(store_get(s, K("t/a"), &v, &len), 0, "ttl key is there at first");
	free(v);
	while (now_ms() - start < 20000) {
		if ((rv = store_get(s, K("t/a"), &v, &len)) != 0)
			break;
		free(v);
		(void)pump(w, 200);
	}
	gone = now_ms() - start;
	is_int(rv, 1, "ttl key disappears by itself");
	ok(gone >= 1500, "not before its ttl (%lld ms)", (long long)gone);
	diag("ttl 2 s key gone after %lld ms", (long long)gone);
	list_is(s, K("t/"), (const char *const[]){ "/t/keep", NULL }, "expired key not listed");
	get_is(s, K("t/keep"), "kept", "a plain put over a ttl key keeps it");
	for (int64_t end = now_ms() + 5000; now_ms() < end && !found_delete;) {
		(void)pump(w, 100);
		for (int i = 0; i < ev.n; i++)
			if (ev.ev[i].type == STORE_EV_DELETE && strcmp(ev.ev[i].key, K("t/a")) == 0)
				found_delete = 1;
	}
	ok(found_delete, "the watch reports the expiry as a delete");
	store_watch_free(w);
}

static void
ev_is(const struct seen *s, int i, enum store_event_type type, const char *key,
    const char *val)
{
	if (i >= s->n) {
		ok(0, "event %d: missing", i);
		return;
	}
	ok(s->ev[i].type == type, "event %d is a %s", i, type == STORE_EV_PUT ? "put" : "delete");
	is_str(s->ev[i].key, key, "event %d key", i);
	if (val != NULL) {
		is_str(s->ev[i].val, val, "event %d value", i);
		is_int(s->ev[i].vlen, strlen(val), "event %d value length", i);
	}
}

static void
test_watch(struct store *s, struct store *s2)
{
	struct seen ev, ev2;
	struct store_watch *w, *w2;

	memset(&ev, 0, sizeof(ev));
	memset(&ev2, 0, sizeof(ev2));
	put(s, K("w/old"), "before the watch");
	w = store_watch_new(s, K("w/"), 0, on_event, &ev);
	w2 = store_watch_new(s, K("w"), 0, on_event, &ev2);
	ok(w != NULL && w2 != NULL, "watch_new");
	if (w == NULL || w2 == NULL) {
		diag("%s", store_error(s));
		store_watch_free(w);
		store_watch_free(w2);
		return;
	}
	put(s, K("w/a"), "1");
	put(s, K("w/b"), "2");
	put(s, K("wx"), "outside");
	put(s, K("w"), "the prefix key");
	ok(wait_both(w, &ev, 2, w2, &ev2, 3), "puts seen");
	ev_is(&ev, 0, STORE_EV_PUT, K("w/a"), "1");
	ev_is(&ev, 1, STORE_EV_PUT, K("w/b"), "2");
	is_int(store_delete(s, K("w/a")), 0, "delete under the watch");
	ok(wait_both(w, &ev, 3, w2, &ev2, 4), "delete seen");
	ev_is(&ev, 2, STORE_EV_DELETE, K("w/a"), NULL);
	/* made by another handle */
	put(s2, K("w/c/deep"), "3");
	ok(wait_both(w, &ev, 4, w2, &ev2, 5), "put by another handle seen");
	ev_is(&ev, 3, STORE_EV_PUT, K("w/c/deep"), "3");
	is_int(store_delete(s2, K("w/b")), 0, "delete by another handle");
	ok(wait_both(w, &ev, 5, w2, &ev2, 6), "delete by another handle seen");
	ev_is(&ev, 4, STORE_EV_DELETE, K("w/b"), NULL);
	/* everything outside came before the last event: nothing else arrived */
	for (int i = 0; i < 3; i++) {
		(void)pump(w, 50);
		(void)pump(w2, 50);
	}
	is_int(ev.n, 5, "nothing outside w/ was reported (not wx, not w, not w/old)");
	is_int(ev2.n, 6, "w (no slash): six events");
	ev_is(&ev2, 0, STORE_EV_PUT, K("w/a"), "1");
	ev_is(&ev2, 2, STORE_EV_PUT, K("w"), "the prefix key");
	ev_is(&ev2, 5, STORE_EV_DELETE, K("w/b"), NULL);
	for (int i = 0; i < ev2.n; i++)
		ok(strcmp(ev2.ev[i].key, K("wx")) != 0, "event %d is not wx", i);
	store_watch_free(w);
	store_watch_free(w2);
}

/*
 * test_watch_list - a watch that also says what it saw at its opening: the
 * list holds what store_list holds (sorted, the prefix rule, no key
 * outside), and what comes after it comes as events
 */
static void
test_watch_list(struct store *s, struct store *s2)
{
	struct seen ev;
	struct store_list l, want;
	struct store_watch *w;

	memset(&ev, 0, sizeof(ev));
	put(s, K("wl/b"), "2");
	put(s, K("wl/a"), "1");
	put(s, K("wl/c/deep"), "3");
	put(s, K("wl"), "the prefix key");
	put(s, K("wlx"), "outside");
	w = store_watch_new_list(s, K("wl"), on_event, &ev, &l);
	ok(w != NULL, "watch_new_list");
	if (w == NULL) {
		diag("%s", store_error(s));
		return;
	}
	is_int(store_list(s, K("wl"), &want), 0, "list the same prefix");
	is_int(l.n, want.n, "the watch's list holds what store_list holds");
	for (size_t i = 0; i < l.n && i < want.n; i++) {
		is_str(l.kvs[i].key, want.kvs[i].key, "key %zu (sorted, as store_list)", i);
		is_str(l.kvs[i].value, want.kvs[i].value, "value %zu", i);
		is_int(l.kvs[i].vlen, want.kvs[i].vlen, "value length %zu", i);
	}
	if (l.n == 4)
		is_str(l.kvs[0].key, K("wl"), "the prefix key itself first");
	store_list_free(&want);
	store_list_free(&l);
	for (int i = 0; i < 3; i++)
		(void)pump(w, 50);
	put(s2, K("wl/d"), "4");
	is_int(wait_events(w, &ev, 1, 10000), 1, "a put after the opening is an event");
	ev_is(&ev, 0, STORE_EV_PUT, K("wl/d"), "4");
	is_int(store_delete(s, K("wl/a")), 0, "delete a listed key");
	is_int(wait_events(w, &ev, 2, 10000), 2, "and its delete is an event");
	ev_is(&ev, 1, STORE_EV_DELETE, K("wl/a"), NULL);
	store_watch_free(w);
	w = store_watch_new_list(s, K("wl-none/"), on_event, &ev, &l);
	ok(w != NULL && l.n == 0, "an empty prefix: a watch and an empty list");
	store_list_free(&l);
	store_watch_free(w);
}

static void
test_locks(struct store *s, struct store **s2p)
{
	struct store *s2 = *s2p;
	char *holder = NULL;
	const char *lk = K("locks/job");
	int rv = 0;

	is_int(store_try_lock(s, lk, &holder), 1, "first handle takes the lock");
	ok(holder == NULL, "no holder reported when we get it");
	is_int(store_try_lock(s, lk, NULL), 1, "taking it again is fine");
	is_int(store_try_lock(s2, lk, &holder), 0, "second handle does not get it");
	is_str(holder, store_identity(s), "holder is the first handle's identity");
	free(holder);
	holder = NULL;
	is_int(store_unlock(s, lk), 0, "unlock");
	is_int(store_try_lock(s2, lk, &holder), 1, "after unlock the second handle gets it");
	is_int(store_try_lock(s, lk, &holder), 0, "now the first handle does not");
	is_str(holder, store_identity(s2), "holder is the second handle's identity");
	free(holder);
	holder = NULL;
	store_close(s2);
	*s2p = NULL;
	for (int64_t end = now_ms() + 10000; now_ms() < end; usleep(50000))
		if ((rv = store_try_lock(s, lk, NULL)) != 0)
			break;
	is_int(rv, 1, "after the holder closes its store the lock is free");
	is_int(store_unlock(s, lk), 0, "unlock again");
}

/* try_lock_many: ours, held by the other handle, mixed, and a batch past one txn */
static void
test_lock_many(struct store *s, struct store *s2)
{
	enum { NB = 130 };
	char *kb[NB];
	const char *k[3];
	int r[NB], all = 1, none = 1;

	kb[0] = xstrdup(K("locks/many/a"));
	kb[1] = xstrdup(K("locks/many/b"));
	kb[2] = xstrdup(K("locks/many/c"));
	k[0] = kb[0];
	k[1] = kb[1];
	k[2] = kb[2];
	is_int(store_try_lock_many(s, k, 0, r), 0, "try_lock_many of no keys");
	is_int(store_try_lock_many(s, k, 2, r), 0, "try_lock_many of two free keys");
	ok(r[0] == 1 && r[1] == 1, "both are ours (%d %d)", r[0], r[1]);
	is_int(store_try_lock(s, k[0], NULL), 1, "the single call agrees: a is ours");
	is_int(store_try_lock_many(s, k, 2, r), 0, "asking again");
	ok(r[0] == 1 && r[1] == 1, "still both ours (%d %d)", r[0], r[1]);
	is_int(store_try_lock_many(s2, k, 2, r), 0, "the other handle asks for both");
	ok(r[0] == 0 && r[1] == 0, "neither is the other handle's (%d %d)", r[0], r[1]);
	is_int(store_try_lock_many(s2, k, 3, r), 0, "the other handle asks for a, b and free c");
	ok(r[0] == 0 && r[1] == 0 && r[2] == 1, "mixed: a and b held, c taken (%d %d %d)",
	    r[0], r[1], r[2]);
	is_int(store_try_lock_many(s, k, 3, r), 0, "the first handle asks for all three");
	ok(r[0] == 1 && r[1] == 1 && r[2] == 0, "mixed: a and b ours, c not (%d %d %d)",
	    r[0], r[1], r[2]);
	is_int(store_unlock(s2, k[2]), 0, "the other handle lets c go");
	is_int(store_try_lock_many(s, k + 2, 1, r), 0, "c again");
	is_int(r[0], 1, "c is ours after it was let go");
	for (int i = 0; i < 3; i++)
		is_int(store_unlock(s, k[i]), 0, "unlock");

	/* more keys than one etcd txn takes */
	for (int i = 0; i < 3; i++)
		free(kb[i]);
	for (int i = 0; i < NB; i++) {
		char n[64];

		snprintf(n, sizeof(n), "locks/big/%03d", i);
		kb[i] = xstrdup(K(n));
	}
	is_int(store_try_lock(s2, kb[NB - 1], NULL), 1, "the other handle holds the last one");
	is_int(store_try_lock_many(s, (const char *const *)kb, NB, r), 0,
	    "try_lock_many of %d keys", NB);
	for (int i = 0; i < NB - 1; i++) {
		all &= r[i] == 1;
		none &= store_try_lock(s2, kb[i], NULL) == 0;
	}
	ok(all, "all free ones are ours");
	is_int(r[NB - 1], 0, "the other handle's is not");
	ok(none, "the other handle gets none of ours");
	for (int i = 0; i < NB; i++) {
		store_unlock(i == NB - 1 ? s2 : s, kb[i]);
		free(kb[i]);
	}
	{
		const char *bad[1] = { "" };

		is_int(store_try_lock_many(s, bad, 1, r), -1, "an empty key is an error");
		is_int(r[0], 0, "and its result is 0");
	}
}

/*
 * test_put_many - 300 keys (three txns on etcd, 127 each at most), an
 * overwrite, an empty value, values big enough to split a txn by size,
 * and the errors: an empty key writes nothing.
 */
#define NPM 300
static void
test_put_many(struct store *s, struct store *s2)
{
	char *keys[NPM], *vals[NPM];
	size_t lens[NPM];
	struct store_list l;
	char pre[300];
	int good = 0, order = 1;

	snprintf(pre, sizeof(pre), "%s/pm/", P);
	put(s, K("pm/k0007"), "old");
	for (int i = 0; i < NPM; i++) {
		keys[i] = xasprintf("%s/pm/k%04d", P, i);
		vals[i] = i == 5 ? xstrdup("") : xasprintf("value of %d", i);
		lens[i] = strlen(vals[i]);
	}
	is_int(store_put_many(s, (const char *const *)keys, (const char *const *)vals, lens,
	    NPM), 0, "put_many: %d keys", NPM);
	if (store_list(s2, pre, &l) < 0) {
		ok(0, "put_many: list: %s", store_error(s2));
		memset(&l, 0, sizeof(l));
	}
	is_int(l.n, NPM, "put_many: every key is there (other handle)");
	for (size_t i = 0; i < l.n && i < NPM; i++) {
		order &= strcmp(l.kvs[i].key, keys[i]) == 0;
		good += strcmp(l.kvs[i].key, keys[i]) == 0 && l.kvs[i].vlen == lens[i] &&
		    memcmp(l.kvs[i].value, vals[i], lens[i]) == 0;
	}
	ok(order, "put_many: the keys listed are the keys put");
	is_int(good, NPM, "put_many: every value and length is right");
	store_list_free(&l);
	get_is(s2, K("pm/k0007"), "value of 7", "put_many overwrote");
	get_is(s2, K("pm/k0005"), "", "put_many empty value");
	for (int i = 0; i < NPM; i++) {
		free(keys[i]);
		free(vals[i]);
	}

	/* three values of 300 KB: more than one txn by size on etcd */
	{
		char *bk[3], *bv[3];
		size_t bl[3];
		char *v = NULL;
		size_t len = 0;
		int same = 1;

		for (int i = 0; i < 3; i++) {
			bk[i] = xasprintf("%s/pmbig/%d", P, i);
			bl[i] = 300 * 1024;
			bv[i] = xmalloc(bl[i]);
			memset(bv[i], 'a' + i, bl[i]);
		}
		is_int(store_put_many(s, (const char *const *)bk, (const char *const *)bv, bl, 3),
		    0, "put_many: three values of 300 KB");
		for (int i = 0; i < 3; i++) {
			if (store_get(s2, bk[i], &v, &len) != 0 || len != bl[i] ||
			    memcmp(v, bv[i], len) != 0)
				same = 0;
			free(v);
			v = NULL;
		}
		ok(same, "put_many: the big values read back whole");
		for (int i = 0; i < 3; i++) {
			free(bk[i]);
			free(bv[i]);
		}
	}

	/* nothing to do; an empty key fails before anything is written */
	is_int(store_put_many(s, NULL, NULL, NULL, 0), 0, "put_many of nothing");
	{
		char *k2[2];
		const char *v2[2] = { "x", "y" };
		size_t l2[2] = { 1, 1 };

		k2[0] = xasprintf("%s/pmbad/a", P);
		k2[1] = "";
		is_int(store_put_many(s, (const char *const *)k2, v2, l2, 2), -1,
		    "put_many with an empty key is an error");
		ok(strstr(store_error(s), "empty key") != NULL, "which says so: %s",
		    store_error(s));
		get_is(s, K("pmbad/a"), NULL, "put_many with an empty key wrote nothing");
		free(k2[0]);
	}
}

int
main(void)
{
	struct store *s, *s2;
	unsigned char rnd[4];
	FILE *f;

	f = fopen("/dev/urandom", "r");
	if (f == NULL || fread(rnd, 1, sizeof(rnd), f) != sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	if (f != NULL)
		fclose(f);
	snprintf(P, sizeof(P), "/decod-contract/%ld-%lld-%02x%02x%02x%02x", (long)getpid(),
	    (long long)wall_ms(), rnd[0], rnd[1], rnd[2], rnd[3]);
	s = open_store();
	s2 = open_store();
	diag("store %s, prefix %s", getenv("DECOD_TEST_STORE") ? getenv("DECOD_TEST_STORE") :
	    tmpdir, P);

	test_basic(s);
	test_list(s);
	test_delete_prefix(s);
	test_watch(s, s2);
	test_watch_list(s, s2);
	test_ttl(s);
	test_put_many(s, s2);
	test_lock_many(s, s2);
	test_locks(s, &s2);

	ok(store_delete_prefix(s, P) >= 0, "clean up the run's prefix");
	store_close(s2);
	store_close(s);
	if (tmpdir != NULL) {
		rm_rf(tmpdir);
		free(tmpdir);
	}
	return done_testing();
}
