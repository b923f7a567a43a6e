/*
 * tap - a tiny TAP producer for unit tests: ok(), is_int(), is_str(),
 * done_testing().  Output is read by automake's tap-driver.
 */
#ifndef DECOD_TAP_H
#define DECOD_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>

static int tap_n, tap_failed;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) do { long long g_ = (got), w_ = (want); \
	if (!tap_ok(g_ == w_, __FILE__, __LINE__, __VA_ARGS__)) \
		printf("#   got %lld, want %lld\n", g_, w_); } while (0)
#define is_str(got, want, ...) do { const char *g_ = (got), *w_ = (want); \
	int same_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_; \
	if (!tap_ok(same_, __FILE__, __LINE__, __VA_ARGS__)) \
		printf("#   got  \"%s\"\n#   want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); } while (0)
#define diag(...) do { printf("# "); printf(__VA_ARGS__); printf("\n"); } while (0)

static int __attribute__((format(printf, 4, 5), unused))
tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%sok %d - ", pass ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return pass;
}

static int __attribute__((unused))
done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#include <stdarg.h>
#endif
