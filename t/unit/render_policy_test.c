/*
 * render_policy_test - spec.updatePolicy: parsing (errors name the field),
 * the adopt decision for Auto, Manual, Window (open, closed, its end,
 * a time zone) and an owner's apply, and the condition's exact lines.
 */
#include "config.h"

#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "daemons/renderer/render_policy.h"
#include "t/tap.h"

/* 2026-12-06T02:00:00Z, a Sunday */
#define SUN2 ((int64_t)1796522400)

static yajl_val
doc_of(const char *policy, const char *annotations)
{
	char text[1024];

	snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"loja\"%s%s},\"spec\":{\"source\":"
	    "\"inline\"%s%s}}", annotations ? ",\"annotations\":" : "",
	    annotations ? annotations : "", policy ? ",\"updatePolicy\":" : "",
	    policy ? policy : "");
	return json_parse(text, strlen(text), NULL);
}

int
main(void)
{
	static const struct {
		const char *label, *policy;
		int64_t now;
		int apply;
		int adopt;
		int64_t next;	/* -1: none */
	} rows[] = {
		{ "no policy: Auto", NULL, SUN2 - 7200, 0, 1, -1 },
		{ "Auto", "{\"templateChanges\":\"Auto\"}", SUN2 - 7200, 0, 1, -1 },
		{ "Manual keeps", "{\"templateChanges\":\"Manual\"}", SUN2, 0, 0, -1 },
		{ "Manual with the owner's apply takes", "{\"templateChanges\":\"Manual\"}", SUN2, 1,
		    1, -1 },
		{ "Window closed: keeps, says the next opening",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}", SUN2 - 7200, 0, 0,
		    SUN2 },
		{ "Window at its opening: takes",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}", SUN2, 0, 1, -1 },
		{ "Window 59 minutes in (default 1h): takes",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}", SUN2 + 3540, 0, 1,
		    -1 },
		{ "Window at its end: closed, next week",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}", SUN2 + 3600, 0, 0,
		    SUN2 + 7 * 86400 },
		{ "Window with duration 3h, 2h in: takes",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\",\"duration\":\"3h\"}",
		    SUN2 + 7200, 0, 1, -1 },
		{ "Window closed but the owner applies: takes",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}", SUN2 - 7200, 1, 1,
		    -1 },
		{ "Window in a time zone (02:00 Sao Paulo = 05:00Z): closed at 02:00Z",
		    "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\","
		    "\"timeZone\":\"America/Sao_Paulo\"}", SUN2, 0, 0, SUN2 + 3 * 3600 },
	};
	static const struct {
		const char *label, *policy, *want;
	} bad[] = {
		{ "unknown mode", "{\"templateChanges\":\"Sometimes\"}",
		    "spec.updatePolicy.templateChanges: \"Sometimes\" is not Auto, Manual or Window" },
		{ "mode not a string", "{\"templateChanges\":3}", "spec.updatePolicy.templateChanges" },
		{ "Window without window", "{\"templateChanges\":\"Window\"}",
		    "spec.updatePolicy.window is required" },
		{ "bad cron", "{\"templateChanges\":\"Window\",\"window\":\"0 2 * *\"}",
		    "spec.updatePolicy.window: " },
		{ "bad hour", "{\"templateChanges\":\"Window\",\"window\":\"0 25 * * *\"}",
		    "spec.updatePolicy.window: hour field" },
		{ "bad duration", "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * *\","
		    "\"duration\":\"soon\"}", "spec.updatePolicy.duration" },
		{ "duration past a week", "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * *\","
		    "\"duration\":\"200h\"}", "spec.updatePolicy.duration" },
		{ "unknown zone", "{\"templateChanges\":\"Window\",\"window\":\"0 2 * * *\","
		    "\"timeZone\":\"Mars/Base\"}", "spec.updatePolicy.timeZone" },
		{ "window on Manual", "{\"templateChanges\":\"Manual\",\"window\":\"0 2 * * *\"}",
		    "spec.updatePolicy.window is only for templateChanges Window" },
		{ "not an object", "\"Manual\"", "spec.updatePolicy must be an object" },
	};
	struct render_policy p;
	char why[512];
	struct buf b;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		yajl_val d = doc_of(rows[i].policy, NULL);
		int64_t next = -2;
		int rc = render_policy_parse(d, &p, why, sizeof(why));

		if (rc < 0) {
			ok(0, "%s: %s", rows[i].label, why);
		} else {
			int a = render_policy_adopt(&p, rows[i].now, rows[i].apply, &next);

			ok(a == rows[i].adopt && next == rows[i].next, "%s", rows[i].label);
			if (a != rows[i].adopt || next != rows[i].next)
				diag("adopt %d next %lld", a, (long long)next);
		}
		yajl_tree_free(d);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		yajl_val d = doc_of(bad[i].policy, NULL);
		int rc = render_policy_parse(d, &p, why, sizeof(why));

		ok(rc < 0 && strncmp(why, bad[i].want, strlen(bad[i].want)) == 0,
		    "refused, naming the field: %s (%s)", bad[i].label, rc < 0 ? why : "accepted");
		yajl_tree_free(d);
	}

	{
		yajl_val on = doc_of(NULL, "{\"deco.sites/apply-template-update\":\"true\"}");
		yajl_val off = doc_of(NULL, "{\"deco.sites/apply-template-update\":\"false\"}");
		yajl_val none = doc_of(NULL, NULL);

		ok(render_policy_apply_requested(on) && !render_policy_apply_requested(off) &&
		    !render_policy_apply_requested(none), "the apply annotation counts only as \"true\"");
		yajl_tree_free(on);
		yajl_tree_free(off);
		yajl_tree_free(none);
	}

	buf_init(&b);
	render_policy_pending_line(&b, "base-store", 3, 5);
	is_str(b.data, "DecofileTemplate 'base-store' has pending changes (generation 3 \xe2\x86\x92 5)",
	    "the pending line, exactly");
	buf_reset(&b);
	{
		yajl_val d = doc_of("{\"templateChanges\":\"Window\",\"window\":\"0 2 * * SUN\"}", NULL);

		render_policy_parse(d, &p, why, sizeof(why));
		render_policy_window_line(&b, &p, SUN2);
		is_str(b.data, "Window \"0 2 * * SUN\" (UTC) opens next at 2026-12-06T02:00:00Z",
		    "the window line");
		yajl_tree_free(d);
	}
	buf_free(&b);
	return done_testing();
}
