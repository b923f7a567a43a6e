/* cron_test - cron_parse, cron_next and cron_last: fields, names, ranges, steps, lists, DOM/DOW */
#include "config.h"

#include <string.h>

#include "common/cron.h"
#include "common/util.h"
#include "t/tap.h"

/* unix seconds of an RFC 3339 UTC time, for readable rows */
static int64_t
at(const char *s)
{
	int Y, M, D, h, m;
	int64_t days;

	if (sscanf(s, "%d-%d-%dT%d:%d", &Y, &M, &D, &h, &m) != 5)
		return -1;
	/* days from civil (Howard Hinnant's algorithm) */
	Y -= M <= 2;
	{
		int64_t era = (Y >= 0 ? Y : Y - 399) / 400;
		unsigned yoe = (unsigned)(Y - era * 400);
		unsigned doy = (unsigned)((153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1);
		unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

		days = era * 146097 + (int64_t)doe - 719468;
	}
	return days * 86400 + h * 3600 + m * 60;
}

static const char *
show(int64_t t, char *buf, size_t len)
{
	if (t < 0)
		snprintf(buf, len, "none");
	else
		rfc3339_from(t, buf, len);
	return buf;
}

int
main(void)
{
	static const struct {
		const char *label, *expr, *tz, *from, *want;
	} next[] = {
		{ "Sunday 02:00, from Saturday", "0 2 * * SUN", NULL, "2026-12-05T21:00",
		    "2026-12-06T02:00:00Z" },
		{ "at the minute itself counts", "0 2 * * SUN", NULL, "2026-12-06T02:00",
		    "2026-12-06T02:00:00Z" },
		{ "one minute past: next week", "0 2 * * SUN", NULL, "2026-12-06T02:01",
		    "2026-12-13T02:00:00Z" },
		{ "dow 7 is Sunday", "0 2 * * 7", NULL, "2026-12-05T21:00",
		    "2026-12-06T02:00:00Z" },
		{ "lowercase name", "0 2 * * sun", NULL, "2026-12-05T21:00",
		    "2026-12-06T02:00:00Z" },
		{ "every 15 minutes", "*/15 * * * *", NULL, "2026-12-05T21:01",
		    "2026-12-05T21:15:00Z" },
		{ "range with step", "10-50/20 * * * *", NULL, "2026-12-05T21:31",
		    "2026-12-05T21:50:00Z" },
		{ "start/step runs to the end", "50/5 * * * *", NULL, "2026-12-05T21:56",
		    "2026-12-05T22:50:00Z" },
		{ "list of hours", "0 3,9,22 * * *", NULL, "2026-12-05T21:00",
		    "2026-12-05T22:00:00Z" },
		{ "weekday range", "30 8 * * MON-FRI", NULL, "2026-12-05T21:00",
		    "2026-12-07T08:30:00Z" },
		{ "month name", "0 0 1 JAN *", NULL, "2026-12-05T21:00",
		    "2027-01-01T00:00:00Z" },
		{ "DOM and DOW both set: either (the 15th)", "0 0 15 * FRI", NULL,
		    "2026-12-12T00:00", "2026-12-15T00:00:00Z" },
		{ "DOM and DOW both set: either (a Friday)", "0 0 15 * FRI", NULL,
		    "2026-12-05T21:00", "2026-12-11T00:00:00Z" },
		{ "DOW star: DOM alone", "0 0 15 * *", NULL, "2026-12-05T21:00",
		    "2026-12-15T00:00:00Z" },
		{ "DOM star with a step: DOW must match too (odd day, Monday)", "0 0 */2 * MON",
		    NULL, "2026-12-05T21:00", "2026-12-07T00:00:00Z" },
		{ "... and the next odd Monday is the 21st", "0 0 */2 * MON", NULL,
		    "2026-12-07T00:01", "2026-12-21T00:00:00Z" },
		{ "29 February: the next leap year", "0 0 29 2 *", NULL, "2026-12-05T21:00",
		    "2028-02-29T00:00:00Z" },
		{ "30 February never comes", "0 0 30 2 *", NULL, "2026-12-05T21:00", "none" },
		{ "a time zone: 02:00 in Sao Paulo is 05:00 UTC", "0 2 * * SUN",
		    "America/Sao_Paulo", "2026-12-05T21:00", "2026-12-06T05:00:00Z" },
	};
	static const struct {
		const char *label, *expr, *want;
	} bad[] = {
		{ "four fields", "0 2 * *", "not five fields" },
		{ "six fields", "0 2 * * SUN 1", "not five fields" },
		{ "minute 60", "60 2 * * *", "minute field" },
		{ "hour 24", "0 24 * * *", "hour field" },
		{ "day of month 0", "0 0 0 * *", "day of month field" },
		{ "month 13", "0 0 1 13 *", "month field" },
		{ "unknown name", "0 0 * * FUN", "day of week field" },
		{ "backwards range", "0 5-2 * * *", "hour field" },
		{ "step 0", "*/0 * * * *", "minute field" },
		{ "empty list part", "0 1,,2 * * *", "hour field" },
		{ "trailing comma", "0 1, * * *", "hour field" },
		{ "trailing garbage", "0 2x * * *", "hour field" },
	};
	char buf[64], err[256];
	struct cron c;

	for (size_t i = 0; i < sizeof(next) / sizeof(next[0]); i++) {
		if (cron_parse(next[i].expr, &c, err, sizeof(err)) < 0) {
			ok(0, "%s: parse: %s", next[i].label, err);
			continue;
		}
		is_str(show(cron_next(&c, at(next[i].from), next[i].tz), buf, sizeof(buf)),
		    next[i].want, "%s (%s)", next[i].label, next[i].expr);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = cron_parse(bad[i].expr, &c, err, sizeof(err));

		ok(rc < 0 && (bad[i].want == NULL || strstr(err, bad[i].want) != NULL),
		    "refused: %s (%s)", bad[i].label, rc < 0 ? err : "accepted");
	}

	/* the window's question: did it open within the last duration? */
	cron_parse("0 2 * * SUN", &c, err, sizeof(err));
	is_str(show(cron_last(&c, at("2026-12-06T02:30"), 3600, NULL), buf, sizeof(buf)),
	    "2026-12-06T02:00:00Z", "30 minutes into a 1 h window: open since 02:00");
	is_int(cron_last(&c, at("2026-12-06T03:00") + 1, 3600, NULL), -1,
	    "past the hour: closed");
	is_int(cron_last(&c, at("2026-12-06T01:59"), 3600, NULL), -1, "a minute before: closed");
	ok(cron_tz_valid(NULL) && cron_tz_valid("UTC") && cron_tz_valid("Europe/Lisbon"),
	    "UTC and a zone name are readable");
	ok(!cron_tz_valid("Mars/Olympus") && !cron_tz_valid("../etc/passwd"),
	    "an unknown zone or a path is not");
	return done_testing();
}
