/*
 * acl_cred_test - passwords (URL-safe base64 with padding, from known
 * bytes and from the CSPRNG), and the env file: its two lines, mode 0600,
 * reading it back, no temp file left, malformed files refused, removal.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "common/util.h"
#include "daemons/acl/acl_cred.h"
#include "t/tap.h"

static void
test_encode(void)
{
	static const struct { const char *raw; const char *want; } rows[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "\xfb\xff", "-_8=" },
		{ "\xfb\xff\xbf", "-_-_" },
	};
	unsigned char raw[32];
	char out[64], small[8];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ok(acl_password_encode((const unsigned char *)rows[i].raw, strlen(rows[i].raw),
		    out, sizeof(out)) == 0, "encode row %zu", i);
		is_str(out, rows[i].want, "URL-safe base64 with padding, row %zu", i);
	}
	memset(raw, 0xff, sizeof(raw));
	ok(acl_password_encode(raw, 32, out, sizeof(out)) == 0 && strlen(out) == 44 &&
	    out[43] == '=' && strspn(out, "_") == 42, "32 bytes of 0xff: 44 chars, one '='");
	ok(acl_password_encode(raw, 32, small, sizeof(small)) < 0, "too small a buffer refused");
}

static void
test_new(void)
{
	char a[ACL_PW_LEN + 1], b[ACL_PW_LEN + 1];

	ok(acl_password_new(a, sizeof(a)) == 0 && acl_password_new(b, sizeof(b)) == 0,
	    "two passwords made");
	is_int((long long)strlen(a), ACL_PW_LEN, "a password is 44 characters");
	ok(acl_password_valid(a) && acl_password_valid(b), "both look like ours");
	ok(strcmp(a, b) != 0, "two passwords differ");
	ok(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == 43,
	    "URL-safe alphabet only");
	ok(!acl_password_valid("short="), "a short one is not ours");
	ok(!acl_password_valid("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+"),
	    "a standard-alphabet one is not ours");
}

static void
test_env(void)
{
	char dir[] = "/tmp/acl_cred_test.XXXXXX", sub[512], path[600], user[64], pw[64];
	struct stat sb;
	char *text;
	size_t len;
	DIR *d;
	struct dirent *e;
	int others = 0;
	const char *pw1 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(sub, sizeof(sub), "%s/acl", dir);
	ok(acl_env_write(sub, "sites-loja", "loja", pw1) == 0, "env file written (folder made)");
	snprintf(path, sizeof(path), "%s/sites-loja.env", sub);
	ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600, "mode 0600");
	ok(stat(sub, &sb) == 0 && (sb.st_mode & 0777) == 0700, "folder mode 0700");
	text = read_file(path, &len, 4096);
	is_str(text, "LOADER_CACHE_REDIS_USERNAME=loja\n"
	    "LOADER_CACHE_REDIS_PASSWORD=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	    "exactly the two lines");
	free(text);
	ok(acl_env_read(sub, "sites-loja", user, sizeof(user), pw, sizeof(pw)) == 0 &&
	    strcmp(user, "loja") == 0 && strcmp(pw, pw1) == 0, "read back");
	ok(acl_env_write(sub, "sites-loja", "loja2", "BBBB") == 0 &&
	    acl_env_read(sub, "sites-loja", user, sizeof(user), pw, sizeof(pw)) == 0 &&
	    strcmp(user, "loja2") == 0 && strcmp(pw, "BBBB") == 0, "rewritten in place");
	if ((d = opendir(sub)) != NULL) {
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.' && strcmp(e->d_name, "sites-loja.env") != 0)
				others++;
		closedir(d);
	}
	is_int(others, 0, "no temp file left behind");
	is_int(acl_env_read(sub, "nobody", user, sizeof(user), pw, sizeof(pw)), 1,
	    "a missing file is 'none'");
	snprintf(path, sizeof(path), "%s/bad.env", sub);
	write_file_atomic(path, "LOADER_CACHE_REDIS_USERNAME=x\n", 30, 0600);
	is_int(acl_env_read(sub, "bad", user, sizeof(user), pw, sizeof(pw)), -1,
	    "a file without a password is malformed");
	ok(acl_env_write(sub, "../evil", "x", "y") < 0, "a namespace with '/' is refused");
	ok(acl_env_remove(sub, "sites-loja") == 0 &&
	    acl_env_read(sub, "sites-loja", user, sizeof(user), pw, sizeof(pw)) == 1,
	    "removed");
	ok(acl_env_remove(sub, "sites-loja") == 0, "removing again is fine");
	rm_rf(dir);
}

int
main(void)
{
	test_encode();
	test_new();
	test_env();
	return done_testing();
}
