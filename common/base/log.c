/*
 * log - structured lines on stderr.  Formatting is kept in one function,
 * log_format_line(), so the unit test can check quoting and redaction
 * without capturing stderr.  A line is written with one write(2) so lines
 * from concurrent processes on the same stderr do not interleave.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/time.h>

#include "common/log.h"

static char log_prog[64] = "decod";
static enum log_level log_min = LOG_INFO;
static enum log_format log_fmt = LOG_FMT_KV;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void
log_init(const char *prog, enum log_level min, enum log_format fmt)
{
	if (prog != NULL) {
		const char *slash = strrchr(prog, '/');
		snprintf(log_prog, sizeof(log_prog), "%s", slash ? slash + 1 : prog);
	}
	log_min = min;
	log_fmt = fmt;
}

int
log_parse_level(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return i;
	if (strcasecmp(s, "warning") == 0)
		return LOG_WARN;
	return -1;
}

int
log_parse_format(const char *s)
{
	if (strcmp(s, "kv") == 0 || strcmp(s, "text") == 0 || strcmp(s, "logfmt") == 0)
		return LOG_FMT_KV;
	if (strcmp(s, "json") == 0)
		return LOG_FMT_JSON;
	return -1;
}

int
log_is_secret_key(const char *key)
{
	static const char *const words[] = { "token", "password", "passwd",
		"secret", "authorization", "credential", "apikey", "api_key" };
	char low[64];
	size_t i;

	for (i = 0; key[i] != '\0' && i < sizeof(low) - 1; i++)
		low[i] = (key[i] >= 'A' && key[i] <= 'Z') ? key[i] + 32 : key[i];
	low[i] = '\0';
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(low, words[i]) != NULL)
			return 1;
	return 0;
}

/* put - append s to buf within len, tracking position */
static void
put(char *buf, size_t len, size_t *pos, const char *s, size_t n)
{
	if (*pos + n >= len)
		n = *pos < len - 1 ? len - 1 - *pos : 0;
	memcpy(buf + *pos, s, n);
	*pos += n;
}

/* put_value - quote a value: kv quotes when needed, JSON always */
static void
put_value(char *buf, size_t len, size_t *pos, const char *v, int json)
{
	int quote = json || *v == '\0';
	const unsigned char *p;
	char esc[8];

	for (p = (const unsigned char *)v; !quote && *p; p++)
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\')
			quote = 1;
	if (!quote) {
		put(buf, len, pos, v, strlen(v));
		return;
	}
	put(buf, len, pos, "\"", 1);
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put(buf, len, pos, esc, 2);
		} else if (*p == '\n') {
			put(buf, len, pos, "\\n", 2);
		} else if (*p == '\t') {
			put(buf, len, pos, "\\t", 2);
		} else if (*p < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			put(buf, len, pos, esc, 6);
		} else {
			put(buf, len, pos, (const char *)p, 1);
		}
	}
	put(buf, len, pos, "\"", 1);
}

static void
put_field(char *buf, size_t len, size_t *pos, const char *k, const char *v,
    int json, int first)
{
	if (json) {
		if (!first)
			put(buf, len, pos, ",", 1);
		put_value(buf, len, pos, k, 1);
		put(buf, len, pos, ":", 1);
	} else {
		if (!first)
			put(buf, len, pos, " ", 1);
		put(buf, len, pos, k, strlen(k));
		put(buf, len, pos, "=", 1);
	}
	if (v == NULL)
		v = "";
	if (log_is_secret_key(k))
		v = "<redacted>";
	put_value(buf, len, pos, v, json);
}

size_t
log_format_line(char *buf, size_t len, enum log_level lvl, const char *msg,
    const char *const *kv, int nkv)
{
	struct timeval tv;
	struct tm tm;
	char ts[64];
	size_t pos = 0;
	int json = log_fmt == LOG_FMT_JSON;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
	if (json)
		put(buf, len, &pos, "{", 1);
	put_field(buf, len, &pos, "ts", ts, json, 1);
	put_field(buf, len, &pos, "level", level_names[lvl], json, 0);
	put_field(buf, len, &pos, "prog", log_prog, json, 0);
	put_field(buf, len, &pos, "msg", msg, json, 0);
	for (int i = 0; i + 1 < nkv; i += 2)
		put_field(buf, len, &pos, kv[i], kv[i + 1], json, 0);
	if (json)
		put(buf, len, &pos, "}", 1);
	put(buf, len, &pos, "\n", 1);
	buf[pos] = '\0';
	return pos;
}

void
log_vkv(enum log_level lvl, const char *msg, va_list ap)
{
	const char *kv[64];
	int n = 0;
	char line[8192];
	size_t len;
	const char *k;

	while (n < 62 && (k = va_arg(ap, const char *)) != NULL) {
		kv[n++] = k;
		kv[n++] = va_arg(ap, const char *);
	}
	if (lvl < log_min)
		return;
	len = log_format_line(line, sizeof(line), lvl, msg, kv, n);
	if (write(STDERR_FILENO, line, len) < 0) {
		/* nowhere left to report it */
	}
}

void
log_kv(enum log_level lvl, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_vkv(lvl, msg, ap);
	va_end(ap);
}

void
log_msg(enum log_level lvl, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_kv(lvl, msg, NULL);
}

void
fatal(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_kv(LOG_ERROR, msg, "fatal", "true", NULL);
	exit(1);
}
