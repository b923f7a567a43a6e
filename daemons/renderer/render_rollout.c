/*
 * render_rollout - a DecofileTemplate generation on its way to the Auto
 * sites that used an older one, in waves: the canary first, then each
 * wave once every site of the previous one rendered it, its replicas
 * confirmed the reload (the notifier's finished item for the site, in the
 * journal) and stayed so for spec.rollout.pause.  A wave with more
 * failures than maxFailed (a site with no verdict within waveTimeout of
 * its render is one) halts the rollout (RolloutHalted on the template); a rollback
 * sends the sites that took it back to the previous generation.  The
 * renderer drives it because it is where a site's policy is applied and
 * the tree chosen; the journal holds every step, so a restart resumes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/renderer/render_policy.h"
#include "daemons/renderer/render_rollout.h"
#include "proto/proto.h"

#define STAGE "renderer"
#define TICK_MS 200
/*
 * at most this many rollout items wait in the renderer's queue: with their
 * kind claimed last, a site's own edit waits behind at most these (and
 * what the current batch already holds)
 */
#define QUEUED_MAX 16

struct driver {
	int64_t timer, last_ms;
	double tokens, rate;
};

static struct driver drv;

/* status - the template's RolloutHalted condition and status.rollout */
static void
status(struct stage *st, const struct journal_rollout *r)
{
	struct status_cond c = { "RolloutHalted", "False", "Progressing", NULL };
	char msg[1400], fields[512];

	if (strcmp(r->state, "halted") == 0) {
		c.status = "True";
		c.reason = "WaveFailed";
		snprintf(msg, sizeof(msg), "%s", r->reason);
	} else if (strcmp(r->state, "done") == 0) {
		c.reason = "RolloutComplete";
		snprintf(msg, sizeof(msg), "Generation %lld reached every site",
		    (long long)r->generation);
	} else if (strcmp(r->state, "rolledback") == 0) {
		c.reason = "RolledBack";
		snprintf(msg, sizeof(msg), "Generation %lld rolled back to generation %lld",
		    (long long)r->generation, (long long)r->prev_generation);
	} else {
		snprintf(msg, sizeof(msg), "Generation %lld: wave %d of %d%s",
		    (long long)r->generation, r->wave, r->waves - 1, r->wave == 0 ?
		    " (canary)" : "");
	}
	c.message = msg;
	snprintf(fields, sizeof(fields), "{\"rollout\":{\"generation\":%lld,\"wave\":%d,"
	    "\"waves\":%d,\"state\":\"%s\"}}", (long long)r->generation, r->wave,
	    r->waves - 1, r->state);
	if (status_set(stage_store(st), stage_journal(st), "templates", r->ns, r->name, STAGE,
	    fields, &c, 1) < 0)
		log_kv(LOG_WARN, "cannot write the template's rollout status", "ns", r->ns,
		    "name", r->name, NULL);
}

/* the users of a template, gathered for a new rollout */
struct users {
	struct stage *st;
	const char *ns, *tpl, *nh;
	char (*names)[254];
	int *owner;
	size_t n, cap;
};

static void
add_user(void *arg, const char *name, int64_t generation)
{
	struct users *u = arg;
	struct journal_template_use use;
	struct render_policy pol;
	yajl_val doc = NULL;
	char err[512];

	(void)generation;
	if (journal_template_used(stage_journal(u->st), u->ns, name, u->tpl, &use) != 0 ||
	    strcmp(use.tree_hash, u->nh) == 0)
		return;
	if (resource_get(stage_store(u->st), "decofiles", u->ns, name, &doc, err,
	    sizeof(err)) != 0)
		return;
	/*
	 * only Auto sites ride the waves; Manual and Window keep their policy
	 * and are woken once, first, so their condition says what waits
	 */
	if (u->n == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 64;
		u->names = xrealloc(u->names, u->cap * sizeof(*u->names));
		u->owner = xrealloc(u->owner, u->cap * sizeof(*u->owner));
	}
	u->owner[u->n] = render_policy_parse(doc, &pol, err, sizeof(err)) < 0 ||
	    pol.mode != RENDER_AUTO;
	snprintf(u->names[u->n++], 254, "%s", name);
	yajl_tree_free(doc);
}

int
render_rollout_begin(struct stage *st, const char *ns, const char *tpl)
{
	struct journal *j = stage_journal(st);
	struct journal_rollout r, old;
	struct journal_rollout_site *sites;
	struct rollout_spec sp;
	struct users u = { st, ns, tpl, NULL, NULL, NULL, 0, 0 };
	size_t na = 0;
	yajl_val doc = NULL;
	char nh[65], why[512] = "", n[32];
	int64_t ng;
	int *wave, rc, bad = 0;

	if ((rc = journal_template_newest(j, ns, tpl, &ng, nh)) != 0)
		return rc < 0 ? -1 : 0;
	if ((rc = journal_rollout_newest(j, ns, tpl, &old)) < 0)
		return -1;
	if (rc == 0 && strcmp(old.tree_hash, nh) == 0)
		return 0;	/* already under way */
	memset(&r, 0, sizeof(r));
	snprintf(r.ns, sizeof(r.ns), "%s", ns);
	snprintf(r.name, sizeof(r.name), "%s", tpl);
	r.generation = ng;
	snprintf(r.tree_hash, sizeof(r.tree_hash), "%s", nh);
	/* the generation the sites it has not reached are on */
	if (rc == 0 && strcmp(old.state, "done") == 0) {
		r.prev_generation = old.generation;
		snprintf(r.prev_hash, sizeof(r.prev_hash), "%s", old.tree_hash);
	} else if (rc == 0) {
		r.prev_generation = old.prev_generation;
		snprintf(r.prev_hash, sizeof(r.prev_hash), "%s", old.prev_hash);
	} else if (journal_template_before(j, ns, tpl, nh, &r.prev_generation,
	    r.prev_hash) < 0)
		return -1;
	rc = resource_get(stage_store(st), "templates", ns, tpl, &doc, why, sizeof(why));
	if (rc < 0)
		return -1;
	if (rc == 1 || render_rollout_parse(doc, &sp, why, sizeof(why)) < 0) {
		if (rc == 1)
			snprintf(why, sizeof(why), "DecofileTemplate deleted");
		bad = 1;
		memset(&sp, 0, sizeof(sp));
	}
	yajl_tree_free(doc);
	u.nh = nh;
	if (!bad && journal_template_users(j, ns, tpl, add_user, &u) < 0) {
		free(u.names);
		free(u.owner);
		return -1;
	}
	/* the Auto sites first (names[0..na-1]), then the others */
	for (size_t i = 0; i < u.n; i++)
		if (!u.owner[i]) {
			char t[254];
			int o = u.owner[na];

			memcpy(t, u.names[na], sizeof(t));
			memcpy(u.names[na], u.names[i], sizeof(t));
			memcpy(u.names[i], t, sizeof(t));
			u.owner[na] = 0;
			u.owner[i] = o;
			na++;
		}
	wave = xcalloc(u.n ? u.n : 1, sizeof(*wave));
	sites = xcalloc(u.n ? u.n : 1, sizeof(*sites));
	r.waves = render_rollout_assign(&sp, ns, u.names, na, wave);
	for (size_t i = na; i < u.n; i++)
		wave[i] = JOURNAL_ROLLOUT_OWNER;
	r.pause_ms = sp.pause_ms;
	r.wave_timeout_ms = sp.wave_timeout_ms;
	r.max_failed = sp.max_failed;
	r.max_failed_pct = sp.max_failed_pct;
	for (size_t i = 0; i < u.n; i++) {
		snprintf(sites[i].site, sizeof(sites[i].site), "%s", u.names[i]);
		sites[i].wave = wave[i];
	}
	r.id = journal_rollout_start(j, &r, sites, u.n);
	free(wave);
	free(sites);
	free(u.names);
	free(u.owner);
	if (r.id < 0)
		return -1;
	snprintf(r.state, sizeof(r.state), "running");
	if (bad) {
		/* fail-safe: a rollout it cannot read moves no site */
		snprintf(r.state, sizeof(r.state), "halted");
		snprintf(r.reason, sizeof(r.reason), "Generation %lld not rolled out: %s",
		    (long long)ng, why);
		if (journal_rollout_update(j, &r) < 0)
			return -1;
	}
	snprintf(n, sizeof(n), "%zu", na);
	log_kv(LOG_INFO, "template rollout started", "ns", ns, "name", tpl, "tree", nh,
	    "auto_sites", n, "state", r.state, NULL);
	status(st, &r);
	return 0;
}

/* gate_hold - the site keeps its tree, and its TemplateUpdateAvailable says why */
static void
gate_hold(struct rollout_gate *g, const char *reason)
{
	g->hold = 1;
	snprintf(g->reason, sizeof(g->reason), "%s", reason);
}

int
render_rollout_gate(struct stage *st, const char *ns, const char *site, const char *tpl,
    int64_t ng, const char *nh, int auto_mode, int window_open, struct rollout_gate *g)
{
	struct journal *j = stage_journal(st);
	struct journal_rollout r;
	struct journal_rollout_site s;
	int rc;

	memset(g, 0, sizeof(*g));
	snprintf(g->target, sizeof(g->target), "%s", nh);
	g->target_generation = ng;
	if ((rc = journal_rollout_newest(j, ns, tpl, &r)) < 0)
		return -1;
	if (rc == 1 || strcmp(r.tree_hash, nh) != 0) {
		/* a generation the renderer sees before its "template" item */
		if (render_rollout_begin(st, ns, tpl) < 0 ||
		    (rc = journal_rollout_newest(j, ns, tpl, &r)) < 0)
			return -1;
		if (rc == 1 || strcmp(r.tree_hash, nh) != 0)
			return 0;
	}
	g->rollout = r.id;
	if (strcmp(r.state, "rolledback") == 0) {
		if (r.prev_hash[0] != '\0') {
			g->revert = 1;
			snprintf(g->target, sizeof(g->target), "%s", r.prev_hash);
			g->target_generation = r.prev_generation;
		}
		return 0;
	}
	if (strcmp(r.state, "done") == 0)
		return 0;
	if (strcmp(r.state, "halted") == 0) {
		if (auto_mode || window_open)
			gate_hold(g, "RolloutHalted");
		return 0;
	}
	if (!auto_mode)
		return 0;	/* Manual apply and Window keep their own policy */
	if ((rc = journal_rollout_site_get(j, r.id, site, &s)) < 0)
		return -1;
	if (rc == 1 || s.wave > r.wave)
		gate_hold(g, "WaitingForRollout");
	return 0;
}

void
render_rollout_after(struct stage *st, const char *ns, const char *site,
    const struct rollout_gate *g, const struct journal_template_use *used, int n, int ok,
    int published, int64_t mark, const char *why)
{
	struct journal *j = stage_journal(st);
	struct journal_rollout_site s;
	char reason[512];

	for (int i = 0; i < n; i++) {
		if (g[i].rollout == 0 || journal_rollout_site_get(j, g[i].rollout, site, &s) != 0)
			continue;
		if (g[i].revert) {
			if (ok && strcmp(used[i].tree_hash, g[i].target) == 0 &&
			    (strcmp(s.state, "revert") == 0 || strcmp(s.state, "reverting") == 0))
				journal_rollout_site_set(j, g[i].rollout, site, "reverted", -1, NULL);
			continue;
		}
		if (g[i].hold || (strcmp(s.state, "waiting") != 0 &&
		    strcmp(s.state, "queued") != 0))
			continue;
		if (!ok) {
			snprintf(reason, sizeof(reason), "render error: %.480s", why ? why : "?");
			journal_rollout_site_set(j, g[i].rollout, site, "failed", -1, reason);
		} else if (strcmp(used[i].tree_hash, g[i].target) == 0)
			/* nothing new published: nothing for a replica to refuse */
			journal_rollout_site_set(j, g[i].rollout, site, published ? "rendered" :
			    "confirmed", published ? mark : 0, published ? "" : "content unchanged");
	}
	(void)ns;
}

void
render_rollout_settle(struct stage *st, const char *ns, const char *site)
{
	if (journal_rollout_settle(stage_journal(st), ns, site) < 0)
		log_kv(LOG_WARN, "journal: cannot settle the rollout item", "ns", ns, "name",
		    site, "error", journal_error(stage_journal(st)), NULL);
}

/* ---- the driver ---- */

struct wave_scan {
	struct stage *st;
	const struct journal_rollout *r;
	int64_t now;
	int total, open, failed;
	char failed_names[600], first_reason[512];
};

/* fail - the site failed its wave, for reason */
static void
fail(struct wave_scan *w, const struct journal_rollout_site *s, const char *reason)
{
	journal_rollout_site_set(stage_journal(w->st), s->rollout, s->site, "failed", -1, reason);
	if (w->first_reason[0] == '\0')
		snprintf(w->first_reason, sizeof(w->first_reason), "%s", reason);
}

static void
verdict(struct wave_scan *w, const struct journal_rollout_site *s, const char *detail)
{
	char reason[512];

	snprintf(reason, sizeof(reason), "replicas refused the reload (%.400s)", detail);
	fail(w, s, reason);
}

/*
 * overdue - a site that rendered the new generation waveTimeout ago and
 * still has no verdict: its publish never reached the notifier (a
 * pipeline without one, a publish that keeps failing) or the notifier
 * never finished; it fails, so its wave halts by maxFailed rather than
 * wait for ever
 */
static int
overdue(struct wave_scan *w, const struct journal_rollout_site *s)
{
	char reason[128], d[32];

	if (w->r->wave_timeout_ms <= 0 || s->rendered_ms <= 0 ||
	    w->now - s->rendered_ms < w->r->wave_timeout_ms)
		return 0;
	render_rollout_duration(w->r->wave_timeout_ms, d, sizeof(d));
	snprintf(reason, sizeof(reason), "no notifier verdict within %s", d);
	fail(w, s, reason);
	return 1;
}

static int
refused(const char *detail)
{
	const char *f = strstr(detail, "failed="), *m = strstr(detail, "missing_token=");

	return strncmp(detail, "failed: ", 8) == 0 || (f != NULL && atoi(f + 7) > 0) ||
	    (m != NULL && atoi(m + 14) > 0);
}

static void
scan_site(void *arg, const struct journal_rollout_site *s)
{
	struct wave_scan *w = arg;
	char detail[256];
	int failed = strcmp(s->state, "failed") == 0;
	int confirmed = strcmp(s->state, "confirmed") == 0;
	int rendered = strcmp(s->state, "rendered") == 0, rv = 1;

	w->total++;
	/* rendered: waiting for the replicas; confirmed: still healthy? */
	if ((rendered || confirmed) && s->mark > 0 &&
	    (rv = journal_notify_after(stage_journal(w->st), w->r->ns, s->site, s->mark, detail,
	    sizeof(detail))) == 0) {
		if (refused(detail)) {
			verdict(w, s, detail);
			failed = 1;
			confirmed = 0;
		} else if (!confirmed) {
			journal_rollout_site_set(stage_journal(w->st), s->rollout, s->site,
			    "confirmed", -1, "");
			confirmed = 1;
		}
	} else if (rendered && rv == 1 && overdue(w, s))
		failed = 1;
	if (failed) {
		w->failed++;
		if (w->first_reason[0] == '\0')
			snprintf(w->first_reason, sizeof(w->first_reason), "%s", s->reason);
		if (strlen(w->failed_names) + strlen(s->site) + 3 < sizeof(w->failed_names))
			snprintf(w->failed_names + strlen(w->failed_names), sizeof(w->failed_names) -
			    strlen(w->failed_names), "%s%s", w->failed_names[0] ? ", " : "",
			    s->site);
	} else if (!confirmed)
		w->open++;
}

struct queue {
	struct stage *st;
	const char *ns, *next;
	int n;
};

static void
queue_site(void *arg, const struct journal_rollout_site *s)
{
	struct queue *q = arg;
	struct proto_render_detail rd;
	char detail[PROTO_MAX_DETAIL + 1];

	memset(&rd, 0, sizeof(rd));
	snprintf(rd.source, sizeof(rd.source), "rollout");
	if (proto_render_detail_encode(&rd, detail, sizeof(detail)) < 0 ||
	    stage_push(q->st, STAGE, "rollout", q->ns, s->site, "", detail) < 0 ||
	    journal_rollout_site_set(stage_journal(q->st), s->rollout, s->site, q->next, -1,
	    NULL) < 0)
		return;
	q->n++;
}

/* enqueue - up to the tokens of the sites of r in wave (or JOURNAL_ROLLOUT_ANY) and state */
static int
enqueue(struct stage *st, const struct journal_rollout *r, int wave, const char *state,
    const char *next)
{
	struct queue q = { st, r->ns, next, 0 };
	int budget = (int)drv.tokens, queued;

	if ((queued = journal_items_pending(stage_journal(st), STAGE, "rollout")) < 0)
		return -1;
	if (budget > QUEUED_MAX - queued)
		budget = QUEUED_MAX - queued;
	if (budget <= 0)
		return 0;
	if (stage_begin(st) < 0)
		return -1;
	if (journal_rollout_sites(stage_journal(st), r->id, wave, state, budget, queue_site,
	    &q) < 0 || stage_commit(st, NULL, NULL) < 0) {
		stage_rollback(st);
		return -1;
	}
	drv.tokens -= q.n;
	if (q.n > 0)
		stage_kick(st);
	return q.n;
}

/* the active rollouts, read first (collect), driven after */
struct active {
	struct journal_rollout *r;
	size_t n, cap;
};

static void
collect(void *arg, const struct journal_rollout *r)
{
	struct active *a = arg;

	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 8;
		a->r = xrealloc(a->r, a->cap * sizeof(*a->r));
	}
	a->r[a->n++] = *r;
}

static void
drive(struct stage *st, const struct journal_rollout *cur)
{
	struct journal *j = stage_journal(st);
	struct journal_rollout r = *cur;
	struct wave_scan w;
	int64_t now = wall_ms();
	char wv[16];
	int allowed;

	if (strcmp(r.state, "rolledback") == 0) {
		enqueue(st, &r, JOURNAL_ROLLOUT_ANY, "revert", "reverting");
		return;
	}
	/* Manual and Window sites first: a render that only says what waits */
	if (enqueue(st, &r, JOURNAL_ROLLOUT_OWNER, "waiting", "queued") != 0)
		return;
	for (;;) {
		memset(&w, 0, sizeof(w));
		w.st = st;
		w.r = &r;
		w.now = now;
		/*
		 * the write lock first: scan_site writes as it reads, and a write
		 * begun inside an open read fails at once (SQLITE_BUSY_SNAPSHOT)
		 * when another process committed since the read began
		 */
		if (stage_begin(st) < 0)
			return;
		if (journal_rollout_sites(j, r.id, r.wave, NULL, 0, scan_site, &w) < 0 ||
		    stage_commit(st, NULL, NULL) < 0) {
			stage_rollback(st);
			return;
		}
		allowed = render_rollout_allowed(r.max_failed, r.max_failed_pct, w.total);
		if (w.failed > allowed) {
			snprintf(r.state, sizeof(r.state), "halted");
			snprintf(r.reason, sizeof(r.reason), "Generation %lld halted at wave %d%s:"
			    " %d of %d sites failed (%.400s): %.400s", (long long)r.generation, r.wave,
			    r.wave == 0 ? " (canary)" : "", w.failed, w.total, w.failed_names,
			    w.first_reason);
			if (journal_rollout_update(j, &r) == 0) {
				log_kv(LOG_WARN, "template rollout halted", "ns", r.ns, "name", r.name,
				    "reason", r.reason, NULL);
				status(st, &r);
			}
			return;
		}
		if (w.open > 0)
			break;
		/* every site of the wave confirmed (or failed within the threshold) */
		if (w.total > 0 && r.confirmed_ms == 0 && r.pause_ms > 0) {
			r.confirmed_ms = now;
			journal_rollout_update(j, &r);
			return;
		}
		if (w.total > 0 && now - r.confirmed_ms < r.pause_ms)
			return;
		r.confirmed_ms = 0;
		if (r.wave + 1 >= r.waves) {
			snprintf(r.state, sizeof(r.state), "done");
			if (journal_rollout_update(j, &r) == 0) {
				log_kv(LOG_INFO, "template rollout complete", "ns", r.ns, "name",
				    r.name, NULL);
				status(st, &r);
			}
			return;
		}
		r.wave++;
		if (journal_rollout_update(j, &r) < 0)
			return;
		snprintf(wv, sizeof(wv), "%d", r.wave);
		log_kv(LOG_INFO, "template rollout: next wave", "ns", r.ns, "name", r.name,
		    "wave", wv, NULL);
		status(st, &r);
	}
	enqueue(st, &r, r.wave, "waiting", "queued");
}

static void
tick(struct stage *st, void *arg)
{
	int64_t now = now_ms();
	struct active act = { NULL, 0, 0 };

	(void)arg;
	drv.timer = 0;
	drv.rate = (double)conf_get_int(stage_conf(st), "template_rollout_rate");
	if (drv.rate < 1)
		drv.rate = 1;
	drv.tokens += drv.last_ms ? (double)(now - drv.last_ms) * drv.rate / 1000.0 : 1;
	/* no burst: at most one tick's worth at a time, so any second holds ~rate */
	if (drv.tokens > drv.rate * TICK_MS / 1000.0 + 1)
		drv.tokens = drv.rate * TICK_MS / 1000.0 + 1;
	drv.last_ms = now;
	/* read, then drive: drive writes, and no write is begun inside a read */
	if (journal_rollout_active(stage_journal(st), collect, &act) < 0)
		log_kv(LOG_WARN, "journal: cannot read the template rollouts", "error",
		    journal_error(stage_journal(st)), NULL);
	else
		for (size_t i = 0; i < act.n; i++)
			drive(st, &act.r[i]);
	free(act.r);
	if (!stage_stopping(st))
		drv.timer = stage_add_timer(st, TICK_MS, tick, NULL);
}

void
render_rollout_start(struct stage *st)
{
	memset(&drv, 0, sizeof(drv));
	drv.timer = stage_add_timer(st, 0, tick, NULL);
}

void
render_rollout_stop(struct stage *st)
{
	if (drv.timer > 0)
		stage_cancel_timer(st, drv.timer);
	drv.timer = 0;
}
