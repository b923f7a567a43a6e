/*
 * render_rollout_spec - a DecofileTemplate's spec.rollout read and checked
 * (decoctl apply refuses what the renderer would), and the wave of each
 * site: the canary by sha256("ns/name"), the rest in rank order.  Pure
 * functions, shared by the render stage, decoctl and the tests.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/util.h"
#include "daemons/renderer/render_rollout.h"

/* count_or_pct - an integer N or a string "N%" (or "N") */
static int
count_or_pct(yajl_val v, int *n, int *pct)
{
	char *end;
	long x;

	*pct = 0;
	if (v != NULL && YAJL_IS_INTEGER(v)) {
		if (YAJL_GET_INTEGER(v) < 0 || YAJL_GET_INTEGER(v) > 1000000)
			return -1;
		*n = (int)YAJL_GET_INTEGER(v);
		return 0;
	}
	if (v == NULL || !YAJL_IS_STRING(v))
		return -1;
	x = strtol(v->u.string, &end, 10);
	if (end == v->u.string || x < 0 || x > 1000000)
		return -1;
	if (*end == '%') {
		if (x > 100 || end[1] != '\0')
			return -1;
		*pct = 1;
	} else if (*end != '\0')
		return -1;
	*n = (int)x;
	return 0;
}

int
render_rollout_parse(yajl_val tpl, struct rollout_spec *sp, char *why, size_t whylen)
{
	yajl_val ro = json_get(tpl, "spec", "rollout", NULL), v;
	const char *p;

	memset(sp, 0, sizeof(*sp));
	sp->wave_timeout_ms = ROLLOUT_WAVE_TIMEOUT_MS;
	if (ro == NULL || YAJL_IS_NULL(ro)) {
		sp->canary = 100;	/* everything in one group, never halted */
		sp->canary_pct = 1;
		sp->max_failed = 100;
		sp->max_failed_pct = 1;
		return 0;
	}
	if (!YAJL_IS_OBJECT(ro)) {
		snprintf(why, whylen, "spec.rollout must be an object");
		return -1;
	}
	if ((v = json_get(ro, "canary", NULL)) != NULL && count_or_pct(v, &sp->canary,
	    &sp->canary_pct) < 0) {
		snprintf(why, whylen, "spec.rollout.canary: a number of sites or \"N%%\"");
		return -1;
	}
	if (v == NULL)
		sp->canary = 1;
	sp->waves = (int)json_get_int(ro, 1, "waves", NULL);
	if ((v = json_get(ro, "waves", NULL)) != NULL && (!YAJL_IS_INTEGER(v) ||
	    sp->waves < 1 || sp->waves > 100)) {
		snprintf(why, whylen, "spec.rollout.waves: an integer from 1 to 100");
		return -1;
	}
	if ((p = json_get_str(ro, "pause", NULL)) != NULL && (parse_duration_ms(p,
	    &sp->pause_ms) < 0 || sp->pause_ms < 0 || sp->pause_ms > 7 * 86400000LL)) {
		snprintf(why, whylen, "spec.rollout.pause: \"%.40s\" is not a duration (0s..168h)",
		    p);
		return -1;
	}
	if (p == NULL && json_get(ro, "pause", NULL) != NULL) {
		snprintf(why, whylen, "spec.rollout.pause: a duration such as \"2m\"");
		return -1;
	}
	if ((v = json_get(ro, "maxFailed", NULL)) != NULL && count_or_pct(v, &sp->max_failed,
	    &sp->max_failed_pct) < 0) {
		snprintf(why, whylen, "spec.rollout.maxFailed: a number of sites or \"N%%\"");
		return -1;
	}
	/* as pause: a duration string; "0s" waits for a verdict forever */
	if ((p = json_get_str(ro, "waveTimeout", NULL)) != NULL && (parse_duration_ms(p,
	    &sp->wave_timeout_ms) < 0 || sp->wave_timeout_ms < 0 ||
	    sp->wave_timeout_ms > 7 * 86400000LL)) {
		snprintf(why, whylen, "spec.rollout.waveTimeout: \"%.40s\" is not a duration "
		    "(0s..168h; 0s: none)", p);
		return -1;
	}
	if (p == NULL && json_get(ro, "waveTimeout", NULL) != NULL) {
		snprintf(why, whylen, "spec.rollout.waveTimeout: a duration such as \"10m\"");
		return -1;
	}
	return 0;
}

void
render_rollout_duration(int64_t ms, char *out, size_t len)
{
	int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;
	char sec[32];
	size_t n;

	if (f == 0)
		snprintf(sec, sizeof(sec), "%llds", (long long)s);
	else {
		snprintf(sec, sizeof(sec), "%lld.%03lld", (long long)s, (long long)f);
		for (n = strlen(sec); sec[n - 1] == '0'; n--)
			sec[n - 1] = '\0';
		strcat(sec, "s");
	}
	if (h > 0)
		snprintf(out, len, "%lldh%lldm%s", (long long)h, (long long)m, sec);
	else if (m > 0)
		snprintf(out, len, "%lldm%s", (long long)m, sec);
	else
		snprintf(out, len, "%s", sec);
}

int
render_rollout_allowed(int max_failed, int pct, int n)
{
	return pct ? (int)((int64_t)max_failed * n / 100) : max_failed;
}

struct ranked {
	char key[65];
	size_t i;
};

static int
by_key(const void *a, const void *b)
{
	return strcmp(((const struct ranked *)a)->key, ((const struct ranked *)b)->key);
}

int
render_rollout_assign(const struct rollout_spec *sp, const char *ns, char names[][254],
    size_t n, int *wave)
{
	struct ranked *rk = xcalloc(n ? n : 1, sizeof(*rk));
	size_t c, rest;
	char buf[520];

	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%s/%s", ns, names[i]);
		sha256_hex(buf, strlen(buf), rk[i].key);
		rk[i].i = i;
	}
	qsort(rk, n, sizeof(*rk), by_key);
	c = sp->canary_pct ? ((size_t)sp->canary * n + 99) / 100 : (size_t)sp->canary;
	if (sp->canary_pct && sp->canary > 0 && c == 0 && n > 0)
		c = 1;
	if (c > n)
		c = n;
	rest = n - c;
	for (size_t k = 0; k < n; k++) {
		if (k < c || sp->waves == 0)
			wave[rk[k].i] = 0;
		else
			wave[rk[k].i] = 1 + (int)((k - c) * (size_t)sp->waves / rest);
	}
	free(rk);
	return sp->waves + 1;
}
