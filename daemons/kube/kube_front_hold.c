/*
 * kube_front_hold - when a Decofile's merged status is written to its CR:
 * once per change, when the change has passed the last stage that runs
 * here (the `stages` setting), at once when a stage says it failed, and
 * never while the journal says an earlier stage still carries the change
 * (the CR would pair the new commit with the older verdict).  Also the
 * count of the front door's status applies, by why each was made.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/stage.h"
#include "daemons/kube/kube_front.h"
#include "daemons/kube/kube_front_int.h"

#define M_APPLIES "decod_kube_status_applies_total"

/* the stages a Decofile's change passes, in pipeline order */
static const char *const pipe_order[] = { "fetcher", "renderer", "publisher", "notifier" };
#define NPIPE (sizeof(pipe_order) / sizeof(pipe_order[0]))

/* cond_status - the status of condition type in merged's conditions; NULL: none */
static const char *
cond_status(yajl_val conds, const char *type)
{
	if (conds == NULL || !YAJL_IS_ARRAY(conds))
		return NULL;
	for (size_t i = 0; i < conds->u.array.len; i++) {
		const char *t = json_get_str(conds->u.array.values[i], "type", NULL);
		const char *st = json_get_str(conds->u.array.values[i], "status", NULL);

		if (t != NULL && strcmp(t, type) == 0)
			return st != NULL ? st : "";
	}
	return NULL;
}

int
kube_front_failing(yajl_val merged)
{
	yajl_val conds = merged != NULL ? json_get(merged, "conditions", NULL) : NULL;

	if (conds == NULL || !YAJL_IS_ARRAY(conds))
		return 0;
	for (size_t i = 0; i < conds->u.array.len; i++) {
		const char *t = json_get_str(conds->u.array.values[i], "type", NULL);
		const char *st = json_get_str(conds->u.array.values[i], "status", NULL);

		/* Drifted=False and TemplateUpdateAvailable=False are the good news */
		if (t != NULL && st != NULL && strcmp(st, "False") == 0 &&
		    strcmp(t, "Drifted") != 0 && strcmp(t, "TemplateUpdateAvailable") != 0)
			return 1;
	}
	return 0;
}

int
kube_front_settling(yajl_val merged, int publisher, int notifier)
{
	yajl_val conds = merged != NULL ? json_get(merged, "conditions", NULL) : NULL;
	const char *ready, *pods, *hash, *nhash;

	if (conds == NULL || !YAJL_IS_ARRAY(conds) || kube_front_failing(merged))
		return 0;	/* nothing said yet; or a failure (or suspended): shown now */
	if (!publisher)
		return 0;	/* no publisher here: nothing to wait for */
	if ((ready = cond_status(conds, "Ready")) == NULL || strcmp(ready, "Unknown") == 0)
		return 1;	/* not yet published */
	if (!notifier)
		return 0;
	hash = json_get_str(merged, "contentHash", NULL);
	nhash = json_get_str(merged, "notifiedHash", NULL);
	pods = cond_status(conds, "PodsNotified");
	if (strcmp(ready, "True") == 0 && hash != NULL &&
	    (pods == NULL || strcmp(pods, "Unknown") == 0 || nhash == NULL ||
	    strcmp(hash, nhash) != 0))
		return 1;	/* published, not yet rolled out */
	return 0;
}

/*
 * pipeline - which of the pipeline's stages `stages` names (read on each
 * call: a SIGHUP that changes it applies at once); a bit per pipe_order
 */
static unsigned
pipeline(const struct kube_front *fk)
{
	const char *v = conf_get(stage_conf(fk->st), "stages");
	unsigned bits = 0;

	while (*v != '\0') {
		size_t n = strcspn(v, " \t,");

		for (size_t i = 0; i < NPIPE; i++)
			if (n == strlen(pipe_order[i]) && strncmp(v, pipe_order[i], n) == 0)
				bits |= 1u << i;
		v += n;
		v += strspn(v, " \t,");
	}
	return bits;
}

/*
 * busy - the journal holds an item of ns/name still to be done by one of
 * the stages in bits: the change has not passed that stage yet (*by: its
 * name).  An unreadable journal counts as busy (the hold's cap still ends it).
 */
static int
busy(const struct kube_front *fk, unsigned bits, const char *ns, const char *name,
    const char **by)
{
	struct journal *j = stage_journal(fk->st);

	for (size_t i = 0; i < NPIPE; i++)
		if ((bits & (1u << i)) != 0 && journal_pending_for(j, pipe_order[i], ns, name) != 0) {
			*by = pipe_order[i];
			return 1;
		}
	return 0;
}

/*
 * last_busy - the last stage (pipe_order[i]) has an item of ns/name other
 * than the one its word in merged speaks of: the publisher's items carry
 * the content hash it reports as contentHash, the notifier's the one it
 * reports as notifiedHash.  (The stage writes its word while its item is
 * still pending: that item is not a change still to pass.)
 */
static int
last_busy(const struct kube_front *fk, size_t i, const char *ns, const char *name,
    yajl_val merged)
{
	const char *field = i == 2 ? "contentHash" : i == 3 ? "notifiedHash" : NULL;
	const char *hash = field != NULL ? json_get_str(merged, field, NULL) : NULL;

	return journal_pending_unlike(stage_journal(fk->st), pipe_order[i], ns, name, hash) != 0;
}

/*
 * word_behind - the publisher finished an item of ns/name (the journal
 * says so first) whose content hash its word in merged does not carry
 * yet: its status write follows its commit, and the older Ready=True
 * beside the new fetch would be written as if settled
 */
static int
word_behind(const struct kube_front *fk, const char *ns, const char *name, yajl_val merged)
{
	const char *hash = json_get_str(merged, "contentHash", NULL);
	struct journal_item it;

	if (journal_last_item(stage_journal(fk->st), "publisher", "decofile", ns, name, &it) != 0)
		return 0;
	return it.state == ITEM_DONE && it.hash[0] != '\0' &&
	    (hash == NULL || strcmp(it.hash, hash) != 0);
}

enum kf_why
kf_hold(const struct kube_front *fk, const char *ns, const char *name, yajl_val merged,
    int expired)
{
	unsigned bits = pipeline(fk), last = 0;
	size_t lasti = 0;
	const char *by = NULL;
	enum kf_why why = KF_SETTLED;

	if (kube_front_failing(merged))
		return KF_FAILURE;
	for (size_t i = 0; i < NPIPE; i++)
		if ((bits & (1u << i)) != 0) {
			last = 1u << i;
			lasti = i;
		}
	/*
	 * a stage still has the change: the CR keeps its last whole change
	 * (the new commit is not shown beside the older verdict)
	 */
	if (busy(fk, bits & ~last, ns, name, &by))
		why = KF_HELD;
	else if (last != 0 && last_busy(fk, lasti, ns, name, merged)) {
		by = "the last stage's next change";
		why = KF_HELD;
	} else if (kube_front_settling(merged, (bits & (1u << 2)) != 0,
	    (bits & (1u << 3)) != 0)) {
		/* the last stage's word on it is not in yet (a rollout under way) */
		by = "the last stage's word";
		why = expired ? KF_EXPIRED : KF_HELD;
	} else if (lasti == 2 && word_behind(fk, ns, name, merged)) {
		by = "the publisher's word, behind its journal";
		why = expired ? KF_EXPIRED : KF_HELD;
	}
	/* what a hold waits for, so a log at debug shows why a CR was not written */
	if (why == KF_HELD)
		log_kv(LOG_DEBUG, "status held", "ns", ns, "name", name, "until", by, NULL);
	return why;
}

int
kf_pending(const struct kube_front *fk, const char *ns, const char *name)
{
	const char *by;

	return busy(fk, (1u << NPIPE) - 1, ns, name, &by);
}

static const char *const why_name[] = {
	[KF_HELD] = "held", [KF_SETTLED] = "settled", [KF_FAILURE] = "failure",
	[KF_EXPIRED] = "hold_expired", [KF_UNHELD] = "template", [KF_RECHECK] = "recheck",
	[KF_ADOPTED] = "adopted",
};

void
kf_count_apply(struct kube_front *fk, enum kf_why why, const char *what, const char *detail)
{
	static int defined;
	char l[64];

	if (!defined) {
		metrics_define(metrics_proc(), M_APPLIES, METRIC_COUNTER, "Status applies of "
		    "the CRs by the Kubernetes front door, by why each was made.");
		defined = 1;
	}
	fk->applies[why]++;
	metrics_add(metrics_proc(), M_APPLIES, metrics_labels(l, sizeof(l), "reason",
	    why_name[why], NULL), 1);
	log_kv(LOG_DEBUG, "status apply", "object", what, "reason", why_name[why], "detail",
	    detail, NULL);
}

void
kf_applies_text(const struct kube_front *fk, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = KF_SETTLED; i < KF_NWHY && o < len; i++) {
		int n = snprintf(out + o, len - o, "%s%s=%llu", o > 0 ? "," : "", why_name[i],
		    (unsigned long long)fk->applies[i]);

		if (n < 0)
			break;
		o += (size_t)n;
	}
}
