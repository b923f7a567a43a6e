/*
 * render_preview - what is pending for a Decofile: its document merged
 * from the newest fetched tree of its own source and the newest
 * generation of every template it lists (what a render taking every
 * pending change would publish) against its last rendered document,
 * block by block and key by key, and the templates it would take at a
 * newer generation.  Also each listed template's rollout state for the
 * site (render_tpl_site: adopted, pending by its policy, waiting for its
 * wave, failed, halted, ...).  Shared by `decoctl diff NAME`, `decoctl
 * template status` and the web stage's decofile page; reads the journal
 * and the spool, writes nothing.
 */
#ifndef DECOD_RENDER_PREVIEW_H
#define DECOD_RENDER_PREVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/spool.h"
#include "daemons/renderer/render_diff.h"
#include "daemons/renderer/render_policy.h"
#include "daemons/renderer/render_tree.h"

/* a template the preview takes at a newer tree than the last render used */
struct render_pend {
	char name[254];
	int used;		/* the last render used it (from is set) */
	struct journal_template_use from;
	int64_t to_gen;
	char to_hash[65];
};

struct render_preview {
	struct render_policy pol;
	int pol_ok;
	struct render_pend pend[RENDER_MAX_TEMPLATES];
	int npend;
	char rendered[65];	/* the last render's document, "" none */
	char tree[65];		/* the newest fetched tree of the source */
	struct render_diff d;
};

/*
 * render_preview - the preview of decofile ns/name (doc, its stored
 * document) into p (render_preview_free it whatever the result).  0; 1
 * nothing to compare yet (never fetched, a template not fetched), why in
 * err; -1 an error, why in err.
 */
int render_preview(struct journal *j, struct spool *sp, const char *ns, const char *name,
    yajl_val doc, struct render_preview *p, char *err, size_t errlen);
void render_preview_free(struct render_preview *p);

/* render_preview_json - the object of `decoctl diff NAME -o json` */
void render_preview_json(struct jw *w, const char *ns, const char *name,
    const struct render_preview *p);

/*
 * render_preview_resolved - the generation and hash a decofile's
 * status.resolvedTemplates names for template tpl: 0, or 1 when none
 */
int render_preview_resolved(yajl_val status, const char *tpl, int64_t *gen, const char **hash);

/*
 * A template's rollout as one site sees it.  render_tpl_load reads, once
 * per template, what every site's row needs (the newest fetched tree, the
 * newest rollout); render_tpl_site computes one site's row.  `decoctl
 * template status TEMPLATE` (every site of one template) and the web
 * stage's GET .../templates (every template of one site) both use these,
 * so the two say the same state for the same site.
 */
struct render_tpl {
	char ns[254], name[254];
	int64_t fetched;		/* the newest fetched generation, -1 never fetched */
	char tree[65];			/* its tree, "" never fetched */
	int have_ro;			/* ro is the template's newest rollout */
	int ro_current;			/* ... and it rolls out the newest tree */
	struct journal_rollout ro;
};

/*
 * the state of a site for one template, one of: "adopted" (renders the
 * newest tree), "pending" (Manual or Window keep an older one),
 * "waiting" (Auto, its wave not reached yet), "updating" (Auto, its
 * wave reached or no rollout: it takes the newest at its next render),
 * "halted" (Auto, the rollout halted before it), "failed" (its wave
 * failed on it: reason says why), "reverting" / "reverted" (a rollback
 * sends it / sent it back to the previous generation), "not-rendered",
 * "invalid-policy"
 */
struct render_tpl_row {
	const char *state;		/* static */
	enum { RENDER_TPL_ADOPTED, RENDER_TPL_PENDING, RENDER_TPL_FAILED,
		RENDER_TPL_OTHER } count;	/* the tally it goes in */
	const char *policy;		/* "Auto", "Manual", "Window"; NULL invalid */
	int64_t generation;		/* the site's (status.resolvedTemplates), -1 none */
	int64_t fetched;		/* the newest fetched, -1 never */
	int wave;			/* its wave in the rollout, -1 none or not an Auto site */
	char reason[512];		/* why it failed, else "" */
	int64_t next_window;		/* a pending Window site's next opening, -1 none */
};

/* render_tpl_load - template ns/tpl's newest tree and rollout into t; 0 or -1 (journal) */
int render_tpl_load(struct journal *j, const char *ns, const char *tpl, struct render_tpl *t);

/*
 * render_tpl_site - the row of decofile site (doc: its stored document,
 * status: its merged status, NULL none) for template t.  0, or -1 on a
 * journal error (row set as far as known).
 */
int render_tpl_site(struct journal *j, const struct render_tpl *t, const char *site,
    yajl_val doc, yajl_val status, struct render_tpl_row *row);

/*
 * render_tpl_row_json - a row as an object: name (what the caller lists:
 * the site, or the template), policy, generation, fetchedGeneration,
 * state, wave?, reason?, nextWindow?
 */
void render_tpl_row_json(struct jw *w, const char *name, const struct render_tpl_row *row);

/*
 * render_preview_rollout_json - the web stage's GET .../templates: an
 * array, one render_tpl_row_json object per template doc lists (named by
 * the template), in listed order.
 */
void render_preview_rollout_json(struct jw *w, struct journal *j, const char *ns,
    const char *site, yajl_val doc, yajl_val status);

#endif
