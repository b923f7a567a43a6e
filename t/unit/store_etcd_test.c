/*
 * store_etcd_test - tests of the etcd store backend.  Without arguments it
 * is a TAP test: URL and setting errors, an unreachable etcd, and, when
 * DECOD_TEST_ETCD names a running etcd, every operation, latency included.
 * With a command it is the driver the t/integration/etcd_*.sh scenarios run
 * against real etcd processes (watch, puts, dels, hold, take, cluster).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/store.h"
#include "common/util.h"
#include "t/tap.h"

#define NKEYS 1000

static struct store *
open_or_die(const char *url)
{
	char err[600];
	struct store *s = store_open(url, NULL, err, sizeof(err));

	if (s == NULL) {
		fprintf(stderr, "store_etcd_test: %s\n", err);
		exit(2);
	}
	return s;
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* pump - wait up to ms for the watch fd, then dispatch */
static void
pump(struct store_watch *w, int ms)
{
	struct pollfd p = { .fd = store_watch_fd(w), .events = POLLIN };

	if (poll(&p, 1, ms) > 0)
		store_watch_dispatch(w);
}

/* ---- the offline TAP part ---- */

struct bad_url {
	const char *url;
	const char *want;	/* substring of the error */
};

static const struct bad_url bad_urls[] = {
	{ "etcd:", "no endpoint" },
	{ "etcd:ftp://127.0.0.1:2379", "is not http://" },
	{ "etcd:http://127.0.0.1:2379/v3", "without a path" },
	{ "etcd:http://", "without a path" },
	{ "etcd:http://127.0.0.1:1", "no answer within" },
	{ "etcd:http://127.0.0.1:1,http://127.0.0.1:2", "127.0.0.1:" },
};

static void
offline_tests(void)
{
	char err[600];
	struct store *s;

	setenv("DECOD_ETCD_TIMEOUT", "300ms", 1);
	for (size_t i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++) {
		int64_t t0 = now_ms();

		err[0] = '\0';
		s = store_open(bad_urls[i].url, NULL, err, sizeof(err));
		ok(s == NULL, "%s refused", bad_urls[i].url);
		ok(strstr(err, bad_urls[i].want) != NULL, "error says \"%s\": %s",
		    bad_urls[i].want, err);
		ok(now_ms() - t0 < 3000, "within the deadline (%lld ms)", (long long)(now_ms() - t0));
		store_close(s);
	}
	setenv("DECOD_ETCD_TIMEOUT", "soon", 1);
	s = store_open("etcd:http://127.0.0.1:1", NULL, err, sizeof(err));
	ok(s == NULL && strstr(err, "etcd_timeout") != NULL, "bad etcd_timeout: %s", err);
	setenv("DECOD_ETCD_TIMEOUT", "300ms", 1);
	setenv("DECOD_ETCD_CACERT", "/nonexistent/ca.pem", 1);
	s = store_open("etcd:https://127.0.0.1:1", NULL, err, sizeof(err));
	ok(s == NULL && strstr(err, "/nonexistent/ca.pem") != NULL, "missing CA file: %s", err);
	unsetenv("DECOD_ETCD_CACERT");
	unsetenv("DECOD_ETCD_TIMEOUT");
}

/* ---- the online TAP part (DECOD_TEST_ETCD) ---- */

struct lat {
	const char *want;
	int seen;
	int64_t at;
	int nput, ndel, nrelist;
	int64_t lastrev;
	int order_ok;
};

static void
lat_cb(void *arg, const struct store_event *ev)
{
	struct lat *l = arg;

	if (ev->type == STORE_EV_PUT)
		l->nput++;
	else if (ev->type == STORE_EV_DELETE)
		l->ndel++;
	else
		l->nrelist++;
	if (ev->revision <= l->lastrev)
		l->order_ok = 0;
	l->lastrev = ev->revision;
	if (l->want != NULL && ev->type == STORE_EV_PUT && strcmp(ev->key, l->want) == 0) {
		l->seen = 1;
		l->at = now_us();
	}
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void
online_tests(const char *url)
{
	struct store *s = open_or_die(url), *s2;
	struct store_list l;
	struct store_watch *w;
	struct lat lt = { .order_ok = 1 };
	char *v = NULL, *holder = NULL, key[64];
	size_t n = 0;
	int64_t lat[200], t0;
	long cnt;
	int i;

	store_delete_prefix(s, "/t/");
	is_int(store_put(s, "/t/a", "one", 3), 0, "put");
	is_int(store_get(s, "/t/a", &v, &n), 0, "get finds it");
	is_str(v, "one", "get value");
	is_int((long long)n, 3, "get length");
	free(v);
	v = NULL;
	is_int(store_get(s, "/t/none", &v, &n), 1, "get of an absent key is 1");
	is_int(store_put(s, "/t/bin", "a\0b\xff", 4), 0, "put binary value");
	is_int(store_get(s, "/t/bin", &v, &n), 0, "get binary value");
	ok(n == 4 && memcmp(v, "a\0b\xff", 4) == 0, "binary value intact");
	free(v);
	is_int(store_put(s, "/t/empty", "", 0), 0, "put empty value");
	v = NULL;
	is_int(store_get(s, "/t/empty", &v, &n), 0, "empty value is found");
	ok(v != NULL && n == 0, "empty value has length 0");
	free(v);
	is_int(store_delete(s, "/t/a"), 0, "delete");
	is_int(store_delete(s, "/t/a"), 0, "delete of an absent key is fine");
	is_int(store_get(s, "/t/a", &v, &n), 1, "deleted key is absent");
	is_int(store_put(s, "", "x", 1), -1, "empty key refused");

	/* list: more than one page, sorted, a neighbour prefix not included */
	for (i = 0; i < 1203; i++) {
		snprintf(key, sizeof(key), "/t/l/%05d", i);
		store_put(s, key, key, strlen(key));
	}
	store_put(s, "/t/l0", "x", 1);
	is_int(store_list(s, "/t/l/", &l), 0, "list");
	is_int((long long)l.n, 1203, "list crosses pages");
	ok(l.n == 1203 && strcmp(l.kvs[0].key, "/t/l/00000") == 0 &&
	    strcmp(l.kvs[1202].key, "/t/l/01202") == 0 && strcmp(l.kvs[7].value, "/t/l/00007") == 0,
	    "list sorted with values");
	ok(l.revision > 0 && l.n > 0 && l.kvs[0].mod_revision > 0 &&
	    l.kvs[0].mod_revision <= l.revision, "list revision %lld", (long long)l.revision);
	store_list_free(&l);
	cnt = store_delete_prefix(s, "/t/l/");
	is_int(cnt, 1203, "delete prefix counts");
	is_int(store_get(s, "/t/l0", &v, &n), 0, "neighbour prefix kept");
	free(v);

	/* TTL: gone after it, kept alive by nothing */
	is_int(store_put_ttl(s, "/t/ttl", "x", 1, 2), 0, "put with ttl");
	v = NULL;
	is_int(store_get(s, "/t/ttl", &v, &n), 0, "ttl key there at once");
	free(v);
	t0 = now_ms();
	while (store_get(s, "/t/ttl", &v, &n) == 0 && now_ms() - t0 < 6000) {
		free(v);
		usleep(100000);
	}
	ok(now_ms() - t0 >= 1000 && now_ms() - t0 < 4000, "ttl key expired after %lld ms",
	    (long long)(now_ms() - t0));
	is_int(store_put_ttl(s, "/t/ttl2", "x", 1, 2), 0, "put ttl");
	is_int(store_put(s, "/t/ttl2", "y", 1), 0, "plain put drops the ttl");
	sleep(3);
	v = NULL;
	is_int(store_get(s, "/t/ttl2", &v, &n), 0, "key without ttl stays");
	free(v);

	/* watch: events in order, latency */
	w = store_watch_new(s, "/t/w/", 0, lat_cb, &lt);
	ok(w != NULL, "watch");
	for (i = 0; i < 200 && w != NULL; i++) {
		snprintf(key, sizeof(key), "/t/w/%d", i);
		lt.want = key;
		lt.seen = 0;
		t0 = now_us();
		store_put(s, key, "v", 1);
		while (!lt.seen && now_us() - t0 < 5000000)
			pump(w, 100);
		lat[i] = lt.seen ? lt.at - t0 : 5000000;
	}
	store_delete(s, "/t/w/0");
	store_put(s, "/t/other", "x", 1);
	t0 = now_us();
	while (lt.ndel == 0 && now_us() - t0 < 5000000)
		pump(w, 100);
	is_int(lt.nput, 200, "watch saw every put");
	is_int(lt.ndel, 1, "watch saw the delete");
	ok(lt.order_ok, "revisions increase");
	qsort(lat, 200, sizeof(lat[0]), cmp_i64);
	diag("watch latency put->callback: p50 %.2f ms, p90 %.2f ms, max %.2f ms",
	    lat[100] / 1000.0, lat[180] / 1000.0, lat[199] / 1000.0);
	ok(lat[100] < 100000, "watch latency p50 under 100 ms");
	t0 = now_us();
	store_watch_free(w);
	ok(now_us() - t0 < 500000, "watch_free is prompt (%.1f ms)", (now_us() - t0) / 1000.0);

	/* locks */
	s2 = open_or_die(url);
	is_int(store_try_lock(s, "/t/lock", &holder), 1, "try_lock takes a free lock");
	is_int(store_try_lock(s, "/t/lock", &holder), 1, "try_lock again: still ours");
	is_int(store_try_lock(s2, "/t/lock", &holder), 0, "another handle: held by someone else");
	is_str(holder, store_identity(s), "holder is the first handle's identity");
	free(holder);
	holder = NULL;
	is_int(store_unlock(s2, "/t/lock"), 0, "unlock by a non-holder is a no-op");
	is_int(store_try_lock(s2, "/t/lock", NULL), 0, "still held");
	is_int(store_unlock(s, "/t/lock"), 0, "unlock");
	is_int(store_try_lock(s2, "/t/lock", &holder), 1, "then the other handle takes it");
	is_int(store_try_lock(s, "/t/lock2", NULL), 1, "a second lock");
	store_close(s);
	is_int(store_try_lock(s2, "/t/lock2", NULL), 1, "close releases locks at once");
	is_int(store_delete_prefix(s2, "/t/"), 206, "cleanup removes every key left (199 watched, 6 others, a lock)");
	store_close(s2);
}

/* ---- drivers for the integration scripts ---- */

struct wstate {
	struct store *s;
	const char *prefix;
	char *vals[NKEYS + 1];
	int64_t floor;		/* events at or below it are in the re-list */
	int64_t lastrev;
	int done;
};

static int
key_index(const struct wstate *ws, const char *key)
{
	size_t pl = strlen(ws->prefix);
	int i;

	if (strncmp(key, ws->prefix, pl) != 0 || key[pl] != 'k')
		return -1;
	i = atoi(key + pl + 1);
	return i >= 0 && i <= NKEYS ? i : -1;
}

static void
wstate_relist(struct wstate *ws)
{
	struct store_list l;

	for (int i = 0; i <= NKEYS; i++) {
		free(ws->vals[i]);
		ws->vals[i] = NULL;
	}
	while (store_list(ws->s, ws->prefix, &l) < 0) {
		printf("# relist failed: %s\n", store_error(ws->s));
		sleep(1);
	}
	for (size_t i = 0; i < l.n; i++) {
		int k = key_index(ws, l.kvs[i].key);

		if (k >= 0)
			ws->vals[k] = xstrdup(l.kvs[i].value);
	}
	ws->floor = l.revision;
	store_list_free(&l);
}

static void
wstate_cb(void *arg, const struct store_event *ev)
{
	struct wstate *ws = arg;
	int k;

	switch (ev->type) {
	case STORE_EV_RELIST:
		printf("RELIST %lld\n", (long long)ev->revision);
		wstate_relist(ws);
		return;
	case STORE_EV_PUT:
		printf("PUT %s %lld\n", ev->key, (long long)ev->revision);
		break;
	case STORE_EV_DELETE:
		printf("DELETE %s %lld\n", ev->key, (long long)ev->revision);
		break;
	}
	if (ev->revision <= ws->lastrev)
		printf("DUP %lld after %lld\n", (long long)ev->revision, (long long)ws->lastrev);
	ws->lastrev = ev->revision;
	if (strcmp(ev->key + strlen(ws->prefix), "done") == 0)
		ws->done = 1;
	if (ev->revision <= ws->floor || (k = key_index(ws, ev->key)) < 0)
		return;
	free(ws->vals[k]);
	ws->vals[k] = ev->type == STORE_EV_PUT ? xstrdup(ev->value) : NULL;
}

/* watch URL PREFIX: print events until PREFIX"done", then compare state */
static int
cmd_watch(const char *url, const char *prefix)
{
	struct wstate ws = { .prefix = prefix };
	struct store_watch *w;
	struct store_list l;
	int bad = 0;
	size_t j = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ws.s = open_or_die(url);
	if ((w = store_watch_new(ws.s, prefix, 0, wstate_cb, &ws)) == NULL) {
		fprintf(stderr, "watch: %s\n", store_error(ws.s));
		return 2;
	}
	printf("READY\n");
	while (!ws.done)
		pump(w, store_watch_timeout_ms(w));
	while (store_list(ws.s, prefix, &l) < 0)
		sleep(1);
	for (int i = 0; i <= NKEYS; i++) {
		int inlist;

		while (j < l.n && key_index(&ws, l.kvs[j].key) < 0)
			j++;	/* the end mark */
		inlist = j < l.n && key_index(&ws, l.kvs[j].key) == i;

		if (inlist != (ws.vals[i] != NULL) ||
		    (inlist && strcmp(ws.vals[i], l.kvs[j].value) != 0)) {
			printf("# state differs at k%04d\n", i);
			bad++;
		}
		if (inlist)
			j++;
	}
	printf("STATE %s %zu keys\n", bad ? "differs" : "ok", l.n);
	store_list_free(&l);
	store_watch_free(w);
	for (int i = 0; i <= NKEYS; i++)
		free(ws.vals[i]);
	store_close(ws.s);
	return 0;
}

/* puts URL PREFIX FROM TO / dels URL PREFIX FROM TO STEP / done URL PREFIX */
static int
cmd_puts(const char *url, const char *prefix, int from, int to, int step, int del)
{
	struct store *s = open_or_die(url);
	char key[256], val[64];
	int rv = 0;

	for (int i = from; i <= to; i += step) {
		snprintf(key, sizeof(key), "%sk%04d", prefix, i);
		snprintf(val, sizeof(val), "v%d-%lld", i, (long long)now_ms());
		if ((del ? store_delete(s, key) : store_put(s, key, val, strlen(val))) < 0) {
			fprintf(stderr, "%s %s: %s\n", del ? "delete" : "put", key, store_error(s));
			rv = 1;
			break;
		}
	}
	store_close(s);
	return rv;
}

static int
cmd_done(const char *url, const char *prefix)
{
	struct store *s = open_or_die(url);
	char key[256];
	int rv;

	snprintf(key, sizeof(key), "%sdone", prefix);
	rv = store_put(s, key, "1", 1) < 0;
	store_close(s);
	return rv;
}

/* hold URL KEY: take the lock, say "HELD", keep it until killed */
static int
cmd_hold(const char *url, const char *key)
{
	struct store *s = open_or_die(url);
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((r = store_try_lock(s, key, NULL)) != 1) {
		if (r < 0)
			fprintf(stderr, "hold: %s\n", store_error(s));
		usleep(50000);
	}
	printf("HELD %s\n", store_identity(s));
	for (;;)
		pause();
	return 0;
}

/* take URL KEY MS: try every 20 ms; prints "TAKEN ms" or fails after MS */
static int
cmd_take(const char *url, const char *key, int ms)
{
	struct store *s = open_or_die(url);
	int64_t t0 = now_ms();
	char *holder = NULL;
	int r, first = 1;

	while ((r = store_try_lock(s, key, &holder)) != 1 && now_ms() - t0 < ms) {
		if (first && r == 0)
			printf("HOLDER %s\n", holder);
		first = 0;
		free(holder);
		holder = NULL;
		usleep(20000);
	}
	free(holder);
	if (r == 1)
		printf("TAKEN %lld\n", (long long)(now_ms() - t0));
	else
		printf("NOT TAKEN after %lld ms\n", (long long)(now_ms() - t0));
	store_close(s);
	return r == 1 ? 0 : 1;
}

/*
 * cluster URLS: TAP.  Watch and a lock, 100 puts, "HALF" (the script kills
 * the leader and writes a line to stdin), 100 more puts; every event must
 * arrive once and the lock must stay ours.
 */
static int
cmd_cluster(const char *url)
{
	struct store *a = open_or_die(url), *b = open_or_die(url);
	struct lat lt = { .order_ok = 1 };
	struct store_watch *w;
	char key[64], line[16];
	int64_t t0;
	int i, fails = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	store_delete_prefix(a, "/c/");
	w = store_watch_new(a, "/c/", 0, lat_cb, &lt);
	ok(w != NULL, "watch on the cluster");
	if (w == NULL)
		return done_testing();
	is_int(store_try_lock(a, "/lock/c", NULL), 1, "lock taken");
	is_int(store_try_lock(b, "/lock/c", NULL), 0, "other handle sees it held");
	for (i = 1; i <= 200; i++) {
		if (i == 101) {
			printf("# HALF\n");
			if (fgets(line, sizeof(line), stdin) == NULL)
				break;
			t0 = now_ms();
		}
		snprintf(key, sizeof(key), "/c/k%04d", i);
		if (store_put(a, key, "v", 1) < 0) {
			printf("# put %s: %s\n", key, store_error(a));
			fails++;
		}
		if (i == 101)
			diag("first put after the leader died took %lld ms", (long long)(now_ms() - t0));
		pump(w, 0);
	}
	is_int(fails, 0, "every put succeeded across the leader change");
	t0 = now_ms();
	while (lt.nput < 200 && now_ms() - t0 < 20000)
		pump(w, 200);
	is_int(lt.nput, 200, "watch saw every put once");
	ok(lt.order_ok, "in revision order");
	/* outlive a session TTL: the keep-alive must have found a live member */
	t0 = now_ms();
	while (now_ms() - t0 < 6000)
		pump(w, 200);
	is_int(store_try_lock(a, "/lock/c", NULL), 1, "lock still ours after the leader change");
	is_int(store_try_lock(b, "/lock/c", NULL), 0, "and still held for the others");
	store_put(a, "/c/after", "v", 1);
	t0 = now_ms();
	while (lt.nput < 201 && now_ms() - t0 < 10000)
		pump(w, 200);
	is_int(lt.nput, 201, "watch goes on");
	store_watch_free(w);
	store_delete_prefix(a, "/c/");
	store_close(a);
	store_close(b);
	return done_testing();
}

int
main(int argc, char **argv)
{
	const char *url;

	signal(SIGPIPE, SIG_IGN);
	if (argc >= 4 && strcmp(argv[1], "watch") == 0)
		return cmd_watch(argv[2], argv[3]);
	if (argc >= 6 && strcmp(argv[1], "puts") == 0)
		return cmd_puts(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), 1, 0);
	if (argc >= 7 && strcmp(argv[1], "dels") == 0)
		return cmd_puts(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), 1);
	if (argc >= 4 && strcmp(argv[1], "done") == 0)
		return cmd_done(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "hold") == 0)
		return cmd_hold(argv[2], argv[3]);
	if (argc >= 5 && strcmp(argv[1], "take") == 0)
		return cmd_take(argv[2], argv[3], atoi(argv[4]));
	if (argc >= 3 && strcmp(argv[1], "cluster") == 0)
		return cmd_cluster(argv[2]);
	if (argc > 1) {
		fprintf(stderr, "usage: %s [watch|puts|dels|done|hold|take|cluster] ...\n", argv[0]);
		return 2;
	}
	offline_tests();
	if ((url = getenv("DECOD_TEST_ETCD")) != NULL && *url != '\0')
		online_tests(url);
	else
		diag("DECOD_TEST_ETCD unset: the online part runs from t/integration/etcd_ops.sh");
	return done_testing();
}
