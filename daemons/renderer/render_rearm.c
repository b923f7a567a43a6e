/*
 * render_rearm - the update windows armed again after the renderer starts
 * (render_rearm.h)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/renderer/render_rearm.h"

#define STAGE "renderer"

/* the decofiles to re-arm (journal_template_waiting's rows, gathered first) */
struct rearm {
	size_t n, cap;
	char (*ns)[254], (*name)[254];
	size_t total;	/* read from the journal */
	int tries;
};

#define REARM_RETRY_MS 500	/* a re-arm the journal refused is tried again, doubling */
#define REARM_TRIES 8

static struct rearm *waiting;	/* the re-arm whose retry timer is armed */
static int64_t waiting_timer;

/* rearm_add - one row; nothing is written while the journal's read is open */
static void
rearm_add(void *arg, const char *ns, const char *name)
{
	struct rearm *r = arg;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->ns = xrealloc(r->ns, r->cap * sizeof(*r->ns));
		r->name = xrealloc(r->name, r->cap * sizeof(*r->name));
	}
	snprintf(r->ns[r->n], sizeof(r->ns[r->n]), "%s", ns);
	snprintf(r->name[r->n], sizeof(r->name[r->n]), "%s", name);
	r->n++;
}

static void
rearm_free(struct rearm *r)
{
	free(r->ns);
	free(r->name);
	free(r);
}

/*
 * rearm_run - a render for each decofile of r (its last item's detail);
 * those the journal refused (busy) stay in r, to be tried again
 */
static void
rearm_run(struct stage *st, struct rearm *r)
{
	size_t keep = 0;

	for (size_t i = 0; i < r->n; i++) {
		struct journal_item it;
		int rv = journal_last_item(stage_journal(st), STAGE, "decofile", r->ns[i],
		    r->name[i], &it);

		if (rv > 0)	/* no item of it: nothing to render again */
			continue;
		if (rv == 0 && stage_enqueue(st, STAGE, "decofile", r->ns[i], r->name[i], "",
		    it.detail) >= 0)
			continue;
		memmove(r->ns[keep], r->ns[i], sizeof(r->ns[i]));
		memmove(r->name[keep], r->name[i], sizeof(r->name[i]));
		keep++;
	}
	r->n = keep;
}

static void
rearm_again(struct stage *st, void *arg)
{
	struct rearm *r = arg;

	waiting = NULL;
	waiting_timer = 0;
	rearm_run(st, r);
	if (r->n == 0) {	/* said once every render is enqueued */
		char c[24];

		snprintf(c, sizeof(c), "%zu", r->total);
		log_kv(LOG_INFO, "update windows re-armed", "decofiles", c, NULL);
		rearm_free(r);
		return;
	}
	if (++r->tries >= REARM_TRIES) {
		for (size_t i = 0; i < r->n; i++)
			log_kv(LOG_ERROR, "cannot re-arm an update window; its next change"
			    " or a restart arms it", "ns", r->ns[i], "name", r->name[i],
			    "error", journal_error(stage_journal(st)), NULL);
		rearm_free(r);
		return;
	}
	log_kv(LOG_WARN, "cannot re-arm an update window yet; trying again", "ns", r->ns[0],
	    "name", r->name[0], "error", journal_error(stage_journal(st)), NULL);
	waiting = r;
	waiting_timer = stage_add_timer(st, (int64_t)REARM_RETRY_MS << (r->tries - 1),
	    rearm_again, r);
}

void
render_rearm_windows(struct stage *st, void *arg)
{
	struct rearm *r = xcalloc(1, sizeof(*r));
	int n;

	(void)arg;
	if ((n = journal_template_waiting(stage_journal(st), rearm_add, r)) < 0) {
		log_kv(LOG_WARN, "cannot read the decofiles waiting for a window", "error",
		    journal_error(stage_journal(st)), NULL);
		rearm_free(r);
		return;
	}
	if (n == 0) {
		rearm_free(r);
		return;
	}
	r->total = r->n;
	rearm_again(st, r);
}

void
render_rearm_stop(struct stage *st)
{
	if (waiting == NULL)
		return;
	stage_cancel_timer(st, waiting_timer);
	rearm_free(waiting);
	waiting = NULL;
	waiting_timer = 0;
}
