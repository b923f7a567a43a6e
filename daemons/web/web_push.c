/*
 * web_push - the git push receivers: POST /hooks/github, /hooks/gitlab and
 * /hooks/gitea.  A delivery is checked (signature, then delivery id, then
 * event), its push read, and every Decofile fetching from that repository
 * and branch is asked to sync at once, as `decoctl sync` asks
 * (decofile_request_sync).  The body is never logged: it is the git
 * host's, not ours, and a refused one may be anybody's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "common/json.h"
#include "common/log.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "daemons/web/web.h"

static const char *const sig_header[WEB_NPROVIDERS] = {
	"X-Hub-Signature-256", "X-Gitlab-Token", "X-Gitea-Signature",
};
static const char *const event_header[WEB_NPROVIDERS] = {
	"X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event",
};
static const char *const delivery_header[WEB_NPROVIDERS] = {
	"X-GitHub-Delivery", "X-Gitlab-Event-UUID", "X-Gitea-Delivery",
};

static const char *
header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* answer - 202 with {"result": what, ...extra} */
static enum MHD_Result
answer(struct MHD_Connection *c, unsigned int status, const char *result, const char *why)
{
	struct buf b;
	struct jw jw;

	buf_init(&b);
	jw_init(&jw, &b);
	jw_obj(&jw);
	jw_key(&jw, "result");
	jw_str(&jw, result);
	if (why != NULL) {
		jw_key(&jw, "message");
		jw_str(&jw, why);
	}
	jw_end_obj(&jw);
	return web_reply_json(c, status, &b);
}

struct syncing {
	struct store *s;
	struct jw *jw;
};

/* sync_one - ask ns/name to sync and name it in the answer; 0 or -1 */
static int
sync_one(void *arg, const char *ns, const char *name)
{
	struct syncing *y = arg;

	if (decofile_request_sync(y->s, ns, name) < 0) {
		log_kv(LOG_ERROR, "cannot request a sync", "ns", ns, "name", name, "error",
		    store_error(y->s), NULL);
		return -1;
	}
	jw_obj(y->jw);
	jw_key(y->jw, "namespace");
	jw_str(y->jw, ns);
	jw_key(y->jw, "name");
	jw_str(y->jw, name);
	jw_end_obj(y->jw);
	return 0;
}

/* sync_listed - sync_matching from a list of every Decofile in the store */
static int
sync_listed(struct syncing *y, const struct web_push *p)
{
	struct store_list l;
	char *prefix = key_resource_prefix("decofiles", NULL);
	int n = 0, rc;

	rc = store_list(y->s, prefix, &l);
	free(prefix);
	if (rc < 0) {
		log_kv(LOG_ERROR, "cannot list the decofiles for a push", "error",
		    store_error(y->s), NULL);
		return -1;
	}
	for (size_t i = 0; i < l.n; i++) {
		yajl_val doc = json_parse(l.kvs[i].value, l.kvs[i].vlen, NULL);
		const char *ns = json_get_str(doc, "metadata", "namespace", NULL);
		const char *name = json_get_str(doc, "metadata", "name", NULL);

		if (doc != NULL && ns != NULL && name != NULL && web_push_matches(doc, p)) {
			if (sync_one(y, ns, name) < 0)
				rc = -1;
			else
				n++;
		}
		yajl_tree_free(doc);
	}
	store_list_free(&l);
	return rc < 0 ? -1 : n;
}

/*
 * sync_matching - ask every Decofile the push concerns to sync, each named
 * in jw's array: found among the status rows the stage keeps in memory
 * (no read of 10,000 Decofiles per push), or, before those are read, in a
 * list of the store.  The number synced, or -1 on a store error.
 */
static int
sync_matching(struct web *w, const struct web_push *p, struct jw *jw)
{
	struct syncing y = { stage_store(w->st), jw };
	int n = w->rows != NULL ? web_rows_push(w->rows, p, sync_one, &y) : -1;

	if (n == -1)
		return sync_listed(&y, p);
	return n < 0 ? -1 : n;
}

/* is_push - the provider's name for a branch push */
static int
is_push(enum web_provider pv, const char *event)
{
	if (pv == WEB_GITLAB)
		return strcmp(event, "Push Hook") == 0;
	return strcmp(event, "push") == 0;
}

enum MHD_Result
web_push_answer(struct web *w, struct MHD_Connection *c, enum web_provider pv,
    struct web_req *q)
{
	const char *prov = web_provider_name(pv);
	const char *event = header(c, event_header[pv]);
	const char *delivery = header(c, delivery_header[pv]);
	struct web_push p;
	struct buf b;
	struct jw jw;
	char err[256], count[16], ms[24];
	int n;

	if (!web_hook_verify(pv, w->secret[pv], w->secret_len[pv], header(c, sig_header[pv]),
	    q->body.data, q->body.len)) {
		w->refused++;
		log_kv(LOG_WARN, "push delivery refused: bad or missing signature", "provider",
		    prov, "header", sig_header[pv], "present",
		    header(c, sig_header[pv]) != NULL ? "yes" : "no", "delivery",
		    delivery, NULL);
		return answer(c, MHD_HTTP_UNAUTHORIZED, "refused",
		    "bad or missing signature");
	}
	if (event == NULL)
		return answer(c, MHD_HTTP_BAD_REQUEST, "malformed", "no event header");
	/* only a genuine delivery may take a place in the ring */
	if (delivery != NULL && *delivery != '\0' && web_ring_seen(w->deliveries, delivery)) {
		log_kv(LOG_INFO, "push delivery seen before: ignored", "provider", prov,
		    "delivery", delivery, NULL);
		return answer(c, MHD_HTTP_ACCEPTED, "ignored", "repeated delivery");
	}
	if (pv == WEB_GITHUB && strcmp(event, "ping") == 0)
		return answer(c, MHD_HTTP_ACCEPTED, "pong", NULL);
	if (!is_push(pv, event)) {
		log_kv(LOG_DEBUG, "push receiver: event ignored", "provider", prov, "event",
		    event, NULL);
		return answer(c, MHD_HTTP_ACCEPTED, "ignored", "not a push event");
	}
	if (web_push_parse(pv, q->body.data, q->body.len, &p, err, sizeof(err)) < 0) {
		log_kv(LOG_WARN, "malformed push delivery", "provider", prov, "delivery",
		    delivery, "error", err, NULL);
		return answer(c, MHD_HTTP_BAD_REQUEST, "malformed", err);
	}
	w->pushes++;
	buf_init(&b);
	jw_init(&jw, &b);
	jw_obj(&jw);
	jw_key(&jw, "result");
	jw_str(&jw, "accepted");
	jw_key(&jw, "repository");
	jw_str(&jw, p.urls[0]);
	jw_key(&jw, "branch");
	jw_str(&jw, p.branch);
	jw_key(&jw, "synced");
	jw_arr(&jw);
	n = sync_matching(w, &p, &jw);
	jw_end_arr(&jw);
	jw_end_obj(&jw);
	if (n < 0) {
		web_push_free(&p);
		buf_free(&b);
		return answer(c, MHD_HTTP_SERVICE_UNAVAILABLE, "error",
		    "the store did not answer; deliver again");
	}
	w->synced += (unsigned long)n;
	snprintf(count, sizeof(count), "%d", n);
	snprintf(ms, sizeof(ms), "%lld", (long long)(now_ms() - q->start));
	log_kv(LOG_INFO, "push received", "provider", prov, "delivery", delivery,
	    "repository", p.urls[0], "branch", p.branch ? p.branch : "-", "after", p.after,
	    "synced", count, "ms", ms, NULL);
	web_push_free(&p);
	return web_reply_json(c, MHD_HTTP_ACCEPTED, &b);
}
