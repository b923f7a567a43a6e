/*
 * journal - the sqlite database every stage on a host shares: work items
 * and their state, fetched commits, renders, publishes, the inventory of
 * published objects, condition transitions, per-replica confirmations,
 * drift repairs and an append-only audit log.  WAL mode, a busy timeout,
 * schema version in PRAGMA user_version with forward migrations.
 *
 * The journal is the truth and nng is the doorbell: a stage records its
 * result, the item for the next stage and "done" for its own item in one
 * transaction (journal_begin ... journal_commit), then rings the next
 * stage.  A stage that starts claims every pending item addressed to it.
 *
 * The reads that call fn per row (journal_*_each, _users, _waiting,
 * _active, _sites ...) hold their read open while fn runs.  fn must not
 * begin a write: in WAL mode a write begun inside an open read fails at
 * once (SQLITE_BUSY_SNAPSHOT, no busy wait) when another process has
 * committed since the read began.  Gather the rows, then write; or take
 * the write lock (journal_begin) before the read.
 *
 * Secrets never go in here: callers pass no tokens or passwords.
 */
#ifndef DECOD_JOURNAL_H
#define DECOD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

struct journal;

#define JOURNAL_SCHEMA_VERSION 8

enum item_state { ITEM_PENDING, ITEM_DONE, ITEM_FAILED, ITEM_SUPERSEDED };

struct journal_item {
	int64_t id;
	char stage[32];		/* addressed to */
	char kind[32];		/* "decofile", "template", "test", ... */
	char ns[254];
	char name[254];
	char hash[65];		/* what it carries (tree or content hash), may be "" */
	char detail[512];	/* small free text: commit, source, reason */
	int attempts;
	int64_t not_before;	/* unix ms: not to be tried before */
	int64_t created;	/* unix ms */
	enum item_state state;
};

/* journal_open - open (create, migrate) path; NULL with a message in err */
struct journal *journal_open(const char *path, char *err, size_t errlen);
void journal_close(struct journal *j);
/* journal_error - the last failure's message (static to j) */
const char *journal_error(struct journal *j);

/*
 * transactions: BEGIN IMMEDIATE / COMMIT / ROLLBACK; 0 or -1.  They nest:
 * a begin inside an open transaction is a savepoint, its commit releases
 * it into the enclosing one and its rollback undoes only its own work.
 */
int journal_begin(struct journal *j);
int journal_commit(struct journal *j);
void journal_rollback(struct journal *j);

/*
 * A batch's transaction (the stage skeleton's, one per batch of items):
 * every begin/commit/rollback inside it nests, and no rollback of a
 * caller's reaches it; only journal_batch_commit or _rollback end it.
 */
int journal_batch_begin(struct journal *j);
int journal_batch_commit(struct journal *j);
void journal_batch_rollback(struct journal *j);

/*
 * Savepoints: a nested unit inside an open transaction, so that one part of
 * a batch can fail and leave nothing while the rest commits.
 * journal_savepoint opens one named name (a-z and _ only); release keeps
 * its work in the enclosing transaction; rollback undoes it and releases
 * it.  0 or -1 with journal_error set (rollback cannot fail usefully).
 */
int journal_savepoint(struct journal *j, const char *name);
int journal_savepoint_release(struct journal *j, const char *name);
void journal_savepoint_rollback(struct journal *j, const char *name);

/*
 * journal_item_add - a new pending item for stage.  Older pending items of
 * the same stage, kind, ns and name are marked superseded (the newest wins:
 * reconciliation is level-triggered).  Returns the new id, or -1.
 */
int64_t journal_item_add(struct journal *j, const char *stage, const char *kind,
    const char *ns, const char *name, const char *hash, const char *detail);
/* journal_item_done - mark done with a short result text; 0 or -1 */
int journal_item_done(struct journal *j, int64_t id, const char *result);
/* journal_item_retry - count an attempt, not before now+delay_ms; 0 or -1 */
int journal_item_retry(struct journal *j, int64_t id, int64_t delay_ms, const char *error);
/* journal_item_fail - park it (no more tries) with the error; 0 or -1 */
int journal_item_fail(struct journal *j, int64_t id, const char *error);
/* journal_item_get - 0 found, 1 absent, -1 error */
int journal_item_get(struct journal *j, int64_t id, struct journal_item *it);
/*
 * journal_items_due - pending items for stage whose not_before has passed,
 * oldest first, except that kind "rollout" (template work a rollout wave
 * enqueued) comes after every other kind, at most max; *items is malloc'd (caller frees).  Returns
 * the count, or -1.  *next_due (if non-NULL) gets the earliest not_before
 * of the pending items not yet due (0: none).
 */
int journal_items_due(struct journal *j, const char *stage, size_t max,
    struct journal_item **items, int64_t *next_due);
/*
 * journal_items_due_skip - the same over the first max + nskip due rows,
 * leaving out the ids in skip[0..nskip) (a stage's items in flight) without
 * reading them whole: *items (malloc'd) holds *nitems of them.  Returns the
 * rows walked (skipped ones included), or -1.
 */
int journal_items_due_skip(struct journal *j, const char *stage, size_t max,
    const int64_t *skip, size_t nskip, struct journal_item **items, size_t *nitems,
    int64_t *next_due);

/* records: each 0 or -1; called inside or outside a transaction */
int journal_record_fetch(struct journal *j, const char *ns, const char *name,
    const char *source, const char *commit, const char *tree_hash);
int journal_record_render(struct journal *j, const char *ns, const char *name,
    const char *content_hash, const char *format, size_t size, const char *tree_hash,
    const char *bin_hash);
int journal_record_publish(struct journal *j, const char *ns, const char *name,
    const char *target, const char *location, const char *content_hash, int64_t timestamp);
int journal_record_condition(struct journal *j, const char *kind, const char *ns,
    const char *name, const char *type, const char *status, const char *reason,
    const char *message);
int journal_record_ack(struct journal *j, const char *ns, const char *name,
    const char *replica, const char *content_hash, int64_t timestamp,
    const char *result);
int journal_record_drift(struct journal *j, const char *ns, const char *name,
    const char *location, const char *detail);
/*
 * journal_inventory_put - record (or update) one object decod manages at
 * location; its deletion policy is kept (a new row starts unknown, '').
 */
int journal_inventory_put(struct journal *j, const char *ns, const char *name,
    const char *target, const char *location, const char *content_hash);
int journal_inventory_del(struct journal *j, const char *ns, const char *name,
    const char *location);
int journal_audit(struct journal *j, const char *stage, const char *object,
    const char *action, const char *detail);
/*
 * journal_obj - the one spelling of a journal object, "<kind>/<ns>/<name>"
 * with kind singular and lower case ("decofile", "tenant"; a plural such as
 * "decofiles" is taken as its singular).  Every writer of an audit row and
 * every reader that filters them builds the object here.  Returns out.
 */
#define JOURNAL_OBJ_MAX 600
char *journal_obj(char *out, size_t len, const char *kind, const char *ns, const char *name);

/*
 * journal_last_publish - the newest publish of ns/name to target: fills
 * hash (65 bytes) and *timestamp.  0 found, 1 none, -1 error.
 */
int journal_last_publish(struct journal *j, const char *ns, const char *name,
    const char *target, char *hash, int64_t *timestamp);
/*
 * journal_last_render - newest render: hash (65), format (8 bytes) and
 * bin_hash (65, may be NULL); 0, 1 none, -1.
 */
int journal_last_render(struct journal *j, const char *ns, const char *name,
    char *hash, char *format, char *bin_hash);

/*
 * journal_referenced - call fn for every hash the journal still refers to
 * (items not done, the latest fetch/render/publish of each object); used by
 * spool GC.  0 or -1.
 */
int journal_referenced(struct journal *j, void (*fn)(void *arg, const char *hash), void *arg);

/*
 * journal_detail_get - an item's detail is "key=value key=value ..." (values
 * without spaces); copy the value of key into out.  0 found, -1 absent.
 */
int journal_detail_get(const char *detail, const char *key, char *out, size_t outlen);

/* journal_prune - delete history older than age_ms (never pending items) */
int journal_prune(struct journal *j, int64_t age_ms);

/* ---- reads for stages and decoctl (journal_query.c) ---- */

/*
 * journal_last_item - the newest item (any state) for stage, kind, ns and
 * name into *it.  0 found, 1 none, -1 error.
 */
int journal_last_item(struct journal *j, const char *stage, const char *kind,
    const char *ns, const char *name, struct journal_item *it);
/*
 * journal_last_items - journal_last_item of every ns/name at once: fn for
 * the newest item of stage and kind of each (one read for a start-up's
 * thousands, where a query each cost more than the answer).  The count,
 * or -1.
 */
int journal_last_items(struct journal *j, const char *stage, const char *kind,
    void (*fn)(void *arg, const struct journal_item *it), void *arg);
/*
 * journal_pending_for - whether an item for ns/name is still pending,
 * addressed to stage (NULL: to any stage).  1 yes, 0 no, -1 error.
 */
int journal_pending_for(struct journal *j, const char *stage, const char *ns,
    const char *name);
/*
 * journal_pending_unlike - whether an item for ns/name addressed to stage
 * is still pending with a hash other than hash (NULL or "": any item but
 * one without a hash): the stage has a change to pass beyond the one of
 * that hash.  1 yes, 0 no, -1 error.
 */
int journal_pending_unlike(struct journal *j, const char *stage, const char *ns,
    const char *name, const char *hash);
/*
 * journal_last_fetch - the tree hash (65 bytes) of the newest fetch of
 * ns/name.  0 found, 1 none, -1 error.
 */
int journal_last_fetch(struct journal *j, const char *ns, const char *name, char *tree_hash);
/*
 * journal_render_bin - the bin blob hash (65 bytes) of the newest render of
 * ns/name with content hash content_hash.  0 found, 1 none, -1 error.
 */
int journal_render_bin(struct journal *j, const char *ns, const char *name,
    const char *content_hash, char *bin_hash);

/* one inventory row, as journal_inventory_each hands it out (valid during the call) */
struct journal_inventory_row {
	const char *ns, *name, *target, *location, *content_hash;
	const char *deletion;	/* "delete", "detach" or "" (unknown) */
	const char *updated_at;	/* RFC 3339 */
};
/*
 * journal_inventory_each - fn for every inventory row with the given target
 * (NULL: any) and, if ns and name are non-NULL, of that object; ordered by
 * ns, name, location.  The count, or -1.
 */
int journal_inventory_each(struct journal *j, const char *target, const char *ns,
    const char *name, void (*fn)(void *arg, const struct journal_inventory_row *r),
    void *arg);
/*
 * journal_inventory_set_deletion - the deletion policy ("delete" or
 * "detach") of every inventory row of ns/name.  0 or -1.
 */
int journal_inventory_set_deletion(struct journal *j, const char *ns, const char *name,
    const char *policy);
/*
 * journal_inventory_deletion - the recorded deletion policy of ns/name:
 * 1 detach, 0 delete, -1 unknown (no row, no policy recorded, or error).
 */
int journal_inventory_deletion(struct journal *j, const char *ns, const char *name);

/*
 * journal_acks_count - replicas of ns/name that confirmed content hash
 * (*done), and replicas heard from for that hash or within a day (*total).
 * A confirmation is a result of ok, confirmed or 2xx.  0 or -1.
 */
int journal_acks_count(struct journal *j, const char *ns, const char *name,
    const char *content_hash, int *done, int *total);
/* the newest acknowledgement of one replica */
struct journal_ack_row {
	const char *replica, *content_hash, *result, *at;
	int64_t timestamp;
	int confirmed;		/* result is ok, confirmed or 2xx */
};
/*
 * journal_acks_each - fn for the newest ack of each replica of ns/name,
 * ordered by replica.  The count, or -1.
 */
int journal_acks_each(struct journal *j, const char *ns, const char *name,
    void (*fn)(void *arg, const struct journal_ack_row *r), void *arg);
/*
 * journal_acks_all - the same for every decofile in one query (a status
 * page of thousands), ordered by ns, name and replica.  The count, or -1.
 */
int journal_acks_all(struct journal *j,
    void (*fn)(void *arg, const char *ns, const char *name, const struct journal_ack_row *r),
    void *arg);

/*
 * journal_acks_since - fn for each decofile with an ack newer than
 * *last_id (ack ids only grow), and *last_id moved to the newest; with fn
 * NULL only *last_id, set to the newest ack's id (0: none).  A reader that
 * keeps the counts of journal_acks_all current asks this on a timer.  The
 * count of decofiles, or -1.
 */
int journal_acks_since(struct journal *j, int64_t *last_id,
    void (*fn)(void *arg, const char *ns, const char *name), void *arg);

/*
 * journal_history_each - the newest limit events of decofile ns/name
 * (fetches, renders, publishes, condition changes, confirmations summed
 * per content hash, drift), oldest first: fn gets the time, the event name
 * and a one-line detail.  The count, or -1.
 */
int journal_history_each(struct journal *j, const char *ns, const char *name, int limit,
    void (*fn)(void *arg, const char *at, const char *event, const char *detail),
    void *arg);

/* one audit log row */
struct journal_audit_row {
	const char *at, *stage, *object, *action, *detail;
};
/*
 * journal_audit_each - the newest limit audit rows at or after since (an
 * RFC 3339 prefix; "" for all) whose object is object (a journal_obj
 * spelling; NULL: any object), oldest first.  The count, or -1.
 */
int journal_audit_each(struct journal *j, const char *since, const char *object, int limit,
    void (*fn)(void *arg, const struct journal_audit_row *r), void *arg);

/* ---- versions a rollback can go back to (journal_versions.c) ---- */

/* one rendered version of a decofile: the newest render of a content hash */
struct journal_version {
	char at[40];		/* RFC 3339, of that render */
	char content_hash[65], format[8], bin_hash[65], tree_hash[65];
	char commit[200];	/* of the fetch its tree came from, "" unknown */
	int64_t size;
	int index;		/* 0 the newest, 1 the one before, ... */
};
/*
 * journal_versions_each - the newest limit versions of ns/name, newest
 * first, one per content hash (rendered again later counts as newer).
 * The count, or -1.
 */
int journal_versions_each(struct journal *j, const char *ns, const char *name, int limit,
    void (*fn)(void *arg, const struct journal_version *v), void *arg);
/*
 * journal_version_find - among the newest limit versions of ns/name, the
 * one whose content hash starts with prefix, or (prefix NULL) the one at
 * index steps, into *v.  0 found, 1 none, 2 prefix ambiguous, -1 error.
 */
int journal_version_find(struct journal *j, const char *ns, const char *name,
    const char *prefix, int steps, int limit, struct journal_version *v);
/*
 * journal_versions_referenced - fn for the content and bin hashes of the
 * newest keep versions of every decofile (the spool keeps them).  0 or -1.
 */
int journal_versions_referenced(struct journal *j, int keep,
    void (*fn)(void *arg, const char *hash), void *arg);

/* ---- DecofileTemplate generations (journal_templates.c) ---- */

/* one template a decofile's render used: the generation and its tree */
struct journal_template_use {
	char template[254];
	int64_t generation;
	char tree_hash[65];
};

/*
 * journal_template_record - the fetcher's record of template ns/name's
 * tree at generation (commit may be "").  1 recorded, 0 the newest record
 * already says the same generation and tree, -1 error.
 */
int journal_template_record(struct journal *j, const char *ns, const char *name,
    int64_t generation, const char *commit, const char *tree_hash);
/*
 * journal_template_newest - the newest generation and tree (65 bytes) of
 * template ns/name.  0 found, 1 never fetched, -1 error.
 */
int journal_template_newest(struct journal *j, const char *ns, const char *name,
    int64_t *generation, char *tree_hash);
/*
 * journal_template_uses_set - what the valid render of decofile ns/name
 * used, replacing what it recorded before (n may be 0).  0 or -1.
 */
int journal_template_uses_set(struct journal *j, const char *ns, const char *name,
    const struct journal_template_use *u, size_t n);
/*
 * journal_template_used - the generation and tree decofile ns/name's last
 * valid render used of template tpl.  0 found, 1 not used, -1 error.
 */
int journal_template_used(struct journal *j, const char *ns, const char *name,
    const char *tpl, struct journal_template_use *u);
/*
 * journal_template_users - fn for each decofile in ns whose last valid
 * render used template tpl (its name and the generation it uses), in name
 * order.  The count, or -1.
 */
int journal_template_users(struct journal *j, const char *ns, const char *tpl,
    void (*fn)(void *arg, const char *name, int64_t generation), void *arg);
/*
 * journal_template_waiting - fn for each decofile whose newest recorded
 * TemplateUpdateAvailable transition is WaitingForWindow or
 * PinnedTreeMissing (a Window site's timer is to be armed again after a
 * restart; a held Manual site is only decided again).  The count, or -1.
 */
int journal_template_waiting(struct journal *j,
    void (*fn)(void *arg, const char *ns, const char *name), void *arg);

/* ---- DecofileTemplate rollouts in waves (journal_rollout.c) ---- */

/*
 * A rollout: one template generation (tree) on its way to the Auto sites
 * that used an older one, wave by wave.  Wave 0 is the canary (possibly
 * empty), then waves 1..waves.  state: running, halted, done, rolledback,
 * superseded (a newer generation started its own).
 */
struct journal_rollout {
	int64_t id;
	char ns[254], name[254];
	int64_t generation, prev_generation;
	char tree_hash[65], prev_hash[65];
	int waves, wave;
	int64_t pause_ms;
	int max_failed, max_failed_pct;	/* sites, or a percent of the wave when pct */
	char state[16];
	char reason[1024];
	int64_t confirmed_ms;	/* when the current wave was all confirmed, else 0 */
	int64_t wave_timeout_ms;	/* a rendered site's verdict waited for at most, 0 ever */
};

/*
 * wave of a site whose policy is Manual or Window: woken once (so it says
 * what waits), never gated by the waves; and the "any wave" of a query
 */
#define JOURNAL_ROLLOUT_OWNER (-1)
#define JOURNAL_ROLLOUT_ANY (-1000)

/* one site of a rollout: its wave and how far the new generation got */
struct journal_rollout_site {
	int64_t rollout;
	char site[254];
	int wave;
	char state[16];	/* waiting queued rendered confirmed failed revert reverting reverted */
	int64_t mark;	/* the newest item id before its render: its notify verdict comes later */
	char reason[512];
	int64_t queued_ms;
	int64_t rendered_ms;	/* when it last went to "rendered" (unix ms), else 0 */
};

/*
 * journal_rollout_start - record rollout r (id, state, wave ignored) with
 * its sites, superseding the template's running or halted one.  The new
 * id, or -1.
 */
int64_t journal_rollout_start(struct journal *j, const struct journal_rollout *r,
    const struct journal_rollout_site *sites, size_t n);
/* journal_rollout_newest - template ns/tpl's newest rollout: 0, 1 none, -1 */
int journal_rollout_newest(struct journal *j, const char *ns, const char *tpl,
    struct journal_rollout *r);
/* journal_rollout_active - fn for each running or rolled-back rollout; count or -1 */
int journal_rollout_active(struct journal *j,
    void (*fn)(void *arg, const struct journal_rollout *r), void *arg);
/* journal_rollout_update - store r's wave, state, reason, confirmed_ms; 0 or -1 */
int journal_rollout_update(struct journal *j, const struct journal_rollout *r);
/*
 * journal_rollout_sites - fn for the sites of rollout id in wave (or
 * JOURNAL_ROLLOUT_ANY)
 * and, when state is not NULL, in that state; in wave then name order;
 * at most limit (0: all).  The count, or -1.
 */
int journal_rollout_sites(struct journal *j, int64_t id, int wave, const char *state,
    int limit, void (*fn)(void *arg, const struct journal_rollout_site *s), void *arg);
/* journal_rollout_site_get - 0 found, 1 not a site of rollout id, -1 */
int journal_rollout_site_get(struct journal *j, int64_t id, const char *site,
    struct journal_rollout_site *s);
/*
 * journal_rollout_site_set - state, mark (< 0: kept), reason (NULL: kept);
 * "queued" and "reverting" stamp queued_ms, "rendered" rendered_ms.  0 or -1
 */
int journal_rollout_site_set(struct journal *j, int64_t id, const char *site,
    const char *state, int64_t mark, const char *reason);
/*
 * journal_rollout_rollback - stop template ns/tpl's newest rollout and
 * mark for revert every site whose last render used its tree (whatever
 * its policy).  The number of sites to revert, -1 error, -2 nothing to
 * roll back (why says so).
 */
int journal_rollout_rollback(struct journal *j, const char *ns, const char *tpl,
    char *why, size_t whylen);
/*
 * journal_rollout_settle - a "rollout" item for decofile ns/site was
 * handled: its rows still queued in running rollouts are confirmed
 * (nothing to adopt: it no longer lists the template, or was deleted).
 */
int journal_rollout_settle(struct journal *j, const char *ns, const char *site);
/*
 * journal_template_before - the newest tree of template ns/tpl other than
 * hash (its generation and tree into prev, 65 bytes; "" and 0 if none).
 * 0 or -1.
 */
int journal_template_before(struct journal *j, const char *ns, const char *tpl,
    const char *hash, int64_t *generation, char *prev);
/* journal_items_pending - pending items of kind for stage; the count or -1 */
int journal_items_pending(struct journal *j, const char *stage, const char *kind);
/* journal_items_mark - the newest item's id (0: none); -1 error */
int64_t journal_items_mark(struct journal *j);
/*
 * journal_notify_after - the notifier's newest finished item for decofile
 * ns/name added after item id mark: its result ("confirmed=.. failed=..
 * gone=.. missing_token=..", "failed: <error>" when it failed).  A silent
 * decofile or one without replicas is done with no failure.  0 found, 1
 * none yet, -1 error.
 */
int journal_notify_after(struct journal *j, const char *ns, const char *name,
    int64_t mark, char *detail, size_t len);

#endif
