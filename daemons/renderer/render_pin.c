/*
 * render_pin - the pin of a Manual or Window site that this instance's
 * journal does not know (see the header): read from the renderer's status
 * fragment in the shared store, checked against the local spool, and, when
 * the pinned tree is not here, the held site's conditions.  Owns nothing
 * past one render.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/manifest.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/renderer/render_pin.h"
#include "daemons/renderer/render_preview.h"

#define STAGE "renderer"

void
render_pin_init(struct render_pin *p, const char *policy)
{
	memset(p, 0, sizeof(*p));
	p->policy = policy;
	buf_init(&p->held);
}

void
render_pin_free(struct render_pin *p)
{
	yajl_tree_free(p->frag);
	buf_free(&p->held);
	memset(p, 0, sizeof(*p));
}

/* frag_read - the renderer's fragment of ns/name into p->frag (none: NULL); 0 or -1 */
static int
frag_read(struct render_pin *p, struct stage *st, const char *ns, const char *name)
{
	char *key = key_status("decofiles", ns, name, STAGE), *val = NULL;
	struct json_error je;
	size_t len;
	int rc;

	rc = store_get(stage_store(st), key, &val, &len);
	if (rc < 0) {
		log_kv(LOG_WARN, "cannot read the status for a pinned template", "key", key,
		    "error", store_error(stage_store(st)), NULL);
		free(key);
		return -1;
	}
	if (rc == 0) {
		p->frag = json_parse(val, len, &je);
		if (p->frag != NULL && !YAJL_IS_OBJECT(p->frag)) {
			yajl_tree_free(p->frag);
			p->frag = NULL;
		}
		if (p->frag == NULL)	/* the status writer rewrites it; no pin to read */
			log_kv(LOG_WARN, "status fragment unreadable; no pinned template read",
			    "key", key, NULL);
	}
	free(val);
	free(key);
	p->read = 1;
	return 0;
}

int
render_pin_shared(struct render_pin *p, struct stage *st, const char *ns,
    const char *name, const char *tpl, int found, struct journal_template_use *u)
{
	const char *hash = NULL;
	int64_t gen = 0;

	if (!p->read && frag_read(p, st, ns, name) < 0)
		return -1;
	if (p->frag == NULL || render_preview_resolved(p->frag, tpl, &gen, &hash) != 0 ||
	    hash == NULL || !is_sha256_hex(hash))
		return 0;
	/*
	 * The newer generation is taken for the later render: a pin only
	 * moves forward, by an apply or an open window (a rollback moves it
	 * back, but is driven from one instance's journal).  A tie: ours.
	 */
	if (found && (gen <= u->generation || strcmp(hash, u->tree_hash) == 0))
		return 0;
	memset(u, 0, sizeof(*u));
	snprintf(u->template, sizeof(u->template), "%.253s", tpl);
	u->generation = gen;
	snprintf(u->tree_hash, sizeof(u->tree_hash), "%s", hash);
	return 1;
}

/* tree_here - the manifest hash and every blob it lists are in sp */
static int
tree_here(struct spool *sp, const char *hash)
{
	struct manifest pt;
	char err[256];
	size_t len;
	char *text = spool_get(sp, hash, &len);
	int ok;

	if (text == NULL)
		return 0;
	ok = manifest_decode(text, len, &pt, err, sizeof(err)) == 0;
	free(text);
	if (!ok)
		return 0;
	for (size_t i = 0; i < pt.n && ok; i++)
		ok = spool_has(sp, pt.e[i].blob);
	manifest_free(&pt);
	return ok;
}

int
render_pin_check(struct render_pin *p, struct stage *st, const char *site,
    const struct journal_template_use *u, int64_t to_gen)
{
	if (tree_here(stage_spool(st), u->tree_hash))
		return 1;
	if (p->held.len > 0)
		buf_add(&p->held, "\n", 1);
	buf_printf(&p->held, "DecofileTemplate '%s' generation %lld (hash %.12s) is pinned by "
	    "the %s policy but its tree is not in this instance's spool; apply the template "
	    "update (decoctl template apply %s) to take generation %lld", u->template,
	    (long long)u->generation, u->tree_hash, p->policy, site, (long long)to_gen);
	return 0;
}

void
render_pin_hold(struct stage *st, const struct journal_item *it,
    const struct render_pin *p, const struct render_policy *pol, int64_t next_open)
{
	struct status_cond c[2] = {
		{ "Syncing", "False", "PinnedTreeMissing", NULL },
		{ "TemplateUpdateAvailable", "True", "PinnedTreeMissing", NULL },
	};
	struct buf msg;

	buf_init(&msg);
	buf_add(&msg, p->held.data, p->held.len);
	if (pol->mode == RENDER_WINDOW) {
		buf_add(&msg, "\n", 1);
		render_policy_window_line(&msg, pol, next_open);
	}
	c[0].message = c[1].message = msg.data;
	log_kv(LOG_INFO, "pinned template tree not in the spool; site held, nothing published",
	    "ns", it->ns, "name", it->name, NULL);
	if (status_set(stage_store(st), stage_journal(st), "decofiles", it->ns, it->name,
	    STAGE, NULL, c, 2) < 0)
		log_kv(LOG_WARN, "cannot write the held site's conditions", "ns", it->ns,
		    "name", it->name, NULL);
	buf_free(&msg);
}
