/*
 * acl_cmd - the pure parts of the acl stage, kept apart so they are tested
 * alone: user-name rules, the argument vectors of the ACL commands, node
 * addresses and URLs, and Sentinel's event messages.  No I/O here.
 */
#ifndef DECOD_ACL_CMD_H
#define DECOD_ACL_CMD_H

#include <stddef.h>

#define ACL_ARGV_MAX 16
#define ACL_HOST_MAX 256

/* an argument vector for redisAsyncCommandArgv; the strings are owned */
struct acl_argv {
	int argc;
	char *argv[ACL_ARGV_MAX];
	size_t len[ACL_ARGV_MAX];
};

/*
 * acl_user_check - whether the len bytes at user may be a tenant's ACL
 * user: 0, or -1 with a sentence for the tenant's condition in why (reason
 * in *reason: "ReservedName" for default/redis-root, "InvalidName"
 * otherwise).  The bytes are judged whole: a NUL inside or a name past 63
 * characters is refused, never cut short.
 */
int acl_user_check(const char *user, size_t len, const char **reason, char *why,
    size_t whylen);

/*
 * acl_user_for_namespace - the user of an annotated Kubernetes namespace:
 * its name without a leading "sites-" (copied into out).  0, or -1 when it
 * does not fit.
 */
int acl_user_for_namespace(const char *ns, char *out, size_t outlen);

/*
 * acl_setuser_argv - fill a with ACL SETUSER <user> on resetpass
 * ><password> resetkeys ~<user>:* ~lock:<user>:* resetchannels nocommands
 * +@read +@write +ping, one argument per word.  Free with acl_argv_free.
 */
void acl_setuser_argv(struct acl_argv *a, const char *user, const char *password);
/* acl_getuser_argv / acl_deluser_argv - ACL GETUSER <user> / ACL DELUSER <user> */
void acl_getuser_argv(struct acl_argv *a, const char *user);
void acl_deluser_argv(struct acl_argv *a, const char *user);
/* acl_argv_free - wipe (a password may be in it) and free the strings */
void acl_argv_free(struct acl_argv *a);

/*
 * acl_parse_addr - "host:port", "redis://[user][:password@]host:port[/db]"
 * (IPv6 in brackets) into host, *port (default 6379, or 26379 when
 * sentinel) and password (may be NULL; "" when none).  0 or -1.
 */
int acl_parse_addr(const char *s, int sentinel, char *host, size_t hostlen, int *port,
    char *password, size_t pwlen);

enum acl_event_kind { ACL_EV_NONE = 0, ACL_EV_SWITCH_MASTER, ACL_EV_NODE };

/*
 * one Sentinel message, parsed: a failover (+switch-master: the new
 * master's address) or a node that came back (+reboot, -sdown,
 * +convert-to-slave: that node's address).
 */
struct acl_event {
	enum acl_event_kind kind;
	char master_name[ACL_HOST_MAX];
	char role[16];			/* master, slave (ACL_EV_NODE) */
	char host[ACL_HOST_MAX];	/* new master, or the node */
	int port;
};

/*
 * acl_event_parse - parse a message of channel (e.g. "+switch-master")
 * and keep it when it concerns master_name: 1 (ev filled), 0 (not ours,
 * or a sentinel instance), -1 (malformed).
 *   +switch-master <name> <old-ip> <old-port> <new-ip> <new-port>
 *   +reboot|-sdown|+convert-to-slave <type> <name> <ip> <port> [@ <master> <ip> <port>]
 */
int acl_event_parse(const char *channel, const char *msg, const char *master_name,
    struct acl_event *ev);

/*
 * acl_scrub - replace every occurrence of secret in s (in place) by
 * "[redacted]" where it fits, else by '*'s, so a server's error text that
 * echoes a command never carries a password on.  Returns s.
 */
char *acl_scrub(char *s, size_t size, const char *secret);

#endif
