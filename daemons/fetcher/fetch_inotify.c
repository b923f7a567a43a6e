/*
 * fetch_inotify - `dir` sources watched with inotify (fetch_inotify.h).
 *
 * inotify is not recursive: each folder of a source's tree gets a watch
 * (the walk fetch_dir makes, without following links and without .git),
 * renewed after every read of the source, so a folder created since is
 * watched from the next read on (its creation is itself an event, which
 * causes that read).  One inotify watch can serve several sources (two
 * Decofiles on one folder): the kernel gives one descriptor per folder,
 * and each entry here ties one descriptor to one source.
 *
 * An event schedules a forced read of every source watching the folder
 * FETCH_INOTIFY_SETTLE_MS later, so an editor's burst (write a temporary
 * file, rename it over the block) is one read.  A queue overflow reads
 * every watched source.  A removed folder drops its watch (IN_IGNORED);
 * the read that follows renews what still exists, and a source whose
 * folder is gone is polled at its period until it is back.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/fetcher/fetch_inotify.h"
#include "daemons/fetcher/fetcher.h"

#define NBUCKETS 4096
#define MAX_DIRS_PER_SOURCE 4096
#define MAX_WALK_DEPTH 64
#define MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | \
    IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* one folder watched for one source */
struct ent {
	int wd;
	int stale;		/* not seen by the walk in progress */
	struct src *s;
	struct ent *hnext;	/* same wd bucket */
	struct ent *snext;	/* same source */
};

/* a source's entries, found by its address */
struct owner {
	struct src *s;
	struct ent *ents;
	struct owner *next;
};

struct fetch_inotify {
	struct stage *st;
	int fd;
	size_t max, n;		/* entries allowed, entries now */
	int warned;
	struct ent *byw[NBUCKETS];
	struct owner *owners[NBUCKETS];
};

static size_t
wbucket(int wd)
{
	return (size_t)wd % NBUCKETS;
}

static size_t
sbucket(const struct src *s)
{
	return ((uintptr_t)s >> 4) % NBUCKETS;
}

static struct owner *
owner_of(struct fetch_inotify *fi, struct src *s, int make)
{
	struct owner **pp = &fi->owners[sbucket(s)];

	for (struct owner *o = *pp; o != NULL; o = o->next)
		if (o->s == s)
			return o;
	if (!make)
		return NULL;
	struct owner *o = xcalloc(1, sizeof(*o));

	o->s = s;
	o->next = *pp;
	*pp = o;
	return o;
}

static int
wd_used(const struct fetch_inotify *fi, int wd)
{
	for (const struct ent *e = fi->byw[wbucket(wd)]; e != NULL; e = e->hnext)
		if (e->wd == wd)
			return 1;
	return 0;
}

/* unlink e from its wd bucket; the watch goes when no source uses it */
static void
drop_ent(struct fetch_inotify *fi, struct ent *e, int rm_watch)
{
	for (struct ent **pp = &fi->byw[wbucket(e->wd)]; *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	if (rm_watch && !wd_used(fi, e->wd))
		inotify_rm_watch(fi->fd, e->wd);
	fi->n--;
	free(e);
}

/*
 * add (or keep) the watch of dir for o's source; 0, or -1 (not watched).
 * *grew: a folder was added to a tree watched before (made since the read).
 */
static int
watch_one(struct fetch_inotify *fi, struct owner *o, const char *dir, int *grew)
{
	int wd;

	if (fi->n >= fi->max) {
		errno = ENOSPC;
		return -1;
	}
	if ((wd = inotify_add_watch(fi->fd, dir, MASK)) < 0)
		return -1;
	for (struct ent *e = o->ents; e != NULL; e = e->snext) {
		if (e->wd == wd) {
			e->stale = 0;
			return 0;
		}
	}
	struct ent *e = xcalloc(1, sizeof(*e));

	if (o->ents != NULL)
		*grew = 1;
	e->wd = wd;
	e->s = o->s;
	e->hnext = fi->byw[wbucket(wd)];
	fi->byw[wbucket(wd)] = e;
	e->snext = o->ents;
	o->ents = e;
	fi->n++;
	return 0;
}

/* watch dir and the folders under it; the number watched, or -1 (stop) */
static int
walk(struct fetch_inotify *fi, struct owner *o, const char *dir, int depth, int *count,
    int *grew)
{
	DIR *d;
	struct dirent *de;
	char sub[PATH_MAX];
	struct stat sb;
	int rc = 0;

	if (depth > MAX_WALK_DEPTH || ++*count > MAX_DIRS_PER_SOURCE)
		return -1;
	if (watch_one(fi, o, dir, grew) < 0)
		return -1;
	if ((d = opendir(dir)) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub))
			continue;
		/* links are not followed: a linked folder is seen at the safety re-read */
		if (lstat(sub, &sb) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		rc = walk(fi, o, sub, depth + 1, count, grew);
	}
	closedir(d);
	return rc;
}

/* read s soon; a read in progress is followed by another */
static void
poke(struct fetch_inotify *fi, struct src *s)
{
	fetcher_schedule(fi->st, s, s->busy ? 0 : FETCH_INOTIFY_SETTLE_MS, 1);
}

int
fetch_inotify_watch(struct fetch_inotify *fi, struct src *s, const char *path)
{
	struct owner *o;
	struct ent **pp;
	int count = 0, grew = 0, rc;
	char n[32];

	if (fi == NULL || path == NULL || *path == '\0')
		return 0;
	o = owner_of(fi, s, 1);
	for (struct ent *e = o->ents; e != NULL; e = e->snext)
		e->stale = 1;
	rc = walk(fi, o, path, 0, &count, &grew);
	if (rc < 0 && (errno == ENOSPC || count > MAX_DIRS_PER_SOURCE) && !fi->warned) {
		snprintf(n, sizeof(n), "%zu", fi->n);
		log_kv(LOG_WARN, "inotify watch limit reached: folders past it are polled",
		    "ns", s->ns, "name", s->name, "watched", n, NULL);
		fi->warned = 1;
	}
	/* what the walk no longer met (a removed or renamed folder) goes */
	for (pp = &o->ents; *pp != NULL;) {
		struct ent *e = *pp;

		if (e->stale) {
			*pp = e->snext;
			drop_ent(fi, e, 1);
		} else {
			pp = &e->snext;
		}
	}
	if (rc < 0) {
		fetch_inotify_forget(fi, s);	/* half a tree watched is not watched */
		return 0;
	}
	/*
	 * a folder made since the read was not watched while it was read: what
	 * was written into it meanwhile raised no event, so read once more
	 */
	return grew ? 2 : 1;
}

void
fetch_inotify_forget(struct fetch_inotify *fi, struct src *s)
{
	struct owner **pp, *o;

	if (fi == NULL)
		return;
	for (pp = &fi->owners[sbucket(s)]; *pp != NULL && (*pp)->s != s; pp = &(*pp)->next)
		;
	if ((o = *pp) == NULL)
		return;
	*pp = o->next;
	while (o->ents != NULL) {
		struct ent *e = o->ents;

		o->ents = e->snext;
		drop_ent(fi, e, 1);
	}
	free(o);
}

size_t
fetch_inotify_count(const struct fetch_inotify *fi)
{
	return fi != NULL ? fi->n : 0;
}

static void
on_events(struct stage *st, int fd, short revents, void *arg)
{
	struct fetch_inotify *fi = arg;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	(void)st;
	(void)revents;
	while ((len = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				/* events were lost: read every watched source */
				for (size_t b = 0; b < NBUCKETS; b++)
					for (struct owner *o = fi->owners[b]; o != NULL; o = o->next)
						poke(fi, o->s);
				continue;
			}
			for (struct ent *e = fi->byw[wbucket(ev->wd)]; e != NULL; e = e->hnext)
				if (e->wd == ev->wd)
					poke(fi, e->s);
			if (ev->mask & IN_IGNORED) {
				/* the kernel dropped the watch (folder gone): forget it */
				for (size_t b = 0; b < NBUCKETS; b++) {
					for (struct owner *o = fi->owners[b]; o != NULL; o = o->next) {
						for (struct ent **pp = &o->ents; *pp != NULL;) {
							struct ent *e = *pp;

							if (e->wd == ev->wd) {
								*pp = e->snext;
								drop_ent(fi, e, 0);
							} else {
								pp = &e->snext;
							}
						}
					}
				}
			}
		}
	}
	if (len < 0 && errno != EAGAIN && errno != EINTR)
		log_kv(LOG_WARN, "inotify read", "error", strerror(errno), NULL);
}

struct fetch_inotify *
fetch_inotify_new(struct stage *st, size_t max_watches)
{
	struct fetch_inotify *fi;
	int fd;

	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		log_kv(LOG_WARN, "no inotify: dir sources are polled", "error", strerror(errno),
		    NULL);
		return NULL;
	}
	fi = xcalloc(1, sizeof(*fi));
	fi->st = st;
	fi->fd = fd;
	fi->max = max_watches;
	if (stage_add_fd(st, fd, POLLIN, on_events, fi) < 0) {
		log_kv(LOG_WARN, "cannot poll inotify: dir sources are polled", NULL);
		close(fd);
		free(fi);
		return NULL;
	}
	return fi;
}

void
fetch_inotify_free(struct fetch_inotify *fi)
{
	if (fi == NULL)
		return;
	for (size_t b = 0; b < NBUCKETS; b++) {
		while (fi->owners[b] != NULL)
			fetch_inotify_forget(fi, fi->owners[b]->s);
	}
	stage_del_fd(fi->st, fi->fd);
	close(fi->fd);
	free(fi);
}
