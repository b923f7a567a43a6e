/*
 * decoctl - decod's command line (SPEC §7): main, the command table, the
 * option parser every command shares and --help texts.  The helpers the
 * command files use are in cli_util.c; each group of commands lives in
 * cli_<group>.c.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_yaml.h"
#include "common/conf.h"
#include "common/journal.h"
#include "common/json.h"
#include "common/resource.h"
#include "common/store.h"
#include "common/store_keys.h"

/* option letters a command accepts (besides -n, -c, -h) */
#define O_ALLNS 'A'
#define O_OUT 'o'
#define O_FILE 'f'
#define O_FOR 'w'
#define O_TIMEOUT 't'
#define O_SINCE 's'
#define O_DECOFILE 'd'
#define O_LIMIT 'l'
#define O_STRICT 'S'
#define O_TO 'T'
#define O_STEPS 'N'
#define O_REASON 'R'
#define O_VERSIONS 'V'
#define O_DRYRUN 'D'
#define O_WATCH 'W'

struct command {
	const char *name;
	int (*fn)(struct cli *);
	const char *opts;
	int min_args, max_args;
	const char *usage;
	const char *summary;
	const char *help;
};

static const struct command commands[] = {
	{ "apply", cli_apply, "fSD", 0, 0, "apply -f FILE|- [--strict] [--dry-run[=server]]",
	  "create or update resources from YAML or JSON",
	  "Reads one or more resources (YAML documents separated by ---, a JSON\n"
	  "object, a JSON array or a List with items) and writes each to the store.\n"
	  "The namespace is metadata.namespace, else -n, else \"default\".\n"
	  "Prints KIND/NAME created, configured (spec or metadata changed) or\n"
	  "unchanged.  Errors name the file, line and column.  A spec field decod\n"
	  "does not know is a warning on standard error (like kubectl's field\n"
	  "validation); with --strict it is an error and nothing of that document\n"
	  "is written.  Names follow Kubernetes (DNS-1123); a key twice in one\n"
	  "object, nesting past json_max_depth, or a resource over 1 MiB (after\n"
	  "YAML aliases are expanded) is refused.\n"
	  "\nOptions:\n  -f, --filename FILE   file to read, - for standard input\n"
	  "  --strict              unknown spec fields are errors\n"
	  "  --dry-run[=server]    every check against the store, nothing written:\n"
	  "                        prints what would be created/configured/unchanged\n"
	  "  --dry-run=client      only the checks that need no store\n" },
	{ "diff", cli_diff, "fSo", 0, 1, "diff -f FILE|- | diff NAME [-o json|yaml]",
	  "what an apply of FILE, or what is pending for NAME, would change",
	  "diff -f FILE: like kubectl diff: diff -u of each resource as stored and\n"
	  "as FILE has it (YAML).  For a Decofile with an inline or dir source,\n"
	  "also its rendered document against the last render, block by block\n"
	  "(added, removed, changed with a diff of the block's JSON).  Needs\n"
	  "diff(1).\n"
	  "diff NAME: the preview of what is pending for decofile NAME: its\n"
	  "newest fetched source merged with the newest generation of each\n"
	  "template (what Manual and Window hold back) against its last rendered\n"
	  "document: the templates that would move, then block by block (+ added,\n"
	  "- removed, ~ changed) and, in a changed block, key by key (paths one or\n"
	  "two levels deep: theme, theme.color), then \"N blocks changed (K keys),\n"
	  "A added, R removed\".  Prints nothing when nothing is pending.\n"
	  "Nothing is written.  Exit 0 no differences, 1 differences, >1 an error.\n"
	  "\nOptions:\n  -f, --filename FILE   file to read, - for standard input\n"
	  "  --strict              unknown spec fields are errors\n"
	  "  -o, --output FORMAT   json or yaml (diff NAME)\n" },
	{ "get", cli_get, "AoW", 0, 2, "get [KIND] [NAME] [-w]",
	  "list resources or show one",
	  "KIND is decofile (decofiles, df; the default), template (decofiletemplate,\n"
	  "dft), tenant or endpoint.  A table by default; -o json|yaml prints the\n"
	  "whole resource with its merged status.\n"
	  "\nOptions:\n  -A, --all-namespaces  every namespace\n"
	  "  -o, --output FORMAT   wide, json, yaml, name, jsonpath=TEMPLATE or\n"
	  "                        custom-columns=NAME:EXPR,...\n"
	  "  -w, --watch           after the table, a line per change until Ctrl-C\n" },
	{ "delete", cli_delete, "", 2, 2, "delete KIND NAME",
	  "delete a resource",
	  "Removes the resource from the store; decod then removes what it\n"
	  "published for it (unless annotated deco.sites/deletion: detach).\n" },
	{ "status", cli_status, "AoW", 0, 1, "status [NAME] [-w]",
	  "one line per decofile: source, commit, hash, target, Ready, PodsNotified",
	  "Columns: NAMESPACE NAME SOURCE COMMIT HASH TARGET READY SYNCING\n"
	  "PODSNOTIFIED PUBLISHED AGE OWNER MESSAGE, from the merged status;\n"
	  "PUBLISHED is the time since the last publish, AGE since creation.\n"
	  "\nOptions:\n  -A, --all-namespaces  every namespace\n"
	  "  -o, --output FORMAT   json, yaml, jsonpath=TEMPLATE or custom-columns=...\n"
	  "  -w, --watch           after the table, a line per change until Ctrl-C\n" },
	{ "describe", cli_describe, "o", 1, 1, "describe NAME",
	  "conditions, location, replicas and recent history of a decofile",
	  "Shows the decofile's conditions, where it is published, which replicas\n"
	  "confirmed which content hash (the newest confirmation of each; those not\n"
	  "on the current hash are marked), its inventory and its last 10 events.\n"
	  "\nOptions:\n  -o, --output FORMAT   json or yaml\n" },
	{ "wait", cli_wait, "wt", 1, 1,
	  "wait NAME --for ready|synced|commit:SHA|timestamp:N [--timeout 60s]",
	  "wait until a change has rolled out to every replica",
	  "Watches the decofile's status (the watch starts before the first read,\n"
	  "so no change is missed) until:\n"
	  "  ready        Ready=True, PodsNotified=True, and the status is of the\n"
	  "               newest render (and generation, where known)\n"
	  "  synced       the fetcher handled the newest `decoctl sync` and what it\n"
	  "               found is live as for ready (also when it found nothing new)\n"
	  "  commit:SHA   status.githubCommit starts with SHA and every pod was\n"
	  "               notified for that commit\n"
	  "  timestamp:N  status.timestamp >= N and every pod was notified (or the\n"
	  "               newest sync, requested at or after N, found nothing new)\n"
	  "On a terminal a progress line \"notified X/Y\" is kept up to date.\n"
	  "Exit 0 done; 1 as soon as the change cannot succeed (Syncing=False:\n"
	  "fetch or validation failed, Ready=False: the target refused,\n"
	  "PodsNotified=False; the reason is printed); 3 timed out (2 is a usage\n"
	  "error).\n"
	  "\nOptions:\n  --for CONDITION       what to wait for (required)\n"
	  "  --timeout DURATION    give up after this long (default 60s)\n" },
	{ "sync", cli_sync, "", 1, 1, "sync NAME",
	  "make the fetcher poll a decofile's source now",
	  "Writes a trigger the fetcher watches, so it fetches without waiting\n"
	  "for the next poll.\n" },
	{ "acl", cli_acl, "", 1, 2, "acl resync [TENANT]",
	  "make the acl stage re-check ACL users on every Valkey node now",
	  "acl resync TENANT   re-provision the Tenant's user (in -n) on the master\n"
	  "                    and every replica now (a user deleted by hand comes\n"
	  "                    back, and is counted as self-healed)\n"
	  "acl resync          the same for every tenant\n"
	  "Against a cluster (kubeconfig, or in a pod) TENANT is the namespace\n"
	  "annotated deco.sites/valkey-acl, as in: acl resync sites-loja\n"
	  "Writes a trigger the acl stage watches, as sync does for the fetcher.\n" },
	{ "template", cli_template, "o", 2, 2, "template status|rollback TEMPLATE | template apply DECOFILE",
	  "a DecofileTemplate's rollout to its sites, or take its pending changes",
	  "template status TEMPLATE   the template's generation (as applied and as\n"
	  "                           fetched) and each decofile in -n that lists it:\n"
	  "                           its update policy, the generation it renders\n"
	  "                           and its state (adopted; pending under Manual\n"
	  "                           or Window, with the next window; updating;\n"
	  "                           not-rendered)\n"
	  "template apply DECOFILE    the decofile takes the newest generation of\n"
	  "                           every template it lists now, whatever its\n"
	  "                           policy: sets the annotation\n"
	  "                           deco.sites/apply-template-update: \"true\",\n"
	  "                           which decod removes once applied (kubectl\n"
	  "                           users set the same annotation on the CR)\n"
	  "template rollback TEMPLATE stop the template's rollout (spec.rollout) and\n"
	  "                           send every site that took its newest\n"
	  "                           generation back to the previous one\n"
	  "                           (status then shows them reverted)\n"
	  "\nOptions:\n  -o, --output FORMAT   json or yaml (status)\n" },
	{ "history", cli_history, "olV", 1, 1, "history NAME [--versions]",
	  "the journal's record of a decofile, oldest first",
	  "Fetches (commit, tree), renders (hash, format, size), publishes\n"
	  "(location, timestamp), condition changes, confirmations by replicas\n"
	  "(summarised per content hash) and drift repairs.  --versions lists the\n"
	  "rendered versions instead, newest first (# 0), each live, rollback-able\n"
	  "(its blobs kept: the newest history_keep) or gone.\n"
	  "\nOptions:\n  -o, --output FORMAT   json or yaml\n"
	  "  --limit N             only the newest N rows (default 200)\n"
	  "  --versions            the versions rollback can go back to\n" },
	{ "rollback", cli_rollback, "TNR", 1, 1,
	  "rollback NAME [--to HASH|--steps N] [--reason TEXT]",
	  "publish an earlier version again and hold it (suspended)",
	  "Publishes a version from `history NAME --versions` again (--to: its\n"
	  "hash or first digits; --steps N: N versions back from the live one,\n"
	  "default 1) and suspends the decofile, so the next poll does not undo\n"
	  "it; `resume NAME` publishes the newest again.  Journaled with who and\n"
	  "--reason.  In a cluster: annotate the CR deco.sites/rollback-to=HASH.\n" },
	{ "suspend", cli_suspend, "R", 1, 1, "suspend NAME [--reason TEXT]",
	  "stop fetching and publishing a decofile (spec.suspend)",
	  "Sets spec.suspend: no fetch, nothing new published, Syncing=False\n"
	  "Suspended, until resume.  Journaled with who and --reason.\n" },
	{ "resume", cli_suspend, "R", 1, 1, "resume NAME [--reason TEXT]",
	  "fetch and publish a suspended decofile again",
	  "Clears spec.suspend: the newest rendered version is published again,\n"
	  "then the source is fetched at once.  Journaled with who and --reason.\n" },
	{ "journal", cli_journal, "osdl", 0, 0,
	  "journal [--since DURATION] [--decofile NAME]",
	  "the audit log: time, stage, object, action, detail",
	  "\nOptions:\n  --since DURATION      only entries newer than this (e.g. 1h)\n"
	  "  --decofile NAME       only entries about this decofile (in -n)\n"
	  "  --limit N             only the newest N entries (default 500)\n"
	  "  -o, --output FORMAT   json or yaml\n" },
	{ "stages", cli_ctl, "o", 0, 0, "stages",
	  "the supervisor's stages: state, pid, restarts, uptime",
	  "Asks the supervisor over its control socket <runtime_dir>/control.ipc.\n"
	  "\nOptions:\n  -o, --output FORMAT   json or yaml\n" },
	{ "restart", cli_ctl, "o", 1, 1, "restart STAGE",
	  "restart one stage", "Asks the supervisor to restart STAGE now.\n" },
	{ "stop", cli_ctl, "o", 1, 1, "stop STAGE",
	  "stop one stage (it stays down until start)",
	  "Asks the supervisor to stop STAGE and not restart it.\n" },
	{ "start", cli_ctl, "o", 1, 1, "start STAGE",
	  "start a stopped stage", "Asks the supervisor to start STAGE again.\n" },
	{ "version", cli_version, "o", 0, 0, "version [-o json|yaml]",
	  "decoctl's version and the git commit it was built from",
	  "Also decoctl --version.\n\nOptions:\n  -o, --output FORMAT   json or yaml\n" },
	{ "completion", cli_completion, "", 1, 1, "completion bash|zsh|fish",
	  "a shell completion script for commands, options and decofile names",
	  "bash:  source <(decoctl completion bash)\n"
	  "zsh:   source <(decoctl completion zsh)\n"
	  "fish:  decoctl completion fish | source\n" },
	{ NULL, NULL, NULL, 0, 0, NULL, NULL, NULL },
};

static const char global_help[] =
    "Global options:\n"
    "  -c, --config FILE     decod's config file (also DECOD_CONFIG;\n"
    "                        default " DECOD_SYSCONFDIR "/decod/decod.conf)\n"
    "  -n, --namespace NS    namespace (default \"default\")\n"
    "  -h, --help            help for decoctl or a command\n"
    "  --SETTING VALUE       any config setting, e.g. --store local:/srv/store\n"
    "  --version             decoctl's version and git commit\n"
    "\nExit codes: 0 ok, 1 failure or not found, 2 usage error, 3 wait timed out.\n";

static void
print_main_help(FILE *out)
{
	fprintf(out, "decoctl - control decod, the configuration-delivery engine\n\n"
	    "Usage: decoctl [OPTIONS] COMMAND [ARGS]\n\nCommands:\n");
	for (const struct command *cmd = commands; cmd->name; cmd++)
		fprintf(out, "  %-10s %s\n", cmd->name, cmd->summary);
	fprintf(out, "\n%s\nRun 'decoctl COMMAND --help' for a command's options.\n",
	    global_help);
}

static void
print_command_help(const struct command *cmd, FILE *out)
{
	fprintf(out, "decoctl %s - %s\n\nUsage: decoctl %s [OPTIONS]\n\n%s\n%s",
	    cmd->name, cmd->summary, cmd->usage, cmd->help, global_help);
}

void
cli_commands_each(void (*fn)(void *, const char *, const char *, const char *), void *arg)
{
	for (const struct command *cmd = commands; cmd->name; cmd++)
		fn(arg, cmd->name, cmd->opts, cmd->summary);
}

static const struct command *
find_command(const char *name)
{
	for (const struct command *cmd = commands; cmd->name; cmd++)
		if (strcmp(cmd->name, name) == 0)
			return cmd;
	return NULL;
}

/* --- command line ----------------------------------------------------- */

/*
 * option_value - for "-x V", "-xV", "--long V", "--long=V": the value, or
 * NULL if arg is not this option.  *i advances past a separate value.
 */
static const char *
option_value(int argc, char **argv, int *i, const char *shortopt, const char *longopt,
    int *missing)
{
	const char *a = argv[*i];
	size_t ln = strlen(longopt);

	if ((shortopt && strcmp(a, shortopt) == 0) || strcmp(a, longopt) == 0) {
		if (*i + 1 >= argc) {
			*missing = 1;
			return NULL;
		}
		return argv[++*i];
	}
	if (strncmp(a, longopt, ln) == 0 && a[ln] == '=')
		return a + ln + 1;
	if (shortopt && strncmp(a, shortopt, 2) == 0 && a[1] != '-' && a[2] != '\0')
		return a + 2;
	return NULL;
}

/*
 * parse_args - fill c from argv (after conf took its flags).  CLI_OK with
 * *used set to the option letters seen, or CLI_USAGE with *used set to
 * the message.  Either string is the caller's to free.
 */
static int
parse_args(struct cli *c, int argc, char **argv, int *help, char **used_out)
{
	static const struct {
		char letter;
		const char *s, *l;
	} valued[] = {
		{ 'n', "-n", "--namespace" }, { O_OUT, "-o", "--output" },
		{ O_FILE, "-f", "--filename" }, { O_FOR, NULL, "--for" },
		{ O_TIMEOUT, NULL, "--timeout" }, { O_SINCE, NULL, "--since" },
		{ O_DECOFILE, NULL, "--decofile" }, { O_LIMIT, NULL, "--limit" },
		{ 'c', "-c", "--config" }, { O_TO, NULL, "--to" },
		{ O_STEPS, NULL, "--steps" }, { O_REASON, NULL, "--reason" },
	};
	char **pos = xcalloc((size_t)argc + 1, sizeof(char *));
	c->args_mem = pos;
	char used[16] = "";
	int npos = 0, dashdash = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		int missing = 0, matched = 0;

		if (dashdash || a[0] != '-' || strcmp(a, "-") == 0) {
			pos[npos++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			*help = 1;
			continue;
		}
		if (strcmp(a, "--versions") == 0) {
			c->versions = 1;
			if (!strchr(used, O_VERSIONS))
				strncat(used, "V", sizeof(used) - strlen(used) - 1);
			continue;
		}
		if (strcmp(a, "--strict") == 0) {
			c->strict = 1;
			if (!strchr(used, O_STRICT))
				strncat(used, "S", sizeof(used) - strlen(used) - 1);
			continue;
		}
		if (strcmp(a, "--dry-run") == 0 || strncmp(a, "--dry-run=", 10) == 0) {
			c->dry_run = a[9] == '=' ? a + 10 : "server";
			if (!strchr(used, O_DRYRUN))
				strncat(used, "D", sizeof(used) - strlen(used) - 1);
			continue;
		}
		if (strcmp(a, "-w") == 0 || strcmp(a, "--watch") == 0) {
			c->watch = 1;
			if (!strchr(used, O_WATCH))
				strncat(used, "W", sizeof(used) - strlen(used) - 1);
			continue;
		}
		if (strcmp(a, "-A") == 0 || strcmp(a, "--all-namespaces") == 0) {
			c->all_ns = 1;
			if (!strchr(used, O_ALLNS))
				strncat(used, "A", sizeof(used) - strlen(used) - 1);
			continue;
		}
		for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
			v = option_value(argc, argv, &i, valued[k].s, valued[k].l, &missing);
			if (missing) {
				*used_out = xasprintf("option %s needs a value", a);
				return CLI_USAGE;
			}
			if (v == NULL)
				continue;
			matched = 1;
			if (!strchr(used, valued[k].letter)) {
				char l[2] = { valued[k].letter, '\0' };

				strncat(used, l, sizeof(used) - strlen(used) - 1);
			}
			switch (valued[k].letter) {
			case 'n':
				c->ns = v;
				c->ns_set = 1;
				break;
			case O_OUT:
				if (strcmp(v, "json") == 0)
					c->out = OUT_JSON;
				else if (strcmp(v, "yaml") == 0)
					c->out = OUT_YAML;
				else if (strcmp(v, "name") == 0)
					c->out = OUT_NAME;
				else if (strcmp(v, "table") == 0)
					c->out = OUT_TABLE;
				else if (strcmp(v, "wide") == 0)
					c->out = OUT_WIDE;
				else if (strncmp(v, "jsonpath=", 9) == 0)
					c->out = OUT_JSONPATH, c->out_arg = v + 9;
				else if (strncmp(v, "custom-columns=", 15) == 0)
					c->out = OUT_COLUMNS, c->out_arg = v + 15;
				else {
					*used_out = xasprintf("unknown output format \"%s\" (json, yaml, "
					    "name, wide, jsonpath=TEMPLATE or custom-columns=SPEC)", v);
					return CLI_USAGE;
				}
				break;
			case O_FILE:
				c->file = v;
				break;
			case O_FOR:
				c->wait_for = v;
				break;
			case O_TIMEOUT:
				if (parse_duration_ms(v, &c->timeout_ms) < 0) {
					*used_out = xasprintf("bad --timeout \"%s\" (e.g. 60s, 5m)", v);
					return CLI_USAGE;
				}
				break;
			case O_SINCE:
				if (parse_duration_ms(v, &c->since_ms) < 0) {
					*used_out = xasprintf("bad --since \"%s\" (e.g. 30m, 24h)", v);
					return CLI_USAGE;
				}
				break;
			case O_DECOFILE:
				c->decofile = v;
				break;
			case O_TO:
				c->to = v;
				break;
			case O_STEPS:
				c->steps = v;
				break;
			case O_REASON:
				c->reason = v;
				break;
			case O_LIMIT:
				c->limit = atoi(v);
				if (c->limit <= 0) {
					*used_out = xasprintf("bad --limit \"%s\"", v);
					return CLI_USAGE;
				}
				break;
			default:
				break;	/* -c: conf_from_args read it */
			}
			break;
		}
		if (!matched) {
			*used_out = xasprintf("unknown option \"%s\"", a);
			return CLI_USAGE;
		}
	}
	if (npos > 0) {
		c->cmd = pos[0];
		c->argv = pos + 1;
		c->argc = npos - 1;
	} else {
		c->argv = pos;
		c->argc = 0;
	}
	/* remember which options were used, for the command check */
	c->argv[c->argc] = NULL;
	*used_out = xstrdup(used);
	return CLI_OK;
}

/* wants_help - -h/--help anywhere, before the config is read */
static int
wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct cli c;
	const struct command *cmd;
	char *used = NULL;
	int help = 0, rc;

	memset(&c, 0, sizeof(c));
	c.prog = "decoctl";
	c.ns = "default";
	c.timeout_ms = -1;
	c.since_ms = -1;
	if (argc < 2) {
		print_main_help(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0 && argc == 2)
		return cli_version(&c);
	if (!wants_help(argc, argv) && (c.cf = conf_from_args(&argc, argv)) == NULL)
		return CLI_FAIL;
	if (c.cf != NULL)
		json_set_max_depth((int)conf_get_int(c.cf, "json_max_depth"));
	if (parse_args(&c, argc, argv, &help, &used) != CLI_OK) {
		rc = cli_usage_error(&c, "%s", used);
		free(used);
		goto out;
	}
	if (c.cmd == NULL) {
		free(used);
		print_main_help(help ? stdout : stderr);
		rc = help ? CLI_OK : CLI_USAGE;
		goto out;
	}
	if (strcmp(c.cmd, "help") == 0) {
		free(used);
		cmd = c.argc > 0 ? find_command(c.argv[0]) : NULL;
		if (cmd)
			print_command_help(cmd, stdout);
		else
			print_main_help(stdout);
		rc = CLI_OK;
		goto out;
	}
	if ((cmd = find_command(c.cmd)) == NULL) {
		free(used);
		fprintf(stderr, "error: unknown command \"%s\"\n", c.cmd);
		c.cmd = NULL;
		print_main_help(stderr);
		rc = CLI_USAGE;
		goto out;
	}
	if (help) {
		free(used);
		print_command_help(cmd, stdout);
		rc = CLI_OK;
		goto out;
	}
	for (const char *u = used; *u; u++) {
		if (*u != 'n' && *u != 'c' && strchr(cmd->opts, *u) == NULL) {
			free(used);
			rc = cli_usage_error(&c, "decoctl %s takes no such option (see its usage: "
			    "decoctl %s)", cmd->name, cmd->usage);
			goto out;
		}
	}
	free(used);
	if (c.argc < cmd->min_args || c.argc > cmd->max_args) {
		rc = cli_usage_error(&c, "usage: decoctl %s", cmd->usage);
		goto out;
	}
	if (c.out == OUT_NAME && strcmp(cmd->name, "get") != 0) {
		rc = cli_usage_error(&c, "-o name is only for get");
		goto out;
	}
	if ((c.out == OUT_JSONPATH || c.out == OUT_COLUMNS || c.out == OUT_WIDE) &&
	    strcmp(cmd->name, "get") != 0 && strcmp(cmd->name, "status") != 0) {
		rc = cli_usage_error(&c, "-o wide, jsonpath and custom-columns are for get "
		    "and status");
		goto out;
	}
	rc = cmd->fn(&c);
out:
	if (c.j)
		journal_close(c.j);
	if (c.st)
		store_close(c.st);
	conf_free(c.cf);
	free(c.args_mem);
	return rc;
}
