/*
 * cli_wait - decoctl wait: block until a decofile's change has reached
 * every replica, it failed, or time ran out.  The store watch on the
 * status prefix (and on the resource) is made before the first read, so a
 * change landing between read and watch cannot be missed.  Status that
 * predates the awaited change is told apart by generation, the newest
 * render in the journal, and PodsNotified's transition time against the
 * publish timestamp.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"

#define WAIT_DEFAULT_MS 60000

enum want_kind { WANT_READY, WANT_COMMIT, WANT_TIMESTAMP, WANT_SYNCED };
enum verdict { V_PENDING, V_DONE, V_FAILED };

struct want {
	enum want_kind kind;
	char sha[65];
	int64_t ts;
	int64_t sync_req;	/* synced, timestamp: the nonce of the newest `decoctl sync` */
};

struct cond {
	const char *status, *reason, *message;
	int64_t transition_s;	/* lastTransitionTime, 0 unknown */
};

static void
on_event(void *arg, const struct store_event *ev)
{
	(void)ev;
	*(int *)arg = 1;
}

static int
parse_for(const char *s, struct want *w)
{
	char *end;

	memset(w, 0, sizeof(*w));
	if (strcmp(s, "ready") == 0 || strcmp(s, "condition=Ready") == 0) {
		w->kind = WANT_READY;
		return 0;
	}
	if (strcmp(s, "synced") == 0) {
		w->kind = WANT_SYNCED;
		return 0;
	}
	if (strncmp(s, "commit:", 7) == 0) {
		size_t n = strlen(s + 7);

		if (n < 4 || n > 64 || strspn(s + 7, "0123456789abcdefABCDEF") != n)
			return -1;
		w->kind = WANT_COMMIT;
		for (size_t i = 0; i <= n; i++)
			w->sha[i] = (char)(s[7 + i] >= 'A' && s[7 + i] <= 'F' ? s[7 + i] + 32 :
			    s[7 + i]);
		return 0;
	}
	if (strncmp(s, "timestamp:", 10) == 0) {
		errno = 0;
		w->ts = strtoll(s + 10, &end, 10);
		if (errno || end == s + 10 || *end != '\0' || w->ts < 0)
			return -1;
		w->kind = WANT_TIMESTAMP;
		return 0;
	}
	return -1;
}

static void
get_cond(yajl_val st, const char *type, struct cond *c)
{
	yajl_val v = cli_condition(st, type);
	int64_t ms;

	c->status = json_get_str(v, "status", NULL);
	c->reason = json_get_str(v, "reason", NULL);
	c->message = json_get_str(v, "message", NULL);
	c->transition_s = cli_parse_time(json_get_str(v, "lastTransitionTime", NULL), &ms) == 0 ?
	    ms / 1000 : 0;
	if (c->status == NULL)
		c->status = "";
	if (c->reason == NULL)
		c->reason = "";
	if (c->message == NULL)
		c->message = "";
}

/* newest_render - the newest rendered content hash in the journal ("" if unknown) */
static void
newest_render(struct journal *j, const char *ns, const char *name, char *hash)
{
	char format[16];

	hash[0] = '\0';
	if (j == NULL || journal_last_render(j, ns, name, hash, format, NULL) != 0)
		hash[0] = '\0';
}

/* count_acks - replicas confirmed on hash, and replicas seen in the last day */
static void
count_acks(struct journal *j, const char *ns, const char *name, const char *hash,
    int *done, int *total)
{
	*done = *total = 0;
	if (j != NULL)
		(void)journal_acks_count(j, ns, name, hash, done, total);
}

/* has_id - message names the change: "...for commit:<sha>..." or "timestamp:<n>" */
static int
has_id(const char *message, const char *kind, const char *id)
{
	char needle[96];
	const char *p;

	snprintf(needle, sizeof(needle), "%s:%s", kind, id);
	if ((p = strstr(message, needle)) == NULL)
		return 0;
	if (strcmp(kind, "timestamp") == 0) {	/* a whole number, not a prefix */
		char next = p[strlen(needle)];

		return !(next >= '0' && next <= '9');
	}
	return 1;
}

/*
 * refused - a fetch or render (Syncing) or the target (Ready) said False at
 * or after since_s (unix s; 0: whenever): the newest attempt failed, so
 * the change cannot arrive until someone fixes it.  "Reason: message" into
 * why.
 */
static int
refused(const struct cond *sync, const struct cond *ready, int64_t since_s, char *why,
    size_t len)
{
	const struct cond *c = strcmp(sync->status, "False") == 0 ? sync :
	    strcmp(ready->status, "False") == 0 ? ready : NULL;

	if (c == NULL || (since_s > 0 && c->transition_s < since_s))
		return 0;
	snprintf(why, len, "%s=False %s: %s", c == sync ? "Syncing" : "Ready", c->reason,
	    c->message);
	return 1;
}

/*
 * evaluate - where the rollout stands; on V_FAILED *why points at the
 * message to print.  busy: the journal holds a pending item for the
 * decofile (a fetch handed on, not yet rendered, published or notified).
 * handled: the newest sync request the fetcher answered, as read before
 * the journal; st: the status as read after it (see cli_wait).
 */
static enum verdict
evaluate(const struct want *w, yajl_val doc, yajl_val st, const char *newest, int busy,
    int64_t handled, const char **why)
{
	static char whybuf[1200];
	struct cond pods, sync, ready;
	const char *hash = json_get_str(st, "contentHash", NULL);
	const char *commit = json_get_str(st, "githubCommit", NULL);
	int64_t gen = json_get_int(doc, 0, "metadata", "generation", NULL);
	int64_t ts = json_get_int(st, 0, "timestamp", NULL);
	int silent = json_get_bool(doc, 0, "spec", "silent", NULL);
	int stale_gen, pods_current, notified, pods_failed, live;
	char tsid[32];

	get_cond(st, "PodsNotified", &pods);
	get_cond(st, "Syncing", &sync);
	get_cond(st, "Ready", &ready);
	stale_gen = json_get(st, "observedGeneration", NULL) != NULL &&
	    json_get_int(st, 0, "observedGeneration", NULL) < gen;
	/*
	 * Does PodsNotified speak of the published version?  The notifier says
	 * which content hash its condition is about (notifiedHash); without it,
	 * a PodsNotified older than the last publish speaks of an earlier change.
	 * (Times alone cannot tell: publish timestamps only ever increase, so
	 * several publishes within a second run ahead of the clock.)
	 */
	{
		const char *nh = json_get_str(st, "notifiedHash", NULL);

		if (nh != NULL && hash != NULL)
			pods_current = strcmp(nh, hash) == 0;
		else
			pods_current = pods.transition_s == 0 || ts == 0 ||
			    pods.transition_s >= ts;
	}
	notified = silent || (strcmp(pods.status, "True") == 0 && pods_current);
	pods_failed = !silent && strcmp(pods.status, "False") == 0 && pods_current;
	snprintf(tsid, sizeof(tsid), "%lld", (long long)ts);
	/* the newest render is published, current and notified everywhere */
	live = !stale_gen && hash != NULL && !(newest[0] && strcmp(hash, newest) != 0) &&
	    strcmp(ready.status, "True") == 0 && notified;

	if (json_get_bool(doc, 0, "spec", "suspend", NULL)) {
		*why = "Suspended: the decofile is suspended (spec.suspend): nothing new is "
		    "fetched or published until it is resumed";
		return V_FAILED;
	}
	switch (w->kind) {
	case WANT_READY:
		if (!stale_gen && refused(&sync, &ready, 0, whybuf, sizeof(whybuf))) {
			*why = whybuf;
			return V_FAILED;
		}
		if (stale_gen || hash == NULL || (newest[0] && strcmp(hash, newest) != 0))
			return V_PENDING;
		if (pods_failed) {
			*why = pods.message;
			return V_FAILED;
		}
		return strcmp(ready.status, "True") == 0 && notified ? V_DONE : V_PENDING;
	case WANT_COMMIT:
		if (commit == NULL || strncasecmp(commit, w->sha, strlen(w->sha)) != 0)
			return V_PENDING;
		if (strcmp(sync.status, "False") == 0) {
			const char *rc = json_get_str(st, "renderedCommit", NULL);

			/* the renderer's verdict on an earlier commit: not ours yet */
			if (rc != NULL && *rc && strncasecmp(rc, w->sha, strlen(w->sha)) != 0)
				return V_PENDING;
			*why = sync.message;
			return V_FAILED;
		}
		if (strcmp(ready.status, "False") == 0) {
			const char *rc = json_get_str(st, "renderedCommit", NULL);

			/* the target refused what was rendered from this commit */
			if (rc != NULL && strncasecmp(rc, w->sha, strlen(w->sha)) == 0 &&
			    refused(&sync, &ready, 0, whybuf, sizeof(whybuf))) {
				*why = whybuf;
				return V_FAILED;
			}
		}
		if (pods_failed && (has_id(pods.message, "commit", w->sha) ||
		    strstr(pods.message, "commit:") == NULL)) {
			*why = pods.message;
			return V_FAILED;
		}
		if (silent)
			return ts > 0 ? V_DONE : V_PENDING;
		return notified && strcmp(pods.reason, "NotificationSucceeded") == 0 &&
		    has_id(pods.message, "commit", w->sha) ? V_DONE : V_PENDING;
	case WANT_SYNCED:
		/* the fetcher answered the request, and what it handed on is through */
		if (handled < w->sync_req || busy)
			return V_PENDING;
		if (refused(&sync, &ready, 0, whybuf, sizeof(whybuf))) {
			*why = whybuf;
			return V_FAILED;
		}
		if (pods_failed && !stale_gen) {
			*why = pods.message;
			return V_FAILED;
		}
		return live ? V_DONE : V_PENDING;
	case WANT_TIMESTAMP:
		if (ts < w->ts) {
			/* a failure since N: the newest attempt at the change failed */
			if (refused(&sync, &ready, w->ts, whybuf, sizeof(whybuf))) {
				*why = whybuf;
				return V_FAILED;
			}
			/*
			 * the newest sync, requested at or after N, found nothing new
			 * to publish: the source as of N is what is live.  Only the
			 * newest: N has whole seconds, so an earlier sync in N's second
			 * may have come before the change (edit, sync, wait).
			 */
			return handled >= w->ts * 1000 && handled >= w->sync_req && !busy && live &&
			    strcmp(sync.status, "False") != 0 ? V_DONE : V_PENDING;
		}
		if (pods_failed) {
			*why = pods.message;
			return V_FAILED;
		}
		if (!notified)
			return V_PENDING;
		/* for sources without commits the message names the timestamp */
		if (!silent && strstr(pods.message, "timestamp:") != NULL &&
		    !has_id(pods.message, "timestamp", tsid))
			return V_PENDING;
		return V_DONE;
	}
	return V_PENDING;
}

/*
 * sync_requested - the nonce of the newest `decoctl sync` of ns/name into
 * *req: 0 found, 1 none, -1 error (printed)
 */
static int
sync_requested(struct cli *c, const char *name, int64_t *req)
{
	char *key = key_sync(c->ns, name), *v = NULL, *end;
	size_t len;
	int rc = store_get(c->st, key, &v, &len);

	free(key);
	if (rc < 0) {
		cli_error("cannot read the sync trigger: %s", store_error(c->st));
		return -1;
	}
	if (rc == 0) {
		*req = strtoll(v, &end, 10);
		if (end == v || *end != '\0' || *req <= 0)
			rc = 1;
	}
	free(v);
	return rc == 0 ? 0 : 1;
}

/* progress_line - one line saying where things stand */
static void
progress_line(yajl_val st, int done, int total, char *out, size_t len)
{
	struct cond pods;

	get_cond(st, "PodsNotified", &pods);
	snprintf(out, len, "notified %d/%d  commit %s  hash %s  PodsNotified=%s%s%s", done,
	    total < done ? done : total, cli_short(json_get_str(st, "githubCommit", NULL), 7),
	    cli_short(json_get_str(st, "contentHash", NULL), 12),
	    pods.status[0] ? pods.status : "-", pods.reason[0] ? " " : "", pods.reason);
}

int
cli_wait(struct cli *c)
{
	const char *name = c->argv[0];
	struct store_watch *ws = NULL, *wr = NULL;
	struct journal *j;
	struct want w;
	char *key, err[512], last[512] = "", line[512], newest[65];
	int64_t deadline;
	int dirty = 1, tty = cli_escapes_ok(), rc = CLI_FAIL, got;
	yajl_val doc = NULL, st = NULL, st0;

	if (c->wait_for == NULL)
		return cli_usage_error(c, "wait needs --for ready|synced|commit:SHA|timestamp:N");
	if (parse_for(c->wait_for, &w) < 0)
		return cli_usage_error(c, "bad --for \"%s\" (ready, synced, commit:SHA with 4-64 "
		    "hex digits, or timestamp:N)", c->wait_for);
	if (cli_store(c) == NULL)
		return CLI_FAIL;
	if (w.kind == WANT_SYNCED && (got = sync_requested(c, name, &w.sync_req)) != 0)
		return got < 0 ? CLI_FAIL : cli_error("no sync was requested for decofile/%s "
		    "(run `decoctl sync %s` first)", name, name);
	if (w.kind == WANT_TIMESTAMP && (got = sync_requested(c, name, &w.sync_req)) != 0) {
		if (got < 0)
			return CLI_FAIL;
		w.sync_req = 0;		/* no sync: only status.timestamp can meet N */
	}
	deadline = now_ms() + (c->timeout_ms >= 0 ? c->timeout_ms : WAIT_DEFAULT_MS);
	/* watch first, read second: nothing can slip between the two */
	key = key_status_prefix("decofiles", c->ns, name);
	ws = store_watch_new(c->st, key, 0, on_event, &dirty);
	free(key);
	key = key_resource("decofiles", c->ns, name);
	wr = ws ? store_watch_new(c->st, key, 0, on_event, &dirty) : NULL;
	free(key);
	if (ws == NULL || wr == NULL) {
		rc = cli_error("cannot watch the store: %s", store_error(c->st));
		goto out;
	}
	j = cli_journal_open(c, 1);
	for (;;) {
		const char *why = NULL;
		struct pollfd pfd[2];
		enum verdict v;
		int64_t left;
		int done = 0, total = 0, nfd = 0, tmo, busy;
		int64_t handled;

		if (doc)
			yajl_tree_free(doc);
		if (st)
			yajl_tree_free(st);
		st = NULL;
		dirty = 0;
		got = resource_get(c->st, "decofiles", c->ns, name, &doc, err, sizeof(err));
		if (got != 0) {
			doc = NULL;
			rc = got == 1 ? cli_not_found("decofiles", name) : cli_error("%s", err);
			goto out;
		}
		/*
		 * Status, journal, status again.  The fetcher commits what a sync
		 * handed on before it says the sync was handled, so the journal read
		 * after the first status holds that work; a stage says a refusal
		 * before its item settles, so the status read after the journal
		 * holds the verdict on every item the journal saw settled.  One read
		 * of each would pair a stale verdict with a settled item.
		 */
		st0 = cli_merged_status(c, "decofiles", c->ns, name);
		handled = json_get_int(st0, 0, "lastHandledSyncAt", NULL);
		yajl_tree_free(st0);
		newest_render(j, c->ns, name, newest);
		busy = j != NULL && journal_pending_for(j, NULL, c->ns, name) == 1;
		st = cli_merged_status(c, "decofiles", c->ns, name);
		v = evaluate(&w, doc, st, newest, busy, handled, &why);
		count_acks(j, c->ns, name, json_get_str(st, "contentHash", NULL), &done, &total);
		{
			/* the notifier's own count of this rollout's replicas, when it has one */
			const char *nh = json_get_str(st, "notifiedHash", NULL);
			const char *ch = json_get_str(st, "contentHash", NULL);

			if (nh != NULL && ch != NULL && strcmp(nh, ch) == 0 &&
			    json_get(st, "totalReplicas", NULL) != NULL)
				total = (int)json_get_int(st, 0, "totalReplicas", NULL);
		}
		progress_line(st, done, total, line, sizeof(line));
		if (strcmp(line, last) != 0) {
			if (tty)
				printf("\r\033[K%s", line);
			else
				printf("%s\n", line);
			fflush(stdout);
			snprintf(last, sizeof(last), "%s", line);
		}
		if (v != V_PENDING) {
			if (tty)
				printf("\n");
			if (v == V_DONE) {
				printf("decofile/%s condition met (%s)\n", name, c->wait_for);
				rc = CLI_OK;
			} else {
				rc = cli_error("decofile/%s: %s", name, why && *why ? why :
				    "the rollout failed");
			}
			goto out;
		}
		left = deadline - now_ms();
		if (left <= 0) {
			if (tty)
				printf("\n");
			fflush(stdout);
			cli_status_message(st, line, sizeof(line));
			fprintf(stderr, "error: timed out waiting for decofile/%s (--for %s); "
			    "last: %s%s%s\n", name, c->wait_for, last, line[0] ? "; " : "", line);
			rc = CLI_TIMEOUT;
			goto out;
		}
		tmo = left < 1000 ? (int)left : 1000;	/* the journal has no watch: re-read */
		if (store_watch_timeout_ms(ws) >= 0 && store_watch_timeout_ms(ws) < tmo)
			tmo = store_watch_timeout_ms(ws);
		if (store_watch_timeout_ms(wr) >= 0 && store_watch_timeout_ms(wr) < tmo)
			tmo = store_watch_timeout_ms(wr);
		if (store_watch_fd(ws) >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = store_watch_fd(ws), .events = POLLIN };
		if (store_watch_fd(wr) >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = store_watch_fd(wr), .events = POLLIN };
		/* wake on an event, or after a second to re-read the journal */
		if (poll(pfd, (nfds_t)nfd, tmo) < 0 && errno != EINTR) {
			rc = cli_error("poll: %s", strerror(errno));
			goto out;
		}
		if (store_watch_dispatch(ws) < 0 || store_watch_dispatch(wr) < 0) {
			rc = cli_error("watch: %s", store_error(c->st));
			goto out;
		}
	}
out:
	if (doc)
		yajl_tree_free(doc);
	if (st)
		yajl_tree_free(st);
	store_watch_free(ws);
	store_watch_free(wr);
	return rc;
}
