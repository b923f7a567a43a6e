/*
 * acl_cmd_test - the acl stage's pure parts from tables: user-name rules
 * (reserved names refused), the exact ACL SETUSER vector, node addresses
 * and URLs, Sentinel event messages, and scrubbing a secret out of text.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemons/acl/acl_cmd.h"
#include "t/tap.h"

static void
test_users(void)
{
	static const struct {
		const char *user;
		size_t len;		/* 0: strlen */
		int ok;
		const char *reason;
	} rows[] = {
		{ "loja", 0, 1, NULL },
		{ "loja-2", 0, 1, NULL },
		{ "a.b_c", 0, 1, NULL },
		{ "default", 0, 0, "ReservedName" },
		{ "redis-root", 0, 0, "ReservedName" },
		{ "", 0, 0, "InvalidName" },
		{ "Loja", 0, 0, "InvalidName" },
		{ "lo ja", 0, 0, "InvalidName" },
		{ "caf\xc3\xa9", 0, 0, "InvalidName" },
		{ "-loja", 0, 0, "InvalidName" },
		{ "loja:x", 0, 0, "InvalidName" },
		{ "a-very-long-name-that-goes-on-and-on-and-on-and-on-past-63-chars", 0, 0,
		  "InvalidName" },
		/* judged whole: a NUL inside is no end of the name */
		{ "a\0b", 3, 0, "InvalidName" },
		{ "loja\0", 5, 0, "InvalidName" },
		{ "default\0x", 9, 0, "InvalidName" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *reason = NULL;
		char why[256] = "";
		size_t len = rows[i].len ? rows[i].len : strlen(rows[i].user);
		int rc = acl_user_check(rows[i].user, len, &reason, why, sizeof(why));

		is_int(rc == 0, rows[i].ok, "user \"%s\" %s", rows[i].user,
		    rows[i].ok ? "allowed" : "refused");
		if (!rows[i].ok) {
			is_str(reason, rows[i].reason, "user \"%s\": reason", rows[i].user);
			ok(why[0] != '\0', "user \"%s\": a sentence says why (%s)", rows[i].user,
			    why);
		}
	}
	{
		const char *reason = NULL;
		char why[256] = "", *big = xmalloc(10001);

		memset(big, 'a', 10000);
		big[10000] = '\0';
		ok(acl_user_check(big, 10000, &reason, why, sizeof(why)) < 0 &&
		    strcmp(reason, "InvalidName") == 0 && strstr(why, "10000") != NULL,
		    "a 10,000-character name is refused, its length named (%s)", why);
		ok(acl_user_check(big, 63, &reason, why, sizeof(why)) == 0,
		    "its first 63 characters alone would do: only the whole is judged");
		free(big);
		ok(acl_user_check("a\0b", 3, &reason, why, sizeof(why)) < 0 &&
		    strstr(why, "NUL") != NULL, "the NUL is named (%s)", why);
	}
	{
		char out[64];

		ok(acl_user_for_namespace("sites-loja", out, sizeof(out)) == 0 &&
		    strcmp(out, "loja") == 0, "namespace sites-loja -> user loja");
		ok(acl_user_for_namespace("shop", out, sizeof(out)) == 0 &&
		    strcmp(out, "shop") == 0, "namespace without sites- keeps its name");
	}
}

static void
test_argv(void)
{
	static const char *const want[] = { "ACL", "SETUSER", "loja", "on", "resetpass",
		">p4ss-_=", "resetkeys", "~loja:*", "~lock:loja:*", "resetchannels",
		"nocommands", "+@read", "+@write", "+ping" };
	struct acl_argv a;

	acl_setuser_argv(&a, "loja", "p4ss-_=");
	is_int(a.argc, 14, "SETUSER has 14 arguments, one per word");
	for (int i = 0; i < a.argc && i < 14; i++) {
		is_str(a.argv[i], want[i], "SETUSER argument %d", i);
		is_int((long long)a.len[i], (long long)strlen(want[i]), "length of argument %d", i);
	}
	acl_argv_free(&a);
	is_int(a.argc, 0, "freed vector is empty");
	acl_getuser_argv(&a, "loja");
	ok(a.argc == 3 && strcmp(a.argv[1], "GETUSER") == 0 && strcmp(a.argv[2], "loja") == 0,
	    "ACL GETUSER loja");
	acl_argv_free(&a);
	acl_deluser_argv(&a, "loja");
	ok(a.argc == 3 && strcmp(a.argv[1], "DELUSER") == 0 && strcmp(a.argv[2], "loja") == 0,
	    "ACL DELUSER loja");
	acl_argv_free(&a);
}

static void
test_addr(void)
{
	static const struct {
		const char *in;
		int sentinel, rc;
		const char *host;
		int port;
		const char *pw;
	} rows[] = {
		{ "127.0.0.1:26379", 1, 0, "127.0.0.1", 26379, "" },
		{ "127.0.0.1", 1, 0, "127.0.0.1", 26379, "" },
		{ "127.0.0.1", 0, 0, "127.0.0.1", 6379, "" },
		{ "redis://valkey.svc:6380", 0, 0, "valkey.svc", 6380, "" },
		{ "redis://:s3cret@h:1/0", 0, 0, "h", 1, "s3cret" },
		{ "redis://admin:pw@h:2", 0, 0, "h", 2, "pw" },
		{ "valkey://[::1]:7000", 0, 0, "::1", 7000, "" },
		{ "[::1]", 1, 0, "::1", 26379, "" },
		{ "http://h:1", 0, -1, NULL, 0, NULL },
		{ "h:0", 0, -1, NULL, 0, NULL },
		{ "h:70000", 0, -1, NULL, 0, NULL },
		{ "h:12x", 0, -1, NULL, 0, NULL },
		{ ":6379", 0, -1, NULL, 0, NULL },
		{ "[::1", 0, -1, NULL, 0, NULL },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char host[256] = "", pw[64] = "";
		int port = 0;
		int rc = acl_parse_addr(rows[i].in, rows[i].sentinel, host, sizeof(host), &port,
		    pw, sizeof(pw));

		is_int(rc, rows[i].rc, "address \"%s\": %s", rows[i].in, rc == 0 ? "parsed" :
		    "refused");
		if (rows[i].rc == 0 && rc == 0) {
			is_str(host, rows[i].host, "address \"%s\": host", rows[i].in);
			is_int(port, rows[i].port, "address \"%s\": port", rows[i].in);
			is_str(pw, rows[i].pw, "address \"%s\": password", rows[i].in);
		}
	}
}

static void
test_events(void)
{
	static const struct {
		const char *channel, *msg;
		int rc;
		enum acl_event_kind kind;
		const char *host;
		int port;
	} rows[] = {
		{ "+switch-master", "mymaster 127.0.0.1 6379 127.0.0.1 6380", 1,
		  ACL_EV_SWITCH_MASTER, "127.0.0.1", 6380 },
		{ "+switch-master", "othermaster 127.0.0.1 6379 127.0.0.1 6380", 0, ACL_EV_NONE,
		  NULL, 0 },
		{ "+switch-master", "mymaster 127.0.0.1 6379", -1, ACL_EV_NONE, NULL, 0 },
		{ "+switch-master", "mymaster 1 2 3 notaport", -1, ACL_EV_NONE, NULL, 0 },
		{ "+reboot", "slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6379", 1,
		  ACL_EV_NODE, "127.0.0.1", 6381 },
		{ "-sdown", "slave 10.0.0.9:6379 10.0.0.9 6379 @ mymaster 10.0.0.1 6379", 1,
		  ACL_EV_NODE, "10.0.0.9", 6379 },
		{ "-sdown", "slave 10.0.0.9:6379 10.0.0.9 6379 @ other 10.0.0.1 6379", 0,
		  ACL_EV_NONE, NULL, 0 },
		{ "+reboot", "master mymaster 127.0.0.1 6379", 1, ACL_EV_NODE, "127.0.0.1", 6379 },
		{ "+reboot", "master other 127.0.0.1 6379", 0, ACL_EV_NONE, NULL, 0 },
		{ "-sdown", "sentinel 0123abc 127.0.0.1 26379 @ mymaster 127.0.0.1 6379", 0,
		  ACL_EV_NONE, NULL, 0 },
		{ "+convert-to-slave", "slave 127.0.0.1:6379 127.0.0.1 6379 @ mymaster "
		  "127.0.0.1 6380", 1, ACL_EV_NODE, "127.0.0.1", 6379 },
		{ "-sdown", "slave 127.0.0.1:6381 127.0.0.1 6381 mymaster 127.0.0.1 6379", -1,
		  ACL_EV_NONE, NULL, 0 },
		{ "+reboot", "slave a b", -1, ACL_EV_NONE, NULL, 0 },
		{ "+odown", "master mymaster 127.0.0.1 6379 #quorum 2/2", 0, ACL_EV_NONE, NULL, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct acl_event ev;
		int rc = acl_event_parse(rows[i].channel, rows[i].msg, "mymaster", &ev);

		is_int(rc, rows[i].rc, "%s \"%s\"", rows[i].channel, rows[i].msg);
		if (rc == 1 && rows[i].rc == 1) {
			is_int(ev.kind, rows[i].kind, "%s: kind", rows[i].channel);
			is_str(ev.host, rows[i].host, "%s: host", rows[i].channel);
			is_int(ev.port, rows[i].port, "%s: port", rows[i].channel);
		}
	}
}

static void
test_scrub(void)
{
	char s[128];
	const char *pw = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

	snprintf(s, sizeof(s), "ERR Error in ACL SETUSER modifier '>%s': bad", pw);
	acl_scrub(s, sizeof(s), pw);
	ok(strstr(s, pw) == NULL && strstr(s, "[redacted]") != NULL,
	    "the password is gone from a server's error text: %s", s);
	snprintf(s, sizeof(s), "x red x red");
	acl_scrub(s, sizeof(s), "red");
	is_str(s, "x [redacted] x [redacted]", "a short secret that is part of the mark ends");
	snprintf(s, sizeof(s), "nothing here");
	acl_scrub(s, sizeof(s), "");
	is_str(s, "nothing here", "an empty secret changes nothing");
}

int
main(void)
{
	test_users();
	test_argv();
	test_addr();
	test_events();
	test_scrub();
	return done_testing();
}
