/*
 * renderer - the render stage (SPEC §4.2).  For each "decofile" item it
 * reads the Decofile, its fetched tree and its templates' newest fetched
 * trees from the spool, merges them (render_merge), and either records the
 * error on Syncing (fail-safe: nothing published, the last good version
 * stays live) or puts the document into the spool and, when the content
 * changed, records the render and hands it to the publisher in one journal
 * transaction.  Owns the Syncing condition's ValidationError and Rendered
 * reasons in its own status fragment, and the renders table.
 *
 * Templates: each generation's tree is kept in the journal (template_trees,
 * by the fetcher); the decofile's spec.updatePolicy (render_policy) says
 * whether this render takes each template's newest generation (Auto, an
 * apply asked for, an open Window) or the one its last valid render used
 * (template_uses, or the shared status when another instance rendered it
 * last: render_pin), in which case TemplateUpdateAvailable says what waits
 * and, on the line after, what taking it would change (render_diff: the
 * document merged with the newest generations against this one).
 */
#include "config.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/hash.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "daemons/renderer/render_brotli.h"
#include "daemons/renderer/render_diff.h"
#include "daemons/renderer/render_merge.h"
#include "daemons/renderer/render_pin.h"
#include "daemons/renderer/render_policy.h"
#include "daemons/renderer/render_rollout.h"
#include "daemons/renderer/render_rearm.h"
#include "daemons/renderer/render_recompress.h"
#include "daemons/renderer/render_tree.h"
#include "proto/proto.h"

#define STAGE "renderer"
#define MAX_SPOOL_MISSES 5	/* a blob still missing after this many tries is lost */
#define TRIM_MIN (1024 * 1024)	/* a merged document this large is trimmed after */

/* a re-render asked for when a decofile's update window opens */
struct window_wake {
	char ns[254], name[254];
	char detail[PROTO_MAX_DETAIL + 1];
	int64_t timer;
	struct stage *st;
	struct window_wake *next;
};

struct renderer {
	uint64_t threshold;
	int quality, window;
	const char *default_target;
	struct window_wake *wakes;
	struct render_recompress *rc;	/* the slow brotli pass after a publish */
};

static struct renderer *
R(struct stage *st)
{
	return stage_data(st);
}

static void
read_settings(struct stage *st)
{
	struct conf *cf = stage_conf(st);
	struct renderer *r = R(st);

	r->threshold = conf_get_size(cf, "compress_threshold");
	r->quality = (int)conf_get_int(cf, "brotli_quality");
	r->window = (int)conf_get_int(cf, "brotli_window");
	r->default_target = conf_get(cf, "default_target");
	if (r->quality < 0 || r->quality > 11)
		r->quality = RENDER_BROTLI_QUALITY;
	if (r->window < 10 || r->window > 24)
		r->window = RENDER_BROTLI_WINDOW;
	render_recompress_settings(r->rc, (int)conf_get_int(cf, "brotli_recompress_quality"),
	    r->window, conf_get_ms(cf, "brotli_recompress_delay"), 19);
}

static int
renderer_init(struct stage *st)
{
	char q[16], w[16], t[32];

	stage_set_data(st, xcalloc(1, sizeof(struct renderer)));
	R(st)->rc = render_recompress_new(st);
	read_settings(st);
	snprintf(q, sizeof(q), "%d", R(st)->quality);
	snprintf(w, sizeof(w), "%d", R(st)->window);
	snprintf(t, sizeof(t), "%llu", (unsigned long long)R(st)->threshold);
	log_kv(LOG_INFO, "renderer settings", "brotli_quality", q, "brotli_window", w,
	    "compress_threshold", t, NULL);
	stage_add_timer(st, 0, render_rearm_windows, NULL);
	render_rollout_start(st);
	return 0;
}

static int
renderer_reload(struct stage *st)
{
	read_settings(st);
	return 0;
}

static void
renderer_shutdown(struct stage *st)
{
	render_rollout_stop(st);
	render_rearm_stop(st);
	for (struct window_wake *w = R(st)->wakes, *next; w != NULL; w = next) {
		next = w->next;
		stage_cancel_timer(st, w->timer);
		free(w);
	}
	render_recompress_free(R(st)->rc);
	free(stage_data(st));
	stage_set_data(st, NULL);
}

/* syncing - set the renderer's Syncing condition; a store error is only logged */
static void
syncing(struct stage *st, const struct journal_item *it, const char *status,
    const char *reason, const char *msg)
{
	if (status_set_condition(stage_store(st), stage_journal(st), "decofiles", it->ns,
	    it->name, STAGE, "Syncing", status, reason, msg) < 0)
		log_kv(LOG_WARN, "cannot write the Syncing condition", "ns", it->ns, "name",
		    it->name, "reason", reason, NULL);
}

/*
 * rendered_commit - status field renderedCommit: the commit this stage last
 * rendered (valid or not), so a reader can tell whether its Syncing
 * condition speaks of the newest fetch or of an earlier one.
 */
static void
rendered_commit(struct stage *st, const struct journal_item *it, const char *commit)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "renderedCommit");
	jw_str(&w, commit);
	jw_end_obj(&w);
	if (status_set_fields(stage_store(st), "decofiles", it->ns, it->name, STAGE,
	    b.data) < 0)
		log_kv(LOG_WARN, "cannot write renderedCommit", "ns", it->ns, "name",
		    it->name, NULL);
	buf_free(&b);
}

/* a valid render's status, written once the batch holding its render commits */
struct rendered_note {
	char ns[254], name[254];
	char *fields;			/* resolvedTemplates, renderedCommit */
	char *reason, *message;		/* TemplateUpdateAvailable's, when n == 2 */
	size_t n;
	int apply;			/* the owner's apply was taken: drop the annotation */
};

static void apply_done(struct stage *st, const char *ns, const char *name);

/* rendered_write - status_rendered's write, after the commit (stage_after_commit) */
static void
rendered_write(struct stage *st, void *arg)
{
	struct rendered_note *rn = arg;
	struct status_cond c[2] = {
		{ "Syncing", "True", "Rendered", "Decofile rendered and valid" },
		{ "TemplateUpdateAvailable", "False", "UpToDate",
		  "Every DecofileTemplate is at its newest generation" },
	};

	if (rn->message != NULL) {
		c[1].status = "True";
		c[1].reason = rn->reason;
		c[1].message = rn->message;
	}
	if (status_set(stage_store(st), stage_journal(st), "decofiles", rn->ns, rn->name,
	    STAGE, rn->fields, c, rn->n) < 0)
		log_kv(LOG_WARN, "cannot write the render's status", "ns", rn->ns, "name",
		    rn->name, NULL);
	if (rn->apply)
		apply_done(st, rn->ns, rn->name);
	free(rn->fields);
	free(rn->reason);
	free(rn->message);
}

/*
 * status_rendered - a valid render's status in one write: Syncing=True,
 * resolvedTemplates [{name, generation, hash}], renderedCommit (when
 * known) and, for a decofile with templates, TemplateUpdateAvailable, so
 * a reader never pairs this commit with an older verdict.  Written once
 * the render is committed, so no reader sees the new templates beside the
 * journal's older render; apply: then remove the owner's apply annotation.
 */
static void
status_rendered(struct stage *st, const struct journal_item *it,
    const struct journal_template_use *use, size_t n, const char *commit,
    const struct render_policy *pol, const char *pending, const char *hold_reason,
    int apply)
{
	struct rendered_note *rn = xcalloc(1, sizeof(*rn));
	const char *reason;
	struct buf b;
	struct jw w;

	snprintf(rn->ns, sizeof(rn->ns), "%s", it->ns);
	snprintf(rn->name, sizeof(rn->name), "%s", it->name);
	rn->n = n > 0 ? 2 : 1;
	rn->apply = apply && n > 0;
	if (pending != NULL && pending[0] != '\0') {
		if (pol->mode == RENDER_WINDOW)
			reason = "WaitingForWindow";
		else if (pol->mode == RENDER_AUTO && hold_reason != NULL)
			reason = hold_reason;
		else
			reason = "PendingChanges";
		rn->reason = xstrdup(reason);
		rn->message = xstrdup(pending);
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "resolvedTemplates");
	jw_arr(&w);
	for (size_t i = 0; i < n; i++) {
		jw_obj(&w);
		jw_key(&w, "name");
		jw_str(&w, use[i].template);
		jw_key(&w, "generation");
		jw_int(&w, use[i].generation);
		jw_key(&w, "hash");
		jw_str(&w, use[i].tree_hash);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	if (commit[0] != '\0') {
		jw_key(&w, "renderedCommit");
		jw_str(&w, commit);
	}
	jw_end_obj(&w);
	rn->fields = xstrdup(b.data);
	buf_free(&b);
	stage_after_commit(st, rendered_write, rn);
}

/* window_fire - the window opened: render the decofile again */
static void
window_fire(struct stage *st, void *arg)
{
	struct window_wake *w = arg;
	struct renderer *r = R(st);

	for (struct window_wake **pp = &r->wakes; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	log_kv(LOG_INFO, "update window open; rendering again", "ns", w->ns, "name", w->name,
	    NULL);
	if (stage_enqueue(st, STAGE, "decofile", w->ns, w->name, "", w->detail) < 0)
		log_kv(LOG_WARN, "cannot enqueue the window's render", "ns", w->ns, "name",
		    w->name, NULL);
	free(w);
}

/*
 * window_arm - one timer per decofile for its window's next opening (at
 * unix second at; now is render_policy_now's); at < 0 only disarms
 */
static void
window_arm(struct stage *st, const struct journal_item *it, int64_t at, int64_t now)
{
	struct renderer *r = R(st);
	struct window_wake *w;

	for (struct window_wake **pp = &r->wakes; (w = *pp) != NULL; pp = &w->next)
		if (strcmp(w->ns, it->ns) == 0 && strcmp(w->name, it->name) == 0) {
			*pp = w->next;
			stage_cancel_timer(st, w->timer);
			free(w);
			break;
		}
	if (at < 0)
		return;
	w = xcalloc(1, sizeof(*w));
	snprintf(w->ns, sizeof(w->ns), "%s", it->ns);
	snprintf(w->name, sizeof(w->name), "%s", it->name);
	snprintf(w->detail, sizeof(w->detail), "%s", it->detail);
	w->timer = stage_add_timer(st, (at - now) * 1000 + 500, window_fire, w);
	w->next = r->wakes;
	r->wakes = w;
}

/*
 * apply_done - the owner's apply was taken: remove the annotation from
 * the Decofile (a write of its own; the spec, so the generation, stays)
 */
static void
apply_done(struct stage *st, const char *ns, const char *name)
{
	yajl_val doc = NULL, out;
	char err[512];
	int changed = 0;

	if (resource_get(stage_store(st), "decofiles", ns, name, &doc, err,
	    sizeof(err)) != 0)
		return;
	if (render_policy_apply_requested(doc) &&
	    (out = resource_annotation_doc(doc, RENDER_APPLY_ANNOTATION, NULL)) != NULL) {
		if (resource_put(stage_store(st), out, ns, &changed, NULL, NULL, NULL, err,
		    sizeof(err)) < 0)
			log_kv(LOG_WARN, "cannot remove the apply annotation", "ns", ns,
			    "name", name, "error", err, NULL);
		else
			log_kv(LOG_INFO, "template update applied; annotation removed", "ns",
			    ns, "name", name, NULL);
		yajl_tree_free(out);
	}
	yajl_tree_free(doc);
}

/*
 * resolve - which generation of each template this render merges: the
 * newest when the policy adopts (or the decofile never used it), else the
 * one its last valid render used, with a line for pending.  When another
 * instance rendered it last (render_pin.c), a site that does not adopt
 * keeps the pin its shared status names, if the tree is in the spool.
 * 0, 1 not ready (Syncing said so), 2 a pinned tree is not here
 * (pin->held says which), -1 journal or store error.
 */
static int
resolve(struct stage *st, const struct journal_item *it, char names[][254], int ntpl,
    int adopt, int auto_mode, int window_open, struct rollout_gate *g,
    struct journal_template_use *use, char newest[][65], struct buf *pending,
    struct render_pin *pin)
{
	struct journal *j = stage_journal(st);
	char why[400];

	for (int i = 0; i < ntpl; i++) {
		struct journal_template_use u;
		int64_t ng;
		char nh[65];
		int rv, shared;

		if ((rv = journal_template_newest(j, it->ns, names[i], &ng, nh)) != 0) {
			if (rv < 0)
				return -1;
			snprintf(why, sizeof(why), "DecofileTemplate '%.253s' has not been"
			    " fetched yet", names[i]);
			syncing(st, it, "False", "TemplateNotReady", why);
			return 1;
		}
		if ((rv = journal_template_used(j, it->ns, it->name, names[i], &u)) < 0)
			return -1;
		/* not adopting: another instance may have rendered it since (render_pin.c) */
		if ((shared = adopt ? 0 : render_pin_shared(pin, st, it->ns, it->name, names[i],
		    rv == 0, &u)) < 0)
			return -1;
		if (shared)
			rv = 0;
		/* the rollout: its wave, its halt, its rollback (render_rollout.c) */
		if (render_rollout_gate(st, it->ns, it->name, names[i], ng, nh, auto_mode,
		    window_open, &g[i]) < 0)
			return -1;
		snprintf(newest[i], 65, "%s", g[i].target);
		if (rv == 0 && g[i].revert && strcmp(u.tree_hash, nh) == 0)
			rv = 1;	/* rolled back: every site on the new tree goes back */
		if (rv == 0 && (!adopt || g[i].hold) && strcmp(u.tree_hash, g[i].target) != 0) {
			if (shared && !render_pin_check(pin, st, it->name, &u,
			    g[i].target_generation))
				continue;	/* held: never the newest in its place */
			use[i] = u;	/* pinned by the policy or the rollout */
			if (pending->len > 0)
				buf_add(pending, "\n", 1);
			render_policy_pending_line(pending, names[i], u.generation,
			    g[i].target_generation);
			continue;
		}
		ng = g[i].target_generation;
		snprintf(nh, sizeof(nh), "%s", g[i].target);
		snprintf(use[i].template, sizeof(use[i].template), "%.253s", names[i]);
		use[i].generation = ng;
		snprintf(use[i].tree_hash, sizeof(use[i].tree_hash), "%s", nh);
	}
	return pin->held.len > 0 ? 2 : 0;
}

/*
 * preview - append to pending the line saying what taking the pending
 * generations would change: trees[0..ntpl-1] are the templates this render
 * merged, trees[ntpl] the decofile's own; the templates whose newest tree
 * differs are loaded, merged in their place and the result compared with
 * json, this render's document.  "N blocks changed (K keys), A added, R
 * removed", or why there is no figure.
 */
static void
preview(struct stage *st, const struct render_tree *trees, int ntpl,
    const struct journal_template_use *use, char newest[][65], const struct buf *json,
    struct buf *pending)
{
	struct render_tree nt[RENDER_MAX_TEMPLATES];
	int loaded[RENDER_MAX_TEMPLATES], missing;
	struct render_input *all;
	struct render_error e;
	struct render_diff d;
	struct buf out;
	size_t nall = 0;
	char why[1200];

	buf_add(pending, "\n", 1);
	buf_init(&out);
	for (int i = 0; i < ntpl; i++) {
		loaded[i] = 0;
		if (strcmp(use[i].tree_hash, newest[i]) == 0)
			continue;
		if (render_tree_load(stage_spool(st), newest[i], i, &nt[i], &missing, why,
		    sizeof(why)) < 0) {
			buf_printf(pending, "No preview: DecofileTemplate '%s': %s", use[i].template,
			    why);
			goto out;
		}
		loaded[i] = 1;
	}
	for (int i = 0; i <= ntpl; i++)
		nall += i < ntpl && loaded[i] ? nt[i].n : trees[i].n;
	all = xcalloc(nall ? nall : 1, sizeof(*all));
	nall = 0;
	for (int i = 0; i <= ntpl; i++) {
		const struct render_tree *t = i < ntpl && loaded[i] ? &nt[i] : &trees[i];

		memcpy(all + nall, t->in, t->n * sizeof(*all));
		nall += t->n;
	}
	if (render_merge(all, nall, &out, NULL, &e) < 0)
		buf_printf(pending, "The newest generations would not render: %s", e.msg);
	else if (render_diff_docs(json->data, json->len, out.data, out.len, &d, why,
	    sizeof(why)) < 0)
		buf_printf(pending, "No preview: %s", why);
	else {
		render_diff_summary(pending, &d);
		render_diff_free(&d);
	}
	free(all);
out:
	for (int i = 0; i < ntpl; i++)
		if (loaded[i])
			render_tree_free(&nt[i]);
	buf_free(&out);
}

static enum stage_result
render(struct stage *st, const struct journal_item *it, yajl_val doc)
{
	struct renderer *r = R(st);
	struct journal *j = stage_journal(st);
	struct spool *sp = stage_spool(st);
	static char names[RENDER_MAX_TEMPLATES][254];
	struct render_tree trees[RENDER_MAX_TEMPLATES + 1];
	struct render_input *all = NULL;
	struct render_error e;
	struct buf json;
	char tree[65], hash[65], chk[65], bin_hash[65] = "", why[1200], detail[512];
	char last[65] = "", last_fmt[8] = "", last_bin[65] = "", commit[200] = "";
	char obj[JOURNAL_OBJ_MAX];
	struct proto_render_detail rd;
	struct proto_publish_detail pd;
	const char *target, *format;
	enum stage_result res = STAGE_DONE;
	size_t ntrees = 0, nall = 0, binlen = 0;
	char *bin = NULL;
	int ntpl, missing, rv, written = 0, recorded = 0, apply, adopt;
	static struct journal_template_use use[RENDER_MAX_TEMPLATES];
	static char newest[RENDER_MAX_TEMPLATES][65];
	static struct rollout_gate gate[RENDER_MAX_TEMPLATES];
	const char *hold_reason = NULL;
	int64_t mark = 0;
	struct render_policy pol;
	struct render_pin pin;
	struct buf pending;
	int64_t now, next_open;

	if (proto_render_detail_decode(it->detail, &rd, why, sizeof(why)) < 0) {
		log_kv(LOG_ERROR, "bad item", "ns", it->ns, "name", it->name, "error", why, NULL);
		stage_item_error(st, why);
		return STAGE_FAIL;
	}
	buf_init(&json);
	buf_init(&pending);
	/* the decofile's own tree: the item's, or the newest fetched */
	if (it->hash[0] != '\0') {
		if (!is_sha256_hex(it->hash)) {
			log_kv(LOG_ERROR, "item hash is not a tree hash", "hash", it->hash, NULL);
			return STAGE_FAIL;
		}
		snprintf(tree, sizeof(tree), "%s", it->hash);
	} else if ((rv = journal_last_fetch(j, it->ns, it->name, tree)) != 0) {
		if (rv < 0)
			return STAGE_RETRY;
		log_kv(LOG_INFO, "nothing fetched yet; the fetcher will ask again", "ns",
		    it->ns, "name", it->name, NULL);
		return STAGE_DONE;
	}
	if ((ntpl = render_template_names(doc, names, RENDER_MAX_TEMPLATES, why,
	    sizeof(why))) < 0 || render_policy_parse(doc, &pol, why, sizeof(why)) < 0) {
		syncing(st, it, "False", "ValidationError", why);
		return STAGE_DONE;
	}
	apply = render_policy_apply_requested(doc);
	now = render_policy_now();
	adopt = render_policy_adopt(&pol, now, apply, &next_open);
	render_pin_init(&pin, render_policy_name(&pol));
	memset(gate, 0, sizeof(gate));
	if ((rv = resolve(st, it, names, ntpl, adopt, pol.mode == RENDER_AUTO && !apply,
	    pol.mode == RENDER_WINDOW && adopt && !apply, gate, use, newest, &pending,
	    &pin)) != 0) {
		if (rv == 2) {	/* fail-safe: the published document stays as it is */
			render_pin_hold(st, it, &pin, &pol, next_open);
			window_arm(st, it, pol.mode == RENDER_WINDOW ? next_open : -1, now);
		}
		res = rv == 2 ? STAGE_DONE : STAGE_RETRY;
		goto out;
	}
	for (int i = 0; i < ntpl; i++)
		if (gate[i].hold && hold_reason == NULL)
			hold_reason = gate[i].reason;

	/* templates first (layers 0..n-1), then the decofile's own blocks */
	for (int i = 0; i <= ntpl; i++) {
		if (render_tree_load(sp, i < ntpl ? use[i].tree_hash : tree,
		    i < ntpl ? i : RENDER_LAYER_OWN, &trees[ntrees], &missing, why,
		    sizeof(why)) < 0) {
			log_kv(LOG_WARN, "cannot load a tree", "ns", it->ns, "name", it->name,
			    "error", why, NULL);
			res = missing && it->attempts < MAX_SPOOL_MISSES ? STAGE_RETRY : STAGE_FAIL;
			goto out;
		}
		nall += trees[ntrees++].n;
	}
	snprintf(commit, sizeof(commit), "%s", trees[ntrees - 1].pt.commit[0] ?
	    trees[ntrees - 1].pt.commit : rd.commit);

	all = xcalloc(nall ? nall : 1, sizeof(*all));
	nall = 0;
	for (size_t i = 0; i < ntrees; i++) {
		memcpy(all + nall, trees[i].in, trees[i].n * sizeof(*all));
		nall += trees[i].n;
	}
	if (render_merge(all, nall, &json, hash, &e) < 0) {
		log_kv(LOG_WARN, "decofile refused", "ns", it->ns, "name", it->name, "error",
		    e.msg, NULL);
		syncing(st, it, "False", "ValidationError", e.msg);
		journal_audit(j, STAGE, journal_obj(obj, sizeof(obj), "decofile", it->ns, it->name),
		    "refused", e.msg);
		render_rollout_after(st, it->ns, it->name, gate, use, ntpl, 0, 0, 0, e.msg);
		goto out;	/* done: fail-safe, the last good version stays live */
	}
	if (pending.len > 0)
		preview(st, trees, ntpl, use, newest, &json, &pending);

	/* the blocks are in json now: give their memory back before brotli */
	free(all);
	all = NULL;
	for (size_t i = 0; i < ntrees; i++)
		render_tree_free(&trees[i]);
	ntrees = 0;
#ifdef __GLIBC__
	/*
	 * a large site's small blocks sit in the heap: return the pages.  Not
	 * after a small one: the trim costs more than it gives back, and brotli's
	 * tables then fault their pages in again (a tenth of a cold start's
	 * renderer CPU for 10,000 small sites)
	 */
	if (json.len >= TRIM_MIN)
		malloc_trim(0);
#endif

	/* the document, and its compressed form when it is large */
	target = decofile_target(doc, r->default_target);
	format = render_want_bin(json.len, r->threshold, strcmp(target, "configmap") == 0) ?
	    "bin" : "json";
	if (spool_put(sp, json.data, json.len, chk) < 0 || strcmp(chk, hash) != 0) {
		log_kv(LOG_ERROR, "cannot write the rendered document to the spool", "error",
		    strerror(errno), NULL);
		res = STAGE_RETRY;
		goto out;
	}
	if (strcmp(format, "bin") == 0) {
		bin = render_bin(json.data, json.len, r->quality, r->window, &binlen);
		if (bin == NULL || spool_put(sp, bin, binlen, bin_hash) < 0) {
			log_kv(LOG_ERROR, "cannot compress the rendered document", NULL);
			res = STAGE_RETRY;
			goto out;
		}
	}

	if (journal_last_render(j, it->ns, it->name, last, last_fmt, last_bin) < 0) {
		res = STAGE_RETRY;
		goto out;
	}
	if (strcmp(last, hash) == 0 && strcmp(last_fmt, format) == 0) {
		log_kv(LOG_INFO, "content unchanged; nothing to publish", "ns", it->ns, "name",
		    it->name, "hash", hash, NULL);
	} else {
		char size[32];

		memset(&pd, 0, sizeof(pd));
		snprintf(pd.format, sizeof(pd.format), "%s", format);
		snprintf(pd.bin, sizeof(pd.bin), "%s", bin_hash);
		snprintf(pd.commit, sizeof(pd.commit), "%s", commit);
		if (proto_publish_detail_encode(&pd, detail, sizeof(detail)) < 0) {
			log_kv(LOG_ERROR, "cannot encode the publisher item", "commit", commit, NULL);
			stage_item_error(st, "cannot encode the publisher item (commit too long?)");
			res = STAGE_FAIL;
			goto out;
		}
		if ((mark = journal_items_mark(j)) < 0 || stage_begin(st) < 0) {
			res = STAGE_RETRY;
			goto out;
		}
		/* the notifier's verdict on this version comes after mark */
		render_rollout_after(st, it->ns, it->name, gate, use, ntpl, 1, 1, mark, NULL);
		if (journal_record_render(j, it->ns, it->name, hash, format,
		    bin_hash[0] ? binlen : json.len, tree, bin_hash) < 0 ||
		    journal_template_uses_set(j, it->ns, it->name, use, (size_t)ntpl) < 0 ||
		    stage_push(st, "publisher", "decofile", it->ns, it->name, hash, detail) < 0 ||
		    stage_commit(st, it, hash) < 0) {
			stage_rollback(st);
			log_kv(LOG_ERROR, "cannot record the render", "error", journal_error(j),
			    NULL);
			res = STAGE_RETRY;
			goto out;
		}
		recorded = 1;
		/* a newer render cancels the site's pending slow pass; s3 keeps JSON */
		if (bin_hash[0] != '\0' && strcmp(target, "s3") != 0)
			render_recompress_queue(r->rc, it->ns, it->name, hash, tree, commit,
			    json.data, json.len, binlen);
		else
			render_recompress_cancel(r->rc, it->ns, it->name);
		snprintf(size, sizeof(size), "%zu", bin_hash[0] ? binlen : json.len);
		log_kv(LOG_INFO, "rendered", "ns", it->ns, "name", it->name, "hash", hash,
		    "format", format, "bytes", size, "commit", commit, NULL);
	}
	if (!recorded && (journal_begin(j) < 0 ||
	    journal_template_uses_set(j, it->ns, it->name, use, (size_t)ntpl) < 0 ||
	    (render_rollout_after(st, it->ns, it->name, gate, use, ntpl, 1, 0, 0, NULL), 0) ||
	    journal_commit(j) < 0)) {
		journal_rollback(j);
		log_kv(LOG_ERROR, "cannot record the templates used", "error", journal_error(j),
		    NULL);
		res = STAGE_RETRY;
		goto out;
	}
	if (pending.len > 0 && pol.mode == RENDER_WINDOW) {
		buf_add(&pending, "\n", 1);
		render_policy_window_line(&pending, &pol, next_open);
	}
	status_rendered(st, it, use, (size_t)ntpl, commit, &pol,
	    pending.len > 0 ? pending.data : NULL, hold_reason, apply);
	window_arm(st, it, pending.len > 0 && pol.mode == RENDER_WINDOW ? next_open : -1, now);
	written = 1;
out:
	/* after Syncing, so a reader never pairs this commit with an older verdict */
	if (commit[0] != '\0' && res == STAGE_DONE && !written)
		rendered_commit(st, it, commit);
	free(bin);
	free(all);
	for (size_t i = 0; i < ntrees; i++)
		render_tree_free(&trees[i]);
	buf_free(&json);
	buf_free(&pending);
	render_pin_free(&pin);
	return res;
}

static enum stage_result renderer_on_decofile(struct stage *st,
    const struct journal_item *it);

static enum stage_result
renderer_on_item(struct stage *st, const struct journal_item *it)
{
	enum stage_result res;

	if (strcmp(it->kind, "template") == 0)	/* a new generation: its rollout */
		return render_rollout_begin(st, it->ns, it->name) < 0 ? STAGE_RETRY : STAGE_DONE;
	if (strcmp(it->kind, "rollout") == 0) {	/* a wave reached this site */
		res = renderer_on_decofile(st, it);
		if (res == STAGE_DONE)
			render_rollout_settle(st, it->ns, it->name);
		return res;
	}
	if (strcmp(it->kind, "decofile") != 0) {
		log_kv(LOG_ERROR, "unknown item kind", "kind", it->kind, NULL);
		return STAGE_FAIL;
	}
	return renderer_on_decofile(st, it);
}

static enum stage_result
renderer_on_decofile(struct stage *st, const struct journal_item *it)
{
	enum stage_result res;
	yajl_val doc = NULL;
	char err[512];
	int rv;

	rv = resource_get(stage_store(st), "decofiles", it->ns, it->name, &doc, err,
	    sizeof(err));
	if (rv < 0) {
		log_kv(LOG_WARN, "cannot read the Decofile", "ns", it->ns, "name", it->name,
		    "error", err, NULL);
		return STAGE_RETRY;
	}
	if (rv == 1) {
		log_kv(LOG_INFO, "Decofile deleted before rendering; nothing to do", "ns",
		    it->ns, "name", it->name, NULL);
		return STAGE_DONE;
	}
	if (decofile_suspended(doc) || decofile_rollback_to(doc) != NULL) {
		/* handed on before the hold: dropped; resume fetches (and renders) again */
		log_kv(LOG_INFO, "Decofile suspended; not rendered", "ns", it->ns, "name",
		    it->name, NULL);
		yajl_tree_free(doc);
		return STAGE_DONE;
	}
	res = render(st, it, doc);
	yajl_tree_free(doc);
	return res;
}

static const struct stage_ops renderer_ops = {
	.name = STAGE,
	.use_store = 1,
	.init = renderer_init,
	.on_item = renderer_on_item,
	.reload = renderer_reload,
	.shutdown = renderer_shutdown,
	.housekeeping = 1,
	.batch = 1,		/* one commit and one group of syncs per batch of items */
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &renderer_ops);
}
