/*
 * store_local_test - what only the local backend has: hostile keys stay
 * inside the root, the on-disk layout, a TTL that survives a reopen, expiry
 * noticed by a watch with nobody reading, a new value behind a stat that
 * did not change, the polling fallback, and a job lock held by another
 * process.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/store.h"
#include "common/util.h"
#include "t/tap.h"

static char *root;

static struct store *
open_at(const char *dir)
{
	char err[512], *url = xasprintf("local:%s", dir);
	struct store *s = store_open(url, NULL, err, sizeof(err));

	if (s == NULL)
		diag("store_open %s: %s", url, err);
	free(url);
	return s;
}

static int
exists(const char *rel)
{
	char *p = xasprintf("%s/%s", root, rel);
	int rv = access(p, F_OK) == 0;

	free(p);
	return rv;
}

static void
test_hostile(struct store *s)
{
	char k4k[4200], comp300[400], comp254[300], comp253[300];
	const struct {
		const char *label, *key, *why;	/* why: text the error must contain */
	} bad[] = {
		{ "dot-dot", "..", "\"..\"" },
		{ "leading dot-dot", "../escape", "\"..\"" },
		{ "dot-dot in the middle", "a/../../b", "\"..\"" },
		{ "dot-dot after the prefix", "/decod/../../escape", "\"..\"" },
		{ "trailing dot-dot", "/decod/x/..", "\"..\"" },
		{ "newline", "/decod/a\nb", "control" },
		{ "control byte", "/decod/a\001b", "control" },
		{ "DEL byte", "/decod/a\177", "control" },
		{ "escape byte", "/decod/\033[31m", "control" },
		{ "backslash", "/decod/a\\..\\b", "backslash" },
		{ "4 KB name", k4k, "1024" },
		{ "300-byte component", comp300, "253" },
		{ "254-byte component", comp254, "253" },
		{ "empty", "", "empty" },
		{ "slashes only", "///", "empty" },
	};
	char *v = NULL;
	size_t len;

	memset(k4k, 'k', sizeof(k4k) - 1);
	k4k[0] = '/';
	k4k[sizeof(k4k) - 1] = '\0';
	snprintf(comp300, sizeof(comp300), "/decod/%0300d", 7);
	snprintf(comp254, sizeof(comp254), "/decod/%0254d", 7);
	snprintf(comp253, sizeof(comp253), "/decod/%0253d", 7);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		is_int(store_put(s, bad[i].key, "x", 1), -1, "put refuses %s", bad[i].label);
		ok(strstr(store_error(s), bad[i].why) != NULL, "%s: error says why: %s",
		    bad[i].label, store_error(s));
		ok(strchr(store_error(s), '\n') == NULL && strchr(store_error(s), '\033') == NULL,
		    "%s: error has no raw control bytes", bad[i].label);
		is_int(store_get(s, bad[i].key, &v, &len), -1, "get refuses %s", bad[i].label);
		is_int(store_delete(s, bad[i].key), -1, "delete refuses %s", bad[i].label);
		is_int(store_try_lock(s, bad[i].key, NULL), -1, "lock refuses %s", bad[i].label);
	}
	is_int(store_list(s, "/a/../..", &(struct store_list){ 0 }), -1, "list refuses ..");
	is_int(store_delete_prefix(s, "../"), -1, "delete prefix refuses ..");
	ok(store_watch_new(s, "/x/../../y", 0, NULL, NULL) == NULL, "watch refuses ..");
	ok(!exists("../escape.v") && !exists("../escape") && !exists("escape.v"),
	    "nothing was written outside the root");

	/* absolute-looking and untidy keys are cleaned and stay inside */
	is_int(store_put(s, "/decod//etc/passwd", "p", 1), 0, "absolute-looking key after the prefix");
	ok(exists("kv/decod.d/etc.d/passwd.v"), "it lands inside the root");
	is_int(store_get(s, "decod/./etc/passwd", &v, &len), 0, "the cleaned form names the same key");
	free(v);
	is_int(store_put(s, comp253, "c", 1), 0, "a 253-byte component is fine");
	is_int(store_get(s, comp253, &v, &len), 0, "and reads back");
	free(v);
	ok(store_delete_prefix(s, "/decod") == 2, "clean up");
}

static void
test_layout(struct store *s)
{
	struct store_list l;
	struct stat st;
	char *data, *p, *v = NULL;
	size_t len;

	ok(stat(root, &st) == 0 && (st.st_mode & 0777) == 0700, "root is created 0700");
	is_int(store_put(s, "/a", "1", 1), 0, "put /a");
	is_int(store_put(s, "/a/b", "2", 1), 0, "put /a/b (a key under a key)");
	ok(exists("kv/a.v") && exists("kv/a.d/b.v"), "files kv/a.v and kv/a.d/b.v");
	is_int(store_get(s, "/a", &v, &len), 0, "/a reads back");
	is_str(v, "1", "/a value");
	free(v);
	p = xasprintf("%s/kv/a.d/b.v", root);
	data = read_file(p, &len, 0);
	ok(data != NULL && strncmp(data, "DKV1 ", 5) == 0 && strstr(data, " 0\n2") != NULL,
	    "value file: header with revision and no expiry, then the value");
	free(data);
	free(p);
	is_int(store_list(s, "a", &l), 0, "list without a leading slash");
	ok(l.n == 2 && strcmp(l.kvs[0].key, "/a") == 0 && strcmp(l.kvs[1].key, "/a/b") == 0,
	    "keys come back with one leading slash");
	store_list_free(&l);
	/* a value file dropped in by hand, without a header */
	p = xasprintf("%s/kv/hand.v", root);
	ok(write_file_atomic(p, "plain", 5, 0600) == 0, "drop in a plain file");
	free(p);
	is_int(store_get(s, "/hand", &v, &len), 0, "a headerless file reads");
	is_str(v, "plain", "as its whole content");
	free(v);
	is_int(store_delete(s, "/a/b"), 0, "delete /a/b");
	ok(!exists("kv/a.d"), "its empty folder is removed");
	ok(exists("kv/a.v"), "/a stays");
	is_int(store_delete_prefix(s, "/"), 2, "delete prefix / counts every key");
	ok(exists("kv") && !exists("kv/a.v"), "the kv folder stays, emptied");
}

static void
test_ttl_reopen(void)
{
	struct store *s = open_at(root);
	char *p, *data, *v = NULL;
	size_t len;
	long long rev = 0, exp = 0;
	int64_t start = now_ms();
	int rv = 0;

	is_int(store_put_ttl(s, "/t/x", "ttl", 3, 2), 0, "put with ttl 2 s");
	store_close(s);
	p = xasprintf("%s/kv/t.d/x.v", root);
	data = read_file(p, &len, 0);
	ok(data != NULL && sscanf(data, "DKV1 %lld %lld", &rev, &exp) == 2 &&
	    exp > wall_ms() && exp <= wall_ms() + 2000, "the file keeps the absolute expiry");
	free(data);
	s = open_at(root);
	is_int(store_get(s, "/t/x", &v, &len), 0, "after reopen the key is still there");
	free(v);
	while (now_ms() - start < 10000) {
		if ((rv = store_get(s, "/t/x", &v, &len)) != 0)
			break;
		free(v);
		usleep(50000);
	}
	is_int(rv, 1, "and expires on time after the reopen");
	ok(access(p, F_OK) < 0 && errno == ENOENT, "the expired file is removed when read");
	free(p);
	store_close(s);
}

struct seen {
	int n, puts, dels;
	char last[256], value[64];
	int64_t del_at;
};

static void
on_event(void *arg, const struct store_event *ev)
{
	struct seen *s = arg;

	s->n++;
	if (ev->type == STORE_EV_PUT)
		s->puts++;
	else if (ev->type == STORE_EV_DELETE) {
		s->dels++;
		s->del_at = now_ms();
	}
	snprintf(s->last, sizeof(s->last), "%s %s", ev->type == STORE_EV_PUT ? "put" : "del",
	    ev->key);
	snprintf(s->value, sizeof(s->value), "%.*s", ev->type == STORE_EV_PUT ?
	    (int)ev->vlen : 0, ev->type == STORE_EV_PUT ? ev->value : "");
}

/*
 * A stat that repeats.  ext4 with a journal gives a freed inode to the
 * next file at once, so a key written twice in one clock tick with values
 * of one size can stat as it did before; this machine's file system does
 * not reuse inodes that soon, so the test makes the file whose inode is
 * fake_ino stat as the one it replaced (the store's stat and fstat calls
 * resolve to these).
 */
static ino_t fake_ino;
static struct stat fake_as;

static void
fake(struct stat *st)
{
	if (fake_ino != 0 && st->st_ino == fake_ino) {
		st->st_dev = fake_as.st_dev;
		st->st_ino = fake_as.st_ino;
		st->st_size = fake_as.st_size;
		st->st_mtim = fake_as.st_mtim;
		st->st_ctim = fake_as.st_ctim;
	}
}

int
stat(const char *path, struct stat *st)
{
	int rv = fstatat(AT_FDCWD, path, st, 0);

	if (rv == 0)
		fake(st);
	return rv;
}

int
fstat(int fd, struct stat *st)
{
	int rv = fstatat(fd, "", st, AT_EMPTY_PATH);

	if (rv == 0)
		fake(st);
	return rv;
}

static void
pump_until(struct store_watch *w, struct seen *s, int n, int ms)
{
	int64_t end = now_ms() + ms;
	struct pollfd pfd;
	int t;

	while (s->n < n && now_ms() < end) {
		pfd.fd = store_watch_fd(w);
		pfd.events = POLLIN;
		t = store_watch_timeout_ms(w);
		if (t < 0 || t > 100)
			t = 100;
		if (pfd.fd >= 0)
			(void)poll(&pfd, 1, t);
		else
			usleep((useconds_t)t * 1000);
		store_watch_dispatch(w);
	}
}

static void
test_watch_expiry(struct store *s)
{
	struct seen ev;
	struct store_watch *w;
	int64_t put_at;
	char *p;

	memset(&ev, 0, sizeof(ev));
	w = store_watch_new(s, "/e/", 0, on_event, &ev);
	ok(w != NULL && store_watch_fd(w) >= 0, "inotify watch");
	put_at = now_ms();
	is_int(store_put_ttl(s, "/e/x", "1", 1, 1), 0, "put with ttl 1 s");
	pump_until(w, &ev, 1, 5000);
	is_str(ev.last, "put /e/x", "put seen");
	ok(store_watch_timeout_ms(w) <= 1005, "the watch asks to wake for the expiry (%d ms)",
	    store_watch_timeout_ms(w));
	pump_until(w, &ev, 2, 5000);
	is_str(ev.last, "del /e/x", "expiry reported as a delete with nobody reading");
	ok(ev.del_at - put_at >= 900 && ev.del_at - put_at < 2500,
	    "noticed within about a second of the expiry (%lld ms after the put)",
	    (long long)(ev.del_at - put_at));
	p = xasprintf("%s/kv/e.d/x.v", root);
	ok(access(p, F_OK) < 0, "the watch removed the expired file");
	free(p);
	store_watch_free(w);
}

/*
 * the watch is told a key's file was written, and its stat is what it was:
 * the value's revision decides, so the new value is reported
 */
static void
test_watch_same_stat(struct store *s)
{
	struct store_watch *w;
	struct seen ev;
	struct stat st;
	char *p = xasprintf("%s/kv/sig.d/k.v", root);

	memset(&ev, 0, sizeof(ev));
	w = store_watch_new(s, "/sig/", 0, on_event, &ev);
	ok(w != NULL && store_watch_fd(w) >= 0, "inotify watch of /sig/");
	if (w == NULL) {
		free(p);
		return;
	}
	is_int(store_put(s, "/sig/k", "aaaa", 4), 0, "put /sig/k aaaa");
	pump_until(w, &ev, 1, 5000);
	is_str(ev.value, "aaaa", "the watch reports aaaa");
	ok(lstat(p, &fake_as) == 0, "the value file's stat");
	is_int(store_put(s, "/sig/k", "bbbb", 4), 0, "put /sig/k bbbb: a new file of that size");
	ok(lstat(p, &st) == 0 && st.st_ino != fake_as.st_ino, "... on another inode");
	fake_ino = st.st_ino;	/* which from here stats as the old file */
	ok(stat(p, &st) == 0 && st.st_ino == fake_as.st_ino && st.st_size == fake_as.st_size &&
	    st.st_mtim.tv_nsec == fake_as.st_mtim.tv_nsec, "stat now gives the old file's signature");
	pump_until(w, &ev, 2, 5000);
	is_int(ev.puts, 2, "the watch reports the write all the same");
	is_str(ev.value, "bbbb", "... with the new value");
	is_int(store_put(s, "/sig/k", "cccc", 4), 0, "put /sig/k cccc");
	fake_ino = 0;
	pump_until(w, &ev, 3, 5000);
	is_str(ev.value, "cccc", "and the next write as usual");
	is_int(ev.n, 3, "three events, no more");
	store_watch_free(w);
	free(p);
}

static void
test_polling(struct store *s)
{
	struct store *s2 = open_at(root);
	struct store_watch *w;
	struct seen ev;

	memset(&ev, 0, sizeof(ev));
	setenv("DECOD_STORE_LOCAL_POLL", "1", 1);
	w = store_watch_new(s, "/poll", 0, on_event, &ev);
	unsetenv("DECOD_STORE_LOCAL_POLL");
	ok(w != NULL, "polling watch");
	if (w == NULL)
		return;
	is_int(store_watch_fd(w), -1, "a polling watch has no fd");
	ok(store_watch_timeout_ms(w) > 0 && store_watch_timeout_ms(w) <= 500,
	    "and a timeout of at most 500 ms (%d)", store_watch_timeout_ms(w));
	store_put(s2, "/poll/a/b", "1", 1);
	pump_until(w, &ev, 1, 5000);
	is_str(ev.last, "put /poll/a/b", "polling sees a put in a new folder");
	store_put(s2, "/poll", "2", 1);
	store_put(s2, "/pollx", "3", 1);
	pump_until(w, &ev, 2, 5000);
	is_str(ev.last, "put /poll", "polling sees the prefix key");
	store_put(s2, "/poll/a/b", "changed", 7);
	pump_until(w, &ev, 3, 5000);
	is_str(ev.last, "put /poll/a/b", "polling sees an overwrite");
	store_delete(s2, "/poll/a/b");
	pump_until(w, &ev, 4, 5000);
	is_str(ev.last, "del /poll/a/b", "polling sees a delete");
	is_int(ev.n, 4, "four events, none for /pollx");
	store_watch_free(w);
	store_close(s2);
}

static void
test_lock_other_process(struct store *s)
{
	int up[2], down[2];
	char c = 0, *holder = NULL, want[160], host[64];
	pid_t pid;
	int status, rv = 0;

	if (pipe(up) < 0 || pipe(down) < 0) {
		ok(0, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	if ((pid = fork()) == 0) {
		struct store *cs;

		close(up[0]);
		close(down[1]);
		cs = open_at(root);
		c = cs != NULL && store_try_lock(cs, "/jobs/one", NULL) == 1 ? 'y' : 'n';
		if (write(up[1], &c, 1) != 1)
			_exit(2);
		(void)read(down[0], &c, 1);	/* hold until the parent says so */
		_exit(0);		/* the lock dies with the process */
	}
	close(up[1]);
	close(down[0]);
	ok(read(up[0], &c, 1) == 1 && c == 'y', "child process takes the lock");
	is_int(store_try_lock(s, "/jobs/one", &holder), 0, "parent does not get it");
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(want, sizeof(want), "%s:%ld", host, (long)pid);
	is_str(holder, want, "holder is the child's host:pid");
	free(holder);
	close(down[1]);		/* child exits */
	waitpid(pid, &status, 0);
	close(up[0]);
	rv = store_try_lock(s, "/jobs/one", &holder);
	is_int(rv, 1, "after the child exits the parent gets the lock at once");
	store_unlock(s, "/jobs/one");
}

static void
test_bad_urls(void)
{
	char err[256] = "";

	ok(store_open("local:", NULL, err, sizeof(err)) == NULL && strstr(err, "folder"),
	    "local: without a folder is refused: %s", err);
	ok(store_open("local:/proc/decod-no/x", NULL, err, sizeof(err)) == NULL &&
	    strstr(err, "/proc/decod-no/x"), "an uncreatable folder is refused: %s", err);
}

/* test_existing - a reader opens a store it must not create */
static void
test_existing(const char *dir)
{
	char err[256] = "", *url = xasprintf("local:%s/absent", dir), *path;
	struct store *s;
	struct stat sb;
	int missing = -1;

	ok(store_open_existing(url, NULL, &missing, err, sizeof(err)) == NULL && missing == 1 &&
	    strstr(err, "no store at") != NULL, "an absent store is said: %s", err);
	path = xasprintf("%s/absent", dir);
	ok(stat(path, &sb) < 0 && errno == ENOENT, "... and not made");
	ok((s = store_open(url, NULL, err, sizeof(err))) != NULL &&
	    store_put(s, "/decofiles/ns/a", "{}", 2) == 0, "a writer makes it");
	store_close(s);
	ok((s = store_open_existing(url, NULL, &missing, err, sizeof(err))) != NULL &&
	    missing == 0, "then a reader opens it");
	store_close(s);
	ok(store_open_existing("bogus:/x", NULL, &missing, err, sizeof(err)) == NULL &&
	    missing == 0, "a bad URL is another failure");
	free(path);
	free(url);
}

int
main(void)
{
	char tmpl[] = "/tmp/decod-store-local.XXXXXX";
	struct store *s;

	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(tmpl) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	root = xasprintf("%s/store", tmpl);
	if ((s = open_at(root)) == NULL) {
		printf("Bail out! cannot open the store\n");
		return 1;
	}
	test_hostile(s);
	test_layout(s);
	test_ttl_reopen();
	test_watch_expiry(s);
	test_watch_same_stat(s);
	test_polling(s);
	test_lock_other_process(s);
	test_bad_urls();
	test_existing(tmpl);
	store_close(s);
	rm_rf(tmpl);
	free(root);
	return done_testing();
}
