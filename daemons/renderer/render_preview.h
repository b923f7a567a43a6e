/*
 * render_preview - what is pending for a Decofile: its document merged
 * from the newest fetched tree of its own source and the newest
 * generation of every template it lists (what a render taking every
 * pending change would publish) against its last rendered document,
 * block by block and key by key, and the templates it would take at a
 * newer generation.  Also each listed template's rollout state for the
 * site (adopted, or pending by its policy).  Shared by `decoctl diff
 * NAME` and the web stage's decofile page; reads the journal and the
 * spool, writes nothing.
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
 * render_preview_rollout_json - an array, one object per template doc
 * lists: its name, fetchedGeneration (the newest, null never fetched),
 * generation (the one the site's last render used, from status's
 * resolvedTemplates; null none), state ("adopted", "updating" for an Auto
 * site, "pending" for a Manual or Window site, "not-rendered",
 * "invalid-policy"), policy, and nextWindow for a Window site.  The same
 * states as `decoctl template status`.
 */
void render_preview_rollout_json(struct jw *w, struct journal *j, const char *ns,
    yajl_val doc, yajl_val status);

#endif
