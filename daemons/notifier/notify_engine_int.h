/*
 * notify_engine_int - the engine's own types, shared by notify_engine.c
 * (the calls, their retries and the loop) and notify_results.c (what a
 * job's replicas came to).  Only those include it.
 */
#ifndef DECOD_NOTIFY_ENGINE_INT_H
#define DECOD_NOTIFY_ENGINE_INT_H

#include <curl/curl.h>
#include <stdint.h>

#include "daemons/notifier/notify_engine.h"

#define MAX_ATTEMPTS	16
#define RESP_KEEP	160	/* bytes of an error answer kept for the message */

/*
 * one replica: about 120 bytes, as 100,000 replicas of one site are one
 * job (the error message is allocated only for a replica that has one;
 * the id shares the URL's string when they are the same)
 */
struct rep {
	struct notify_target t;		/* strings owned (t.id may be t.url) */
	struct {
		enum notify_state state;
		int attempts;
		long http_status;
		int64_t ms;
		char *error;		/* NULL: none */
	} r;
	struct job_call *call;		/* in flight, or NULL */
	int64_t first_ms;		/* monotonic start of the first try */
	int64_t poll_end;		/* poll: all tries end by then */
	int64_t due;			/* queued retry: not before */
	struct rep *qnext;		/* retry queue link */
};

struct job_call {
	struct notify_job *job;
	struct rep *rep;
	CURL *easy;
	struct curl_slist *hdrs;	/* own list when a token is sent */
	int sent_token;
	char errbuf[CURL_ERROR_SIZE];
	char resp[RESP_KEEP];
	size_t resplen;
};

struct queue {
	struct rep *head, *tail;
};

struct notify_job {
	struct notify_engine *e;
	struct notify_job *next;	/* engine's list of running jobs */
	struct rep *reps;
	size_t n, next_new, finished;
	size_t in_flight;
	struct queue retry[MAX_ATTEMPTS];	/* retry[k]: waiting for try k+1 */
	const char *body;
	size_t body_len;
	int64_t timestamp;
	struct notify_params p;
	notify_resolve_fn resolve;
	notify_done_fn done;
	void *arg;
	int64_t start, deadline, last_outcome;
	struct curl_slist *push_hdrs;	/* shared, no token */
	int ended;
};

struct notify_engine {
	CURLM *multi;
	int epfd;
	int64_t curl_due;		/* monotonic ms; -1: no curl timer */
	struct notify_job *jobs;
	size_t njobs;
	struct notify_job *finished;	/* done, callback not yet called */
};

#endif
