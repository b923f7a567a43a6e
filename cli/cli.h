/*
 * cli - what decoctl's command files share: the parsed command line, lazy
 * handles on the store and the journal, exit codes, error messages in
 * kubectl's words, tables, ages and output in JSON or YAML.
 */
#ifndef DECOD_CLI_H
#define DECOD_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "common/util.h"

struct conf;
struct store;
struct journal;
struct table;

/* exit codes (doc/decoctl.md) */
#define CLI_OK 0
#define CLI_FAIL 1	/* failure, not found, rollout failed */
#define CLI_USAGE 2	/* bad command line */
#define CLI_TIMEOUT 3	/* wait: timed out, the change neither done nor failed */

enum cli_output { OUT_TABLE, OUT_WIDE, OUT_JSON, OUT_YAML, OUT_NAME, OUT_JSONPATH,
	OUT_COLUMNS };

/* cli_out_tree - the output is made from the JSON tree (json, yaml, jsonpath, columns) */
#define cli_out_tree(c) ((c)->out == OUT_JSON || (c)->out == OUT_YAML || \
	(c)->out == OUT_JSONPATH || (c)->out == OUT_COLUMNS)

struct cli {
	const char *prog;
	const char *cmd;
	struct conf *cf;
	const char *ns;		/* -n, else "default" */
	int ns_set;
	int all_ns;		/* -A */
	enum cli_output out;	/* -o */
	const char *out_arg;	/* -o jsonpath=ARG, custom-columns=ARG */
	int watch;		/* -w: 1 asked, 2 first listing, 3 later ones */
	const char *file;	/* -f */
	const char *wait_for;	/* --for */
	int64_t timeout_ms;	/* --timeout, -1 unset */
	int64_t since_ms;	/* --since, -1 unset */
	const char *decofile;	/* --decofile */
	int limit;		/* --limit, 0: command default */
	int strict;		/* --strict */
	const char *to, *steps;	/* rollback --to HASH, --steps N */
	const char *reason;	/* --reason: why, for the journal */
	int versions;		/* history --versions */
	const char *dry_run;	/* --dry-run[=server|client|none], NULL unset */
	int argc;		/* positional arguments after the command */
	char **argv;
	char **args_mem;	/* what argv points into (freed at exit) */
	struct store *st;
	struct journal *j;
};

/* command entry points; each returns an exit code */
int cli_apply(struct cli *c);
int cli_delete(struct cli *c);
int cli_sync(struct cli *c);
int cli_acl(struct cli *c);
int cli_get(struct cli *c);
int cli_status(struct cli *c);
int cli_describe(struct cli *c);
int cli_wait(struct cli *c);
int cli_history(struct cli *c);
int cli_journal(struct cli *c);
int cli_ctl(struct cli *c);
int cli_suspend(struct cli *c);		/* suspend and resume */
int cli_rollback(struct cli *c);
int cli_versions(struct cli *c);	/* history --versions */
int cli_diff(struct cli *c);
int cli_diff_name(struct cli *c, const char *name);	/* diff NAME */
int cli_template(struct cli *c);	/* template status|apply */

/*
 * cli_load_docs - read -f FILE (or standard input for "-") and split it
 * into documents as apply does (free with yaml_docs_free); *fname is what
 * messages name.  CLI_OK, CLI_USAGE without -f, or CLI_FAIL after printing
 * why (file:line:col).
 */
struct yaml_docs;
struct yaml_doc;
int cli_load_docs(struct cli *c, struct yaml_docs *docs, const char **fname);
/*
 * cli_apply_doc - document idx parsed and checked as apply checks it before
 * it writes (kind, names, namespace against -n, unknown fields: a warning,
 * an error with --strict).  Returns the tree (caller frees) with *plural
 * (static), *ns and *name (into the tree, or c->ns) set; NULL after
 * printing why.
 */
yajl_val cli_apply_doc(struct cli *c, const char *fname, const struct yaml_doc *d, int idx,
    const char **plural, const char **ns, const char **name);
int cli_version(struct cli *c);
int cli_completion(struct cli *c);

/* cli_commands_each - fn(arg, name, option letters, summary) for each command */
void cli_commands_each(void (*fn)(void *, const char *, const char *, const char *),
    void *arg);

/*
 * cli_watch - -w/--watch of get and status: list (which prints the table
 * through cli_watch_table), then list again on every change in the store
 * until SIGINT or SIGTERM; an exit code
 */
int cli_watch(struct cli *c, int (*list)(struct cli *));
/* cli_watch_table - the first time the table whole, then rows not printed before */
void cli_watch_table(struct cli *c, struct table *t);
/*
 * cli_note_config - once per run, before the store or journal is used:
 * say on stderr that no config file was read, and what is used instead
 */
void cli_note_config(struct cli *c);
/* cli_print_template - v through -o jsonpath=... or custom-columns=...; exit code */
int cli_print_template(struct cli *c, yajl_val v);
/*
 * cli_escapes_ok - whether decoctl may move the cursor on stdout: a
 * terminal, NO_COLOR unset, TERM not dumb.  decoctl prints no colour.
 */
int cli_escapes_ok(void);

/*
 * cli_store - the store named by the config (opened once); NULL after
 * printing why.  Only apply, sync and acl may create a local store: for
 * every other command a missing store is an error naming its path.
 */
struct store *cli_store(struct cli *c);

/*
 * cli_journal_open - the journal at <state_dir>/journal.db, opened once.
 * NULL (message printed unless quiet) when it does not exist or cannot be
 * opened: decoctl never creates one.
 */
struct journal *cli_journal_open(struct cli *c, int quiet);

/* cli_error - "error: ..." on stderr; returns CLI_FAIL */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_usage_error - the message and a pointer to --help; returns CLI_USAGE */
int cli_usage_error(struct cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* cli_not_found - kubectl's NotFound message; returns CLI_FAIL */
int cli_not_found(const char *plural, const char *name);

/* cli_kind_singular - "decofiles" -> "decofile" (for "decofile/x created") */
const char *cli_kind_singular(const char *plural);

/* cli_parse_time - RFC 3339 ("...Z", fraction allowed) to unix ms; 0 or -1 */
int cli_parse_time(const char *s, int64_t *ms);
/* cli_age - kubectl's short age of a duration ("45s", "5m12s", "3d5h") */
void cli_age(int64_t ms, char *out, size_t len);
/* cli_age_since - age of an RFC 3339 time (or "-" / "<unknown>") */
void cli_age_since(const char *rfc3339, char *out, size_t len);
/* cli_short - the first n characters of s, "-" for NULL or "" (static buffer ring) */
const char *cli_short(const char *s, size_t n);

/*
 * cli_resource_with_status - the resource's JSON with "status" replaced by
 * the merged status fragments, parsed.  NULL on error (printed).
 */
yajl_val cli_resource_with_status(struct cli *c, const char *plural, yajl_val doc);
/* cli_merged_status - the merged status of a resource as a tree ({} if none) */
yajl_val cli_merged_status(struct cli *c, const char *plural, const char *ns,
    const char *name);
/* cli_condition - the condition of type in a status tree, or NULL */
yajl_val cli_condition(yajl_val status, const char *type);
/* cli_condition_status - "True"/"False"/"Unknown" of that condition, or "-" */
const char *cli_condition_status(yajl_val status, const char *type);
/*
 * cli_status_message - what is wrong, for a MESSAGE column: "Reason: message"
 * of the first False condition among Syncing, Ready and PodsNotified (a
 * failed fetch or render first: the last good version may still be live),
 * on one line, into out; "" when none is False.
 */
void cli_status_message(yajl_val status, char *out, size_t len);

/* cli_redact - the credentials of every "url" in v replaced by "***", in place */
void cli_redact(yajl_val v);
/* cli_print - v as JSON or YAML per c->out; CLI_OK or CLI_FAIL */
int cli_print(struct cli *c, yajl_val v);
/* cli_print_text - JSON text as JSON or YAML per c->out */
int cli_print_text(struct cli *c, const char *json, size_t len);

/* table: rows of strings, printed with aligned columns like kubectl */
struct table {
	size_t ncols;
	size_t nrows;
	char **cells;		/* nrows * ncols, owned */
};
void table_init(struct table *t, size_t ncols, ...);	/* header names */
void table_row(struct table *t, ...);			/* ncols strings (NULL: "") */
void table_print(struct table *t, FILE *out);
void table_free(struct table *t);

/*
 * cli_history_rows - the newest limit rows of ns/name's history from the
 * journal, oldest first, as table rows (TIME EVENT DETAIL) and JSON
 * objects appended to an open array.  Returns the row count, or -1.
 */
struct jw;
int cli_history_rows(struct journal *j, const char *ns, const char *name, int limit,
    struct table *t, struct jw *w);

/* cli_sql_time - "2026-12-02T10:00:00.123Z" -> "2026-12-02 10:00:00" into out */
void cli_sql_time(const char *at, char *out, size_t len);

#endif
