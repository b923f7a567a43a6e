/*
 * cron - five-field cron expressions ("0 2 * * SUN": minute, hour, day of
 * month, month, day of week) as a template update window opens on them:
 * numbers, names (JAN-DEC, SUN-SAT), '*', ranges, steps and lists, and
 * Vixie cron's rule that a day matches on day-of-month OR day-of-week
 * when both are restricted.  Times are unix seconds, read in a time zone
 * (NULL or "UTC": UTC).
 */
#ifndef DECOD_CRON_H
#define DECOD_CRON_H

#include <stddef.h>
#include <stdint.h>

struct cron {
	uint64_t minute;	/* bit m: minute m (0-59) */
	uint32_t hour;		/* 0-23 */
	uint32_t dom;		/* 1-31 */
	uint32_t month;		/* 1-12 */
	uint32_t dow;		/* 0-6, Sunday 0 (7 is read as 0) */
	int dom_star, dow_star;	/* the field began with '*' */
};

/*
 * cron_parse - expr into c.  0, or -1 with err naming the field and what
 * is wrong with it.
 */
int cron_parse(const char *expr, struct cron *c, char *err, size_t errlen);

/* cron_tz_valid - whether tz (NULL, "UTC" or an IANA name) can be read */
int cron_tz_valid(const char *tz);

/*
 * cron_next - the first minute at or after t (unix seconds) that c
 * matches in tz, or -1 when none within 5 years (e.g. "0 0 30 2 *").
 */
int64_t cron_next(const struct cron *c, int64_t t, const char *tz);

/*
 * cron_last - the latest minute at or before t that c matches in tz, no
 * earlier than t - within seconds; -1 when none.
 */
int64_t cron_last(const struct cron *c, int64_t t, int64_t within, const char *tz);

#endif
