/*
 * kube_front_events - Kubernetes Events (events.k8s.io/v1) on the CRs,
 * derived from the merged status the front door computes: a condition
 * whose status, reason or message changed is one Event (fetch failure,
 * validation error, published, drift repaired, rollout done or failed).
 * The same (regarding, reason, note) again updates that Event's series
 * (count, lastObservedTime) by a merge patch, at most every
 * SERIES_EVERY_MS, instead of a new Event.  What was emitted is kept in a
 * bounded LRU (CACHE_KEYS).  Sends are bounded too: at most EV_INFLIGHT
 * at once and EV_QUEUE waiting; past that an Event is dropped and counted
 * (logged once).  Nothing here waits for an answer: status writes never
 * wait for an Event.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/kube.h"
#include "common/log.h"
#include "common/stage.h"
#include "common/util.h"
#include "daemons/kube/kube_events_cache.h"
#include "daemons/kube/kube_front.h"
#include "daemons/kube/kube_front_int.h"

#define CACHE_KEYS 4096
#define SERIES_EVERY_MS 30000
#define EV_INFLIGHT 4
#define EV_QUEUE 256
#define NOTE_MAX 1024
#define REPORTING_CONTROLLER "deco.sites/decod"

static const struct kube_kind kube_events = {
	"events.k8s.io", "v1", "events", "Event", 1
};

struct ev_send {
	struct ev_send *next;
	struct kube_front_events *fe;
	char *ns, *name;	/* the Event's */
	char *method;		/* POST or PATCH */
	char *key;		/* PATCH: the aggregation key (NULL for a POST) */
	char *body;
	size_t len;
};

struct kube_front_events {
	struct kube_front *fk;
	struct kev_cache *cache;
	struct ev_send *qhead, *qtail;
	struct ev_send *flight;	/* sent, not answered (kube_free drops them unanswered) */
	size_t queued, inflight;
	uint64_t emitted, series_updates, dropped, failed;
	int drop_logged, fail_logged;
	int64_t flush_timer;	/* > 0: a series flush is armed */
	char instance[128];
};

/* micro_now - RFC 3339 with microseconds, UTC: "2026-12-05T22:00:00.123456Z" */
static void
micro_now(char *out, size_t len)
{
	struct timeval tv;
	struct tm tm;
	char s[32];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, len, "%s.%06ldZ", s, (long)tv.tv_usec);
}

/*
 * kf_event_of - the Event a condition (type, status, reason) in its new
 * state makes: *reason, *type (Normal/Warning), *action; 0 when it makes
 * none (Unknown, in sync, fetching again...).
 */
int
kf_event_of(const char *ctype, const char *status, const char *creason, const char **reason,
    const char **type, const char **action)
{
	if (ctype == NULL || status == NULL || strcmp(status, "Unknown") == 0)
		return 0;
	*reason = creason != NULL && *creason != '\0' ? creason : ctype;
	if (creason != NULL && strcmp(creason, "ValidationError") == 0) {
		*type = "Warning";
		*action = "Validate";
		return 1;
	}
	if (strcmp(ctype, "Syncing") == 0) {
		if (strcmp(status, "False") != 0 || (creason != NULL &&
		    strcmp(creason, "Suspended") == 0))
			return 0;
		*type = "Warning";
		*action = "Fetch";
		return 1;
	}
	if (strcmp(ctype, "Ready") == 0) {
		/* every target says it its own way (ConfigMapCreated, Published...) */
		if (strcmp(status, "True") == 0)
			*reason = "Published";
		*type = strcmp(status, "True") == 0 ? "Normal" : "Warning";
		*action = "Publish";
		return 1;
	}
	if (strcmp(ctype, "Drifted") == 0) {
		if (strcmp(status, "True") != 0)
			return 0;
		/* the condition's own reason: Repaired, or RepairFailed */
		*type = strcmp(*reason, "RepairFailed") == 0 ? "Warning" : "Normal";
		*action = "RepairDrift";
		return 1;
	}
	if (strcmp(ctype, "PodsNotified") == 0) {
		*type = strcmp(status, "True") == 0 ? "Normal" : "Warning";
		*action = "Rollout";
		return 1;
	}
	return 0;
}

static void pump(struct kube_front_events *fe);

static void
send_free(struct ev_send *s)
{
	free(s->ns);
	free(s->name);
	free(s->method);
	free(s->key);
	free(s->body);
	free(s);
}

static void
on_sent(void *arg, const struct kube_resp *r)
{
	struct ev_send *s = arg;
	struct kube_front_events *fe = s->fe;

	struct ev_send **p;

	for (p = &fe->flight; *p != NULL; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	fe->inflight--;
	if (r->status == 404 && s->key != NULL) {
		/* the Event expired (the API server's event TTL): the next repeat makes a new one */
		struct kev_entry *e = kev_cache_get(fe->cache, s->key);

		if (e != NULL)
			kev_entry_set_val(e, NULL);
	} else if (!kube_ok(r)) {
		fe->failed++;
		if (!fe->fail_logged) {
			fe->fail_logged = 1;
			log_kv(LOG_WARN, "cannot write a Kubernetes Event (logged once; counted "
			    "after)", "event", s->name, "method", s->method, "error", r->err, NULL);
		}
	}
	send_free(s);
	pump(fe);
}

static void
pump(struct kube_front_events *fe)
{
	while (fe->qhead != NULL && fe->inflight < EV_INFLIGHT) {
		struct ev_send *s = fe->qhead;
		char *path;

		if ((fe->qhead = s->next) == NULL)
			fe->qtail = NULL;
		fe->queued--;
		fe->inflight++;
		s->next = fe->flight;
		fe->flight = s;
		path = kube_path(&kube_events, s->ns, strcmp(s->method, "POST") == 0 ? NULL :
		    s->name, NULL, NULL);
		kube_send(fe->fk->k, s->method, path, strcmp(s->method, "POST") == 0 ?
		    "application/json" : "application/merge-patch+json", s->body, s->len, 0,
		    on_sent, s);
		free(path);
	}
}

/* enqueue - a send waits for a slot; dropped (and counted) when the queue is full */
static int
enqueue(struct kube_front_events *fe, const char *method, const char *ns, const char *name,
    const char *key, char *body, size_t len)
{
	struct ev_send *s;

	if (fe->queued >= EV_QUEUE) {
		fe->dropped++;
		if (!fe->drop_logged) {
			fe->drop_logged = 1;
			log_kv(LOG_WARN, "Kubernetes Events queue full: dropping Events (logged "
			    "once; counted after)", "event", name, NULL);
		}
		free(body);
		return -1;
	}
	s = xcalloc(1, sizeof(*s));
	s->fe = fe;
	s->method = xstrdup(method);
	s->ns = xstrdup(ns);
	s->name = xstrdup(name);
	s->key = key != NULL ? xstrdup(key) : NULL;
	s->body = body;
	s->len = len;
	if (fe->qtail != NULL)
		fe->qtail->next = s;
	else
		fe->qhead = s;
	fe->qtail = s;
	fe->queued++;
	pump(fe);
	return 0;
}

/*
 * kf_event_body - the events.k8s.io/v1 Event name in ns about CR cr
 * (kind), note bounded to NOTE_MAX bytes.  Caller frees.
 */
char *
kf_event_body(const char *name, const char *kind, yajl_val cr, const char *reason,
    const char *type, const char *action, const char *note, const char *instance,
    const char *when, size_t *len)
{
	const char *ns = json_get_str(cr, "metadata", "namespace", NULL);
	const char *uid = json_get_str(cr, "metadata", "uid", NULL);
	const char *rv = json_get_str(cr, "metadata", "resourceVersion", NULL);
	size_t nl = note != NULL ? strlen(note) : 0;
	struct buf b;
	struct jw w;

	if (nl > NOTE_MAX) {	/* cut at a UTF-8 character boundary */
		nl = NOTE_MAX;
		while (nl > 0 && ((unsigned char)note[nl] & 0xc0) == 0x80)
			nl--;
	}
	buf_init(&b);
	jw_init(&w, &b);
	jw_object_head(&w, "events.k8s.io/v1", "Event", ns, name);
	jw_end_obj(&w);
	jw_key(&w, "eventTime");
	jw_str(&w, when);
	jw_key(&w, "reportingController");
	jw_str(&w, REPORTING_CONTROLLER);
	jw_key(&w, "reportingInstance");
	jw_str(&w, instance);
	jw_key(&w, "action");
	jw_str(&w, action);
	jw_key(&w, "reason");
	jw_str(&w, reason);
	jw_key(&w, "type");
	jw_str(&w, type);
	jw_key(&w, "note");
	jw_strn(&w, note != NULL ? note : "", nl);
	jw_key(&w, "regarding");
	jw_obj(&w);
	jw_key(&w, "apiVersion");
	jw_str(&w, API_VERSION);
	jw_key(&w, "kind");
	jw_str(&w, kind);
	jw_key(&w, "namespace");
	jw_str(&w, ns);
	jw_key(&w, "name");
	jw_str(&w, json_get_str(cr, "metadata", "name", NULL));
	if (uid != NULL) {
		jw_key(&w, "uid");
		jw_str(&w, uid);
	}
	if (rv != NULL) {
		jw_key(&w, "resourceVersion");
		jw_str(&w, rv);
	}
	jw_end_obj(&w);
	jw_end_obj(&w);
	return buf_steal(&b, len);
}

static char *
series_body(const struct kev_entry *e, size_t *len)
{
	struct buf b;
	struct jw w;

	buf_init(&b);
	jw_init(&w, &b);
	jw_obj(&w);
	jw_key(&w, "series");
	jw_obj(&w);
	jw_key(&w, "count");
	jw_int(&w, e->count);
	jw_key(&w, "lastObservedTime");
	jw_str(&w, e->last_obs);
	jw_end_obj(&w);
	jw_end_obj(&w);
	return buf_steal(&b, len);
}

/* ns/name of an aggregation key's Event: the key is "A|ns|..." and val the name */
static void
send_series(struct kube_front_events *fe, struct kev_entry *e, const char *ns)
{
	size_t len;
	char *body = series_body(e, &len);

	e->sent_count = e->count;
	e->last_sent_ms = now_ms();
	fe->series_updates++;
	(void)enqueue(fe, "PATCH", ns, e->val, e->key, body, len);
}

static void arm_flush(struct kube_front_events *fe, int64_t after);

/*
 * on_flush - the series held back by SERIES_EVERY_MS go out once it has
 * passed.  Walks the aggregation records still in the cache; an evicted
 * one loses only its last count.
 */
static void
on_flush(struct stage *st, void *arg)
{
	struct kube_front_events *fe = arg;
	int64_t now = now_ms(), next = 0;
	struct kev_entry *e;

	(void)st;
	fe->flush_timer = 0;
	for (e = kev_cache_lru_head(fe->cache); e != NULL; e = kev_entry_next(e)) {
		char ns[254];

		if (e->key[0] != 'A' || e->val == NULL || e->count <= e->sent_count)
			continue;
		if (now - e->last_sent_ms >= SERIES_EVERY_MS) {
			if (sscanf(e->key, "A|%253[^|]|", ns) == 1)
				send_series(fe, e, ns);
		} else {
			int64_t d = e->last_sent_ms + SERIES_EVERY_MS - now;

			if (next == 0 || d < next)
				next = d;
		}
	}
	if (next > 0)
		arm_flush(fe, next);
}

static void
arm_flush(struct kube_front_events *fe, int64_t after)
{
	if (fe->flush_timer > 0)
		return;
	fe->flush_timer = stage_add_timer(fe->fk->st, after > 1 ? after : 1, on_flush, fe);
}

/*
 * kf_note_shape - note with every run of digits made one '#': the
 * aggregation key's note, so messages that differ only in numbers
 * (curl's "after 0 ms" / "after 1 ms", a retry count) are one series, as
 * Kubernetes' own event aggregator combines similar Events.  Caller frees.
 */
char *
kf_note_shape(const char *note)
{
	char *o = xmalloc(strlen(note) + 1), *p = o;

	while (*note != '\0') {
		if (*note >= '0' && *note <= '9') {
			while (*note >= '0' && *note <= '9')
				note++;
			*p++ = '#';
		} else
			*p++ = *note++;
	}
	*p = '\0';
	return o;
}

/* emit - one observation of (cr, reason, note): a new Event or its series counted */
static void
emit(struct kube_front_events *fe, const char *kind, yajl_val cr, const char *reason,
    const char *type, const char *action, const char *note)
{
	const char *ns = json_get_str(cr, "metadata", "namespace", NULL);
	const char *name = json_get_str(cr, "metadata", "name", NULL);
	const char *uid = json_get_str(cr, "metadata", "uid", NULL);
	char nh[SHA256_HEX_LEN + 1], when[40], evname[300], *key, *body, *shape;
	struct kev_entry *e;
	struct timeval tv;
	size_t len;

	if (ns == NULL || name == NULL)
		return;
	shape = kf_note_shape(note);
	sha256_hex(shape, strlen(shape), nh);
	free(shape);
	key = xasprintf("A|%s|%s|%s|%s|%.16s", ns, name, uid != NULL ? uid : "", reason, nh);
	e = kev_cache_put(fe->cache, key);
	free(key);
	micro_now(when, sizeof(when));
	if (e->val != NULL) {	/* emitted before: the series grows */
		e->count++;
		snprintf(e->last_obs, sizeof(e->last_obs), "%s", when);
		if (now_ms() - e->last_sent_ms >= SERIES_EVERY_MS)
			send_series(fe, e, ns);
		else
			arm_flush(fe, e->last_sent_ms + SERIES_EVERY_MS - now_ms());
		return;
	}
	gettimeofday(&tv, NULL);
	snprintf(evname, sizeof(evname), "%.200s.%llx", name,
	    (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec);
	kev_entry_set_val(e, evname);
	e->count = e->sent_count = 1;
	e->last_sent_ms = now_ms();
	snprintf(e->last_obs, sizeof(e->last_obs), "%s", when);
	body = kf_event_body(evname, kind, cr, reason, type, action, note, fe->instance, when,
	    &len);
	fe->emitted++;
	(void)enqueue(fe, "POST", ns, evname, NULL, body, len);
}

static const char *
str_or(const char *s)
{
	return s != NULL ? s : "";
}

/* cond_of - the condition of type t in a conditions array, or NULL */
static yajl_val
cond_of(yajl_val conds, const char *t)
{
	if (conds == NULL || !YAJL_IS_ARRAY(conds))
		return NULL;
	for (size_t i = 0; i < conds->u.array.len; i++) {
		const char *x = json_get_str(conds->u.array.values[i], "type", NULL);

		if (x != NULL && strcmp(x, t) == 0)
			return conds->u.array.values[i];
	}
	return NULL;
}

/*
 * cond_state - what a condition says, to tell a change: status, reason,
 * message; for a failing fetch also status.fetchFailures, since a fetch
 * failing again says the same thing and each failure is an observation
 */
static char *
cond_state(yajl_val c, yajl_val status)
{
	const char *t = json_get_str(c, "type", NULL), *st = json_get_str(c, "status", NULL);
	const char *rs = json_get_str(c, "reason", NULL), *msg = json_get_str(c, "message", NULL);
	yajl_val n = json_get(status, "fetchFailures", NULL);

	if (t != NULL && st != NULL && strcmp(t, "Syncing") == 0 && strcmp(st, "False") == 0 &&
	    n != NULL && YAJL_IS_INTEGER(n))
		return xasprintf("%s|%s|%s|%lld", st, str_or(rs), str_or(msg),
		    (long long)YAJL_GET_INTEGER(n));
	return xasprintf("%s|%s|%s", str_or(st), str_or(rs), str_or(msg));
}

void
kf_events_observe(struct kube_front *fk, const char *kind, yajl_val cr, yajl_val merged)
{
	struct kube_front_events *fe = fk->events;
	yajl_val conds = json_get(merged, "conditions", NULL);
	yajl_val curconds = json_get(cr, "status", "conditions", NULL);
	const char *ns = json_get_str(cr, "metadata", "namespace", NULL);
	const char *name = json_get_str(cr, "metadata", "name", NULL);
	const char *uid = json_get_str(cr, "metadata", "uid", NULL);

	if (fe == NULL || conds == NULL || !YAJL_IS_ARRAY(conds) || ns == NULL || name == NULL)
		return;
	for (size_t i = 0; i < conds->u.array.len; i++) {
		yajl_val c = conds->u.array.values[i];
		const char *t = json_get_str(c, "type", NULL), *st = json_get_str(c, "status", NULL);
		const char *rs = json_get_str(c, "reason", NULL), *msg = json_get_str(c, "message", NULL);
		const char *reason, *type, *action;
		struct kev_entry *e;
		char *key, *state;

		if (t == NULL || st == NULL)
			continue;
		state = cond_state(c, merged);
		key = xasprintf("T|%s|%s|%s|%s", ns, name, uid != NULL ? uid : "", t);
		if ((e = kev_cache_get(fe->cache, key)) == NULL) {
			/* first seen since start: the CR's own status is the before */
			yajl_val was = cond_of(curconds, t);
			char *prev = was == NULL ? NULL : cond_state(was, json_get(cr, "status",
			    NULL));

			e = kev_cache_put(fe->cache, key);
			kev_entry_set_val(e, prev);
			free(prev);
		}
		if (e->val == NULL || strcmp(e->val, state) != 0) {
			kev_entry_set_val(e, state);
			if (kf_event_of(t, st, rs, &reason, &type, &action))
				emit(fe, kind, cr, reason, type, action, msg != NULL ? msg : t);
		}
		free(key);
		free(state);
	}
}

int
kf_events_start(struct kube_front *fk)
{
	struct kube_front_events *fe = xcalloc(1, sizeof(*fe));

	fe->fk = fk;
	fe->cache = kev_cache_new(CACHE_KEYS);
	kube_lease_identity(fe->instance, sizeof(fe->instance));
	fk->events = fe;
	return 0;
}

void
kf_events_free(struct kube_front *fk)
{
	struct kube_front_events *fe = fk->events;

	if (fe == NULL)
		return;
	if (fe->flush_timer > 0)
		stage_cancel_timer(fk->st, fe->flush_timer);
	if (fe->emitted + fe->dropped + fe->failed > 0) {
		char a[24], b[24], c[24], d[24];

		snprintf(a, sizeof(a), "%llu", (unsigned long long)fe->emitted);
		snprintf(b, sizeof(b), "%llu", (unsigned long long)fe->series_updates);
		snprintf(c, sizeof(c), "%llu", (unsigned long long)fe->dropped);
		snprintf(d, sizeof(d), "%llu", (unsigned long long)fe->failed);
		log_kv(LOG_INFO, "Kubernetes Events", "emitted", a, "series_updates", b,
		    "dropped", c, "failed", d, NULL);
	}
	while (fe->qhead != NULL) {
		struct ev_send *s = fe->qhead;

		fe->qhead = s->next;
		send_free(s);
	}
	while (fe->flight != NULL) {
		struct ev_send *s = fe->flight;

		fe->flight = s->next;
		send_free(s);
	}
	kev_cache_free(fe->cache);
	free(fe);
	fk->events = NULL;
}
