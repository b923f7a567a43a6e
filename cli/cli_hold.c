/*
 * cli_hold - steering one decofile: suspend, resume, rollback, and the
 * versions a rollback can go back to (history --versions).  decoctl only
 * writes the decofile's hold (spec.suspend, the deco.sites/rollback-to
 * annotation) to the store, where the fetcher acts on it; in a cluster the
 * same hold is written on the CR with kubectl (doc/decoctl.md).  Every
 * action is an audit row in the journal with who ran it and --reason.
 */
#include "config.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/spool.h"
#include "common/store.h"

/* who - "user (uid N)", with the sudo user when there is one, into out */
static void
who(char *out, size_t len)
{
	struct passwd *pw = getpwuid(getuid());
	const char *sudo = getenv("SUDO_USER");

	snprintf(out, len, "%s(uid %u%s%s)", pw != NULL ? pw->pw_name : "?",
	    (unsigned)getuid(), sudo != NULL && *sudo ? ", sudo by " : "",
	    sudo != NULL && *sudo ? sudo : "");
}

/*
 * audit - the action's row: "by=WHO reason=TEXT[ extra]".  The reason is
 * kept to one line.  CLI_OK, or CLI_FAIL with the message printed.
 */
static int
audit(struct cli *c, const char *action, const char *extra)
{
	char by[300], obj[JOURNAL_OBJ_MAX], *detail;
	int rc;

	who(by, sizeof(by));
	detail = xasprintf("by=%s reason=%s%s%s", by, c->reason ? c->reason : "-",
	    extra ? " " : "", extra ? extra : "");
	for (char *p = detail; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	journal_obj(obj, sizeof(obj), "decofile", c->ns, c->argv[0]);
	rc = journal_audit(c->j, "decoctl", obj, action, detail);
	free(detail);
	if (rc < 0)
		return cli_error("the change is made but not journaled: %s", journal_error(c->j));
	return CLI_OK;
}

/*
 * load - the decofile named on the command line, with the journal open
 * (the audit log needs it before anything changes).  CLI_OK with *doc,
 * else the exit code (message printed).
 */
static int
load(struct cli *c, yajl_val *doc)
{
	char err[512];
	int rc;

	if (c->reason != NULL && strlen(c->reason) > 500)
		return cli_usage_error(c, "--reason is longer than 500 characters");
	if (cli_store(c) == NULL || cli_journal_open(c, 0) == NULL)
		return CLI_FAIL;
	rc = resource_get(c->st, "decofiles", c->ns, c->argv[0], doc, err, sizeof(err));
	if (rc < 0)
		return cli_error("%s", err);
	if (rc == 1)
		return cli_not_found("decofiles", c->argv[0]);
	if (resource_mirror_uid(*doc) != NULL) {
		yajl_tree_free(*doc);
		return cli_error("decofile %s mirrors the Decofile CR %s/%s: change the CR with "
		    "kubectl (spec.suspend, the annotation %s; see decoctl(1))", c->argv[0], c->ns,
		    c->argv[0], DECOFILE_ROLLBACK_ANNOTATION);
	}
	return CLI_OK;
}

/* put_hold - write doc with its hold changed; CLI_OK or CLI_FAIL */
static int
put_hold(struct cli *c, yajl_val doc, int suspend, const char *rollback_to)
{
	yajl_val held = resource_hold_doc(doc, suspend, rollback_to);
	char err[512];
	int rc;

	if (held == NULL)
		return cli_error("decofile %s has no metadata or spec object", c->argv[0]);
	rc = resource_put(c->st, held, c->ns, NULL, NULL, NULL, NULL, err, sizeof(err));
	yajl_tree_free(held);
	return rc < 0 ? cli_error("%s", err) : CLI_OK;
}

int
cli_suspend(struct cli *c)
{
	int on = strcmp(c->cmd, "suspend") == 0;
	yajl_val doc;
	int rc;

	if ((rc = load(c, &doc)) != CLI_OK)
		return rc;
	if (decofile_suspended(doc) == on) {
		yajl_tree_free(doc);
		printf("decofile/%s already %s\n", c->argv[0], on ? "suspended" : "running");
		return CLI_OK;
	}
	rc = put_hold(c, doc, on, NULL);
	yajl_tree_free(doc);
	if (rc == CLI_OK)
		rc = audit(c, on ? "suspend" : "resume", NULL);
	if (rc == CLI_OK)
		printf("decofile/%s %s\n", c->argv[0], on ? "suspended" :
		    "resumed (its newest version is published again, then it is fetched)");
	return rc;
}

/* blobs_kept - the version's blobs are still in the spool */
static int
blobs_kept(struct spool *sp, const struct journal_version *v)
{
	return sp != NULL && spool_has(sp, v->content_hash) &&
	    (strcmp(v->format, "bin") != 0 || spool_has(sp, v->bin_hash));
}

/* the spool beside the journal (it exists when the journal does) */
static struct spool *
cli_spool(struct cli *c)
{
	char *path = xasprintf("%s/spool", conf_get(c->cf, "state_dir"));
	struct spool *sp = access(path, R_OK | X_OK) == 0 ? spool_open(path) : NULL;

	free(path);
	return sp;
}

/* where the live version stands among the versions */
struct live {
	const char *hash;
	int index;
};

static void
live_row(void *arg, const struct journal_version *v)
{
	struct live *l = arg;

	if (l->hash != NULL && strcmp(v->content_hash, l->hash) == 0)
		l->index = v->index;
}

/*
 * resolve - the version --to names, or the one --steps (default 1) back
 * from the live one, among the newest history_keep, with its blobs still
 * in the spool and not live already.  CLI_OK with *v, else the exit code.
 */
static int
resolve(struct cli *c, const char *live, int steps, struct journal_version *v)
{
	int keep = (int)conf_get_int(c->cf, "history_keep"), rc;
	struct live l = { live, 0 };
	struct spool *sp;

	if (c->to == NULL && journal_versions_each(c->j, c->ns, c->argv[0], keep, live_row,
	    &l) < 0)
		return cli_error("journal: %s", journal_error(c->j));
	rc = journal_version_find(c->j, c->ns, c->argv[0], c->to, l.index + steps, keep, v);
	if (rc < 0)
		return cli_error("journal: %s", journal_error(c->j));
	if (rc == 2)
		return cli_error("--to %s names more than one version: give more digits", c->to);
	if (rc == 1 && c->to != NULL)
		return cli_error("decofile %s has no version %s among its newest %d (see "
		    "decoctl history %s --versions)", c->argv[0], c->to, keep, c->argv[0]);
	if (rc == 1)
		return cli_error("decofile %s has no version %d back among its newest %d (see "
		    "decoctl history %s --versions)", c->argv[0], steps, keep, c->argv[0]);
	sp = cli_spool(c);
	rc = blobs_kept(sp, v);
	spool_close(sp);
	if (!rc)
		return cli_error("version %.12s of decofile %s is no longer in the spool",
		    v->content_hash, c->argv[0]);
	if (live != NULL && strcmp(live, v->content_hash) == 0)
		return cli_error("version %.12s of decofile %s is the live one already",
		    v->content_hash, c->argv[0]);
	return CLI_OK;
}

int
cli_rollback(struct cli *c)
{
	struct journal_version v;
	yajl_val doc, st;
	char extra[400];
	int steps = 1, rc;

	if (c->to != NULL && c->steps != NULL)
		return cli_usage_error(c, "give --to or --steps, not both");
	if (c->steps != NULL && (strspn(c->steps, "0123456789") != strlen(c->steps) ||
	    (steps = atoi(c->steps)) < 1))
		return cli_usage_error(c, "bad --steps \"%s\" (a number from 1)", c->steps);
	if (c->to != NULL && (strlen(c->to) < 4 || strlen(c->to) > 64 ||
	    strspn(c->to, "0123456789abcdef") != strlen(c->to)))
		return cli_usage_error(c, "bad --to \"%s\" (a content hash or its first digits, "
		    "at least 4, lower-case hex)", c->to);
	if ((rc = load(c, &doc)) != CLI_OK)
		return rc;
	st = cli_merged_status(c, "decofiles", c->ns, c->argv[0]);
	rc = resolve(c, json_get_str(st, "contentHash", NULL), steps, &v);
	if (rc == CLI_OK)
		rc = put_hold(c, doc, 1, v.content_hash);
	if (rc == CLI_OK) {
		snprintf(extra, sizeof(extra), "to=%s commit=%s", v.content_hash,
		    v.commit[0] ? v.commit : "-");
		rc = audit(c, "rollback", extra);
	}
	if (rc == CLI_OK)
		printf("decofile/%s rolled back to %.12s (commit %.12s, rendered %s); "
		    "suspended until: decoctl resume %s\n", c->argv[0], v.content_hash,
		    v.commit[0] ? v.commit : "-", v.at, c->argv[0]);
	yajl_tree_free(st);
	yajl_tree_free(doc);
	return rc;
}

/* what a --versions listing fills */
struct vout {
	const char *live;
	struct spool *sp;
	struct table *t;
	struct jw *w;
};

static void
version_row(void *arg, const struct journal_version *v)
{
	struct vout *o = arg;
	const char *state = o->live != NULL && strcmp(o->live, v->content_hash) == 0 ? "live" :
	    blobs_kept(o->sp, v) ? "rollback-able" : "gone";
	char idx[16], when[40], size[32];

	snprintf(idx, sizeof(idx), "%d", v->index);
	snprintf(size, sizeof(size), "%lld", (long long)v->size);
	cli_sql_time(v->at, when, sizeof(when));
	table_row(o->t, idx, cli_short(v->content_hash, 12), cli_short(v->commit, 12), when,
	    v->format, size, state);
	jw_obj(o->w);
	jw_key(o->w, "index");
	jw_int(o->w, v->index);
	jw_key(o->w, "contentHash");
	jw_str(o->w, v->content_hash);
	jw_key(o->w, "commit");
	jw_str(o->w, v->commit);
	jw_key(o->w, "renderedAt");
	jw_str(o->w, v->at);
	jw_key(o->w, "format");
	jw_str(o->w, v->format);
	jw_key(o->w, "size");
	jw_int(o->w, v->size);
	jw_key(o->w, "state");
	jw_str(o->w, state);
	jw_end_obj(o->w);
}

int
cli_versions(struct cli *c)
{
	struct table t;
	struct buf b;
	struct jw w;
	struct vout o;
	yajl_val doc = NULL, st;
	char err[512];
	int n, rc = CLI_OK;

	if (cli_store(c) == NULL || cli_journal_open(c, 0) == NULL)
		return CLI_FAIL;
	if ((n = resource_get(c->st, "decofiles", c->ns, c->argv[0], &doc, err,
	    sizeof(err))) != 0)
		return n < 0 ? cli_error("%s", err) : cli_not_found("decofiles", c->argv[0]);
	yajl_tree_free(doc);
	st = cli_merged_status(c, "decofiles", c->ns, c->argv[0]);
	o = (struct vout){ json_get_str(st, "contentHash", NULL), cli_spool(c), &t, &w };
	table_init(&t, 7, "#", "HASH", "COMMIT", "RENDERED", "FORMAT", "SIZE", "STATE");
	buf_init(&b);
	jw_init(&w, &b);
	jw_arr(&w);
	n = journal_versions_each(c->j, c->ns, c->argv[0],
	    (int)conf_get_int(c->cf, "history_keep"), version_row, &o);
	jw_end_arr(&w);
	if (n < 0)
		rc = cli_error("journal: %s", journal_error(c->j));
	else if (c->out == OUT_JSON || c->out == OUT_YAML)
		rc = cli_print_text(c, b.data, b.len);
	else if (n == 0)
		fprintf(stderr, "No rendered versions of decofile %s/%s yet.\n", c->ns,
		    c->argv[0]);
	else
		table_print(&t, stdout);
	spool_close(o.sp);
	table_free(&t);
	buf_free(&b);
	yajl_tree_free(st);
	return rc;
}
