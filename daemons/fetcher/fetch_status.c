/*
 * fetch_status - the fetcher's status fragment in the store (sourceType,
 * githubCommit, observedGeneration and the Syncing condition), written in
 * batches: every change is built on the cached fragment and waits in
 * s->pend; a flush writes the waiting ones FLUSH_BATCH per store_put_many
 * (one etcd txn) at most FLUSH_MS later.  Loop thread only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/kube/kube_front.h"
#include "daemons/fetcher/fetcher.h"

#define FLUSH_MS 100		/* a status change waits at most this long for its batch */
#define FLUSH_ROUNDS 4		/* batches per timer callback: the loop stays responsive */

/* the first pass over 10,000 decofiles costs ~80 round trips, not 20,000 gets and puts */
static void flush_cb(struct stage *st, void *arg);

/* fetch_status_flush - see fetcher.h */
int
fetch_status_flush(struct stage *st, int rounds)
{
	struct fetcher *f = F(st);
	struct src *batch[FLUSH_BATCH];
	char *keys[FLUSH_BATCH];
	const char *vals[FLUSH_BATCH];
	size_t lens[FLUSH_BATCH];
	struct src *s = f->srcs;

	while (f->npend > 0 && rounds-- > 0) {
		size_t n = 0;
		int rc;

		for (; s != NULL && n < FLUSH_BATCH; s = s->next) {
			if (s->pend == NULL)
				continue;
			batch[n] = s;
			keys[n] = key_status("decofiles", s->ns, s->name, STAGE);
			vals[n] = s->pend;
			lens[n] = strlen(s->pend);
			n++;
		}
		if (n == 0) {
			log_kv(LOG_ERROR, "status: waiting count out of step (a bug)", NULL);
			f->npend = 0;
			break;
		}
		/* our own write: the front door's preload is not the store from here on */
		kube_front_preload_drop(f->kube);
		rc = store_put_many_volatile(stage_store(st), (const char *const *)keys, vals,
		    lens, n);
		for (size_t i = 0; i < n; i++)
			free(keys[i]);
		if (rc < 0) {
			log_kv(LOG_WARN, "cannot write status; retrying", "error",
			    store_error(stage_store(st)), NULL);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			free(batch[i]->frag);
			batch[i]->frag = batch[i]->pend;
			batch[i]->pend = NULL;
			batch[i]->frag_state = FRAG_OURS;
		}
		f->npend -= n;
		stage_yield(st);	/* a supervisor gone, between batches */
	}
	return 0;
}

static void
flush_cb(struct stage *st, void *arg)
{
	struct fetcher *f = F(st);
	int rc;

	(void)arg;
	f->flush_timer = 0;
	rc = fetch_status_flush(st, FLUSH_ROUNDS);
	if (f->npend > 0)
		f->flush_timer = stage_add_timer(st, rc < 0 ? 1000 : 0, flush_cb, NULL);
}

/* fetch_status_now - see fetcher.h */
void
fetch_status_now(struct stage *st)
{
	struct fetcher *f = F(st);

	if (f->npend == 0)
		return;
	if (f->flush_timer > 0)
		stage_cancel_timer(st, f->flush_timer);
	f->flush_timer = 0;
	flush_cb(st, NULL);
}

/* fetch_status_unpend - see fetcher.h */
void
fetch_status_unpend(struct fetcher *f, struct src *s)
{
	if (s->pend == NULL)
		return;
	free(s->pend);
	s->pend = NULL;
	f->npend--;
}

/*
 * fetch_status_update - fields (JSON object, or NULL) and, with status non-NULL,
 * the Syncing condition, into s's fragment; the write waits for a batch.
 * 1 queued, 0 nothing changed, -1 error (logged).
 */
int
fetch_status_update(struct stage *st, struct src *s, const char *fields, const char *status,
    const char *reason, const char *msg)
{
	struct fetcher *f = F(st);
	const char *base;
	char *text;
	int changed, moved;

	if (s->tpl)
		return 0;	/* a DecofileTemplate: no status fragment yet, the log says */

	if (s->frag_state == FRAG_UNKNOWN && s->pend == NULL) {
		char *key = key_status("decofiles", s->ns, s->name, STAGE), *v = NULL;
		size_t len;
		int rc = store_get(stage_store(st), key, &v, &len);

		free(key);
		if (rc < 0) {
			log_kv(LOG_WARN, "cannot read status", "ns", s->ns, "name", s->name,
			    "error", store_error(stage_store(st)), NULL);
			return -1;
		}
		free(s->frag);
		s->frag = rc == 0 ? v : NULL;
		s->frag_state = FRAG_OURS;
	}
	base = s->pend != NULL ? s->pend : s->frag;
	text = status_fragment_build(base, base != NULL ? strlen(base) : 0, fields,
	    status != NULL ? "Syncing" : NULL, status, reason, msg, &changed, &moved);
	if (text == NULL)
		return -1;
	if (!changed && (s->pend != NULL || s->frag_state == FRAG_OURS)) {
		free(text);
		return 0;
	}
	/*
	 * Read at start-up, before the lock was ours: written anyway, unless
	 * the store still holds exactly what was read (every fragment after a
	 * restart).  A get is much cheaper than the put, and the put would wake
	 * every status watcher (the front door then compares the CR again).
	 */
	if (!changed && s->frag_state == FRAG_LISTED && s->frag != NULL) {
		char *key = key_status("decofiles", s->ns, s->name, STAGE), *v = NULL;
		size_t len = 0;
		int rc = store_get(stage_store(st), key, &v, &len);

		free(key);
		if (rc == 0 && len == strlen(s->frag) && memcmp(v, s->frag, len) == 0) {
			s->frag_state = FRAG_OURS;
			free(v);
			free(text);
			return 0;
		}
		free(v);
	}
	if (moved && journal_record_condition(stage_journal(st), "decofiles", s->ns, s->name,
	    "Syncing", status, reason, msg) < 0)
		log_kv(LOG_WARN, "journal: cannot record condition", "error",
		    journal_error(stage_journal(st)), NULL);
	if (s->pend == NULL)
		f->npend++;
	free(s->pend);
	s->pend = text;
	if (f->npend >= FLUSH_BATCH) {
		if (f->flush_timer > 0)
			stage_cancel_timer(st, f->flush_timer);
		f->flush_timer = 0;
		flush_cb(st, NULL);
	} else if (f->flush_timer == 0) {
		f->flush_timer = stage_add_timer(st, FLUSH_MS, flush_cb, NULL);
	}
	return 1;
}

/*
 * fetch_status_load - every "fetcher" fragment under the status prefix at
 * once, so the first pass builds on what is there without a get each:
 * from the front door's preload (what its watch of every stage's
 * fragments read at its opening, for its own first comparison of each CR),
 * or, without a cluster, from one list
 */
void
fetch_status_load(struct stage *st)
{
	struct fetcher *f = F(st);
	char *prefix = xasprintf("%s/status/decofiles/", keys_prefix());
	char ns[254], name[254], stage[64];
	const struct store_list *pre = kube_front_preloaded(f->kube);
	struct store_list l;
	size_t n = 0, plen = strlen(prefix);
	char c[32];

	memset(&l, 0, sizeof(l));
	if (pre == NULL && store_list(stage_store(st), prefix, &l) < 0) {
		log_kv(LOG_WARN, "cannot list status; reading it one by one", "error",
		    store_error(stage_store(st)), NULL);
		free(prefix);
		return;
	}
	if (pre == NULL)
		pre = &l;
	for (struct src *s = f->srcs; s != NULL; s = s->next) {
		if (s->frag_state == FRAG_UNKNOWN && s->pend == NULL)
			s->frag_state = FRAG_LISTED;	/* none: known absent */
	}
	for (size_t i = 0; i < pre->n; i++) {
		const struct store_kv *kv = &pre->kvs[i];
		struct src *s;

		if (strncmp(kv->key, prefix, plen) != 0 ||
		    sscanf(kv->key + plen, "%253[^/]/%253[^/]/%63s", ns, name, stage) != 3 ||
		    strcmp(stage, STAGE) != 0 ||
		    (s = fetcher_src_find(f, ns, name)) == NULL || s->frag_state != FRAG_LISTED)
			continue;
		free(s->frag);
		s->frag = xstrndup(kv->value, kv->vlen);
		n++;
	}
	snprintf(c, sizeof(c), "%zu", n);
	log_kv(LOG_INFO, "status fragments read", "fetcher", c, NULL);
	store_list_free(&l);
	free(prefix);
}

/* fetch_status_syncing - the Syncing condition; nothing when it is what we set last */
void
fetch_status_syncing(struct stage *st, struct src *s, const char *status, const char *reason,
    const char *msg)
{
	char cur[sizeof(s->last_sync)];

	snprintf(cur, sizeof(cur), "%s|%s|%s", status, reason, msg);
	if (strcmp(cur, s->last_sync) == 0)
		return;
	if (fetch_status_update(st, s, NULL, status, reason, msg) >= 0)
		memcpy(s->last_sync, cur, sizeof(cur));
}

/* failures_text - status.fetchFailures as a JSON member (null: none; static) */
static const char *
failures_text(const struct src *s)
{
	static char t[48];

	if (s->failures > 0)
		snprintf(t, sizeof(t), "\"fetchFailures\":%d", s->failures);
	else
		snprintf(t, sizeof(t), "\"fetchFailures\":null");
	return t;
}

/* fetch_status_failures - see fetcher.h */
void
fetch_status_failures(struct stage *st, struct src *s)
{
	char fields[64];

	if (s->failures == s->failures_said)
		return;
	snprintf(fields, sizeof(fields), "{%s}", failures_text(s));
	if (fetch_status_update(st, s, fields, NULL, NULL, NULL) >= 0)
		s->failures_said = s->failures;
}

/* fetch_status_synced - see fetcher.h */
void
fetch_status_synced(struct stage *st, struct src *s, int64_t req)
{
	char fields[64];

	if (req <= s->sync_done)
		return;
	snprintf(fields, sizeof(fields), "{\"lastHandledSyncAt\":%lld}", (long long)req);
	if (fetch_status_update(st, s, fields, NULL, NULL, NULL) >= 0)
		s->sync_done = req;
}

/* fields_text - the fields fetch_status_fields writes, into b */
static void
fields_text(struct buf *b, const struct src *s, const char *commit, int64_t generation)
{
	struct jw w;

	jw_init(&w, b);
	jw_obj(&w);
	jw_key(&w, "sourceType");
	jw_str(&w, s->source);
	if (commit != NULL && commit[0] != '\0') {
		jw_key(&w, "githubCommit");
		jw_str(&w, commit);
	}
	jw_key(&w, "observedGeneration");
	jw_int(&w, generation);
	jw_end_obj(&w);
}

/* fetch_status_fields - see fetcher.h */
void
fetch_status_fields(struct stage *st, struct src *s, const char *commit, int64_t generation)
{
	struct buf b;

	buf_init(&b);
	fields_text(&b, s, commit, generation);
	if (strcmp(b.data, s->last_status) != 0 &&
	    fetch_status_update(st, s, b.data, NULL, NULL, NULL) >= 0)
		snprintf(s->last_status, sizeof(s->last_status), "%s", b.data);
	buf_free(&b);
}

/* fetch_status_fetched - see fetcher.h */
void
fetch_status_fetched(struct stage *st, struct src *s, const char *commit, int64_t generation)
{
	static const char msg[] = "Fetched from the source";
	char sync[sizeof(s->last_sync)];
	struct buf b, all;

	snprintf(sync, sizeof(sync), "True|Fetched|%s", msg);
	buf_init(&b);
	fields_text(&b, s, commit, generation);
	if (strcmp(b.data, s->last_status) == 0 && strcmp(sync, s->last_sync) == 0 &&
	    s->failures == s->failures_said) {
		buf_free(&b);
		return;
	}
	/* the fields with fetchFailures, and the condition: one build, one write */
	buf_init(&all);
	buf_add(&all, b.data, b.len - 1);
	buf_printf(&all, ",%s}", failures_text(s));
	if (fetch_status_update(st, s, all.data, "True", "Fetched", msg) >= 0) {
		snprintf(s->last_status, sizeof(s->last_status), "%s", b.data);
		memcpy(s->last_sync, sync, sizeof(sync));
		s->failures_said = s->failures;
	}
	buf_free(&all);
	buf_free(&b);
}

