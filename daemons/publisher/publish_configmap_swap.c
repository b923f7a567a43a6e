/*
 * publish_configmap_swap - the configmap target's half of a background
 * recompression: decofile.bin replaced by a smaller blob of the same
 * content in one server-side apply (the whole data map, so the ConfigMap
 * always holds a valid pair), timestamp.txt kept, no notifier item.
 * pcm_job_recorded closes the item when the write lands.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/stage.h"
#include "daemons/publisher/publish_configmap_int.h"
#include "daemons/publisher/publish_record.h"

enum stage_result
pcm_swap(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd)
{
	struct pcm *c = arg;
	struct cmobj *o;
	struct job *j;
	char why[1024], obj[600];

	if (strcmp(pd->format, "bin") != 0 || !is_sha256_hex(pd->bin))
		return publish_item_failed(st, it, STAGE_FAIL, "a recompress item needs format=bin"
		    " bin=<sha256>");
	if (!c->restored)
		return publish_item_failed(st, it, STAGE_RETRY,
		    "waiting for the first list of ConfigMaps and Decofiles");
	o = pcm_obj_find(c, it->ns, it->name);
	if (o != NULL && o->busy)
		return publish_item_failed(st, it, STAGE_RETRY, "a write of this ConfigMap is in flight");
	if (o == NULL || strcmp(o->hash, it->hash) != 0 || strcmp(o->bin, pd->bin) == 0) {
		log_kv(LOG_INFO, o != NULL && strcmp(o->bin, pd->bin) == 0 ?
		    "recompressed .bin already there" : "recompressed .bin superseded; not swapped",
		    "ns", it->ns, "name", it->name, "hash", it->hash, NULL);
		journal_obj(obj, sizeof(obj), "decofile", it->ns, it->name);
		if (stage_begin(st) < 0)
			return publish_item_failed(st, it, STAGE_RETRY, "journal busy");
		if (journal_audit(stage_journal(st), STAGE, obj, "recompress-superseded",
		    it->hash) < 0 || stage_commit(st, it, "superseded") < 0) {
			stage_rollback(st);
			return publish_item_failed(st, it, STAGE_RETRY,
			    journal_error(stage_journal(st)));
		}
		return STAGE_DONE;
	}
	if ((j = pcm_job_new(c, JOB_SWAP, it->ns, it->name, o->hash, pd->bin, o->ts, o->detach,
	    o->owner, why, sizeof(why))) == NULL)
		return publish_item_failed(st, it, STAGE_RETRY, why);
	j->it = *it;
	snprintf(j->commit, sizeof(j->commit), "%s", pd->commit);
	snprintf(j->source, sizeof(j->source), "%s", o->source);
	pcm_job_apply(j);
	return STAGE_ASYNC;
}
