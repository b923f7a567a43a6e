/*
 * acl_redis - the hiredis 0.14 adapter for the stage loop, and the small
 * connection object the acl stage uses for every node and sentinel.  Owns
 * the redisAsyncContext: its fd is registered with the loop while hiredis
 * wants to read or write, and the object is freed from a zero-delay timer
 * once hiredis has cleaned up (hiredis calls the cleanup hook more than
 * once and after reply callbacks, so nothing is freed inside hiredis).
 * Bounds every reply (hiredis 0.14 has none of its own): see REPLY_MAX_*.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/acl/acl_redis.h"

/*
 * No reply the acl stage asks for is large: ACL GETUSER is some twenty
 * strings, SENTINEL replicas of ACL_MAX_NODES nodes some thousand.  hiredis
 * 0.14 bounds nothing (its reader's maxbuf only frees an idle buffer;
 * maxelements came with 1.0): a node declaring a 2 GB bulk string would be
 * buffered as it streams.  So a reply past either bound ends the
 * connection with an error naming it, as any other failure of that node.
 */
#define REPLY_MAX_BYTES (1024 * 1024)	/* unparsed in the buffer, or one reply's strings */
#define REPLY_MAX_ELEMENTS 65536	/* in one reply, nested arrays included */

struct acl_conn {
	struct stage *st;
	redisAsyncContext *ac;	/* NULL once hiredis cleaned up */
	int fd;
	short events;		/* what hiredis asked for */
	int registered;		/* fd is in the loop */
	int closed;		/* the owner let go */
	int gone;		/* hiredis cleaned up */
	int64_t reap_timer;	/* frees it once hiredis returns */
	int answered;		/* the server answered (AUTH's reply at least) */
	size_t reply_bytes;	/* strings of the reply being read */
	size_t reply_elems;	/* elements of the reply being read */
	char over[160];		/* the reply broke a bound: why, else "" */
	char name[300];
	acl_conn_down_cb on_down;
	void *arg;
};

/* reap - free a connection hiredis is done with (from a timer) */
static void
reap(struct stage *st, void *arg)
{
	(void)st;
	free(arg);
}

static void on_fd(struct stage *st, int fd, short revents, void *arg);

/* update - tell the loop what hiredis wants on the socket now */
static void
update(struct acl_conn *c)
{
	if (c->gone)
		return;
	if (!c->registered) {
		stage_add_fd(c->st, c->fd, c->events, on_fd, c);
		c->registered = 1;
	} else {
		stage_mod_fd(c->st, c->fd, c->events);
	}
}

static void
ev_add_read(void *p)
{
	struct acl_conn *c = p;

	c->events |= POLLIN;
	update(c);
}

static void
ev_del_read(void *p)
{
	struct acl_conn *c = p;

	c->events &= (short)~POLLIN;
	update(c);
}

static void
ev_add_write(void *p)
{
	struct acl_conn *c = p;

	c->events |= POLLOUT;
	update(c);
}

static void
ev_del_write(void *p)
{
	struct acl_conn *c = p;

	c->events &= (short)~POLLOUT;
	update(c);
}

/* ev_cleanup - hiredis is done with the fd (called once or twice) */
static void
ev_cleanup(void *p)
{
	struct acl_conn *c = p;
	char why[256];

	if (c->gone)
		return;
	c->gone = 1;
	if (c->registered)
		stage_del_fd(c->st, c->fd);
	c->registered = 0;
	snprintf(why, sizeof(why), "%s", c->over[0] != '\0' ? c->over : c->ac != NULL &&
	    c->ac->err != 0 && c->ac->errstr ? c->ac->errstr : "connection closed");
	c->ac = NULL;
	if (!c->closed && c->on_down != NULL)
		c->on_down(c, why, c->arg);
	c->reap_timer = stage_add_timer(c->st, 0, reap, c);
}

/* ---- reply bounds ---- */

/* hiredis's own reply functions (the same for every reader), which ours wrap */
static redisReplyObjectFunctions *base_fn;

/* over - c's reply broke a bound: say so; the node answered, badly (not down) */
static void
over(struct acl_conn *c, const char *what, size_t n, size_t max)
{
	snprintf(c->over, sizeof(c->over), "reply too large: %s %zu, more than %zu; "
	    "connection closed", what, n, max);
	c->answered = 1;
}

/*
 * budget - a reply object is about to be made: count it against its reply
 * (a top-level one starts a new count); -1 past a bound, and hiredis then
 * fails the connection ("out of memory"; c->over says what it was)
 */
static int
budget(const redisReadTask *task, size_t bytes, long long elements)
{
	struct acl_conn *c = task->privdata;

	if (c == NULL)
		return 0;
	if (task->parent == NULL)
		c->reply_bytes = c->reply_elems = 0;
	c->reply_bytes += bytes;
	c->reply_elems += (task->parent == NULL) + (elements > 0 ? (size_t)elements : 0);
	if (c->reply_bytes > REPLY_MAX_BYTES) {
		over(c, "bytes", c->reply_bytes, REPLY_MAX_BYTES);
		return -1;
	}
	if (c->reply_elems > REPLY_MAX_ELEMENTS) {
		over(c, "elements", c->reply_elems, REPLY_MAX_ELEMENTS);
		return -1;
	}
	return 0;
}

static void *
cap_string(const redisReadTask *task, char *str, size_t len)
{
	return budget(task, len, 0) < 0 ? NULL : base_fn->createString(task, str, len);
}

static void *
cap_array(const redisReadTask *task, int elements)
{
	return budget(task, 0, elements) < 0 ? NULL : base_fn->createArray(task, elements);
}

static void *
cap_integer(const redisReadTask *task, long long value)
{
	return budget(task, 0, 0) < 0 ? NULL : base_fn->createInteger(task, value);
}

static void *
cap_nil(const redisReadTask *task)
{
	return budget(task, 0, 0) < 0 ? NULL : base_fn->createNil(task);
}

static void
cap_free(void *reply)
{
	base_fn->freeObject(reply);
}

static redisReplyObjectFunctions cap_fn = { cap_string, cap_array, cap_integer, cap_nil,
	cap_free };

/* cap_reader - c's replies are made by the cap_* functions, counted against c */
static void
cap_reader(struct acl_conn *c, redisReader *r)
{
	if (base_fn == NULL)
		base_fn = r->fn;
	r->fn = &cap_fn;
	r->privdata = c;
}

/* on_fd - the loop saw activity on the connection's socket */
static void
on_fd(struct stage *st, int fd, short revents, void *arg)
{
	struct acl_conn *c = arg;
	const redisReader *r;

	(void)st;
	(void)fd;
	if (c->gone || c->ac == NULL)
		return;
	if (revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL))
		redisAsyncHandleRead(c->ac);
	/* a reply not yet whole (a long bulk string, a line without its end) */
	if (!c->gone && c->ac != NULL && (r = c->ac->c.reader) != NULL &&
	    r->len - r->pos > REPLY_MAX_BYTES) {
		over(c, "unparsed bytes", r->len - r->pos, REPLY_MAX_BYTES);
		/* outside hiredis's callbacks: every pending callback gets NULL now */
		redisAsyncFree(c->ac);
		return;
	}
	if (!c->gone && c->ac != NULL && (revents & POLLOUT))
		redisAsyncHandleWrite(c->ac);
}

/* on_auth - AUTH's reply: a refusal ends the connection with its reason */
static void
on_auth(redisAsyncContext *ac, void *r, void *priv)
{
	struct acl_conn *c = priv;
	redisReply *reply = r;
	char why[300];

	if (reply == NULL || c->closed || c->gone)
		return;
	c->answered = 1;
	if (reply->type == REDIS_REPLY_ERROR) {
		/* the owner logs it, once, not at every round */
		snprintf(why, sizeof(why), "authentication failed: %.200s", reply->str);
		/* the commands queued behind AUTH would all fail with NOAUTH */
		c->closed = 1;
		if (c->on_down != NULL)
			c->on_down(c, why, c->arg);
		redisAsyncFree(ac);
	}
}

struct acl_conn *
acl_conn_open(struct stage *st, const char *host, int port, const char *password,
    acl_conn_down_cb on_down, void *arg, char *err, size_t errlen)
{
	struct acl_conn *c;
	redisAsyncContext *ac = redisAsyncConnect(host, port);

	if (ac == NULL) {
		snprintf(err, errlen, "%s:%d: out of memory", host, port);
		return NULL;
	}
	if (ac->err != 0) {
		snprintf(err, errlen, "%s:%d: %s", host, port, ac->errstr);
		redisAsyncFree(ac);
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->st = st;
	c->ac = ac;
	c->fd = ac->c.fd;
	c->on_down = on_down;
	c->arg = arg;
	snprintf(c->name, sizeof(c->name), "%s:%d", host, port);
	ac->data = c;
	ac->ev.data = c;
	ac->ev.addRead = ev_add_read;
	ac->ev.delRead = ev_del_read;
	ac->ev.addWrite = ev_add_write;
	ac->ev.delWrite = ev_del_write;
	ac->ev.cleanup = ev_cleanup;
	cap_reader(c, ac->c.reader);
	/* the connect completes on the first writable event */
	ev_add_write(c);
	if (password != NULL && *password != '\0') {
		const char *argv[2] = { "AUTH", password };
		size_t lens[2] = { 4, strlen(password) };

		if (redisAsyncCommandArgv(ac, on_auth, c, 2, argv, lens) != REDIS_OK) {
			snprintf(err, errlen, "%s: cannot queue AUTH", c->name);
			acl_conn_close(c);
			return NULL;
		}
	}
	return c;
}

int
acl_conn_cmd(struct acl_conn *c, redisCallbackFn *fn, void *priv, int argc,
    const char **argv, const size_t *lens)
{
	if (c == NULL || c->gone || c->closed || c->ac == NULL)
		return -1;
	return redisAsyncCommandArgv(c->ac, fn, priv, argc, argv, lens) == REDIS_OK ? 0 : -1;
}

void
acl_conn_keepalive(struct acl_conn *c)
{
	if (c != NULL && c->ac != NULL && !c->gone)
		(void)redisEnableKeepAlive(&c->ac->c);
}

void
acl_conn_close(struct acl_conn *c)
{
	if (c == NULL)
		return;
	if (c->closed) {
		/* on_auth already let go on the owner's behalf */
		return;
	}
	c->closed = 1;
	if (!c->gone && c->ac != NULL) {
		/* outside its callbacks hiredis frees at once: so can we */
		int deferred = (c->ac->c.flags & REDIS_IN_CALLBACK) != 0;

		redisAsyncFree(c->ac);
		if (!deferred && c->gone) {
			stage_cancel_timer(c->st, c->reap_timer);
			free(c);
		}
	}
}

const char *
acl_reply_error(const redisAsyncContext *ac)
{
	const struct acl_conn *c = ac != NULL ? ac->data : NULL;

	if (c != NULL && c->over[0] != '\0')
		return c->over;
	if (ac != NULL && ac->err != 0 && ac->errstr != NULL)
		return ac->errstr;
	return "connection closed";
}

int
acl_conn_answered(const struct acl_conn *c)
{
	return c->answered;
}

const char *
acl_conn_name(const struct acl_conn *c)
{
	return c->name;
}

/* ---- name lookups off the loop ---- */

struct acl_resolve {
	struct stage *st;
	acl_resolved_cb cb;
	void *arg;
	int cancelled;
	int literal;		/* an IP already: answered from a timer */
	int failed;		/* getaddrinfo_a could not start: its code */
	char host[256];
	struct gaicb req;
	struct addrinfo hints;
	struct acl_resolve *next;
};

static struct acl_resolve *lookups;	/* in flight (getaddrinfo_a) */

/* lookup_done - getaddrinfo_a's thread: only wake the loop */
static void
lookup_done(union sigval v)
{
	stage_wake(v.sival_ptr);
}

/* lookup_answer - hand one finished lookup to its owner (or drop it) */
static void
lookup_answer(struct acl_resolve *r, int rc)
{
	char ip[INET6_ADDRSTRLEN] = "", err[320];
	const struct addrinfo *ai = r->req.ar_result;

	/* IPv4 first when there is one: servers often bind 127.0.0.1 but not ::1 */
	for (const struct addrinfo *p = ai; p != NULL; p = p->ai_next) {
		if (p->ai_family == AF_INET) {
			ai = p;
			break;
		}
	}

	if (!r->cancelled) {
		if (rc != 0 || ai == NULL) {
			snprintf(err, sizeof(err), "%s: %s", r->host, gai_strerror(rc));
			r->cb(r->st, NULL, err, r->arg);
		} else {
			if (ai->ai_family == AF_INET6)
				inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr,
				    ip, sizeof(ip));
			else
				inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr,
				    ip, sizeof(ip));
			r->cb(r->st, ip, NULL, r->arg);
		}
	}
	if (r->req.ar_result != NULL)
		freeaddrinfo(r->req.ar_result);
	free(r);
}

/* on_wake - the loop was woken: collect every lookup that finished */
static void
on_wake(struct stage *st, void *arg)
{
	struct acl_resolve **pp = &lookups, *r;

	(void)st;
	(void)arg;
	while ((r = *pp) != NULL) {
		int rc = gai_error(&r->req);

		if (rc == EAI_INPROGRESS) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		lookup_answer(r, rc);
	}
}

/* literal_answer - an IP literal (or a lookup that could not start), from a timer */
static void
literal_answer(struct stage *st, void *arg)
{
	struct acl_resolve *r = arg;

	(void)st;
	if (!r->cancelled && r->failed != 0) {
		char err[320];

		snprintf(err, sizeof(err), "%s: %s", r->host, gai_strerror(r->failed));
		r->cb(r->st, NULL, err, r->arg);
	} else if (!r->cancelled) {
		r->cb(r->st, r->host, NULL, r->arg);
	}
	free(r);
}

struct acl_resolve *
acl_resolve_start(struct stage *st, const char *host, acl_resolved_cb cb, void *arg)
{
	struct acl_resolve *r = xcalloc(1, sizeof(*r));
	struct gaicb *list[1];
	struct sigevent sev;
	unsigned char buf[sizeof(struct in6_addr)];
	int rc;

	r->st = st;
	r->cb = cb;
	r->arg = arg;
	snprintf(r->host, sizeof(r->host), "%s", host);
	if (inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1) {
		r->literal = 1;
		stage_add_timer(st, 0, literal_answer, r);
		return r;
	}
	stage_set_wake_cb(st, on_wake, NULL);
	r->hints.ai_socktype = SOCK_STREAM;
	r->req.ar_name = r->host;
	r->req.ar_request = &r->hints;
	list[0] = &r->req;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = lookup_done;
	sev.sigev_value.sival_ptr = st;
	r->next = lookups;
	lookups = r;
	if ((rc = getaddrinfo_a(GAI_NOWAIT, list, 1, &sev)) != 0) {
		/* could not even start: the owner hears so from a timer */
		lookups = r->next;
		r->next = NULL;
		r->failed = rc;
		stage_add_timer(st, 0, literal_answer, r);
	}
	return r;
}

void
acl_resolve_cancel(struct acl_resolve *r)
{
	if (r != NULL)
		r->cancelled = 1;
}
