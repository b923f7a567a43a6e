/*
 * publish_file_swap - the file target's half of a background
 * recompression: decofile.bin replaced by a smaller blob of the same
 * content (temp file, fsync, rename, as every publish), timestamp.txt left
 * as it is and no notifier item, so replicas are not told: what they read
 * decodes to the same bytes.  Only while the target still holds that
 * content hash; a newer publish has superseded the item otherwise.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/journal.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/spool.h"
#include "common/stage.h"
#include "daemons/publisher/objtab.h"
#include "daemons/publisher/publish_file.h"
#include "daemons/publisher/publish_file_int.h"
#include "daemons/publisher/publish_record.h"

/* done - close the item with result (a journal line too); DONE or RETRY */
static enum stage_result
done(struct stage *st, const struct journal_item *it, const char *action,
    const char *detail, const char *result)
{
	struct journal *j = stage_journal(st);
	char obj[600];

	journal_obj(obj, sizeof(obj), "decofile", it->ns, it->name);
	if (stage_begin(st) < 0)
		return publish_item_failed(st, it, STAGE_RETRY, "journal busy");
	if (journal_audit(j, STAGE, obj, action, detail) < 0 ||
	    stage_commit(st, it, result) < 0) {
		stage_rollback(st);
		return publish_item_failed(st, it, STAGE_RETRY, journal_error(j));
	}
	return STAGE_DONE;
}

enum stage_result
pft_swap(struct stage *st, void *arg, const struct journal_item *it,
    const struct proto_publish_detail *pd)
{
	struct ft *t = arg;
	struct fobj *o = objtab_get(t->objs, it->ns, it->name);
	struct publish_file_req rq;
	struct publish_file_res res;
	char last[65] = "", err[512], why[1024], detail[4800];
	int64_t ts = 0;
	size_t len;
	char *data;

	if (strcmp(pd->format, "bin") != 0 || !is_sha256_hex(pd->bin))
		return publish_item_failed(st, it, STAGE_FAIL, "a recompress item needs format=bin"
		    " bin=<sha256>");
	if (journal_last_publish(stage_journal(st), it->ns, it->name, TARGET, last, &ts) < 0)
		return publish_item_failed(st, it, STAGE_RETRY, journal_error(stage_journal(st)));
	if (o == NULL || o->gone || strcmp(o->content_hash, it->hash) != 0 ||
	    strcmp(o->format, "bin") != 0 || strcmp(last, it->hash) != 0 || ts <= 0) {
		log_kv(LOG_INFO, "recompressed .bin superseded; not swapped", "ns", it->ns, "name",
		    it->name, "hash", it->hash, NULL);
		return done(st, it, "recompress-superseded", it->hash, "superseded");
	}
	if (strcmp(o->data_hash, pd->bin) == 0)
		return done(st, it, "recompress", "already holds it", "already swapped");
	if ((data = spool_get(stage_spool(st), pd->bin, &len)) == NULL) {
		snprintf(why, sizeof(why), "recompressed blob %s not in the spool: %s", pd->bin,
		    strerror(errno));
		return publish_item_failed(st, it, errno == ENOENT && it->attempts >= 5 ?
		    STAGE_FAIL : STAGE_RETRY, why);
	}
	/* timestamp.txt already holds ts: only the document is written */
	rq = (struct publish_file_req){ t->root, it->ns, it->name, "bin", data, len, ts, 0, 0 };
	if (publish_file(&rq, &res, err, sizeof(err)) < 0) {
		free(data);
		return publish_item_failed(st, it, STAGE_RETRY, err);
	}
	free(data);
	if (res.wrote_doc)
		metrics_published_bytes(TARGET, len);
	/* what the drift watch compares with from now on */
	snprintf(o->data_hash, sizeof(o->data_hash), "%s", pd->bin);
	o->where = res;
	snprintf(detail, sizeof(detail), "hash=%s bin=%s bytes=%zu location=%s", it->hash,
	    pd->bin, len, res.location);
	log_kv(LOG_INFO, "recompressed .bin swapped in; no reload", "ns", it->ns, "name",
	    it->name, "location", res.location, "hash", it->hash, "bin", pd->bin, NULL);
	return done(st, it, "recompress", detail, "swapped");
}
