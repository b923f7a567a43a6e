/*
 * render_rollout_test - spec.rollout: parsing (defaults, counts and
 * percents, errors naming the field), the wave of each site (the canary
 * by sha256("ns/name"), the rest split in rank order into equal waves),
 * and how many of a wave may fail.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "common/json.h"
#include "daemons/renderer/render_rollout.h"
#include "t/tap.h"

static yajl_val
tpl_of(const char *rollout)
{
	char text[512];

	snprintf(text, sizeof(text), "{\"spec\":{\"source\":\"inline\"%s%s}}",
	    rollout ? ",\"rollout\":" : "", rollout ? rollout : "");
	return json_parse(text, strlen(text), NULL);
}

int
main(void)
{
	static const struct {
		const char *label, *rollout;
		int rc, canary, canary_pct, waves;
		long long pause_ms;
		int max_failed, max_failed_pct;
		const char *why;	/* prefix of the error */
	} rows[] = {
		{ "none: one group, never halts", NULL, 0, 100, 1, 0, 0, 100, 1, NULL },
		{ "empty object: canary 1, 1 wave", "{}", 0, 1, 0, 1, 0, 0, 0, NULL },
		{ "the doc's example", "{\"canary\":\"5%\",\"waves\":4,\"pause\":\"2m\","
		  "\"maxFailed\":0}", 0, 5, 1, 4, 120000, 0, 0, NULL },
		{ "counts", "{\"canary\":3,\"waves\":2,\"pause\":\"1s\",\"maxFailed\":\"10%\"}",
		  0, 3, 0, 2, 1000, 10, 1, NULL },
		{ "canary as a bare number string", "{\"canary\":\"2\"}", 0, 2, 0, 1, 0, 0, 0,
		  NULL },
		{ "canary over 100%", "{\"canary\":\"150%\"}", -1, 0, 0, 0, 0, 0, 0,
		  "spec.rollout.canary" },
		{ "canary negative", "{\"canary\":-1}", -1, 0, 0, 0, 0, 0, 0,
		  "spec.rollout.canary" },
		{ "waves 0", "{\"waves\":0}", -1, 0, 0, 0, 0, 0, 0, "spec.rollout.waves" },
		{ "waves as a string", "{\"waves\":\"4\"}", -1, 0, 0, 0, 0, 0, 0,
		  "spec.rollout.waves" },
		{ "pause not a duration", "{\"pause\":\"soon\"}", -1, 0, 0, 0, 0, 0, 0,
		  "spec.rollout.pause" },
		{ "pause a number", "{\"pause\":5}", -1, 0, 0, 0, 0, 0, 0, "spec.rollout.pause" },
		{ "maxFailed junk", "{\"maxFailed\":\"x\"}", -1, 0, 0, 0, 0, 0, 0,
		  "spec.rollout.maxFailed" },
		{ "not an object", "[1]", -1, 0, 0, 0, 0, 0, 0, "spec.rollout must" },
	};
	static char names[100][254];
	int wave[100], count[6];
	struct rollout_spec sp;
	char why[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		yajl_val d = tpl_of(rows[i].rollout);
		int rc;

		why[0] = '\0';
		rc = render_rollout_parse(d, &sp, why, sizeof(why));
		is_int(rc, rows[i].rc, "%s: result", rows[i].label);
		if (rc == 0) {
			ok(sp.canary == rows[i].canary && sp.canary_pct == rows[i].canary_pct &&
			    sp.waves == rows[i].waves && sp.pause_ms == rows[i].pause_ms &&
			    sp.max_failed == rows[i].max_failed &&
			    sp.max_failed_pct == rows[i].max_failed_pct, "%s: fields", rows[i].label);
		} else
			ok(strncmp(why, rows[i].why, strlen(rows[i].why)) == 0,
			    "%s: the error names the field (%s)", rows[i].label, why);
		yajl_tree_free(d);
	}

	/* spec.rollout.waveTimeout: a duration as pause, 10m by default, 0s none */
	{
		static const struct {
			const char *label, *rollout;
			int rc;
			long long ms;
		} wt[] = {
			{ "no spec.rollout: the default", NULL, 0, 600000 },
			{ "not set: the default", "{\"waves\":2}", 0, 600000 },
			{ "2s", "{\"waveTimeout\":\"2s\"}", 0, 2000 },
			{ "0s: none", "{\"waveTimeout\":\"0s\"}", 0, 0 },
			{ "1h", "{\"waveTimeout\":\"1h\"}", 0, 3600000 },
			{ "not a duration", "{\"waveTimeout\":\"later\"}", -1, 0 },
			{ "a number", "{\"waveTimeout\":600}", -1, 0 },
			{ "over 168h", "{\"waveTimeout\":\"169h\"}", -1, 0 },
			{ "negative", "{\"waveTimeout\":\"-1s\"}", -1, 0 },
		};

		for (size_t i = 0; i < sizeof(wt) / sizeof(wt[0]); i++) {
			yajl_val d = tpl_of(wt[i].rollout);
			int rc;

			why[0] = '\0';
			rc = render_rollout_parse(d, &sp, why, sizeof(why));
			is_int(rc, wt[i].rc, "waveTimeout %s: result", wt[i].label);
			if (rc == 0)
				ok(sp.wave_timeout_ms == wt[i].ms, "waveTimeout %s: %lld ms (%lld)",
				    wt[i].label, wt[i].ms, (long long)sp.wave_timeout_ms);
			else
				ok(strncmp(why, "spec.rollout.waveTimeout", 24) == 0,
				    "waveTimeout %s: the error names the field (%s)", wt[i].label, why);
			yajl_tree_free(d);
		}
	}
	/* the reason prints it as Go prints a duration */
	{
		static const struct {
			long long ms;
			const char *out;
		} du[] = { { 600000, "10m0s" }, { 2000, "2s" }, { 1500, "1.5s" },
			{ 3600000, "1h0m0s" }, { 5430000, "1h30m30s" }, { 6000, "6s" } };
		char out[32];

		for (size_t i = 0; i < sizeof(du) / sizeof(du[0]); i++) {
			render_rollout_duration(du[i].ms, out, sizeof(out));
			is_str(out, du[i].out, "%lld ms prints as %s", du[i].ms, du[i].out);
		}
	}

	/* 100 sites, canary 5%, 4 waves: 5, then 24, 24, 23, 24 (rank order) */
	for (int i = 0; i < 100; i++)
		snprintf(names[i], sizeof(names[i]), "site-%02d", i);
	memset(&sp, 0, sizeof(sp));
	sp.canary = 5;
	sp.canary_pct = 1;
	sp.waves = 4;
	is_int(render_rollout_assign(&sp, "sites", names, 100, wave), 5, "5 groups");
	memset(count, 0, sizeof(count));
	for (int i = 0; i < 100; i++)
		count[wave[i] >= 0 && wave[i] <= 4 ? wave[i] : 5]++;
	ok(count[0] == 5 && count[1] + count[2] + count[3] + count[4] == 95 && count[5] == 0,
	    "canary 5%% of 100 is 5, the 95 others in waves 1-4");
	for (int k = 1; k <= 4; k++)
		ok(count[k] == 23 || count[k] == 24, "wave %d has 23 or 24 sites (%d)", k, count[k]);
	{
		/* the canary is the 5 lowest sha256("ns/name") */
		char h[100][65], buf[300];
		int bad = 0;

		for (int i = 0; i < 100; i++) {
			snprintf(buf, sizeof(buf), "sites/%s", names[i]);
			sha256_hex(buf, strlen(buf), h[i]);
		}
		for (int i = 0; i < 100; i++)
			for (int j = 0; j < 100; j++)
				if (wave[i] < wave[j] && strcmp(h[i], h[j]) > 0)
					bad++;
		is_int(bad, 0, "waves follow the hash rank (an earlier wave never ranks later)");
	}
	/* tiny fleets: a 1% canary of 3 sites is 1; more canary than sites: all */
	sp.canary = 1;
	render_rollout_assign(&sp, "sites", names, 3, wave);
	is_int((wave[0] == 0) + (wave[1] == 0) + (wave[2] == 0), 1, "1%% of 3 sites: 1 canary");
	sp.canary = 10;
	sp.canary_pct = 0;
	render_rollout_assign(&sp, "sites", names, 3, wave);
	is_int(wave[0] + wave[1] + wave[2], 0, "a canary of 10 for 3 sites: all in wave 0");
	/* no spec.rollout: all in wave 0 */
	{
		yajl_val d = tpl_of(NULL);

		render_rollout_parse(d, &sp, why, sizeof(why));
		render_rollout_assign(&sp, "sites", names, 50, wave);
		yajl_tree_free(d);
	}
	{
		int all0 = 1;

		for (int i = 0; i < 50; i++)
			all0 &= wave[i] == 0;
		ok(all0, "no spec.rollout: every site in one group");
	}
	is_int(render_rollout_allowed(0, 0, 10), 0, "maxFailed 0");
	is_int(render_rollout_allowed(2, 0, 10), 2, "maxFailed 2");
	is_int(render_rollout_allowed(10, 1, 25), 2, "maxFailed 10%% of 25 is 2 (rounded down)");
	is_int(render_rollout_allowed(100, 1, 7), 7, "maxFailed 100%%: all");
	return done_testing();
}
