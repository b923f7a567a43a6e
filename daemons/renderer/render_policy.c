/*
 * render_policy - spec.updatePolicy read and decided: which mode, whether
 * a Window is open now and when it opens next, and the text of the
 * TemplateUpdateAvailable condition.  Pure functions of the document and
 * a time, so the unit test drives them without a store.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/resource.h"
#include "common/util.h"
#include "daemons/renderer/render_policy.h"

int
render_policy_parse(yajl_val doc, struct render_policy *p, char *why, size_t whylen)
{
	yajl_val up = json_get(doc, "spec", "updatePolicy", NULL);
	const char *mode, *w, *d, *tz;
	char err[256];
	int64_t ms;

	memset(p, 0, sizeof(*p));
	p->mode = RENDER_AUTO;
	p->duration_s = RENDER_WINDOW_DEFAULT_S;
	if (up == NULL || YAJL_IS_NULL(up))
		return 0;
	if (!YAJL_IS_OBJECT(up)) {
		snprintf(why, whylen, "spec.updatePolicy must be an object");
		return -1;
	}
	if (json_get(up, "templateChanges", NULL) != NULL &&
	    (mode = json_get_str(up, "templateChanges", NULL)) == NULL) {
		snprintf(why, whylen, "spec.updatePolicy.templateChanges must be a string "
		    "(Auto, Manual or Window)");
		return -1;
	}
	mode = json_get_str(up, "templateChanges", NULL);
	if (mode == NULL || strcmp(mode, "Auto") == 0)
		p->mode = RENDER_AUTO;
	else if (strcmp(mode, "Manual") == 0)
		p->mode = RENDER_MANUAL;
	else if (strcmp(mode, "Window") == 0)
		p->mode = RENDER_WINDOW;
	else {
		snprintf(why, whylen, "spec.updatePolicy.templateChanges: \"%.64s\" is not Auto, "
		    "Manual or Window", mode);
		return -1;
	}
	w = json_get_str(up, "window", NULL);
	d = json_get_str(up, "duration", NULL);
	tz = json_get_str(up, "timeZone", NULL);
	if (p->mode != RENDER_WINDOW) {
		if (w != NULL || d != NULL || tz != NULL) {
			snprintf(why, whylen, "spec.updatePolicy.%s is only for templateChanges "
			    "Window", w ? "window" : d ? "duration" : "timeZone");
			return -1;
		}
		return 0;
	}
	if (w == NULL || *w == '\0') {
		snprintf(why, whylen, "spec.updatePolicy.window is required with templateChanges "
		    "Window (five-field cron, e.g. \"0 2 * * SUN\")");
		return -1;
	}
	if (strlen(w) >= sizeof(p->window) || cron_parse(w, &p->cron, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "spec.updatePolicy.window: %s",
		    strlen(w) >= sizeof(p->window) ? "too long" : err);
		return -1;
	}
	snprintf(p->window, sizeof(p->window), "%s", w);
	if (d != NULL) {
		if (parse_duration_ms(d, &ms) < 0 || ms < 60000 ||
		    ms > (int64_t)RENDER_WINDOW_MAX_S * 1000) {
			snprintf(why, whylen, "spec.updatePolicy.duration: \"%.32s\" is not a duration "
			    "from 1m to 168h", d);
			return -1;
		}
		p->duration_s = ms / 1000;
	}
	if (tz != NULL) {
		if (strlen(tz) >= sizeof(p->tz) || !cron_tz_valid(tz)) {
			snprintf(why, whylen, "spec.updatePolicy.timeZone: \"%.64s\" is not a known "
			    "time zone", tz);
			return -1;
		}
		snprintf(p->tz, sizeof(p->tz), "%s", tz);
	}
	return 0;
}

const char *
render_policy_name(const struct render_policy *p)
{
	return p->mode == RENDER_MANUAL ? "Manual" : p->mode == RENDER_WINDOW ? "Window" :
	    "Auto";
}

int
render_policy_apply_requested(yajl_val doc)
{
	return decofile_template_apply(doc);
}

int
render_policy_adopt(const struct render_policy *p, int64_t now, int apply,
    int64_t *next_open)
{
	const char *tz = p->tz[0] ? p->tz : NULL;

	*next_open = -1;
	if (p->mode == RENDER_AUTO || apply)
		return 1;
	if (p->mode == RENDER_MANUAL)
		return 0;
	/* open: an opening within the last duration (the end itself is closed) */
	if (cron_last(&p->cron, now, p->duration_s - 1, tz) >= 0)
		return 1;
	*next_open = cron_next(&p->cron, now, tz);
	return 0;
}

/* "2026-12-06T01:59:57Z" (seconds optional) into unix seconds; -1 if not one */
static int64_t
parse_utc(const char *s)
{
	struct tm tm;
	int sec = 0, n;

	memset(&tm, 0, sizeof(tm));
	n = sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
	    &tm.tm_min, &sec);
	if (n < 5)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_sec = sec;
	return (int64_t)timegm(&tm);
}

/*
 * test_clock_file - DECOD_TEST_CLOCK=/PATH: the file holds an instant, the
 * time when it was written; the clock runs on from there in real time, so
 * a test moves it by writing the file again.  -1 if unreadable.
 */
static int64_t
test_clock_file(const char *path)
{
	char t[64];
	struct stat sb;
	size_t n;
	int64_t at;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(t, 1, sizeof(t) - 1, f);
	t[n] = '\0';
	at = fstat(fileno(f), &sb) == 0 ? parse_utc(t) : -1;
	fclose(f);
	return at < 0 ? -1 : at + (wall_ms() / 1000 - (int64_t)sb.st_mtime);
}

int64_t
render_policy_now(void)
{
	static int64_t base = -2, started;
	const char *e = getenv("DECOD_TEST_CLOCK");
	int64_t t;

	if (e != NULL && e[0] == '/' && (t = test_clock_file(e)) >= 0)
		return t;
	if (base == -2) {
		base = -1;
		started = now_ms();
		if (e != NULL && *e != '\0' && e[0] != '/')
			base = parse_utc(e);
	}
	if (base >= 0)
		return base + (now_ms() - started) / 1000;
	return wall_ms() / 1000;
}

void
render_policy_pending_line(struct buf *b, const char *tpl, int64_t from, int64_t to)
{
	buf_printf(b, "DecofileTemplate '%s' has pending changes (generation %lld \xe2\x86\x92 %lld)",
	    tpl, (long long)from, (long long)to);
}

void
render_policy_window_line(struct buf *b, const struct render_policy *p, int64_t next_open)
{
	char t[40];

	if (next_open < 0) {
		buf_printf(b, "Window \"%s\" (%s) never opens", p->window,
		    p->tz[0] ? p->tz : "UTC");
		return;
	}
	rfc3339_from(next_open, t, sizeof(t));
	buf_printf(b, "Window \"%s\" (%s) opens next at %s", p->window, p->tz[0] ? p->tz : "UTC",
	    t);
}
