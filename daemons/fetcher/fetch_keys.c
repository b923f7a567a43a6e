/*
 * fetch_keys - turns a source file's path into its block key, by the Deco
 * operator's rules (SPEC §9).  Choice: the Go operator reads every file of
 * the folder; decod takes only names ending in ".json" and ignores the
 * rest (README.md, .gitkeep, images), so that a stray document never
 * breaks a publish.  This is written in doc/sources.md too.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "daemons/fetcher/fetch_keys.h"

/* room for a name quoted by str_show: each byte may become 4 */
#define SHOWN 1024

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

const char *
fetch_name_bad(const char *name)
{
	if (name == NULL || name[0] == '\0')
		return "has an empty name";
	if (!utf8_valid(name, strlen(name)))
		return "has a name that is not valid UTF-8";
	return NULL;
}

int
fetch_form_decode(const char *s, char *out, size_t outlen)
{
	size_t o = 0;
	int hi, lo, c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if ((hi = hexval((unsigned char)s[1])) < 0 ||
			    (lo = hexval((unsigned char)s[2])) < 0)
				return -1;
			c = hi * 16 + lo;
			s += 2;
			if (c == 0)
				return -1;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = (char)c;
	}
	if (outlen == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

int
fetch_key_from_path(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	const char *base, *why;
	char shown[SHOWN];
	size_t n;
	int raw_json;

	/* any file, block or not: a source with such a name is refused whole */
	if ((why = fetch_name_bad(path)) != NULL) {
		snprintf(err, errlen, "file '%s' %s", str_show(path, shown, sizeof(shown)), why);
		return -1;
	}
	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	n = strlen(base);
	raw_json = n >= 5 && strcmp(base + n - 5, ".json") == 0;
	if (fetch_form_decode(base, out, outlen) < 0) {
		if (!raw_json)
			return 1;
		snprintf(err, errlen, "%s: file name is not valid URL form encoding "
		    "(a '%%' must be followed by two hex digits, and %%00 is refused)", path);
		return -1;
	}
	/* the decoded name decides, as in the operator ("a%2Ejson" is "a") */
	n = strlen(out);
	if (n < 5 || strcmp(out + n - 5, ".json") != 0)
		return 1;
	out[n - 5] = '\0';
	if (out[0] == '\0') {
		snprintf(err, errlen, "%s: file name gives an empty block key", path);
		return -1;
	}
	if (fetch_name_bad(out) != NULL) {
		snprintf(err, errlen, "%s: file name URL-decodes to a block key that is not "
		    "valid UTF-8 ('%s')", path, str_show(out, shown, sizeof(shown)));
		return -1;
	}
	return 0;
}

int
fetch_key_inline(const char *key, size_t len, char *err, size_t errlen)
{
	if (len == 0) {
		snprintf(err, errlen, "inline: empty block key");
		return -1;
	}
	if (memchr(key, '\0', len) != NULL) {
		snprintf(err, errlen, "inline: block key contains a NUL byte");
		return -1;
	}
	if (fetch_name_bad(key) != NULL) {
		char shown[SHOWN];

		snprintf(err, errlen, "inline: block key '%s' is not valid UTF-8",
		    str_show(key, shown, sizeof(shown)));
		return -1;
	}
	return 0;
}
