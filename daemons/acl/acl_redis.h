/*
 * acl_redis - hiredis 0.14's async API driven by the stage's poll loop:
 * the library's addRead/delRead/addWrite/delWrite hooks become
 * stage_add_fd/stage_mod_fd, so no call ever blocks the loop.  A
 * connection authenticates itself (AUTH <password>) before anything the
 * owner sends; deadlines are the owner's (close the connection when one
 * passes: every pending reply callback then gets a NULL reply).
 */
#ifndef DECOD_ACL_REDIS_H
#define DECOD_ACL_REDIS_H

#include <stddef.h>

#include <hiredis/async.h>

struct stage;
struct acl_conn;

/*
 * on_down - the connection ended by itself (error, server gone, failed
 * AUTH); why names the cause.  Called from inside hiredis: only note it and
 * schedule work (a timer), never open a connection here.
 */
typedef void (*acl_conn_down_cb)(struct acl_conn *c, const char *why, void *arg);

/*
 * acl_conn_open - start connecting to host:port; password (NULL or "":
 * none) is sent first as AUTH.  Returns the connection, or NULL with the
 * reason in err (e.g. no such host).  The owner ends it with
 * acl_conn_close(); after on_down it must not use it again.
 */
struct acl_conn *acl_conn_open(struct stage *st, const char *host, int port,
    const char *password, acl_conn_down_cb on_down, void *arg, char *err, size_t errlen);

/*
 * acl_conn_cmd - queue one command (sent once connected, after AUTH); fn
 * gets the reply, or NULL when the connection ended first.  0 or -1.
 */
int acl_conn_cmd(struct acl_conn *c, redisCallbackFn *fn, void *priv, int argc,
    const char **argv, const size_t *lens);

/* acl_conn_keepalive - turn TCP keep-alive on (long-lived subscriptions) */
void acl_conn_keepalive(struct acl_conn *c);

/*
 * acl_conn_close - the owner lets go: pending callbacks get NULL replies
 * (now, or when hiredis returns if called from a callback), on_down is not
 * called, and the memory goes once hiredis is done with it.  NULL: no-op.
 */
void acl_conn_close(struct acl_conn *c);

/* acl_reply_error - the context's error text, for a NULL reply ("connection closed" if none) */
const char *acl_reply_error(const redisAsyncContext *ac);

/* acl_conn_answered - 1 once the server answered anything (even a refusal) */
int acl_conn_answered(const struct acl_conn *c);

/*
 * acl_resolve_start - find an address for host without blocking the loop
 * (getaddrinfo_a; an IP literal needs no lookup).  cb runs later on the
 * loop, never inside this call, with the address text or NULL and why.
 * acl_resolve_cancel: cb is never called (the lookup may still finish in
 * the background and is freed then).  Owns the stage's wake callback.
 */
struct acl_resolve;
typedef void (*acl_resolved_cb)(struct stage *st, const char *ip, const char *err,
    void *arg);
struct acl_resolve *acl_resolve_start(struct stage *st, const char *host, acl_resolved_cb cb,
    void *arg);
void acl_resolve_cancel(struct acl_resolve *r);

/* acl_conn_name - "host:port" of the connection */
const char *acl_conn_name(const struct acl_conn *c);

#endif
