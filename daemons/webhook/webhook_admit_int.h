/*
 * webhook_admit_int.h - what the admission code's two halves share:
 * webhook_admit.c (the review read whole, the answer written, the
 * validating paths) and webhook_mutate.c (the mutating path's JSONPatch).
 * Private to daemons/webhook; callers use webhook_admit.h.
 */
#ifndef DECOD_WEBHOOK_ADMIT_INT_H
#define DECOD_WEBHOOK_ADMIT_INT_H

#include <stddef.h>

#include <yajl/yajl_tree.h>

#include "common/util.h"
#include "daemons/webhook/webhook_admit.h"

/* an AdmissionReview as read: every pointer into root, which the reader frees */
struct review {
	yajl_val root, req;
	const char *uid, *op, *ns, *name;
	const char *group, *version, *kind;
	yajl_val obj, old;
	const char *user;
	int dry_run;
};

/*
 * wh_review_read - parse and check the envelope of body (len bytes); 0 with
 * rv filled (the caller frees rv->root), or -1 when the answer (HTTP 400 or
 * allowed: false) is already in r and rv->root is NULL.
 */
int wh_review_read(const char *body, size_t len, struct review *rv, struct wh_result *r);

/* wh_review_kind_is - whether the review is of group/version, kind */
int wh_review_kind_is(const struct review *rv, const char *group, const char *version,
    const char *kind);

/*
 * wh_answer - write the AdmissionReview response for uid into r->body:
 * code 0 allowed, else denied with that status code and msg; patch (JSON
 * text, may be NULL or empty) is sent base64'd; warning may be NULL.
 * r->message gets msg or warning; r->outcome is the caller's to set.
 */
void wh_answer(struct wh_result *r, const char *uid, int code, const char *msg,
    const struct buf *patch, const char *warning);

/* wh_answer_invalid - a review with a uid that cannot be acted on: 400, WH_INVALID; -1 */
int wh_answer_invalid(struct wh_result *r, const struct review *rv, const char *why);
/* wh_answer_deny - allowed: false, 403, with msg: WH_DENIED */
void wh_answer_deny(struct wh_result *r, const struct review *rv, const char *msg);
/* wh_answer_allow - allowed, no patch, an optional warning: WH_ALLOWED */
void wh_answer_allow(struct wh_result *r, const struct review *rv, const char *warning);

/*
 * wh_result_track - set r->track (and its ns, service, decofile) to what
 * the caller should remember about Service ns/svc; nothing for a dry run
 * or a Service without a name.
 */
void wh_result_track(struct wh_result *r, const struct review *rv, enum wh_track t,
    const char *ns, const char *svc, const char *decofile);

#endif
