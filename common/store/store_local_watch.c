/*
 * store_local_watch - the local store's watch: inotify on every folder
 * under the watched prefix (polling every 500 ms where inotify fails),
 * each change confirmed by reading the value file and compared
 * with what the watch last saw, so it reports states: a key written and
 * removed between two dispatches may be nothing, several writes one PUT.
 * A full rescan every 30 s catches what a lost event would hide.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "common/store_local.h"
#include "common/util.h"

#define LOCAL_POLL_MS 500
#define LOCAL_RESCAN_MS 30000

/* known - what a watch last saw of one key */
struct known {
	char *key;
	int64_t rev, exp;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns, ctime_ns;
	int seen;
	size_t hnext;		/* next in its hash bucket, as an index + 1 (0: none) */
};

struct wdir {
	int wd;
	char *path, *dkey;
	size_t hnext;		/* next in its wd bucket, as an index + 1 (0: none) */
};

/* pending - a change found by a scan, applied in revision order */
struct pending {
	char *key;
	int del;
	char *val;
	size_t vlen;
	int64_t rev, exp;
	struct stat st;
};

struct plist {
	struct pending *v;
	size_t n, cap;
};

struct lwatch {
	struct local *l;
	char *pkey;		/* "/a/b", or "" for every key */
	int self;		/* the key pkey itself is watched too */
	int ifd;		/* inotify, or -1 when polling */
	/*
	 * every watched folder, with an index by wd: a search of the array
	 * per inotify event cost ndirs steps, and the status prefix has one
	 * folder per CR (10,000 CRs, four fragments each written at once)
	 */
	struct wdir *dirs;
	size_t ndirs, capdirs;
	size_t *wbucket, nwbucket;
	/*
	 * unordered, with a hash index (buckets hold an index + 1): a sorted
	 * array cost a memmove of half of it per new key, 40,000 status keys
	 * of 10,000 CRs written at once
	 */
	struct known *known;
	size_t nknown, capknown;
	size_t *bucket, nbucket;
	int64_t next_scan;	/* monotonic ms */
	int need_rescan;
};
static size_t *
known_head(const struct lwatch *w, const char *key)
{
	return &w->bucket[str_hash(key) & (w->nbucket - 1)];
}

static struct known *
known_find(struct lwatch *w, const char *key)
{
	if (w->nbucket == 0)
		return NULL;
	for (size_t i = *known_head(w, key); i != 0; i = w->known[i - 1].hnext)
		if (strcmp(w->known[i - 1].key, key) == 0)
			return &w->known[i - 1];
	return NULL;
}

/* known_rehash - the buckets again, twice as many as keys at least */
static void
known_rehash(struct lwatch *w)
{
	size_t nb = w->nbucket ? w->nbucket : 64;

	while (nb < 2 * w->nknown)
		nb *= 2;
	free(w->bucket);
	w->nbucket = nb;
	w->bucket = xcalloc(nb, sizeof(*w->bucket));
	for (size_t i = 0; i < w->nknown; i++) {
		size_t *h = known_head(w, w->known[i].key);

		w->known[i].hnext = *h;
		*h = i + 1;
	}
}

static struct known *
known_add(struct lwatch *w, const char *key)
{
	struct known *k;
	size_t *h;

	if ((k = known_find(w, key)) != NULL)
		return k;
	if (w->nknown == w->capknown) {
		w->capknown = w->capknown ? w->capknown * 2 : 32;
		w->known = xrealloc(w->known, w->capknown * sizeof(*w->known));
	}
	k = &w->known[w->nknown++];
	memset(k, 0, sizeof(*k));
	k->key = xstrdup(key);
	if (2 * w->nknown > w->nbucket) {
		known_rehash(w);
	} else {
		h = known_head(w, key);
		k->hnext = *h;
		*h = w->nknown;
	}
	return k;
}

/* known_unlink - take index i out of its bucket's chain */
static void
known_unlink(struct lwatch *w, size_t i)
{
	for (size_t *p = known_head(w, w->known[i].key); *p != 0; p = &w->known[*p - 1].hnext)
		if (*p == i + 1) {
			*p = w->known[i].hnext;
			return;
		}
}

/* known_del - forget k; the last entry takes its place (the order means nothing) */
static void
known_del(struct lwatch *w, struct known *k)
{
	size_t pos = (size_t)(k - w->known), last = w->nknown - 1;

	known_unlink(w, pos);
	free(k->key);
	if (pos != last) {
		known_unlink(w, last);
		w->known[pos] = w->known[last];
		w->known[pos].hnext = *known_head(w, w->known[pos].key);
		*known_head(w, w->known[pos].key) = pos + 1;
	}
	w->nknown--;
}

static int
same_file(const struct known *k, const struct stat *st)
{
	return k->dev == st->st_dev && k->ino == st->st_ino && k->size == st->st_size &&
	    k->mtime_ns == local_ts_ns(&st->st_mtim) && k->ctime_ns == local_ts_ns(&st->st_ctim);
}

static void
plist_push(struct plist *pl, struct pending *p)
{
	if (pl->n == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 16;
		pl->v = xrealloc(pl->v, pl->cap * sizeof(*pl->v));
	}
	pl->v[pl->n++] = *p;
}

/*
 * probe - compare the file of key with what the watch knows; queue a change.
 * With trust_stat (the periodic scan: every key, most unchanged), a key the
 * watch knows and whose stat is as it was is taken as unchanged.  Without
 * (an inotify event said the file was written, or events were lost), the
 * value is read and its revision decides: a stat can repeat for a new
 * value (ext4 with a journal gives a freed inode to the next file, one
 * of the same size written within one clock tick has the same times), and
 * a change the watch took for none would stay unseen until the key's next
 * write.  A key it does not know yet (the opening scan: 40,000 status
 * fragments at a restart) is opened once, then fstat and read on that fd,
 * not walked twice.  O_NONBLOCK: a FIFO someone put there cannot hold the
 * loop.
 */
static void
probe(struct lwatch *w, const char *key, const char *path, struct plist *pl, int trust_stat)
{
	struct known *k = known_find(w, key);
	struct pending p;
	struct stat st;
	int rv, fd = -1;

	memset(&p, 0, sizeof(p));
	if (k != NULL)
		k->seen = 1;
	if (k == NULL || !trust_stat) {
		if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
			/* out of fds and the like: the periodic scan looks again */
			if (k != NULL && (errno == ENOENT || errno == ENOTDIR))
				goto gone;
			return;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			if (k != NULL)
				goto gone;
			return;
		}
	} else if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		goto gone;
	} else if (same_file(k, &st) && !local_expired(k->exp))
		return;
	if (fd >= 0) {
		rv = local_read_value_fd(fd, &p.val, &p.vlen, &p.rev, &p.exp);
		close(fd);
	} else
		rv = local_read_value(path, &p.val, &p.vlen, &p.rev, &p.exp);
	if (rv != 0 || local_expired(p.exp)) {
		free(rv == 0 ? p.val : NULL);
		p.val = NULL;
		if (k == NULL)
			return;
		p.del = 1;
	}
	p.key = xstrdup(key);
	p.st = st;
	plist_push(pl, &p);
	return;
gone:
	p.key = xstrdup(key);
	p.del = 1;
	plist_push(pl, &p);
}

static int
pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->del != y->del)
		return y->del - x->del;	/* deletions first */
	return x->rev < y->rev ? -1 : x->rev > y->rev;
}

/* keep - the value of a key the opening scan read, moved into the list out */
static void
keep(struct store_list *out, struct pending *p)
{
	struct store_kv *kv;

	if (out->n % 64 == 0)
		out->kvs = xrealloc(out->kvs, (out->n + 64) * sizeof(*out->kvs));
	kv = &out->kvs[out->n++];
	kv->key = p->key;
	kv->value = p->val;
	kv->vlen = p->vlen;
	kv->mod_revision = p->rev;
	p->key = NULL;
	p->val = NULL;
}

/*
 * apply - record the queued changes and, when emit, report them.  Changes
 * from inotify keep their order; a rescan (sorted) cannot know it, so it
 * reports deletions first, then writes in revision order.  out (the
 * opening scan of local_watch_new_list, emit 0): the values read go there.
 */
static void
apply(struct lwatch *w, struct store_watch *sw, struct plist *pl, int emit, int sorted,
    struct store_list *out)
{
	struct store_event ev;
	struct known *k;
	int changed;

	if (sorted && pl->n > 1)
		qsort(pl->v, pl->n, sizeof(*pl->v), pending_cmp);
	for (size_t i = 0; i < pl->n; i++) {
		struct pending *p = &pl->v[i];

		memset(&ev, 0, sizeof(ev));
		ev.key = p->key;
		k = known_find(w, p->key);
		if (p->del) {
			if (k != NULL) {
				known_del(w, k);
				ev.type = STORE_EV_DELETE;
				if (emit)
					store_emit(sw, &ev);
			}
		} else {
			changed = k == NULL || k->rev != p->rev || p->rev == 0;
			k = known_add(w, p->key);
			k->rev = p->rev;
			k->exp = p->exp;
			k->dev = p->st.st_dev;
			k->ino = p->st.st_ino;
			k->size = p->st.st_size;
			k->mtime_ns = local_ts_ns(&p->st.st_mtim);
			k->ctime_ns = local_ts_ns(&p->st.st_ctim);
			k->seen = 1;
			if (emit && changed) {
				ev.type = STORE_EV_PUT;
				ev.value = p->val;
				ev.vlen = p->vlen;
				ev.revision = p->rev;
				store_emit(sw, &ev);
			}
			if (out != NULL)
				keep(out, p);
		}
		free(p->key);
		free(p->val);
	}
	pl->n = 0;
}

/* dir_relevant - a folder with key path dkey may hold keys under the prefix */
static int
dir_relevant(const char *pkey, const char *dkey)
{
	size_t pn = strlen(pkey), dn = strlen(dkey);

	if (pn == 0 || dn == 0)
		return 1;
	if (dn <= pn)
		return strncmp(pkey, dkey, dn) == 0 && (pkey[dn] == '\0' || pkey[dn] == '/');
	return strncmp(dkey, pkey, pn) == 0 && dkey[pn] == '/';
}

static size_t *
wdir_head(const struct lwatch *w, int wd)
{
	return &w->wbucket[(unsigned)wd & (w->nwbucket - 1)];
}

/* wdir_find - the index + 1 of the folder watched as wd, 0 when none */
static size_t
wdir_find(const struct lwatch *w, int wd)
{
	if (w->nwbucket == 0)
		return 0;
	for (size_t i = *wdir_head(w, wd); i != 0; i = w->dirs[i - 1].hnext)
		if (w->dirs[i - 1].wd == wd)
			return i;
	return 0;
}

/* wdir_index - the wd buckets again, twice as many as folders at least */
static void
wdir_index(struct lwatch *w)
{
	size_t nb = w->nwbucket ? w->nwbucket : 64;

	while (nb < 2 * w->capdirs)
		nb *= 2;
	free(w->wbucket);
	w->nwbucket = nb;
	w->wbucket = xcalloc(nb, sizeof(*w->wbucket));
	for (size_t i = 0; i < w->ndirs; i++) {
		size_t *h = wdir_head(w, w->dirs[i].wd);

		w->dirs[i].hnext = *h;
		*h = i + 1;
	}
}

static void
wdir_set(struct lwatch *w, int wd, const char *path, const char *dkey)
{
	size_t i = wdir_find(w, wd);

	if (i == 0) {
		if (w->ndirs == w->capdirs) {
			w->capdirs = w->capdirs ? w->capdirs * 2 : 16;
			w->dirs = xrealloc(w->dirs, w->capdirs * sizeof(*w->dirs));
		}
		i = ++w->ndirs;
		w->dirs[i - 1].wd = wd;
		if (w->nwbucket < 2 * w->capdirs)
			wdir_index(w);
		else {
			w->dirs[i - 1].hnext = *wdir_head(w, wd);
			*wdir_head(w, wd) = i;
		}
	} else {
		free(w->dirs[i - 1].path);
		free(w->dirs[i - 1].dkey);
	}
	w->dirs[i - 1].path = xstrdup(path);
	w->dirs[i - 1].dkey = xstrdup(dkey);
}

/* wdir_unlink - take index i out of its wd bucket's chain */
static void
wdir_unlink(struct lwatch *w, size_t i)
{
	for (size_t *p = wdir_head(w, w->dirs[i].wd); *p != 0; p = &w->dirs[*p - 1].hnext)
		if (*p == i + 1) {
			*p = w->dirs[i].hnext;
			return;
		}
}

/* wdir_drop - forget the folder watched as wd; the last one takes its place */
static void
wdir_drop(struct lwatch *w, int wd)
{
	size_t i = wdir_find(w, wd), last = w->ndirs - 1;

	if (i-- == 0)
		return;
	wdir_unlink(w, i);
	free(w->dirs[i].path);
	free(w->dirs[i].dkey);
	if (i != last) {
		wdir_unlink(w, last);
		w->dirs[i] = w->dirs[last];
		w->dirs[i].hnext = *wdir_head(w, w->dirs[i].wd);
		*wdir_head(w, w->dirs[i].wd) = i + 1;
	}
	w->ndirs--;
}

static void
go_polling(struct lwatch *w)
{
	if (w->ifd >= 0)
		close(w->ifd);
	w->ifd = -1;
	for (size_t i = 0; i < w->ndirs; i++) {
		free(w->dirs[i].path);
		free(w->dirs[i].dkey);
	}
	w->ndirs = 0;
	if (w->nwbucket > 0)
		memset(w->wbucket, 0, w->nwbucket * sizeof(*w->wbucket));
}

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | \
	IN_CLOSE_WRITE | IN_DELETE_SELF | IN_ONLYDIR)

/*
 * scan_dir - watch dir (when inotify is on) and probe every relevant key
 * (trust_stat: see probe)
 */
static void
scan_dir(struct lwatch *w, const char *dir, const char *dkey, struct plist *pl,
    int trust_stat)
{
	DIR *d;
	struct dirent *de;
	char *sub, *key;
	size_t n;
	int wd;

	if (!dir_relevant(w->pkey, dkey))
		return;
	if (w->ifd >= 0) {
		if ((wd = inotify_add_watch(w->ifd, dir, WATCH_MASK)) >= 0)
			wdir_set(w, wd, dir, dkey);
		else if (errno == ENOENT || errno == ENOTDIR)
			return;
		else
			go_polling(w);	/* ENOSPC and friends */
	}
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (local_has_suffix(de->d_name, ".d")) {
			sub = xasprintf("%s/%s", dir, de->d_name);
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			scan_dir(w, sub, key, pl, trust_stat);
			free(sub);
			free(key);
		} else if (local_has_suffix(de->d_name, ".v")) {
			key = xasprintf("%s/%.*s", dkey, (int)(n - 2), de->d_name);
			if (local_key_matches(w->pkey, w->self, key)) {
				sub = xasprintf("%s/%s", dir, de->d_name);
				probe(w, key, sub, pl, trust_stat);
				free(sub);
			}
			free(key);
		}
	}
	closedir(d);
}

static int
kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_kv *)a)->key, ((const struct store_kv *)b)->key);
}

/*
 * rescan - look at the whole prefix again; keys gone since are deleted.
 * out: the opening scan's values, sorted by key (as local_list gives them).
 */
static void
rescan(struct lwatch *w, struct store_watch *sw, int emit, struct store_list *out)
{
	struct plist pl = { NULL, 0, 0 };
	struct pending p;

	for (size_t i = 0; i < w->nknown; i++)
		w->known[i].seen = 0;
	/*
	 * the periodic scan trusts stat; after lost events (an overflow, a
	 * folder moved away) every value is read.  Polling has no events:
	 * its stat every 500 ms is all it has (a fallback; see probe).
	 */
	scan_dir(w, w->l->kv, "", &pl, !w->need_rescan);
	for (size_t i = 0; i < w->nknown; i++)
		if (!w->known[i].seen) {
			memset(&p, 0, sizeof(p));
			p.key = xstrdup(w->known[i].key);
			p.del = 1;
			plist_push(&pl, &p);
		}
	apply(w, sw, &pl, emit, 1, out);
	free(pl.v);
	if (out != NULL && out->n > 1)
		qsort(out->kvs, out->n, sizeof(*out->kvs), kv_cmp);
	w->need_rescan = 0;
	w->next_scan = now_ms() + (w->ifd >= 0 ? LOCAL_RESCAN_MS : LOCAL_POLL_MS);
}

/* watch_open - the watch of prefix, its opening scan's values into out (NULL: none) */
static void *
watch_open(struct local *l, struct store_watch *sw, const char *prefix, struct store_list *out)
{
	struct lwatch *w;
	char rel[LOCAL_REL_BUF];
	const char *poll_env = getenv("DECOD_STORE_LOCAL_POLL");

	if (local_clean_key(l, "watch", prefix, rel, 1) < 0)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->l = l;
	w->pkey = rel[0] ? xasprintf("/%s", rel) : xstrdup("");
	w->self = local_prefix_self(prefix);
	w->ifd = -1;
	if (poll_env == NULL || strcmp(poll_env, "1") != 0) {
		if ((w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
			w->ifd = -1;	/* fall back to polling */
	}
	if (out != NULL)
		out->revision = local_rev(l);	/* read before the scan: the list is no older */
	rescan(w, sw, 0, out);
	return w;
}

void *
local_watch_new(void *be, struct store_watch *sw, const char *prefix, int64_t from_rev)
{
	(void)from_rev;		/* no history is kept: events from now on */
	return watch_open(be, sw, prefix, NULL);
}

/* local_watch_new_list - the opening scan reads every value: they are the list */
void *
local_watch_new_list(void *be, struct store_watch *sw, const char *prefix,
    struct store_list *out)
{
	return watch_open(be, sw, prefix, out);
}

int
local_watch_fd(void *wbe)
{
	return ((struct lwatch *)wbe)->ifd;
}

int
local_watch_timeout_ms(void *wbe)
{
	struct lwatch *w = wbe;
	int64_t t = w->next_scan - now_ms(), wall = wall_ms();

	for (size_t i = 0; i < w->nknown; i++)
		if (w->known[i].exp != 0 && w->known[i].exp - wall + 5 < t)
			t = w->known[i].exp - wall + 5;
	if (t < 0)
		t = 0;
	return (int)t;
}

/* inotify_event_do - act on one inotify event */
static void
inotify_event_do(struct lwatch *w, const struct inotify_event *ie, struct plist *pl)
{
	const struct wdir *d;
	char *path, *key;
	size_t n, i;

	if (ie->mask & IN_Q_OVERFLOW) {
		w->need_rescan = 1;
		return;
	}
	if (ie->mask & IN_IGNORED) {
		wdir_drop(w, ie->wd);
		return;
	}
	if ((i = wdir_find(w, ie->wd)) == 0 || ie->len == 0 || ie->name[0] == '\0')
		return;
	d = &w->dirs[i - 1];
	n = strlen(ie->name);
	if (ie->mask & IN_ISDIR) {
		if (!local_has_suffix(ie->name, ".d"))
			return;
		if (ie->mask & (IN_CREATE | IN_MOVED_TO)) {
			path = xasprintf("%s/%s", d->path, ie->name);
			key = xasprintf("%s/%.*s", d->dkey, (int)(n - 2), ie->name);
			scan_dir(w, path, key, pl, 0);	/* may invalidate d */
			free(path);
			free(key);
		} else if (ie->mask & IN_MOVED_FROM)
			w->need_rescan = 1;
		return;
	}
	if (!local_has_suffix(ie->name, ".v"))
		return;
	key = xasprintf("%s/%.*s", d->dkey, (int)(n - 2), ie->name);
	if (local_key_matches(w->pkey, w->self, key)) {
		path = xasprintf("%s/%s", d->path, ie->name);
		probe(w, key, path, pl, 0);
		free(path);
	}
	free(key);
}

int
local_watch_dispatch(void *wbe, struct store_watch *sw)
{
	struct lwatch *w = wbe;
	struct plist pl = { NULL, 0, 0 };
	char evbuf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ie;
	struct store_event ev;
	ssize_t n;
	int64_t wall;

	while (w->ifd >= 0) {
		n = read(w->ifd, evbuf, sizeof(evbuf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN) {
				store_set_error(w->l->s, "watch: inotify read: %s", strerror(errno));
				go_polling(w);
				w->need_rescan = 1;
			}
			break;
		}
		for (char *p = evbuf; p < evbuf + n; p += sizeof(*ie) + ie->len) {
			ie = (const struct inotify_event *)p;
			inotify_event_do(w, ie, &pl);
		}
		/* apply per read so a later event sees the effect of an earlier one */
		apply(w, sw, &pl, 1, 0, NULL);
	}
	apply(w, sw, &pl, 1, 0, NULL);
	free(pl.v);
	/* expiries: nobody may read the key, so the watch removes it itself */
	wall = wall_ms();
	for (size_t i = 0; i < w->nknown;) {
		struct known *k = &w->known[i];
		char *rel;

		if (k->exp == 0 || k->exp > wall) {
			i++;
			continue;
		}
		rel = k->key + 1;
		(void)local_expire_rel(w->l, rel);
		memset(&ev, 0, sizeof(ev));
		ev.type = STORE_EV_DELETE;
		ev.key = k->key;
		store_emit(sw, &ev);
		known_del(w, k);
	}
	if (w->need_rescan || now_ms() >= w->next_scan)
		rescan(w, sw, 1, NULL);
	return 0;
}

void
local_watch_free(void *wbe)
{
	struct lwatch *w = wbe;

	if (w == NULL)
		return;
	go_polling(w);
	for (size_t i = 0; i < w->nknown; i++)
		free(w->known[i].key);
	free(w->known);
	free(w->bucket);
	free(w->dirs);
	free(w->wbucket);
	free(w->pkey);
	free(w);
}
