/*
 * fetch_hold - suspend, resume and rollback of one Decofile, as its
 * document in the store says (spec.suspend, the deco.sites/rollback-to
 * annotation; decoctl writes them, in a cluster kubectl does on the CR).
 * A suspended decofile is not fetched and nothing new of it is handed on;
 * its Syncing is False (Suspended), so `decoctl wait` says why at once.
 * A rollback pushes an earlier rendered version (still in the spool) to
 * the publisher, then the annotation is consumed and spec.suspend set, so
 * the next poll does not undo it.  A resume hands the newest render to
 * the publisher again and fetches at once.  Loop thread only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/kube.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "daemons/kube/kube_front.h"
#include "daemons/fetcher/fetcher.h"
#include "proto/proto.h"

/*
 * republish - push version v of s to the publisher with an audit row
 * (action, detail) in one transaction; 0, or -1 with why
 */
static int
republish(struct stage *st, struct src *s, const struct journal_version *v,
    const char *action, const char *detail, char *why, size_t len)
{
	struct journal *j = stage_journal(st);
	struct spool *sp = stage_spool(st);
	struct proto_publish_detail pd;
	char item[PROTO_MAX_DETAIL + 1], obj[JOURNAL_OBJ_MAX];

	if (!spool_has(sp, v->content_hash) ||
	    (strcmp(v->format, "bin") == 0 && !spool_has(sp, v->bin_hash))) {
		snprintf(why, len, "version %.12s is no longer in the spool (kept: the newest "
		    "history_keep versions)", v->content_hash);
		return -1;
	}
	memset(&pd, 0, sizeof(pd));
	snprintf(pd.format, sizeof(pd.format), "%s", v->format);
	snprintf(pd.bin, sizeof(pd.bin), "%s", v->bin_hash);
	snprintf(pd.commit, sizeof(pd.commit), "%.*s", PROTO_MAX_COMMIT, v->commit);
	if (proto_publish_detail_encode(&pd, item, sizeof(item)) < 0) {
		snprintf(why, len, "cannot encode the publisher item");
		return -1;
	}
	journal_obj(obj, sizeof(obj), "decofile", s->ns, s->name);
	if (stage_begin(st) < 0) {
		snprintf(why, len, "journal: %s", journal_error(j));
		return -1;
	}
	if (stage_push(st, "publisher", "decofile", s->ns, s->name, v->content_hash,
	    item) < 0 || journal_audit(j, STAGE, obj, action, detail) < 0 ||
	    stage_commit(st, NULL, NULL) < 0) {
		snprintf(why, len, "journal: %s", journal_error(j));
		stage_rollback(st);
		return -1;
	}
	return 0;
}

static void
kube_patched(void *arg, const struct kube_resp *r)
{
	(void)arg;
	if (!kube_ok(r))
		log_kv(LOG_WARN, "cannot consume the rollback annotation on the CR", "error",
		    r->err, NULL);
}

/*
 * consume - drop the rollback annotation (and set spec.suspend when
 * suspend), where the document came from: the CR (a mirror: a merge patch, the mirror follows)
 * or the store (decoctl's own resource)
 */
static void
consume(struct stage *st, struct src *s, yajl_val doc, int suspend)
{
	struct fetcher *f = F(st);
	char err[512];
	yajl_val held;

	if (json_get_str(doc, "metadata", "annotations", KUBE_FRONT_UID_ANNOTATION, NULL) !=
	    NULL) {
		const char *body = suspend ? "{\"metadata\":{\"annotations\":{\""
		    DECOFILE_ROLLBACK_ANNOTATION "\":null}},\"spec\":{\"suspend\":true}}" :
		    "{\"metadata\":{\"annotations\":{\"" DECOFILE_ROLLBACK_ANNOTATION
		    "\":null}}}";

		if (kube_front_patch(f->kube, s->ns, s->name, body, kube_patched, NULL) < 0)
			log_kv(LOG_WARN, "cannot consume the rollback annotation: no cluster client",
			    "ns", s->ns, "name", s->name, NULL);
		return;
	}
	kube_front_mirrors_drop(f->kube);	/* a Decofile written here: not the preload's */
	if ((held = resource_hold_doc(doc, suspend || decofile_suspended(doc), NULL)) == NULL ||
	    resource_put(stage_store(st), held, s->ns, NULL, NULL, NULL, NULL, err,
	    sizeof(err)) < 0)
		log_kv(LOG_WARN, "cannot consume the rollback annotation", "ns", s->ns, "name",
		    s->name, "error", held ? err : "not a Decofile document", NULL);
	yajl_tree_free(held);
}

/* rollback - publish the version named by want (a hash or its prefix) again */
static void
rollback(struct stage *st, struct src *s, yajl_val doc, const char *want)
{
	struct journal *j = stage_journal(st);
	int keep = (int)conf_get_int(stage_conf(st), "history_keep");
	struct journal_version v;
	char why[512], detail[600], obj[JOURNAL_OBJ_MAX];
	size_t n = strlen(want);
	int rc = 1;

	why[0] = '\0';
	if (n < 4 || n > 64 || strspn(want, "0123456789abcdef") != n)
		snprintf(why, sizeof(why), "%s \"%.80s\" is not a content hash (4 to 64 "
		    "lower-case hex digits)", DECOFILE_ROLLBACK_ANNOTATION, want);
	else if ((rc = journal_version_find(j, s->ns, s->name, want, 0, keep, &v)) < 0)
		snprintf(why, sizeof(why), "journal: %s", journal_error(j));
	else if (rc == 1)
		snprintf(why, sizeof(why), "no version %s among the newest %d of this decofile "
		    "(decoctl history %s --versions)", want, keep, s->name);
	else if (rc == 2)
		snprintf(why, sizeof(why), "%s names more than one version: give more digits",
		    want);
	if (rc == 0) {
		snprintf(detail, sizeof(detail), "to=%s commit=%s format=%s", v.content_hash,
		    v.commit[0] ? v.commit : "-", v.format);
		if (republish(st, s, &v, "rollback", detail, why, sizeof(why)) == 0) {
			log_kv(LOG_INFO, "rolled back; suspended until resumed", "ns", s->ns,
			    "name", s->name, "hash", v.content_hash, "commit", v.commit, NULL);
			snprintf(why, sizeof(why), "Rolled back to %.12s%s%.12s; held until "
			    "resumed", v.content_hash, v.commit[0] ? " (commit " : "",
			    v.commit[0] ? v.commit : "");
			if (v.commit[0])
				strncat(why, ")", sizeof(why) - strlen(why) - 1);
			fetch_status_syncing(st, s, "False", "Suspended", why);
			consume(st, s, doc, 1);
			return;
		}
	}
	log_kv(LOG_WARN, "rollback refused", "ns", s->ns, "name", s->name, "error", why,
	    NULL);
	journal_obj(obj, sizeof(obj), "decofile", s->ns, s->name);
	snprintf(detail, sizeof(detail), "%.590s", why);
	(void)journal_audit(j, STAGE, obj, "rollback-refused", detail);
	fetch_status_syncing(st, s, "False", "RollbackFailed", why);
	s->suspended = decofile_suspended(doc);
	consume(st, s, doc, 0);
}

/* resume - the newest render to the publisher again (a no-op when it is live) */
static void
resume(struct stage *st, struct src *s)
{
	struct journal *j = stage_journal(st);
	struct journal_version v;
	char why[512], detail[600], obj[JOURNAL_OBJ_MAX];
	int rc;

	journal_obj(obj, sizeof(obj), "decofile", s->ns, s->name);
	if ((rc = journal_version_find(j, s->ns, s->name, NULL, 0, 1, &v)) != 0) {
		(void)journal_audit(j, STAGE, obj, "resume", rc < 0 ? journal_error(j) :
		    "nothing rendered yet");
		return;
	}
	snprintf(detail, sizeof(detail), "republish=%s commit=%s", v.content_hash,
	    v.commit[0] ? v.commit : "-");
	if (republish(st, s, &v, "resume", detail, why, sizeof(why)) < 0)
		log_kv(LOG_WARN, "resumed; the newest version cannot be republished", "ns", s->ns,
		    "name", s->name, "error", why, NULL);
	else
		log_kv(LOG_INFO, "resumed", "ns", s->ns, "name", s->name, "hash",
		    v.content_hash, NULL);
}

int
fetch_hold_apply(struct stage *st, struct src *s, yajl_val doc)
{
	const char *want = decofile_rollback_to(doc);
	int was = s->suspended;

	s->suspended = decofile_suspended(doc) || want != NULL;
	if (want != NULL) {
		rollback(st, s, doc, want);
	} else if (s->suspended && !was) {
		log_kv(LOG_INFO, "suspended", "ns", s->ns, "name", s->name, NULL);
		fetch_status_syncing(st, s, "False", "Suspended",
		    "No fetch and no publish until resumed");
	} else if (!s->suspended && was) {
		resume(st, s);
	}
	if (s->suspended && s->timer > 0) {
		stage_cancel_timer(st, s->timer);
		s->timer = 0;
	}
	return s->suspended;
}

/*
 * said_suspended - our status fragment says Syncing=False Suspended: the
 * hold was ours when this fetcher (or the lock's last holder) left
 */
static int
said_suspended(const struct src *s)
{
	const char *text = s->pend != NULL ? s->pend : s->frag;
	yajl_val frag, conds;
	int yes = 0;

	if (text == NULL || (frag = json_parse(text, strlen(text), NULL)) == NULL)
		return 0;
	conds = json_get(frag, "conditions", NULL);
	for (size_t i = 0; YAJL_IS_ARRAY(conds) && i < conds->u.array.len; i++) {
		const char *t = json_get_str(conds->u.array.values[i], "type", NULL);
		const char *r = json_get_str(conds->u.array.values[i], "reason", NULL);

		if (t != NULL && r != NULL && strcmp(t, "Syncing") == 0)
			yes = strcmp(r, "Suspended") == 0;
	}
	yajl_tree_free(frag);
	return yes;
}

int
fetch_hold_gained(struct stage *st, struct src *s)
{
	yajl_val doc;
	int held;

	if (s->doc == NULL || (doc = json_parse(s->doc, strlen(s->doc), NULL)) == NULL)
		return 0;
	/* a resume while no fetcher held the lock still brings the newest back */
	s->suspended = said_suspended(s);
	held = fetch_hold_apply(st, s, doc);
	yajl_tree_free(doc);
	return held;
}
