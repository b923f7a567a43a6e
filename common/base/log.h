/*
 * log - one line per event on stderr, key=value (default) or JSON.
 *
 * Every line carries time, level, the program name and a message; callers
 * add fields as alternating key, value strings ended by NULL.  Values whose
 * key looks like a secret (token, password, secret, authorization) are
 * replaced by "<redacted>" here, so no caller can leak one by mistake.
 */
#ifndef DECOD_LOG_H
#define DECOD_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdnoreturn.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_FMT_KV, LOG_FMT_JSON };

/* log_init - set program name, minimum level and format (defaults: info, kv) */
void log_init(const char *prog, enum log_level min, enum log_format fmt);

/* log_parse_level - "debug"|"info"|"warn"|"error" to a level; -1 if unknown */
int log_parse_level(const char *s);

/* log_parse_format - "kv"|"text"|"json"; -1 if unknown */
int log_parse_format(const char *s);

/*
 * log_kv - log msg with fields given as key, value, ..., NULL.
 * A NULL value prints as an empty string.
 */
void log_kv(enum log_level lvl, const char *msg, ...);
void log_vkv(enum log_level lvl, const char *msg, va_list ap);

/* logf - printf-style message, no extra fields */
void log_msg(enum log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* fatal - log at error level and exit(1); for broken start-up only */
noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* log_is_secret_key - nonzero when a field named key must never be shown */
int log_is_secret_key(const char *key);

/* log_format_line - render one line into buf (for tests); returns length */
size_t log_format_line(char *buf, size_t len, enum log_level lvl,
    const char *msg, const char *const *kv, int nkv);

#endif
