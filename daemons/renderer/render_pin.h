/*
 * render_pin - a Manual or Window site's pinned template generations when
 * this instance's journal has no template_uses row for it: another
 * instance rendered it last (a takeover on a shared etcd,
 * doc/scale-out.md) or this journal was lost.  The pin is then read from
 * the shared status (the renderer's fragment, status.resolvedTemplates:
 * name, generation, tree hash).  A render uses it when the tree is in the
 * local spool; when it is not, the site is held (no render, nothing
 * published) and its conditions say why, so that the newest generation
 * never silently overrides the owner's policy.
 */
#ifndef DECOD_RENDER_PIN_H
#define DECOD_RENDER_PIN_H

#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/stage.h"
#include "daemons/renderer/render_policy.h"

/* one render's pins from the shared status; render_pin_free it */
struct render_pin {
	const char *policy;	/* "Manual" or "Window", for the message */
	yajl_val frag;		/* the renderer's status fragment, read at first need */
	int read;
	struct buf held;	/* one line per pinned template whose tree is not here */
};

/* render_pin_init - an empty p for a site under policy (a static string) */
void render_pin_init(struct render_pin *p, const char *policy);
void render_pin_free(struct render_pin *p);

/*
 * render_pin_shared - the pin a render of decofile ns/name that does not
 * adopt keeps for template tpl: *u holds this journal's (found: it has
 * one).  The status.resolvedTemplates entry, written by whichever instance
 * rendered the site last, replaces it when this journal has none, or when
 * its generation is newer (the site came back from an instance that moved
 * it on, e.g. by an apply).  1 *u is the status's pin, 0 *u is unchanged,
 * -1 the store could not be read (logged).
 */
int render_pin_shared(struct render_pin *p, struct stage *st, const char *ns,
    const char *name, const char *tpl, int found, struct journal_template_use *u);

/*
 * render_pin_check - whether the pinned tree u is in this instance's
 * spool (its manifest and every blob it lists): 1 yes; 0 no, and a line
 * saying so (site: the decofile's name, to_gen: the generation an apply
 * would take) is added to p->held.
 */
int render_pin_check(struct render_pin *p, struct stage *st, const char *site,
    const struct journal_template_use *u, int64_t to_gen);

/*
 * render_pin_hold - the site is held: Syncing=False and
 * TemplateUpdateAvailable=True, reason PinnedTreeMissing, with p->held
 * (and, for a Window, the next opening) as the message, in one status
 * write; the published document is left as it is.  A store error is
 * only logged.
 */
void render_pin_hold(struct stage *st, const struct journal_item *it,
    const struct render_pin *p, const struct render_policy *pol, int64_t next_open);

#endif
