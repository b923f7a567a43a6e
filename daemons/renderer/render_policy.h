/*
 * render_policy - a Decofile's spec.updatePolicy: when a new
 * DecofileTemplate generation reaches it.  Auto takes it at once; Manual
 * keeps the generations its last render used until the owner asks
 * (annotation deco.sites/apply-template-update: "true", which `decoctl
 * template apply` sets); Window takes it while a cron window is open.
 * Shared by the render stage and decoctl (template status).
 */
#ifndef DECOD_RENDER_POLICY_H
#define DECOD_RENDER_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/cron.h"
#include "common/json.h"
#include "common/resource.h"

#define RENDER_APPLY_ANNOTATION DECOFILE_APPLY_ANNOTATION
#define RENDER_WINDOW_DEFAULT_S 3600
#define RENDER_WINDOW_MAX_S (7 * 86400)

enum render_mode { RENDER_AUTO, RENDER_MANUAL, RENDER_WINDOW };

struct render_policy {
	enum render_mode mode;
	struct cron cron;
	char window[128];
	char tz[64];		/* "" = UTC */
	int64_t duration_s;
};

/*
 * render_policy_parse - doc's spec.updatePolicy into p (none: Auto).  0, or
 * -1 with why naming the field that is wrong.
 */
int render_policy_parse(yajl_val doc, struct render_policy *p, char *why, size_t whylen);

/* render_policy_name - "Auto", "Manual" or "Window" */
const char *render_policy_name(const struct render_policy *p);

/* render_policy_apply_requested - doc carries the apply annotation set to "true" */
int render_policy_apply_requested(yajl_val doc);

/*
 * render_policy_adopt - whether a site under p takes new template
 * generations at now (unix seconds): 1 yes, 0 it keeps what it has.
 * apply: the owner asked.  *next_open: for Window, the next opening after
 * now (or -1), else -1.
 */
int render_policy_adopt(const struct render_policy *p, int64_t now, int apply,
    int64_t *next_open);

/*
 * render_policy_now - unix seconds.  The test-only environment variable
 * DECOD_TEST_CLOCK (RFC 3339 UTC, e.g. 2026-12-06T01:59:57Z) sets the
 * time at process start; the clock then runs on from there.
 */
int64_t render_policy_now(void);

/*
 * render_policy_pending_line - the condition's line for one template:
 * "DecofileTemplate 'NAME' has pending changes (generation A → B)"
 */
void render_policy_pending_line(struct buf *b, const char *tpl, int64_t from, int64_t to);

/* render_policy_window_line - "Window \"EXPR\" (ZONE) opens next at TIME" into b */
void render_policy_window_line(struct buf *b, const struct render_policy *p,
    int64_t next_open);

#endif
