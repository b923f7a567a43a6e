/*
 * cron - five-field cron expressions, parsed into bit sets and matched a
 * minute at a time.  A walk of minutes is plain but bounded (5 years
 * forward at most), and a time zone other than UTC is read through TZ,
 * set for the walk and put back, so callers stay single-threaded about it
 * (the renderer's loop and decoctl are).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/cron.h"

static const char *const month_names[] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
	"JUL", "AUG", "SEP", "OCT", "NOV", "DEC" };
static const char *const dow_names[] = { "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT" };

struct field {
	const char *name;
	int lo, hi;
	const char *const *names;	/* names[0] is lo's */
	int nnames;
};

static const struct field fields[5] = {
	{ "minute", 0, 59, NULL, 0 },
	{ "hour", 0, 23, NULL, 0 },
	{ "day of month", 1, 31, NULL, 0 },
	{ "month", 1, 12, month_names, 12 },
	{ "day of week", 0, 7, dow_names, 7 },
};

/* one value (number or name) at *p; advances *p.  0 or -1 */
static int
value(const struct field *f, const char **p, int *v)
{
	const char *s = *p;
	char *end;
	long n;

	if (f->names != NULL && ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) {
		for (int i = 0; i < f->nnames; i++) {
			if (strncasecmp(s, f->names[i], 3) == 0 &&
			    !((s[3] >= 'A' && s[3] <= 'Z') || (s[3] >= 'a' && s[3] <= 'z'))) {
				*v = f->lo + i;
				*p = s + 3;
				return 0;
			}
		}
		return -1;
	}
	if (*s < '0' || *s > '9')
		return -1;
	n = strtol(s, &end, 10);
	if (n < f->lo || n > f->hi)
		return -1;
	*v = (int)n;
	*p = end;
	return 0;
}

/* one field's text (len bytes) into the bit set *bits; 0 or -1 */
static int
parse_field(const struct field *f, const char *text, size_t len, uint64_t *bits, int *star,
    char *err, size_t errlen)
{
	char buf[128];
	char *save = NULL, *part;

	*bits = 0;
	*star = text[0] == '*';
	if (len >= sizeof(buf)) {
		snprintf(err, errlen, "%s field is too long", f->name);
		return -1;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,") != NULL) {
		snprintf(err, errlen, "%s field: \"%s\" has an empty list member", f->name, buf);
		return -1;
	}
	for (part = strtok_r(buf, ",", &save); part != NULL; part = strtok_r(NULL, ",", &save)) {
		const char *p = part;
		int a, b, step = 1;

		if (*p == '*') {
			a = f->lo;
			b = f->hi == 7 ? 6 : f->hi;
			p++;
		} else {
			if (value(f, &p, &a) < 0)
				goto bad;
			b = a;
			if (*p == '-') {
				p++;
				if (value(f, &p, &b) < 0 || b < a)
					goto bad;
			} else if (*p == '/') {
				b = f->hi == 7 ? 6 : f->hi;	/* a/n: from a to the end */
			}
		}
		if (*p == '/') {
			char *end;
			long n;

			p++;
			n = strtol(p, &end, 10);
			if (end == p || n < 1 || n > f->hi)
				goto bad;
			step = (int)n;
			p = end;
		}
		if (*p != '\0')
			goto bad;
		for (int v = a; v <= b; v += step)
			*bits |= (uint64_t)1 << (f->hi == 7 && v == 7 ? 0 : v);
		continue;
bad:
		snprintf(err, errlen, "%s field: \"%s\" is not a value, range, step or name "
		    "(%d-%d)", f->name, part, f->lo, f->hi);
		return -1;
	}
	if (*bits == 0) {
		snprintf(err, errlen, "%s field is empty", f->name);
		return -1;
	}
	return 0;
}

int
cron_parse(const char *expr, struct cron *c, char *err, size_t errlen)
{
	const char *p = expr;
	uint64_t bits[5];
	int star[5], n = 0;

	memset(c, 0, sizeof(*c));
	while (n < 5) {
		size_t len;

		p += strspn(p, " \t");
		if (*p == '\0')
			break;
		len = strcspn(p, " \t");
		if (parse_field(&fields[n], p, len, &bits[n], &star[n], err, errlen) < 0)
			return -1;
		p += len;
		n++;
	}
	p += strspn(p, " \t");
	if (n != 5 || *p != '\0') {
		snprintf(err, errlen, "\"%s\" is not five fields (minute hour day-of-month "
		    "month day-of-week)", expr);
		return -1;
	}
	c->minute = bits[0];
	c->hour = (uint32_t)bits[1];
	c->dom = (uint32_t)bits[2];
	c->month = (uint32_t)bits[3];
	c->dow = (uint32_t)bits[4];
	c->dom_star = star[2];
	c->dow_star = star[4];
	return 0;
}

static int
matches(const struct cron *c, const struct tm *tm)
{
	int dom, dow;

	if (!(c->minute >> tm->tm_min & 1) || !(c->hour >> tm->tm_hour & 1) ||
	    !(c->month >> (tm->tm_mon + 1) & 1))
		return 0;
	dom = c->dom >> tm->tm_mday & 1;
	dow = c->dow >> tm->tm_wday & 1;
	if (c->dom_star || c->dow_star)
		return dom && dow;
	return dom || dow;	/* both restricted: either one */
}

static int
is_utc(const char *tz)
{
	return tz == NULL || *tz == '\0' || strcmp(tz, "UTC") == 0 ||
	    strcmp(tz, "Etc/UTC") == 0;
}

int
cron_tz_valid(const char *tz)
{
	char path[512];

	if (is_utc(tz))
		return 1;
	if (strstr(tz, "..") != NULL || tz[0] == '/' || strlen(tz) > 200)
		return 0;
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", tz);
	return access(path, R_OK) == 0;
}

/* the walk: TZ set for a zone other than UTC, put back after */
struct zone {
	int utc;
	char *old;
};

static void
zone_enter(struct zone *z, const char *tz)
{
	const char *o = getenv("TZ");

	z->utc = is_utc(tz);
	z->old = NULL;
	if (z->utc)
		return;
	z->old = o != NULL ? strdup(o) : NULL;
	setenv("TZ", tz, 1);
	tzset();
}

static void
zone_leave(struct zone *z)
{
	if (z->utc)
		return;
	if (z->old != NULL)
		setenv("TZ", z->old, 1);
	else
		unsetenv("TZ");
	free(z->old);
	tzset();
}

static int
match_at(const struct cron *c, const struct zone *z, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (z->utc)
		gmtime_r(&tt, &tm);
	else
		localtime_r(&tt, &tm);
	return matches(c, &tm);
}

int64_t
cron_next(const struct cron *c, int64_t t, const char *tz)
{
	int64_t m = (t + 59) / 60 * 60, end = t + (int64_t)5 * 366 * 86400, found = -1;
	struct zone z;

	zone_enter(&z, tz);
	for (; m <= end; m += 60) {
		if (match_at(c, &z, m)) {
			found = m;
			break;
		}
	}
	zone_leave(&z);
	return found;
}

int64_t
cron_last(const struct cron *c, int64_t t, int64_t within, const char *tz)
{
	int64_t m = t / 60 * 60, found = -1;
	struct zone z;

	zone_enter(&z, tz);
	for (; m >= t - within; m -= 60) {
		if (match_at(c, &z, m)) {
			found = m;
			break;
		}
	}
	zone_leave(&z);
	return found;
}
