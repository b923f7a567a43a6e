/*
 * render_rollout - a DecofileTemplate generation rolled out in waves with
 * a canary: the renderer starts a rollout when it first sees a new
 * generation, decides per render whether an Auto site's wave has been
 * reached, records what each site's render did, and a timer drives the
 * waves (enqueues sites at template_rollout_rate, reads the notifier's
 * verdicts, pauses, halts, reverts on rollback).  State: the journal.
 */
#ifndef DECOD_RENDER_ROLLOUT_H
#define DECOD_RENDER_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/journal.h"
#include "common/stage.h"

/* spec.rollout, parsed */
struct rollout_spec {
	int canary, canary_pct;		/* sites, or a percent when canary_pct */
	int waves;			/* after the canary; 0: no spec.rollout */
	int64_t pause_ms;
	int max_failed, max_failed_pct;
	int64_t wave_timeout_ms;	/* a rendered site's notifier verdict, at most; 0 none */
};

/* spec.rollout.waveTimeout when it is not set */
#define ROLLOUT_WAVE_TIMEOUT_MS (10 * 60 * 1000LL)

/* render_rollout_duration - ms as Go prints a duration ("10m0s", "2s", "1.5s") */
void render_rollout_duration(int64_t ms, char *out, size_t len);

/*
 * render_rollout_parse - a DecofileTemplate's spec.rollout into sp (none:
 * every site in one group, no pause, never halts).  0, or -1 with why
 * naming the field.
 */
int render_rollout_parse(yajl_val tpl, struct rollout_spec *sp, char *why, size_t whylen);

/*
 * render_rollout_assign - the wave of each of n sites of namespace ns
 * (names[i] -> wave[i]): sites ranked by sha256("ns/name"), the first
 * canary ones wave 0, the rest split in order into sp->waves equal waves
 * 1..waves.  The number of groups (waves + 1).
 */
int render_rollout_assign(const struct rollout_spec *sp, const char *ns, char names[][254],
    size_t n, int *wave);

/* render_rollout_allowed - how many of a wave of n sites may fail before it halts */
int render_rollout_allowed(int max_failed, int pct, int n);

/* the per-render decision for one template a decofile lists */
struct rollout_gate {
	int64_t rollout;	/* 0: no rollout concerns this render */
	int hold;		/* keep the tree the site used: its wave is not reached */
	int revert;		/* rolled back: the target is the previous generation */
	char target[65];	/* the tree the site goes to now (newest, or the previous) */
	int64_t target_generation;
	char reason[64];	/* why it holds: WaitingForRollout or RolloutHalted */
};

/*
 * render_rollout_gate - for decofile ns/site and template tpl, whose newest
 * tree is (ng, nh): start the generation's rollout if it has none yet,
 * then say whether the site takes it (auto_mode: the site's policy is Auto
 * and no apply was asked; window_open: a Window site's window is open).
 * 0 or -1 (journal error).
 */
int render_rollout_gate(struct stage *st, const char *ns, const char *site, const char *tpl,
    int64_t ng, const char *nh, int auto_mode, int window_open, struct rollout_gate *g);

/*
 * render_rollout_after - record what a render did for each gated template:
 * ok (valid render), published (a new document went to the publisher),
 * mark (the newest item id before the render was recorded), why (the error when
 * !ok).  used[i] is what template i rendered from.
 */
void render_rollout_after(struct stage *st, const char *ns, const char *site,
    const struct rollout_gate *g, const struct journal_template_use *used, int n, int ok,
    int published, int64_t mark, const char *why);

/* render_rollout_begin - a "template" item: start the rollout of its newest tree */
int render_rollout_begin(struct stage *st, const char *ns, const char *tpl);

/* render_rollout_settle - a "rollout" item for site was handled */
void render_rollout_settle(struct stage *st, const char *ns, const char *site);

/* render_rollout_start - arm the driver (reads template_rollout_rate) */
void render_rollout_start(struct stage *st);
void render_rollout_stop(struct stage *st);

#endif
