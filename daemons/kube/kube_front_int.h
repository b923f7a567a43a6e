/*
 * kube_front_int.h - what the front door's two halves share: kube_front.c
 * (CRs into the store, the Lease, life) and kube_front_status.c (the
 * merged status back onto the CRs, one writer).  Private to daemons/kube/
 */
#ifndef DECOD_KUBE_FRONT_INT_H
#define DECOD_KUBE_FRONT_INT_H

#include <stdint.h>

#include <yajl/yajl_tree.h>

#include "common/kube.h"
#include "common/store.h"

#define API_VERSION "deco.sites/v1alpha1"
#define NFLIGHT 4096	/* buckets of the per-CR table */
#define FK_MANAGER "decod"	/* the one field manager of every CR's status */

struct crw;

struct stage_watch;
struct kube_front_events;

struct kube_front {
	struct stage *st;
	struct kube *k;
	struct kube_informer *dfs, *tpls;
	struct store_watch *sw;
	struct stage_watch *sw_attach;
	char *status_prefix;
	uint64_t mirrored, status_writes;
	uint64_t adoptions;	/* CRs whose old managers' entries were removed */
	uint64_t inflight;	/* status writes sent, not yet answered */
	struct crw *dhead, *dtail;	/* CRs changed, waiting out the coalescing window */
	struct crw *qhead, *qtail;	/* CRs due, waiting for a write slot */
	int64_t dtimer;		/* > 0: the coalescing timer is armed */
	int caught_up;		/* "caught up" logged */
	uint64_t applies[8];	/* status applies by enum kf_why (kf_count_apply) */
	struct crw *crws[NFLIGHT];	/* per CR with a write pending: its state */
	/*
	 * Without a supervisor (deploy/'s pod: one container per stage) the
	 * fetcher holds the Lease for its pod: only the holder's front door
	 * mirrors, so a standby pod's store stays empty and its stages idle.
	 */
	struct kube_lease *lease;	/* NULL: no election here (always leads) */
	struct kube_front_events *events;	/* Kubernetes Events (kube_front_events.c) */
	/*
	 * Every Decofile's status fragments as listed at start-up (after the
	 * watch was opened): each CR's first comparison reads them here, not
	 * with a list of its own, until a fragment changes or the front door
	 * has caught up (kube_front_preload)
	 */
	struct store_list preload;
	int preloaded;
	uint64_t preload_used;	/* comparisons that read the preload */
	/*
	 * Every Decofile mirror as the fetcher's watch of them read it at its
	 * opening (kube_front_mirrors): a CR's first mirror compares with its
	 * entry (used once: mirror_used), and the sweep after the list reads
	 * the keys here, not from the store, until a Decofile changes in the
	 * store or the front door has caught up
	 */
	struct store_list mirrors;
	unsigned char *mirror_used;
	int mirrors_loaded;
	uint64_t mirrors_used;
};

struct kind_info {
	const char *plural;
	const struct kube_kind *kd;
};

/* the store's plurals (decofiles, templates) and the CR kinds they mirror */
extern const struct kind_info kf_kinds[2];

static inline int
kf_leading(const struct kube_front *fk)
{
	return fk->lease == NULL || kube_lease_leading(fk->lease);
}

/* kf_caught_up - log "caught up" once everything listed has been compared and written */
void kf_caught_up(struct kube_front *fk);

/*
 * kf_preload_merged - the merged status of plural/ns/name from the preload
 * into out (as resource_status_merged); -1 when there is none to use
 */
int kf_preload_merged(struct kube_front *fk, const char *plural, const char *ns,
    const char *name, struct buf *out);
/* kf_preload_drop - forget the preload (a fragment changed, or caught up) */
void kf_preload_drop(struct kube_front *fk);
/* kf_mirrors_drop - forget the mirrors' preload (a Decofile changed, or caught up) */
void kf_mirrors_drop(struct kube_front *fk);

/* kf_status_start - watch the store's status fragments; -1 with err */
int kf_status_start(struct kube_front *fk, char *err, size_t errlen);
/* kf_status_free - stop the watch, drop the writes waiting and their records */
void kf_status_free(struct kube_front *fk);
/* kf_cr_seen - the watch brought ns/name: its idle write record may go */
void kf_cr_seen(struct kube_front *fk, const struct kind_info *ki, const char *ns,
    const char *name);
/* kf_push_all - the merged status of ns/name onto the CR (when it differs) */
void kf_push_all(struct kube_front *fk, const struct kind_info *ki, const char *ns,
    const char *name);

/* why a CR's status is written now, or not (kube_front_hold.c) */
enum kf_why {
	KF_HELD,	/* not now: the change is mid-way */
	KF_SETTLED,	/* the change passed the last stage that runs here */
	KF_FAILURE,	/* a stage failed: shown at once */
	KF_EXPIRED,	/* the last stage's word did not come within the hold's cap */
	KF_UNHELD,	/* a DecofileTemplate: its status is one stage's */
	KF_RECHECK,	/* the server's answer differs from the merge */
	KF_ADOPTED,	/* right after removing old managers' entries */
	KF_NWHY
};

/*
 * kf_hold - whether Decofile ns/name's merged status is written now:
 * KF_FAILURE when a stage says False; KF_HELD while the journal holds an
 * item of it for a stage before the last one `stages` names (never capped:
 * the CR would pair the new commit with the older verdict), or while the
 * last stage's word is not in (kube_front_settling) and not expired;
 * KF_EXPIRED when it is expired; else KF_SETTLED
 */
enum kf_why kf_hold(const struct kube_front *fk, const char *ns, const char *name,
    yajl_val merged, int expired);
/* kf_pending - the journal holds an item of ns/name for any pipeline stage */
int kf_pending(const struct kube_front *fk, const char *ns, const char *name);
/*
 * kf_count_apply - one status apply of what, made for why: counted (metric,
 * debug log with detail: what differed from the CR as seen)
 */
void kf_count_apply(struct kube_front *fk, enum kf_why why, const char *what,
    const char *detail);
/* kf_applies_text - "settled=N,failure=N,..." for the log */
void kf_applies_text(const struct kube_front *fk, char *out, size_t len);

/* kf_events_start - Events on the CRs from their status transitions (kube_front_events.c) */
int kf_events_start(struct kube_front *fk);
/* kf_events_free - after kube_free: drops what waits or was in flight */
void kf_events_free(struct kube_front *fk);
/*
 * kf_events_observe - merged (the status about to be written to CR cr of
 * kind) compared with what was seen last: each condition that changed its
 * status, reason or message and means something (kf_event_of) is an Event,
 * or a repeat of one (its series).  Never waits.
 */
void kf_events_observe(struct kube_front *fk, const char *kind, yajl_val cr, yajl_val merged);
/* kf_event_of - the Event a condition in its new state makes; 0: none */
int kf_event_of(const char *ctype, const char *status, const char *creason,
    const char **reason, const char **type, const char **action);
/* kf_note_shape - note with digit runs as '#': what repeats of an Event compare (caller frees) */
char *kf_note_shape(const char *note);
/* kf_event_body - an events.k8s.io/v1 Event about cr; note bounded to 1 KiB.  Caller frees. */
char *kf_event_body(const char *name, const char *kind, yajl_val cr, const char *reason,
    const char *type, const char *action, const char *note, const char *instance,
    const char *when, size_t *len);

#endif
