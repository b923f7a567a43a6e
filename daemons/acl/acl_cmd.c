/*
 * acl_cmd - user-name rules, ACL command vectors, node addresses and
 * Sentinel event messages for the acl stage.  Everything here is a pure
 * function of its arguments (the tests in t/unit/acl_cmd_test.c drive it
 * from tables); the stage's I/O lives in acl_redis.c and acl_sentinel.c.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemons/acl/acl_cmd.h"

/* the Valkey users decod must never hand to a tenant */
static const char *const reserved[] = { "default", "redis-root" };

int
acl_user_check(const char *user, size_t len, const char **reason, char *why,
    size_t whylen)
{
	const char *nul = user != NULL ? memchr(user, '\0', len) : NULL;

	if (user == NULL)
		len = 0;
	if (nul != NULL) {
		*reason = "InvalidName";
		snprintf(why, whylen, "user name holds a NUL byte (at byte %zu of %zu); refused, "
		    "not cut short", (size_t)(nul - user) + 1, len);
		return -1;
	}
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (len == strlen(reserved[i]) && memcmp(user, reserved[i], len) == 0) {
			*reason = "ReservedName";
			snprintf(why, whylen, "user name \"%s\" is reserved for Valkey's "
			    "administrators; refused", user);
			return -1;
		}
	}
	if (len == 0 || len > 63) {
		*reason = "InvalidName";
		snprintf(why, whylen, "user name must be 1 to 63 characters (got %zu)", len);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		char c = user[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    ((c == '-' || c == '_' || c == '.') && i > 0 && i < len - 1))) {
			*reason = "InvalidName";
			snprintf(why, whylen, "user name \"%.63s\" may hold only a-z, 0-9 and "
			    "inner '-', '_' or '.'", user);
			return -1;
		}
	}
	return 0;
}

int
acl_user_for_namespace(const char *ns, char *out, size_t outlen)
{
	const char *u = strncmp(ns, "sites-", 6) == 0 ? ns + 6 : ns;

	if (strlen(u) + 1 > outlen)
		return -1;
	memcpy(out, u, strlen(u) + 1);
	return 0;
}

/* argv_add - append one owned argument */
static void
argv_add(struct acl_argv *a, char *s)
{
	if (a->argc >= ACL_ARGV_MAX)
		fatal("acl_argv: too many arguments (a bug)");
	a->argv[a->argc] = s;
	a->len[a->argc] = strlen(s);
	a->argc++;
}

void
acl_setuser_argv(struct acl_argv *a, const char *user, const char *password)
{
	memset(a, 0, sizeof(*a));
	argv_add(a, xstrdup("ACL"));
	argv_add(a, xstrdup("SETUSER"));
	argv_add(a, xstrdup(user));
	argv_add(a, xstrdup("on"));
	argv_add(a, xstrdup("resetpass"));
	argv_add(a, xasprintf(">%s", password));
	argv_add(a, xstrdup("resetkeys"));
	argv_add(a, xasprintf("~%s:*", user));
	argv_add(a, xasprintf("~lock:%s:*", user));
	argv_add(a, xstrdup("resetchannels"));
	argv_add(a, xstrdup("nocommands"));
	argv_add(a, xstrdup("+@read"));
	argv_add(a, xstrdup("+@write"));
	argv_add(a, xstrdup("+ping"));
}

void
acl_getuser_argv(struct acl_argv *a, const char *user)
{
	memset(a, 0, sizeof(*a));
	argv_add(a, xstrdup("ACL"));
	argv_add(a, xstrdup("GETUSER"));
	argv_add(a, xstrdup(user));
}

void
acl_deluser_argv(struct acl_argv *a, const char *user)
{
	memset(a, 0, sizeof(*a));
	argv_add(a, xstrdup("ACL"));
	argv_add(a, xstrdup("DELUSER"));
	argv_add(a, xstrdup(user));
}

void
acl_argv_free(struct acl_argv *a)
{
	for (int i = 0; i < a->argc; i++) {
		/* volatile: the compiler may not drop the wipe of a freed buffer */
		volatile char *p = a->argv[i];

		for (size_t k = 0; k < a->len[i]; k++)
			p[k] = 0;
		free(a->argv[i]);
	}
	memset(a, 0, sizeof(*a));
}

int
acl_parse_addr(const char *s, int sentinel, char *host, size_t hostlen, int *port,
    char *password, size_t pwlen)
{
	const char *p = s, *at, *end, *colon;
	size_t hl;
	long n;
	char *e;

	if (password != NULL && pwlen > 0)
		password[0] = '\0';
	*port = sentinel ? 26379 : 6379;
	while (*p == ' ')
		p++;
	if (strncmp(p, "redis://", 8) == 0)
		p += 8;
	else if (strncmp(p, "valkey://", 9) == 0)
		p += 9;
	else if (strstr(p, "://") != NULL)
		return -1;
	end = p + strcspn(p, "/ ");
	/* credentials: [user][:password]@ */
	if ((at = memchr(p, '@', (size_t)(end - p))) != NULL) {
		const char *pw = memchr(p, ':', (size_t)(at - p));

		if (pw != NULL && password != NULL) {
			if ((size_t)(at - pw - 1) + 1 > pwlen)
				return -1;
			memcpy(password, pw + 1, (size_t)(at - pw - 1));
			password[at - pw - 1] = '\0';
		}
		p = at + 1;
	}
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (rb == NULL)
			return -1;
		hl = (size_t)(rb - p - 1);
		if (hl == 0 || hl + 1 > hostlen)
			return -1;
		memcpy(host, p + 1, hl);
		host[hl] = '\0';
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		if (rb + 1 < end && colon == NULL)
			return -1;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		hl = (size_t)((colon != NULL ? colon : end) - p);
		if (hl == 0 || hl + 1 > hostlen)
			return -1;
		memcpy(host, p, hl);
		host[hl] = '\0';
	}
	if (colon != NULL) {
		n = strtol(colon + 1, &e, 10);
		if (e == colon + 1 || e != end || n < 1 || n > 65535)
			return -1;
		*port = (int)n;
	}
	return 0;
}

int
acl_event_parse(const char *channel, const char *msg, const char *master_name,
    struct acl_event *ev)
{
	char w[9][ACL_HOST_MAX];
	int n;
	long port;
	char *e;

	memset(ev, 0, sizeof(*ev));
	if (channel == NULL || msg == NULL)
		return -1;
	/* 255 = ACL_HOST_MAX - 1 */
	n = sscanf(msg, "%255s %255s %255s %255s %255s %255s %255s %255s %255s", w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]);
	if (strcmp(channel, "+switch-master") == 0) {
		if (n != 5)
			return -1;
		port = strtol(w[4], &e, 10);
		if (*e != '\0' || port < 1 || port > 65535)
			return -1;
		if (strcmp(w[0], master_name) != 0)
			return 0;
		ev->kind = ACL_EV_SWITCH_MASTER;
		snprintf(ev->master_name, sizeof(ev->master_name), "%s", w[0]);
		snprintf(ev->role, sizeof(ev->role), "master");
		snprintf(ev->host, sizeof(ev->host), "%s", w[3]);
		ev->port = (int)port;
		return 1;
	}
	if (strcmp(channel, "+reboot") != 0 && strcmp(channel, "-sdown") != 0 &&
	    strcmp(channel, "+convert-to-slave") != 0)
		return 0;
	/* <type> <name> <ip> <port> [@ <master-name> <master-ip> <master-port>] */
	if (n != 4 && n != 8)
		return -1;
	port = strtol(w[3], &e, 10);
	if (*e != '\0' || port < 1 || port > 65535)
		return -1;
	if (n == 8 && strcmp(w[4], "@") != 0)
		return -1;
	if (strcmp(w[0], "master") == 0) {
		if (n != 4 || strcmp(w[1], master_name) != 0)
			return n == 4 ? 0 : -1;
	} else if (strcmp(w[0], "slave") == 0 || strcmp(w[0], "replica") == 0) {
		if (n != 8)
			return -1;
		if (strcmp(w[5], master_name) != 0)
			return 0;
	} else {
		return 0;	/* a sentinel coming and going is no node of ours */
	}
	ev->kind = ACL_EV_NODE;
	snprintf(ev->master_name, sizeof(ev->master_name), "%s", master_name);
	snprintf(ev->role, sizeof(ev->role), "%.15s", w[0]);
	snprintf(ev->host, sizeof(ev->host), "%s", w[2]);
	ev->port = (int)port;
	return 1;
}

char *
acl_scrub(char *s, size_t size, const char *secret)
{
	static const char red[] = "[redacted]";
	size_t sl = secret != NULL ? strlen(secret) : 0;
	char *from = s, *p;

	if (sl == 0)
		return s;
	while ((p = strstr(from, secret)) != NULL) {
		size_t tail = strlen(p + sl);

		if (sl >= sizeof(red) - 1 || (size_t)(p - s) + sizeof(red) + tail <= size) {
			memmove(p + sizeof(red) - 1, p + sl, tail + 1);
			memcpy(p, red, sizeof(red) - 1);
			from = p + sizeof(red) - 1;
		} else {
			memset(p, '*', sl);
			from = p + sl;
		}
	}
	return s;
}
