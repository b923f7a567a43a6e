/*
 * kube_impl - what kube.c, kube_client.c and kube_informer.c share and
 * nobody else: the client's state, streaming calls (a watch delivers bytes
 * as they come and has no retries) and the informer list the dispatcher
 * pumps.
 */
#ifndef DECOD_KUBE_IMPL_H
#define DECOD_KUBE_IMPL_H

#include <curl/curl.h>
#include <sys/stat.h>

#include "common/kube.h"

struct kube {
	struct kube_config cfg;
	int64_t timeout_ms;
	CURLM *multi;
	int epfd;
	int64_t curl_due;
	struct kube_call *calls;
	int pending;			/* finished calls or buffered events wait */
	/* the bearer token: static, or from token_file (re-read on change) */
	char *token;
	int64_t token_checked;
	struct stat token_st;
	struct kube_stats stats;
	struct kube_informer **infs;
	size_t ninfs;
	struct stage *st;
	int64_t timer;
};

/* kube_token_refresh - re-read the token file when it changed (or force) */
void kube_token_refresh(struct kube *k, int force);
/* kube_rearm - keep one stage timer at the client's next deadline */
void kube_rearm(struct kube *k);

/* kube_data_fn - bytes of a streaming answer, as they arrive (inside curl) */
typedef void (*kube_data_fn)(void *arg, const char *p, size_t n);

/*
 * kube_send_stream - a GET whose answer body goes to data as it arrives
 * (only when the status is 2xx; an error body is kept for done), started
 * after delay_ms; timeout_ms bounds the whole stream; no retries.  accept:
 * the Accept header's value (NULL: application/json).
 */
struct kube_call *kube_send_stream(struct kube *k, const char *path, const char *accept,
    int64_t delay_ms, int64_t timeout_ms, kube_data_fn data,
    kube_done_fn done, void *arg);

/* kube_send_later - kube_send started after delay_ms (a re-list's backoff), with accept */
struct kube_call *kube_send_later(struct kube *k, const char *method,
    const char *path, const char *accept, int64_t delay_ms, kube_done_fn done, void *arg);

/* kube_mark_pending - something waits for the next dispatch (buffered events) */
void kube_mark_pending(struct kube *k);


/* informers known to the client: pumped by dispatch, freed by kube_free */
void kube_informer_register(struct kube *k, struct kube_informer *inf);
void kube_informer_unregister(struct kube *k, struct kube_informer *inf);
/* kube_informer_pump - handle buffered watch events; nonzero if more wait */
int kube_informer_pump(struct kube_informer *inf);

#endif
