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
	struct crw *crws[NFLIGHT];	/* per CR with a write pending: its state */
	/*
	 * Without a supervisor (deploy/'s pod: one container per stage) the
	 * fetcher holds the Lease for its pod: only the holder's front door
	 * mirrors, so a standby pod's store stays empty and its stages idle.
	 */
	struct kube_lease *lease;	/* NULL: no election here (always leads) */
	struct kube_front_events *events;	/* Kubernetes Events (kube_front_events.c) */
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

/* kf_status_start - watch the store's status fragments; -1 with err */
int kf_status_start(struct kube_front *fk, char *err, size_t errlen);
/* kf_status_free - stop the watch, drop the writes waiting and their records */
void kf_status_free(struct kube_front *fk);
/* kf_push_all - the merged status of ns/name onto the CR (when it differs) */
void kf_push_all(struct kube_front *fk, const struct kind_info *ki, const char *ns,
    const char *name);

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
