/*
 * webhook_admit - the webhook's decisions, with no I/O: an AdmissionReview
 * body in, the answer body out.  The caller supplies what decod knows (the
 * Decofile of a deploymentId, the Services that use a Decofile) through
 * callbacks, so the same code runs in the stage and in table tests.
 * webhook_admit.c reads the review and answers the validating paths;
 * webhook_mutate.c writes the mutating path's JSONPatch.
 */
#ifndef DECOD_WEBHOOK_ADMIT_H
#define DECOD_WEBHOOK_ADMIT_H

#include <stddef.h>

#include "common/util.h"

#define WH_ANNOTATION_INJECT	"deco.sites/decofile-inject"
#define WH_ANNOTATION_MOUNT	"deco.sites/decofile-mount-path"
#define WH_LABEL_DEPLOYMENT	"app.deco/deploymentId"
#define WH_DEFAULT_MOUNT	"/app/decofile"
#define WH_ACL_SECRET		"valkey-acl"
#define WH_LABEL_MANAGED	"app.kubernetes.io/managed-by"
#define WH_DEFAULT_AUTHORITIES	"configs.decocdn.com,configs.deco.cx,admin.deco.cx,localhost"

/* a Decofile as the webhook needs it (from the store) */
struct wh_decofile {
	const char *name;
	const char *target;		/* "configmap", "s3", "file", ... */
};

struct wh_env {
	const char *s3_public_host;	/* "" or NULL: s3 Services are refused */
	const char *s3_prefix;
	/*
	 * managers: space-separated user names allowed to change objects decod
	 * manages (drift prevention); NULL or "": the check is off
	 */
	const char *managers;
	/* the Decofile of ns whose deploymentId is dep, or NULL */
	const struct wh_decofile *(*find)(void *arg, const char *ns, const char *dep);
	/*
	 * users - append the names of the Services in ns that use Decofile
	 * name to out (", " between), at most max of them; returns how many
	 * there are in all.
	 */
	size_t (*users)(void *arg, const char *ns, const char *name, struct buf *out,
	    size_t max);
	/* token - fill out with a fresh random reload token (NUL-terminated) */
	void (*token)(void *arg, char *out, size_t len);
	void *arg;
};

enum wh_outcome {
	WH_PATCHED,		/* allowed with a patch */
	WH_ALLOWED,		/* allowed, nothing to change */
	WH_DENIED,		/* allowed: false by policy */
	WH_INVALID,		/* the review itself was malformed */
};

/* what the caller should remember about a Service after the answer */
enum wh_track { WH_TRACK_NONE, WH_TRACK_SET, WH_TRACK_DROP };

struct wh_result {
	int http_status;	/* 200, or 400 when no review could be read at all */
	struct buf body;	/* the answer (JSON; text with a 400) */
	enum wh_outcome outcome;
	enum wh_track track;
	char ns[254], service[254], decofile[254];
	char message[512];	/* why, for the log (never a token) */
};

/* wh_result_init / wh_result_free - an empty result; free its body */
void wh_result_init(struct wh_result *r);
void wh_result_free(struct wh_result *r);

/*
 * wh_mutate - answer a review sent to /mutate-serving-knative-dev-v1-service
 * (body of len bytes; body[len] must be readable and is not changed).
 * Always fills r; returns 0, or -1 when the review was malformed.
 */
int wh_mutate(const struct wh_env *env, const char *body, size_t len, struct wh_result *r);

/*
 * wh_validate_decofile - /validate-deco-sites-v1alpha1-decofile: a DELETE of a
 * Decofile that Services use is refused, naming them; the rest is allowed.
 */
int wh_validate_decofile(const struct wh_env *env, const char *body, size_t len,
    struct wh_result *r);

/*
 * wh_track_service - /validate-serving-knative-dev-v1-service: always
 * allows; a DELETE of a Service sets r->track to WH_TRACK_DROP so the
 * caller forgets that it used a Decofile.
 */
int wh_track_service(const struct wh_env *env, const char *body, size_t len,
    struct wh_result *r);

/*
 * wh_validate_managed - /validate-decod-managed (drift prevention): an
 * UPDATE or DELETE of an object labelled app.kubernetes.io/managed-by:
 * decod by anyone but env->managers is refused; everything else allowed.
 */
int wh_validate_managed(const struct wh_env *env, const char *body, size_t len,
    struct wh_result *r);

/*
 * wh_json_depth_ok - nonzero when text nests at most max arrays/objects
 * (strings are skipped), so a parser that recurses cannot be driven deep.
 */
int wh_json_depth_ok(const char *text, size_t len, int max);

/*
 * wh_merge_authorities - DECO_ALLOWED_AUTHORITIES with host added: the
 * existing list (NULL: the runtime's defaults) split on commas, trimmed,
 * empty items and duplicates dropped, host last, joined by "," into out.
 */
void wh_merge_authorities(const char *existing, const char *host, struct buf *out);

#endif
