/*
 * view - what `decoctl status` and `decoctl describe` show of a Decofile,
 * as data: the merged status, a status row and its JSON, and describe's
 * JSON (the resource with its status, replicas, inventory, history).
 * decoctl prints them as tables or JSON; the web stage serves the same
 * JSON under /api/v1, so both speak one shape from one implementation.
 */
#ifndef DECOD_VIEW_H
#define DECOD_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_tree.h>

struct store;
struct journal;
struct jw;
struct store_kv;

/* view_merged_status - the merged status of a resource as a tree ({} if none); caller frees */
yajl_val view_merged_status(struct store *s, const char *plural, const char *ns,
    const char *name);
/*
 * view_with_status - doc's JSON with "status" replaced by the merged one,
 * credentials in any "url" redacted; a new tree (caller frees) or NULL
 */
yajl_val view_with_status(struct store *s, const char *plural, yajl_val doc);
/* view_redact - replace the userinfo of every "url" carrying credentials with "***" */
void view_redact(yajl_val v);
/* view_condition - the condition of type in a status tree, or NULL */
yajl_val view_condition(yajl_val status, const char *type);
/* view_condition_status - "True"/"False"/"Unknown" of that condition, or "-" */
const char *view_condition_status(yajl_val status, const char *type);
/* view_status_message - "reason: message" of the first False of Syncing, Ready, PodsNotified, on one line */
void view_status_message(yajl_val status, char *out, size_t len);
/* view_lock_owner - the instance holding ns/name's job lock, or NULL (caller frees) */
char *view_lock_owner(struct store *s, const char *ns, const char *name);

/*
 * one line of `decoctl status`: pointers into doc and st (valid while
 * they are), but owner which view_row_free frees
 */
struct view_row {
	const char *ns, *name, *source, *commit, *hash, *target, *location;
	const char *ready, *syncing, *pods_notified;
	const char *created_at;	/* metadata.created_at */
	int suspended;
	int64_t timestamp, generation, observed_generation;
	/* from the journal's acks (with one): replicas on the current hash, of all */
	int have_replicas, replicas_confirmed, replicas_total;
	char message[1024];
	char *owner;
	yajl_val st;		/* the merged status (view_row_free frees it) */
};

/*
 * view_row - fill r for Decofile doc (default_target: the setting); with a
 * journal j (may be NULL) also the replicas that confirmed the current
 * content hash, of all that answered
 */
void view_row(struct store *s, struct journal *j, yajl_val doc, const char *default_target,
    struct view_row *r);
void view_row_free(struct view_row *r);

/* the part of a status row the Decofile itself gives */
struct view_doc {
	const char *ns, *name, *source, *target, *created_at;
	int suspended;
	int64_t generation;
};
/* view_doc_of - d from Decofile doc: pointers into doc (or to default_target) */
void view_doc_of(yajl_val doc, const char *default_target, struct view_doc *d);
/*
 * view_row_assemble - fill r as view_row does from what it reads, already
 * at hand (a reader that keeps every row, the web stage): d (r points into
 * its strings: keep them while r is used), the resource's nfrags status
 * fragments (sorted by key, as store_list gives them) and the job lock's
 * owner (NULL: none; copied).  The replicas are counted by view_row_ack.
 */
void view_row_assemble(struct view_row *r, const struct view_doc *d,
    const struct store_kv *frags, size_t nfrags, const char *owner);
/*
 * view_row_ack - count one replica's newest ack in r: confirmed on r's
 * content hash or not (sets have_replicas)
 */
void view_row_ack(struct view_row *r, const char *content_hash, int confirmed);
/*
 * view_row_json - r as one element of `decoctl status -o json`
 * (replicasConfirmed and replicasTotal only when r has them)
 */
void view_row_json(const struct view_row *r, struct jw *w);

/*
 * view_describe_json - `decoctl describe -o json` of Decofile doc:
 * {"decofile": with status, "replicas": [...], "inventory": [...],
 * "events": [newest history_limit]}; j NULL gives empty arrays.  0 or -1.
 */
int view_describe_json(struct store *s, struct journal *j, yajl_val doc, int history_limit,
    struct jw *w);

#endif
