/*
 * cli_age - the one AGE of decoctl's tables: kubectl's short duration
 * (5s, 3m5s, 2h, 4d2h, 2y70d; k8s.io/apimachinery's HumanDuration), and
 * the RFC 3339 times it is measured from.  Every column that shows an age
 * or an uptime goes through cli_age, so they read the same.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

int
cli_parse_time(const char *s, int64_t *ms)
{
	struct tm tm;
	const char *p;
	int64_t frac = 0, scale = 100;
	time_t t;

	if (s == NULL)
		return -1;
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL)
		p = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (p == NULL)
		return -1;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++) {
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	t = timegm(&tm);
	if (*p == '+' || *p == '-') {
		int hh = 0, mm = 0;

		if (sscanf(p + 1, "%d:%d", &hh, &mm) < 1)
			return -1;
		t += (*p == '+' ? -1 : 1) * (hh * 3600 + mm * 60);
	} else if (*p != 'Z' && *p != 'z' && *p != '\0') {
		return -1;
	}
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

/* two units, the second left out when it is 0 ("3m", not "3m0s") */
static void
two_units(char *out, size_t len, long long a, char ua, long long b, char ub)
{
	if (b == 0)
		snprintf(out, len, "%lld%c", a, ua);
	else
		snprintf(out, len, "%lld%c%lld%c", a, ua, b, ub);
}

void
cli_age(int64_t ms, char *out, size_t len)
{
	long long s = (long long)(ms / 1000), m = s / 60, h = s / 3600, d = h / 24;

	if (s < -1)
		snprintf(out, len, "<invalid>");	/* a clock well behind */
	else if (s < 120)
		snprintf(out, len, "%llds", s < 0 ? 0 : s);
	else if (m < 10)
		two_units(out, len, m, 'm', s % 60, 's');
	else if (m < 3 * 60)
		snprintf(out, len, "%lldm", m);
	else if (h < 8)
		two_units(out, len, h, 'h', m % 60, 'm');
	else if (h < 48)
		snprintf(out, len, "%lldh", h);
	else if (h < 8 * 24)
		two_units(out, len, d, 'd', h % 24, 'h');
	else if (h < 2 * 365 * 24)
		snprintf(out, len, "%lldd", d);
	else if (h < 8 * 365 * 24)
		two_units(out, len, d / 365, 'y', d % 365, 'd');
	else
		snprintf(out, len, "%lldy", d / 365);
}

void
cli_age_since(const char *rfc3339, char *out, size_t len)
{
	int64_t ms;

	if (rfc3339 == NULL || *rfc3339 == '\0')
		snprintf(out, len, "-");
	else if (cli_parse_time(rfc3339, &ms) < 0)
		snprintf(out, len, "<unknown>");
	else
		cli_age(wall_ms() - ms, out, len);
}
