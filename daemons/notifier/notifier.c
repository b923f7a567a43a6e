/*
 * notifier - the last stage (SPEC §4.4): for each published change it
 * finds the decofile's replicas (store-registered Endpoints and static
 * spec.endpoints), tells every one to reload through the notify engine,
 * records each replica's answer in the journal and sets PodsNotified.
 * It owns the PodsNotified condition and the rollouts in flight (one per
 * decofile: a newer change cancels the older rollout).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics_series.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/stage.h"
#include "common/store.h"
#include "common/store_keys.h"
#include "common/util.h"
#include "daemons/notifier/notify_engine.h"
#include "daemons/notifier/notify_pods.h"
#include "proto/proto.h"

#define STAGE		"notifier"
#define ACK_FLUSH_MS	500	/* how often finished replicas reach the journal */
#define EP_CACHE_MS	1000	/* re-list registered endpoints at most this often */
#define FAIL_NAMES	10	/* replicas named in a failure message */

/* one rollout: one change of one decofile being told to its replicas */
struct rollout {
	struct notifier *n;
	int64_t item;
	char ns[254], name[254], hash[65], id[160];
	int64_t timestamp;
	char *body;			/* push body; owned */
	size_t body_len;
	struct notify_job *job;
	char *ep_prefix;		/* registered endpoints of the deployment */
	struct store_list eps;		/* cached listing for re-resolving */
	int64_t eps_at;
	unsigned char *acked;		/* per replica: recorded in the journal */
	char ts_default[4400];		/* poll: tsFile for replicas that name none */
	int64_t flush_timer;
	struct rollout *next;
};

struct notifier {
	struct stage *st;
	struct notify_engine *e;
	int64_t timer;			/* engine timeout */
	char *token;			/* reload_token_file, for replicas without one */
	struct rollout *rollouts;
	struct notify_pods *pods;	/* Kubernetes pods; NULL: no cluster */
};

static void arm(struct notifier *n);

static void
on_engine_timer(struct stage *st, void *arg)
{
	struct notifier *n = arg;

	n->timer = 0;
	notify_engine_dispatch(n->e);
	arm(n);
}

/* arm - keep one stage timer at the engine's next deadline */
static void
arm(struct notifier *n)
{
	int64_t t = notify_engine_timeout(n->e);

	if (n->timer > 0)
		stage_cancel_timer(n->st, n->timer);
	n->timer = 0;
	if (t >= 0)
		n->timer = stage_add_timer(n->st, t, on_engine_timer, n);
}

static void
on_engine_fd(struct stage *st, int fd, short revents, void *arg)
{
	struct notifier *n = arg;

	notify_engine_dispatch(n->e);
	arm(n);
}

/* read_token - the configured fallback token (never logged) */
static void
read_token(struct notifier *n)
{
	const char *path = conf_get(stage_conf(n->st), "reload_token_file");
	char *tok;

	if (n->token != NULL) {
		explicit_bzero(n->token, strlen(n->token));
		free(n->token);
		n->token = NULL;
	}
	if (path == NULL || path[0] == '\0')
		return;
	if ((tok = read_file(path, NULL, 4096)) == NULL) {
		log_kv(LOG_WARN, "cannot read reload_token_file", "path", path,
		    "error", strerror(errno), NULL);
		return;
	}
	tok[strcspn(tok, "\r\n")] = '\0';
	n->token = tok;
}

static void
rollout_free(struct rollout *r)
{
	struct rollout **pp;

	for (pp = &r->n->rollouts; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	if (r->flush_timer > 0)
		stage_cancel_timer(r->n->st, r->flush_timer);
	store_list_free(&r->eps);
	free(r->ep_prefix);
	free(r->body);
	free(r->acked);
	free(r);
}

/* record_acks - every replica finished since the last call, in one transaction */
static void
record_acks(struct rollout *r)
{
	struct journal *j = stage_journal(r->n->st);
	size_t cnt = notify_job_count(r->job), todo = 0;

	for (size_t i = 0; i < cnt; i++) {
		if (!r->acked[i] && notify_job_result(r->job, i)->state != NOTIFY_PENDING)
			todo++;
	}
	if (todo == 0 || journal_begin(j) < 0)
		return;
	for (size_t i = 0; i < cnt; i++) {
		const struct notify_result *res = notify_job_result(r->job, i);
		char result[300];

		if (r->acked[i] || res->state == NOTIFY_PENDING)
			continue;
		if (res->state == NOTIFY_FAILED || res->state == NOTIFY_MISSING_TOKEN)
			snprintf(result, sizeof(result), "%s: %s",
			    notify_state_name(res->state), res->error);
		else
			snprintf(result, sizeof(result), "%s", notify_state_name(res->state));
		if (journal_record_ack(j, r->ns, r->name, notify_job_target(r->job, i)->id,
		    r->hash, r->timestamp, result) < 0) {
			journal_rollback(j);
			return;
		}
		r->acked[i] = 1;
	}
	if (journal_commit(j) < 0) {
		for (size_t i = 0; i < cnt; i++)
			r->acked[i] = 0;
		log_kv(LOG_WARN, "journal: cannot record replica answers", "error",
		    journal_error(j), NULL);
	}
}

static void
on_flush(struct stage *st, void *arg)
{
	struct rollout *r = arg;

	r->flush_timer = stage_add_timer(st, ACK_FLUSH_MS, on_flush, r);
	record_acks(r);
}

/* set_pods - PodsNotified (and fields, NULL: none) in the notifier's status fragment */
static void
set_pods(struct stage *st, const char *ns, const char *name, const char *fields,
    const char *status, const char *reason, const char *message)
{
	struct status_cond c = { "PodsNotified", status, reason, message };

	if (status_set(stage_store(st), stage_journal(st), "decofiles", ns, name, STAGE,
	    fields, &c, 1) < 0)
		log_kv(LOG_WARN, "cannot set PodsNotified", "ns", ns, "name", name,
		    "error", store_error(stage_store(st)), NULL);
}

/* on_job_done - every replica answered, gave up or went away */
static void
on_job_done(void *arg, struct notify_job *job)
{
	struct rollout *r = arg;
	struct stage *st = r->n->st;
	struct notify_summary s;
	char msg[2048], obj[600], fields[256], result[128];
	char *fails;

	record_acks(r);
	notify_job_summary(job, &s);
	metrics_replicas(1, (unsigned)s.confirmed);
	metrics_replicas(0, (unsigned)(s.failed + s.missing_token));
	journal_obj(obj, sizeof(obj), "decofile", r->ns, r->name);
	snprintf(result, sizeof(result), "confirmed=%zu failed=%zu gone=%zu missing_token=%zu",
	    s.confirmed, s.failed, s.gone, s.missing_token);
	snprintf(fields, sizeof(fields), "{\"notifiedHash\":\"%s\",\"notifiedReplicas\":%zu,"
	    "\"totalReplicas\":%zu}", r->hash, s.confirmed, notify_job_count(job) - s.gone);
	/* PodsNotified and the fields it speaks of in one write */
	if (s.failed == 0 && s.missing_token == 0) {
		snprintf(msg, sizeof(msg), "Successfully notified all pods for %s", r->id);
		set_pods(st, r->ns, r->name, fields, "True", "NotificationSucceeded", msg);
	} else {
		fails = notify_job_failures(job, FAIL_NAMES);
		snprintf(msg, sizeof(msg), "Failed to notify pods for %s: %zu of %zu failed: %s",
		    r->id, s.failed + s.missing_token, notify_job_count(job), fails);
		free(fails);
		set_pods(st, r->ns, r->name, fields, "False", s.missing_token > 0 ?
		    "MissingReloadToken" : "NotificationFailed", msg);
	}
	journal_audit(stage_journal(st), STAGE, obj, "notify", result);
	log_kv(s.failed || s.missing_token ? LOG_WARN : LOG_INFO, "rollout finished",
	    "object", obj, "change", r->id, "result", result, NULL);
	notify_job_free(job);
	r->job = NULL;
	stage_finish(st, r->item, STAGE_DONE, result);
	rollout_free(r);
}

/* endpoint_parse - fill t from an Endpoint record; 0 or -1 */
static int
endpoint_parse(const char *value, size_t len, struct notify_target *t, yajl_val *tree)
{
	const char *style;

	if ((*tree = json_parse(value, len, NULL)) == NULL)
		return -1;
	if ((t->url = json_get_str(*tree, "url", NULL)) == NULL) {
		yajl_tree_free(*tree);
		*tree = NULL;
		return -1;
	}
	if ((style = json_get_str(*tree, "style", NULL)) != NULL)
		t->style = strcmp(style, "poll") == 0 ? NOTIFY_POLL : NOTIFY_PUSH;
	t->ts_file = json_get_str(*tree, "tsFile", NULL);
	if (json_get_str(*tree, "token", NULL) != NULL)
		t->token = json_get_str(*tree, "token", NULL);
	return 0;
}

/*
 * resolve - before each try: a registered replica is looked up again (in
 * a listing at most EP_CACHE_MS old); absent means it went away.  Static
 * endpoints (their id is their URL) are tried as they are.
 */
static int
resolve(void *arg, struct notify_target *t)
{
	struct rollout *r = arg;
	struct store *s = stage_store(r->n->st);
	size_t plen = strlen(r->ep_prefix);
	static yajl_val tree;
	int rc;

	if (r->n->pods != NULL && (rc = notify_pods_resolve(r->n->pods, r->ns, t)) >= 0)
		return rc;
	if (strstr(t->id, "://") != NULL)
		return -1;
	if (now_ms() - r->eps_at > EP_CACHE_MS) {
		struct store_list l;

		if (store_list(s, r->ep_prefix, &l) < 0)
			return -1;
		store_list_free(&r->eps);
		r->eps = l;
		r->eps_at = now_ms();
	}
	/* the listing is sorted by key: binary search for prefix/id */
	for (size_t lo = 0, hi = r->eps.n; lo < hi;) {
		size_t mid = (lo + hi) / 2;
		const char *k = r->eps.kvs[mid].key;
		int c = strncmp(k, r->ep_prefix, plen);

		if (c == 0)
			c = k[plen] == '/' ? strcmp(k + plen + 1, t->id) : (k[plen] < '/' ? -1 : 1);
		if (c == 0) {
			struct notify_target nt = *t;

			/* the engine copies the strings before the next call */
			yajl_tree_free(tree);
			if (endpoint_parse(r->eps.kvs[mid].value, r->eps.kvs[mid].vlen, &nt,
			    &tree) < 0)
				return -1;
			if (nt.token == NULL)
				nt.token = r->n->token;
			if (nt.style == NOTIFY_POLL && (nt.ts_file == NULL || *nt.ts_file == '\0'))
				nt.ts_file = r->ts_default;
			*t = nt;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* build_body - {"decofile":<rendered>,"source":"operator","timestamp":"<ts>"} */
static char *
build_body(struct stage *st, const char *hash, int64_t ts, size_t *len, char *err,
    size_t errlen)
{
	char *doc;
	size_t dlen;
	struct buf b;

	if ((doc = spool_get(stage_spool(st), hash, &dlen)) == NULL) {
		snprintf(err, errlen, "rendered document %s is not in the spool: %s", hash,
		    strerror(errno));
		return NULL;
	}
	buf_init(&b);
	buf_grow(&b, dlen + 96);
	buf_adds(&b, "{\"decofile\":");
	buf_add(&b, doc, dlen);
	buf_printf(&b, ",\"source\":\"operator\",\"timestamp\":\"%lld\"}", (long long)ts);
	free(doc);
	return buf_steal(&b, len);
}

/* targets - registered endpoints then spec.endpoints; *tree_out keeps the strings */
static struct notify_target *
targets(struct rollout *r, yajl_val doc, enum notify_style style, size_t *count,
    yajl_val **trees, size_t *ntrees, char *err, size_t errlen)
{
	struct store *s = stage_store(r->n->st);
	struct notify_target *t;
	yajl_val eps = json_get(doc, "spec", "endpoints", NULL);
	size_t n = 0, cap, plen = strlen(r->ep_prefix);

	if (store_list(s, r->ep_prefix, &r->eps) < 0) {
		snprintf(err, errlen, "cannot list endpoints: %s", store_error(s));
		return NULL;
	}
	r->eps_at = now_ms();
	cap = r->eps.n + (YAJL_IS_ARRAY(eps) ? eps->u.array.len : 0);
	if (r->n->pods != NULL)
		cap += notify_pods_count(r->n->pods, r->ns, decofile_deployment_id(doc));
	t = xcalloc(cap ? cap : 1, sizeof(*t));
	*trees = xcalloc(cap ? cap : 1, sizeof(**trees));
	*ntrees = 0;
	for (size_t i = 0; i < r->eps.n; i++) {
		const struct store_kv *kv = &r->eps.kvs[i];
		yajl_val tree;

		if (strncmp(kv->key, r->ep_prefix, plen) != 0 || kv->key[plen] != '/' ||
		    strchr(kv->key + plen + 1, '/') != NULL)
			continue;
		t[n].style = style;
		t[n].id = kv->key + plen + 1;
		if (endpoint_parse(kv->value, kv->vlen, &t[n], &tree) < 0) {
			log_kv(LOG_WARN, "ignoring a malformed Endpoint record", "key", kv->key, NULL);
			continue;
		}
		(*trees)[(*ntrees)++] = tree;
		if (t[n].token == NULL)
			t[n].token = r->n->token;
		n++;
	}
	if (r->n->pods != NULL)
		n += notify_pods_fill(r->n->pods, r->ns, decofile_deployment_id(doc), style,
		    t + n, cap - n);
	for (size_t i = 0; YAJL_IS_ARRAY(eps) && i < eps->u.array.len; i++) {
		yajl_val e = eps->u.array.values[i];
		const char *url = YAJL_IS_STRING(e) ? YAJL_GET_STRING(e) :
		    json_get_str(e, "url", NULL);

		if (url == NULL)
			continue;
		t[n].id = url;
		t[n].url = url;
		t[n].style = style;
		t[n].ts_file = YAJL_IS_OBJECT(e) ? json_get_str(e, "tsFile", NULL) : NULL;
		t[n].token = r->n->token;
		n++;
	}
	/* a poll-era runtime answers 400 without tsFile: name the default */
	for (size_t i = 0; i < n; i++)
		if (t[i].style == NOTIFY_POLL && (t[i].ts_file == NULL || *t[i].ts_file == '\0'))
			t[i].ts_file = r->ts_default;
	*count = n;
	return t;
}

/*
 * ts_default - the tsFile of a poll replica that names none (SPEC §4.4): for
 * the file target the published timestamp.txt, else <mount dir>/timestamp.txt
 * with the webhook's default mount dir
 */
static void
ts_default(struct stage *st, const char *ns, const char *name, char *out, size_t len)
{
	yajl_val f = status_get_fragment(stage_store(st), "decofiles", ns, name, "publisher");
	const char *loc = json_get_str(f, "location", NULL), *slash;

	if (loc != NULL && strncmp(loc, "file://", 7) == 0 && (slash = strrchr(loc, '/')) != NULL &&
	    slash > loc + 7)
		snprintf(out, len, "%.*s/timestamp.txt", (int)(slash - (loc + 7)), loc + 7);
	else
		snprintf(out, len, "%s", NOTIFY_PODS_TS_FILE);
	yajl_tree_free(f);
}

static enum stage_result
on_item(struct stage *st, const struct journal_item *it)
{
	struct notifier *n = stage_data(st);
	struct conf *cf = stage_conf(st);
	struct notify_params p;
	struct notify_target *t;
	struct rollout *r, *old;
	yajl_val doc = NULL, *trees = NULL;
	size_t count = 0, ntrees = 0;
	char err[512], msg[1024], fields[256];
	struct proto_notify_detail nd;
	const char *style;
	enum notify_style stl = NOTIFY_PUSH;
	int rv, push = 0;

	if (strcmp(it->kind, "decofile") != 0) {
		stage_item_error(st, "notifier handles decofile items only");
		return STAGE_FAIL;
	}
	if (n->pods != NULL && !notify_pods_synced(n->pods)) {
		stage_item_error(st, "waiting for the first list of pods");
		return STAGE_RETRY;
	}
	if (proto_notify_detail_decode(it->detail, &nd, err, sizeof(err)) < 0) {
		stage_item_error(st, err);
		return STAGE_FAIL;
	}
	rv = resource_get(stage_store(st), "decofiles", it->ns, it->name, &doc, err, sizeof(err));
	if (rv == 1)
		return STAGE_DONE;	/* deleted meanwhile: nobody to tell */
	if (rv < 0) {
		stage_item_error(st, err);
		return STAGE_RETRY;
	}
	if (json_get_bool(doc, 0, "spec", "silent", NULL)) {
		yajl_tree_free(doc);
		return STAGE_DONE;
	}

	r = xcalloc(1, sizeof(*r));
	r->n = n;
	r->item = it->id;
	snprintf(r->ns, sizeof(r->ns), "%s", it->ns);
	snprintf(r->name, sizeof(r->name), "%s", it->name);
	snprintf(r->hash, sizeof(r->hash), "%s", it->hash);
	r->timestamp = nd.timestamp;
	if (nd.commit[0] != '\0')
		snprintf(r->id, sizeof(r->id), "commit:%s", nd.commit);
	else
		snprintf(r->id, sizeof(r->id), "timestamp:%lld", (long long)r->timestamp);

	/* a newer change of the same decofile supersedes the rollout in flight */
	for (old = n->rollouts; old != NULL; old = old->next) {
		if (strcmp(old->ns, r->ns) == 0 && strcmp(old->name, r->name) == 0)
			break;
	}
	if (old != NULL) {
		log_kv(LOG_INFO, "superseding the rollout in flight", "ns", old->ns,
		    "name", old->name, "old", old->id, "new", r->id, NULL);
		record_acks(old);
		notify_job_cancel(old->job);
		old->job = NULL;
		stage_finish(st, old->item, STAGE_DONE, "superseded");
		rollout_free(old);
	}

	if ((style = json_get_str(doc, "spec", "notify", "style", NULL)) != NULL &&
	    strcmp(style, "poll") == 0)
		stl = NOTIFY_POLL;
	ts_default(st, r->ns, r->name, r->ts_default, sizeof(r->ts_default));
	r->ep_prefix = key_endpoint_prefix(r->ns, decofile_deployment_id(doc));
	/* compare keys against "<prefix>" + "/" + id */
	if (r->ep_prefix[0] != '\0' && r->ep_prefix[strlen(r->ep_prefix) - 1] == '/')
		r->ep_prefix[strlen(r->ep_prefix) - 1] = '\0';
	if ((t = targets(r, doc, stl, &count, &trees, &ntrees, err, sizeof(err))) == NULL) {
		stage_item_error(st, err);
		yajl_tree_free(doc);
		rollout_free(r);
		return STAGE_RETRY;
	}
	/*
	 * which version PodsNotified now speaks of, and how many replicas this
	 * rollout has (`decoctl wait` reads both)
	 */
	snprintf(fields, sizeof(fields), "{\"notifiedHash\":\"%s\",\"notifiedReplicas\":0,"
	    "\"totalReplicas\":%zu}", r->hash, count);
	for (size_t i = 0; i < count; i++)
		push |= t[i].style == NOTIFY_PUSH;
	/* the condition with these fields: one status write per step */
	if (push && (r->body = build_body(st, r->hash, r->timestamp, &r->body_len, err,
	    sizeof(err))) == NULL) {
		snprintf(msg, sizeof(msg), "Failed to notify pods for %s: %s", r->id, err);
		set_pods(st, r->ns, r->name, fields, "False", "NotificationFailed", msg);
		stage_item_error(st, err);
		rv = STAGE_FAIL;
		goto out;
	}
	if (count == 0) {
		snprintf(msg, sizeof(msg), "Successfully notified all pods for %s", r->id);
		set_pods(st, r->ns, r->name, fields, "True", "NotificationSucceeded", msg);
		rv = STAGE_DONE;
		goto out;
	}
	snprintf(msg, sizeof(msg), "Notifying pods for %s", r->id);
	set_pods(st, r->ns, r->name, fields, "Unknown", "NotificationInProgress", msg);

	notify_params_default(&p);
	p.concurrency = (int)json_get_int(doc, conf_get_int(cf, "notify_concurrency"),
	    "spec", "notify", "concurrency", NULL);
	p.attempt_timeout_ms = conf_get_ms(cf, "notify_timeout");
	p.attempts = (int)conf_get_int(cf, "notify_attempts");
	p.poll_timeout_ms = conf_get_ms(cf, "notify_poll_timeout");
	p.deadline_ms = conf_get_ms(cf, "notify_deadline");
	if (p.connect_timeout_ms > p.attempt_timeout_ms)
		p.connect_timeout_ms = p.attempt_timeout_ms;
	r->acked = xcalloc(count, 1);
	r->job = notify_job_start(n->e, t, count, r->body, r->body_len, r->timestamp, &p,
	    resolve, on_job_done, r);
	r->next = n->rollouts;
	n->rollouts = r;
	r->flush_timer = stage_add_timer(st, ACK_FLUSH_MS, on_flush, r);
	log_kv(LOG_INFO, "notifying", "ns", r->ns, "name", r->name, "change", r->id,
	    "replicas", (snprintf(err, sizeof(err), "%zu", count), err), NULL);
	arm(n);
	r = NULL;
	rv = STAGE_ASYNC;
out:
	for (size_t i = 0; i < ntrees; i++)
		yajl_tree_free(trees[i]);
	free(trees);
	free(t);
	yajl_tree_free(doc);
	if (r != NULL)
		rollout_free(r);
	return (enum stage_result)rv;
}

static int
notifier_init(struct stage *st)
{
	struct notifier *n = xcalloc(1, sizeof(*n));

	n->st = st;
	if ((n->e = notify_engine_new()) == NULL) {
		log_kv(LOG_ERROR, "cannot create the notify engine", "error", strerror(errno), NULL);
		free(n);
		return -1;
	}
	if (stage_add_fd(st, notify_engine_fd(n->e), POLLIN, on_engine_fd, n) < 0) {
		notify_engine_free(n->e);
		free(n);
		return -1;
	}
	read_token(n);
	stage_set_data(st, n);
	{
		char kerr[512];

		if ((n->pods = notify_pods_new(st, kerr, sizeof(kerr))) == NULL && kerr[0] != '\0') {
			log_kv(LOG_ERROR, "Kubernetes configuration", "error", kerr, NULL);
			return -1;
		}
	}
	return 0;
}

static int
notifier_reload(struct stage *st)
{
	read_token(stage_data(st));
	return 0;
}

static void
notifier_shutdown(struct stage *st)
{
	struct notifier *n = stage_data(st);

	if (n == NULL)
		return;
	/* unfinished rollouts stay pending in the journal: the next run redoes them */
	while (n->rollouts != NULL) {
		struct rollout *r = n->rollouts;

		record_acks(r);
		notify_job_cancel(r->job);
		rollout_free(r);
	}
	notify_pods_free(n->pods);
	stage_del_fd(st, notify_engine_fd(n->e));
	notify_engine_free(n->e);
	if (n->token != NULL)
		explicit_bzero(n->token, strlen(n->token));
	free(n->token);
	free(n);
	stage_set_data(st, NULL);
}

static const struct stage_ops ops = {
	.name = STAGE,
	.use_store = 1,
	.init = notifier_init,
	.on_item = on_item,
	.reload = notifier_reload,
	.shutdown = notifier_shutdown,
	.max_async = 16,
	.batch = 1,		/* one journal commit per batch of items, not one per item */
};

int
main(int argc, char **argv)
{
	return stage_main(argc, argv, &ops);
}
