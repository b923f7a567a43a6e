/*
 * webhook_conn - owns the webhook's connection table and drives
 * libmicrohttpd from the stage loop.  libmicrohttpd runs in external
 * select mode: after each run its fd sets are mirrored into a
 * level-triggered epoll set that the stage loop polls, so a connection is
 * handed to it only when the kernel says its socket is ready.  (Its epoll
 * mode keeps a connection whose TLS handshake waits for more bytes on its
 * ready list, and MHD_get_timeout() then says 0 until the idle timeout: one
 * byte of a ClientHello pinned a core.)  Each connection has a deadline
 * from accept (handshake and headers included), and at the connection
 * limit a waiting connection gets the slot of the oldest slow or idle one.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemons/webhook/webhook_conn.h"

#define FD_RESERVE	64	/* descriptors kept for the stage's own use */
#define EVICT_GRACE_MS	1000	/* younger connections are never evicted */
#define LOG_EVERY_MS	10000	/* closures are logged at most this often */
#define MAX_EVENTS	256
#define TIMER_CAP_MS	60000

enum phase { PH_REQUEST, PH_IDLE };

/* one connection; its socket_context in libmicrohttpd */
struct conn {
	struct MHD_Connection *c;
	int fd;
	enum phase ph;
	unsigned long nreq;	/* requests whose headers came in */
	int64_t since;		/* accept, headers in, or answer: the last progress */
	int64_t deadline;	/* closed at this time */
	int shut;		/* shut down by us, not yet closed by libmicrohttpd */
	size_t idx;		/* in wh_conns.v */
};

struct wh_conns {
	struct stage *st;
	struct MHD_Daemon *mhd;
	int lfd;			/* the level-triggered mirror of MHD's fd sets */
	int listen_fd;
	unsigned char reg[FD_SETSIZE];	/* epoll events registered per fd (EPOLLIN...) */
	int maxreg;
	fd_set mr, mw, me;		/* what libmicrohttpd asked for last */
	struct conn **v;
	size_t n, cap, nshut;
	unsigned long max;
	int64_t request_ms, idle_ms;
	int64_t timer;
	int64_t listen_quiet_until;	/* at the limit with no victim yet */
	struct wh_conn_counts k;
	int64_t last_log;
	unsigned long unlogged_deadline, unlogged_evicted;
};

static void run(struct wh_conns *cs, fd_set *r, fd_set *w, fd_set *e);

unsigned long
wh_conns_max(void)
{
	return FD_SETSIZE - FD_RESERVE;
}

struct wh_conns *
wh_conns_new(struct stage *st, unsigned long max, int64_t request_ms, int64_t idle_ms)
{
	struct wh_conns *cs = xcalloc(1, sizeof(*cs));

	cs->st = st;
	cs->max = max;
	cs->lfd = -1;
	cs->listen_fd = -1;
	cs->maxreg = -1;
	wh_conns_set_timeouts(cs, request_ms, idle_ms);
	return cs;
}

void
wh_conns_free(struct wh_conns *cs)
{
	if (cs == NULL)
		return;
	if (cs->timer > 0)
		stage_cancel_timer(cs->st, cs->timer);
	if (cs->lfd >= 0) {
		stage_del_fd(cs->st, cs->lfd);
		close(cs->lfd);
	}
	for (size_t i = 0; i < cs->n; i++)
		free(cs->v[i]);
	free(cs->v);
	free(cs);
}

void
wh_conns_set_timeouts(struct wh_conns *cs, int64_t request_ms, int64_t idle_ms)
{
	cs->request_ms = request_ms;
	cs->idle_ms = idle_ms;
}

static struct conn *
conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

/*
 * note - count a closure of ours for the log: the first is said at once,
 * the rest in one line at most every LOG_EVERY_MS (a flood of slow clients
 * must not drown the log; /metrics has every one)
 */
static void
note(struct wh_conns *cs, int evicted)
{
	int64_t now = now_ms();
	char d[32], e[32];

	if (evicted)
		cs->unlogged_evicted++;
	else
		cs->unlogged_deadline++;
	if (cs->last_log != 0 && now - cs->last_log < LOG_EVERY_MS)
		return;
	snprintf(d, sizeof(d), "%lu", cs->unlogged_deadline);
	snprintf(e, sizeof(e), "%lu", cs->unlogged_evicted);
	log_kv(LOG_WARN, "slow connections closed (request past webhook_request_timeout, "
	    "or the oldest slow or idle one at webhook_max_connections)", "deadline", d,
	    "evicted", e, NULL);
	cs->last_log = now;
	cs->unlogged_deadline = cs->unlogged_evicted = 0;
}

/* shut - close a connection under libmicrohttpd: its next read sees the end */
static void
shut(struct wh_conns *cs, struct conn *e)
{
	if (e->shut)
		return;
	e->shut = 1;
	cs->nshut++;
	if (shutdown(e->fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
		log_kv(LOG_WARN, "cannot shut a connection down", "error", strerror(errno), NULL);
}

void
wh_conns_notify(struct wh_conns *cs, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct conn *e;
	const union MHD_ConnectionInfo *ci;
	int64_t now = now_ms();

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		e = xcalloc(1, sizeof(*e));
		e->c = c;
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		e->fd = ci != NULL ? ci->connect_fd : -1;
		e->ph = PH_REQUEST;
		e->since = now;
		e->deadline = now + cs->request_ms;
		if (cs->n == cs->cap) {
			cs->cap = cs->cap ? 2 * cs->cap : 64;
			cs->v = xrealloc(cs->v, cs->cap * sizeof(*cs->v));
		}
		e->idx = cs->n;
		cs->v[cs->n++] = e;
		*socket_context = e;
		cs->k.total++;
		cs->k.open++;
		return;
	}
	if ((e = *socket_context) == NULL)
		return;
	if (e->shut)
		cs->nshut--;
	/* its number may come back with the next accept: forget it now */
	if (e->fd >= 0 && e->fd < FD_SETSIZE && cs->lfd >= 0 && cs->reg[e->fd] != 0) {
		(void)epoll_ctl(cs->lfd, EPOLL_CTL_DEL, e->fd, NULL);
		cs->reg[e->fd] = 0;
	}
	cs->v[e->idx] = cs->v[--cs->n];
	cs->v[e->idx]->idx = e->idx;
	free(e);
	*socket_context = NULL;
	cs->k.open--;
}

void
wh_conns_request(struct wh_conns *cs, struct MHD_Connection *c)
{
	struct conn *e = conn_of(c);
	int64_t now = now_ms();

	if (e == NULL)
		return;
	/* the first request's deadline runs from accept; a later one's from its headers */
	if (e->nreq++ > 0)
		e->deadline = now + cs->request_ms;
	e->ph = PH_REQUEST;
	e->since = now;
	/* libmicrohttpd's inactivity timeout stays a backstop; it follows SIGHUP too */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
	    (unsigned int)((cs->idle_ms + 999) / 1000));
}

void
wh_conns_answered(struct wh_conns *cs, struct MHD_Connection *c)
{
	struct conn *e = conn_of(c);
	int64_t now = now_ms();

	if (e == NULL)
		return;
	e->ph = PH_IDLE;
	e->since = now;
	e->deadline = now + cs->idle_ms;
}

void
wh_conns_counts(const struct wh_conns *cs, struct wh_conn_counts *out)
{
	*out = cs->k;
}

/* expire - shut every connection past its deadline */
static void
expire(struct wh_conns *cs, int64_t now)
{
	for (size_t i = 0; i < cs->n; i++) {
		struct conn *e = cs->v[i];

		if (e->shut || e->deadline > now)
			continue;
		if (e->ph == PH_REQUEST) {
			cs->k.deadline_closed++;
			note(cs, 0);
		} else {
			cs->k.idle_closed++;
		}
		shut(cs, e);
	}
}

/*
 * victim - the connection that made progress longest ago, if that is at
 * least the grace ago (a client that is merely mid-handshake keeps its
 * slot); else NULL with *next the time one becomes old enough.
 */
static struct conn *
victim(struct wh_conns *cs, int64_t now, int64_t *next)
{
	int64_t grace = cs->request_ms / 2 < EVICT_GRACE_MS ? cs->request_ms / 2 :
	    EVICT_GRACE_MS;
	struct conn *best = NULL;

	for (size_t i = 0; i < cs->n; i++)
		if (!cs->v[i]->shut && (best == NULL || cs->v[i]->since < best->since))
			best = cs->v[i];
	if (best != NULL && now - best->since >= grace)
		return best;
	*next = best != NULL ? best->since + grace : now + grace;
	return NULL;
}

static int
at_limit(const struct wh_conns *cs)
{
	return cs->k.open >= cs->max;
}

/* watch - make fd's registration in the mirror ev (0: none) */
static void
watch(struct wh_conns *cs, int fd, unsigned char ev)
{
	struct epoll_event ee = { .events = ev, .data.fd = fd };

	if (cs->reg[fd] == ev)
		return;
	if (ev == 0) {
		/* a socket libmicrohttpd closed already left the set by itself */
		(void)epoll_ctl(cs->lfd, EPOLL_CTL_DEL, fd, NULL);
	} else if (epoll_ctl(cs->lfd, cs->reg[fd] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ee) < 0) {
		/* the descriptor was closed and its number reused meanwhile */
		int rc = epoll_ctl(cs->lfd, errno == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd,
		    &ee);

		if (rc < 0)
			log_kv(LOG_WARN, "cannot watch a connection", "error", strerror(errno),
			    NULL);
	}
	cs->reg[fd] = ev;
	if (ev != 0 && fd > cs->maxreg)
		cs->maxreg = fd;
}

/*
 * sync - the mirror follows libmicrohttpd's fd sets.  At the limit the
 * listen socket is ours, not libmicrohttpd's (it would accept and drop the
 * waiting connection): watched while no closure of ours is pending and no
 * victim is being waited for.
 */
static void
sync_sets(struct wh_conns *cs, int64_t now)
{
	MHD_socket maxfd = 0;
	int top;

	FD_ZERO(&cs->mr);
	FD_ZERO(&cs->mw);
	FD_ZERO(&cs->me);
	if (MHD_get_fdset2(cs->mhd, &cs->mr, &cs->mw, &cs->me, &maxfd, FD_SETSIZE) != MHD_YES)
		log_kv(LOG_WARN, "libmicrohttpd has more sockets than select() sets hold", NULL);
	if (cs->listen_fd >= 0 && at_limit(cs)) {
		FD_CLR(cs->listen_fd, &cs->mr);
		FD_CLR(cs->listen_fd, &cs->me);
		if (cs->nshut == 0 && now >= cs->listen_quiet_until)
			FD_SET(cs->listen_fd, &cs->mr);
	}
	top = (int)maxfd > cs->maxreg ? (int)maxfd : cs->maxreg;
	if (cs->listen_fd > top)
		top = cs->listen_fd;
	for (int fd = 0; fd <= top && fd < FD_SETSIZE; fd++)
		watch(cs, fd, (FD_ISSET(fd, &cs->mr) ? EPOLLIN : 0) |
		    (FD_ISSET(fd, &cs->mw) ? EPOLLOUT : 0) |
		    (FD_ISSET(fd, &cs->me) ? EPOLLPRI : 0));
}

static void
on_timer(struct stage *st, void *arg)
{
	struct wh_conns *cs = arg;
	fd_set r, w, e;

	(void)st;
	cs->timer = 0;
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	run(cs, &r, &w, &e);
}

/* arm - one stage timer at the first of libmicrohttpd's and our deadlines */
static void
arm(struct wh_conns *cs, int64_t now)
{
	MHD_UNSIGNED_LONG_LONG mt;
	int64_t at = now + TIMER_CAP_MS;

	if (cs->timer > 0)
		stage_cancel_timer(cs->st, cs->timer);
	if (MHD_get_timeout(cs->mhd, &mt) == MHD_YES && mt < TIMER_CAP_MS)
		at = now + (int64_t)mt;
	for (size_t i = 0; i < cs->n; i++)
		if (!cs->v[i]->shut && cs->v[i]->deadline < at)
			at = cs->v[i]->deadline;
	if (at_limit(cs) && cs->listen_quiet_until > now && cs->listen_quiet_until < at)
		at = cs->listen_quiet_until;
	cs->timer = stage_add_timer(cs->st, at - now, on_timer, cs);
}

/* run - hand libmicrohttpd what is ready, then close overdue, watch, arm */
static void
run(struct wh_conns *cs, fd_set *r, fd_set *w, fd_set *e)
{
	int64_t now;

	if (cs->timer > 0)
		stage_cancel_timer(cs->st, cs->timer);
	cs->timer = 0;
	MHD_run_from_select(cs->mhd, r, w, e);
	now = now_ms();
	expire(cs, now);
	sync_sets(cs, now);
	arm(cs, now);
}

static void
on_ready(struct stage *st, int fd, short revents, void *arg)
{
	struct wh_conns *cs = arg;
	struct epoll_event ev[MAX_EVENTS];
	fd_set r, w, e;
	int n;

	(void)st;
	(void)fd;
	(void)revents;
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_ZERO(&e);
	if ((n = epoll_wait(cs->lfd, ev, MAX_EVENTS, 0)) < 0 && errno != EINTR)
		log_kv(LOG_WARN, "epoll_wait", "error", strerror(errno), NULL);
	for (int i = 0; i < n; i++) {
		int s = ev[i].data.fd;
		uint32_t x = ev[i].events;

		if (s == cs->listen_fd && at_limit(cs)) {
			/* a connection waits and every slot is taken: free the stalest */
			int64_t now = now_ms(), next = 0;
			struct conn *v = victim(cs, now, &next);

			if (v != NULL) {
				cs->k.evicted++;
				note(cs, 1);
				shut(cs, v);
			} else {
				cs->listen_quiet_until = next;
			}
			continue;
		}
		if ((x & (EPOLLIN | EPOLLHUP | EPOLLERR)) && FD_ISSET(s, &cs->mr))
			FD_SET(s, &r);
		if ((x & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && FD_ISSET(s, &cs->mw))
			FD_SET(s, &w);
		/* hung up both ways: nothing more can be read or written, close it */
		if ((x & (EPOLLPRI | EPOLLERR | EPOLLHUP)) && FD_ISSET(s, &cs->me))
			FD_SET(s, &e);
	}
	run(cs, &r, &w, &e);
}

int
wh_conns_attach(struct wh_conns *cs, struct MHD_Daemon *mhd)
{
	const union MHD_DaemonInfo *di;

	cs->mhd = mhd;
	if ((cs->lfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		log_kv(LOG_ERROR, "epoll_create1", "error", strerror(errno), NULL);
		return -1;
	}
	if ((di = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_LISTEN_FD)) != NULL)
		cs->listen_fd = di->listen_fd;
	stage_add_fd(cs->st, cs->lfd, POLLIN, on_ready, cs);
	sync_sets(cs, now_ms());
	arm(cs, now_ms());
	return 0;
}
