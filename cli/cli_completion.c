/*
 * cli_completion - `decoctl completion bash|zsh|fish`: a script completing
 * the commands and each command's options, both read from decoctl's own
 * command table (so a new command is completed without touching this
 * file), values of -o, --for and KIND, and decofile names, which the
 * script asks the same decoctl for (`get -o name`, with the -n and -c of
 * the line being completed).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* the options behind a command's option letters (see decoctl.c's parser) */
static const struct {
	char letter;
	const char *opts;
} letters[] = {
	{ 'A', "-A --all-namespaces" }, { 'o', "-o --output" }, { 'f', "-f --filename" },
	{ 'w', "--for" }, { 't', "--timeout" }, { 's', "--since" }, { 'd', "--decofile" },
	{ 'l', "--limit" }, { 'S', "--strict" }, { 'W', "-w --watch" },
	{ 'T', "--to" }, { 'N', "--steps" }, { 'R', "--reason" }, { 'V', "--versions" },
};

#define GLOBAL_OPTS "-n --namespace -c --config -h --help"
#define OUTPUTS "json yaml name wide jsonpath= custom-columns="
#define KINDS "decofile template tenant endpoint"
#define FORS "ready synced commit: timestamp:"
/* the commands whose argument is a decofile's name */
#define NAMED "status describe wait sync history rollback suspend resume"
#define NAMED_CASE "status|describe|wait|sync|history|rollback|suspend|resume"

/* command_opts - the options of a command's letters, space-separated, into b */
static void
command_opts(const char *opt_letters, struct buf *b)
{
	buf_reset(b);
	buf_adds(b, GLOBAL_OPTS);
	for (const char *l = opt_letters; *l; l++)
		for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++)
			if (letters[i].letter == *l)
				buf_printf(b, " %s", letters[i].opts);
}

/* --- bash ------------------------------------------------------------- */

static void
bash_name(void *arg, const char *name, const char *opts, const char *summary)
{
	(void)opts;
	(void)summary;
	buf_printf(arg, "%s ", name);
}

static void
bash_case(void *arg, const char *name, const char *opts, const char *summary)
{
	struct buf o;

	(void)summary;
	buf_init(&o);
	command_opts(opts, &o);
	printf("\t%s) opts=\"%s\" ;;\n", name, o.data);
	buf_free(&o);
}

static void
print_bash(void)
{
	struct buf names;

	buf_init(&names);
	buf_adds(&names, "help ");
	cli_commands_each(bash_name, &names);
	printf("# bash completion for decoctl: source <(decoctl completion bash)\n"
	    "__decoctl_names() {\n"
	    "\t# decofile (or KIND) names from the same decoctl, -n and -c as typed\n"
	    "\t\"${COMP_WORDS[0]}\" get $1 -o name $__decoctl_flags 2>/dev/null |\n"
	    "\t    sed 's,^[^/]*/,,'\n"
	    "}\n"
	    "_decoctl() {\n"
	    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	    "\tlocal cmd= i w opts args=()\n"
	    "\t__decoctl_flags=\n"
	    "\tCOMPREPLY=()\n"
	    "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	    "\t\tw=${COMP_WORDS[i]}\n"
	    "\t\tcase $w in\n"
	    "\t\t-n|--namespace|-c|--config) __decoctl_flags+=\" $w ${COMP_WORDS[i+1]}\"; "
	    "((i++)) ;;\n"
	    "\t\t-o|--output|-f|--filename|--for|--timeout|--since|--decofile|--limit) "
	    "((i++)) ;;\n"
	    "\t\t-*) ;;\n"
	    "\t\t*) if [ -z \"$cmd\" ]; then cmd=$w; else args+=(\"$w\"); fi ;;\n"
	    "\t\tesac\n"
	    "\tdone\n"
	    "\tcase $prev in\n"
	    "\t-o|--output) COMPREPLY=($(compgen -W '" OUTPUTS "' -- \"$cur\")); "
	    "return ;;\n"
	    "\t-f|--filename|-c|--config) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
	    "\t--for) COMPREPLY=($(compgen -W '" FORS "' -- \"$cur\")); return ;;\n"
	    "\t-n|--namespace|--timeout|--since|--limit) return ;;\n"
	    "\t--decofile) COMPREPLY=($(compgen -W \"$(__decoctl_names decofile)\" -- "
	    "\"$cur\")); return ;;\n"
	    "\tesac\n"
	    "\tif [ -z \"$cmd\" ]; then\n"
	    "\t\tcase $cur in\n"
	    "\t\t-*) COMPREPLY=($(compgen -W '" GLOBAL_OPTS " --version' -- \"$cur\")) ;;\n"
	    "\t\t*) COMPREPLY=($(compgen -W '%s' -- \"$cur\")) ;;\n"
	    "\t\tesac\n"
	    "\t\treturn\n"
	    "\tfi\n"
	    "\topts=\n"
	    "\tcase $cmd in\n", names.data);
	cli_commands_each(bash_case, NULL);
	printf("\tesac\n"
	    "\tcase $cur in -*) COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\")); return ;; "
	    "esac\n"
	    "\tcase $cmd in\n"
	    "\thelp) [ ${#args[@]} -eq 0 ] && COMPREPLY=($(compgen -W '%s' -- \"$cur\")) ;;\n"
	    "\tcompletion) [ ${#args[@]} -eq 0 ] && "
	    "COMPREPLY=($(compgen -W 'bash zsh fish' -- \"$cur\")) ;;\n"
	    "\tget)\n"
	    "\t\tif [ ${#args[@]} -eq 0 ]; then\n"
	    "\t\t\tCOMPREPLY=($(compgen -W \"" KINDS " $(__decoctl_names decofile)\" -- "
	    "\"$cur\"))\n"
	    "\t\telif [ ${#args[@]} -eq 1 ]; then\n"
	    "\t\t\tCOMPREPLY=($(compgen -W \"$(__decoctl_names \"${args[0]}\")\" -- "
	    "\"$cur\"))\n"
	    "\t\tfi ;;\n"
	    "\t" NAMED_CASE "|delete)\n"
	    "\t\tif [ \"$cmd\" = delete ] && [ ${#args[@]} -eq 0 ]; then\n"
	    "\t\t\tCOMPREPLY=($(compgen -W '" KINDS "' -- \"$cur\"))\n"
	    "\t\telif [ \"$cmd\" = delete ] && [ ${#args[@]} -eq 1 ]; then\n"
	    "\t\t\tCOMPREPLY=($(compgen -W \"$(__decoctl_names \"${args[0]}\")\" -- "
	    "\"$cur\"))\n"
	    "\t\telif [ \"$cmd\" != delete ] && [ ${#args[@]} -eq 0 ]; then\n"
	    "\t\t\tCOMPREPLY=($(compgen -W \"$(__decoctl_names decofile)\" -- \"$cur\"))\n"
	    "\t\tfi ;;\n"
	    "\tesac\n"
	    "}\n"
	    "complete -F _decoctl decoctl\n", names.data);
	buf_free(&names);
}

/* --- zsh -------------------------------------------------------------- */

/* quoted - s in single quotes for zsh and fish ('\'' and \' differ: kind) */
static void
quoted(const char *s, int fish)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs(fish ? "\\'" : "'\\''", stdout);
		else if (*s == '\\' && fish)
			fputs("\\\\", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

static void
zsh_cmd(void *arg, const char *name, const char *opts, const char *summary)
{
	(void)arg;
	(void)opts;
	printf("\t\t");
	quoted(name, 0);
	printf(":");
	quoted(summary, 0);
	printf("\n");
}

static void
zsh_case(void *arg, const char *name, const char *opts, const char *summary)
{
	struct buf o;

	(void)arg;
	(void)summary;
	buf_init(&o);
	command_opts(opts, &o);
	printf("\t%s) opts=(%s) ;;\n", name, o.data);
	buf_free(&o);
}

static void
print_zsh(void)
{
	printf("#compdef decoctl\n"
	    "# zsh completion for decoctl: source <(decoctl completion zsh), or save it\n"
	    "# as _decoctl in a folder of $fpath\n"
	    "__decoctl_names() {\n"
	    "\t${words[1]} get $1 -o name ${=__decoctl_flags} 2>/dev/null | sed 's,^[^/]*/,,'\n"
	    "}\n"
	    "_decoctl() {\n"
	    "\tlocal -a cmds opts args\n"
	    "\tlocal cmd= i w\n"
	    "\t__decoctl_flags=\n"
	    "\tcmds=(\n"
	    "\t\t'help:help for decoctl or a command'\n");
	cli_commands_each(zsh_cmd, NULL);
	printf("\t)\n"
	    "\tfor ((i = 2; i < CURRENT; i++)); do\n"
	    "\t\tw=${words[i]}\n"
	    "\t\tcase $w in\n"
	    "\t\t-n|--namespace|-c|--config) __decoctl_flags+=\" $w ${words[i+1]}\"; "
	    "((i++)) ;;\n"
	    "\t\t-o|--output|-f|--filename|--for|--timeout|--since|--decofile|--limit) "
	    "((i++)) ;;\n"
	    "\t\t-*) ;;\n"
	    "\t\t*) if [[ -z $cmd ]]; then cmd=$w; else args+=($w); fi ;;\n"
	    "\t\tesac\n"
	    "\tdone\n"
	    "\tcase ${words[CURRENT-1]} in\n"
	    "\t-o|--output) compadd -- " OUTPUTS "; return ;;\n"
	    "\t-f|--filename|-c|--config) _files; return ;;\n"
	    "\t--for) compadd -- " FORS "; return ;;\n"
	    "\t-n|--namespace|--timeout|--since|--limit) return ;;\n"
	    "\t--decofile) compadd -- ${(f)\"$(__decoctl_names decofile)\"}; return ;;\n"
	    "\tesac\n"
	    "\tif [[ -z $cmd ]]; then\n"
	    "\t\tif [[ ${words[CURRENT]} == -* ]]; then\n"
	    "\t\t\tcompadd -- " GLOBAL_OPTS " --version\n"
	    "\t\telse\n"
	    "\t\t\t_describe 'command' cmds\n"
	    "\t\tfi\n"
	    "\t\treturn\n"
	    "\tfi\n"
	    "\tcase $cmd in\n");
	cli_commands_each(zsh_case, NULL);
	printf("\tesac\n"
	    "\tif [[ ${words[CURRENT]} == -* ]]; then compadd -- $opts; return; fi\n"
	    "\tcase $cmd in\n"
	    "\thelp) (( ${#args} == 0 )) && _describe 'command' cmds ;;\n"
	    "\tcompletion) (( ${#args} == 0 )) && compadd -- bash zsh fish ;;\n"
	    "\tget)\n"
	    "\t\tif (( ${#args} == 0 )); then\n"
	    "\t\t\tcompadd -- " KINDS " ${(f)\"$(__decoctl_names decofile)\"}\n"
	    "\t\telif (( ${#args} == 1 )); then\n"
	    "\t\t\tcompadd -- ${(f)\"$(__decoctl_names ${args[1]})\"}\n"
	    "\t\tfi ;;\n"
	    "\tdelete)\n"
	    "\t\tif (( ${#args} == 0 )); then compadd -- " KINDS "\n"
	    "\t\telif (( ${#args} == 1 )); then\n"
	    "\t\t\tcompadd -- ${(f)\"$(__decoctl_names ${args[1]})\"}\n"
	    "\t\tfi ;;\n"
	    "\t%s)\n"
	    "\t\t(( ${#args} == 0 )) && compadd -- ${(f)\"$(__decoctl_names decofile)\"} ;;\n"
	    "\tesac\n"
	    "}\n"
	    "if [[ $funcstack[1] == _decoctl ]]; then _decoctl \"$@\"; "
	    "else compdef _decoctl decoctl; fi\n", NAMED_CASE);
}

/* --- fish ------------------------------------------------------------- */

static void
fish_cmd(void *arg, const char *name, const char *opts, const char *summary)
{
	(void)arg;
	printf("complete -c decoctl -n __fish_use_subcommand -a %s -d ", name);
	quoted(summary, 1);
	printf("\n");
	for (const char *l = opts; *l; l++)
		for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++) {
			const char *o = letters[i].opts;

			if (letters[i].letter != *l)
				continue;
			printf("complete -c decoctl -n '__fish_seen_subcommand_from %s'", name);
			if (o[1] != '-')	/* "-A --all-namespaces" */
				printf(" -s %c -l %s", o[1], o + 5);
			else
				printf(" -l %s", o + 2);
			if (*l == 'o')
				printf(" -x -a '" OUTPUTS "'\n");
			else if (*l == 'w')
				printf(" -x -a '" FORS "'\n");
			else if (*l == 'f')
				printf(" -r -F\n");
			else if (strchr("tsdl", *l))
				printf(" -x\n");
			else
				printf("\n");
		}
}

static void
print_fish(void)
{
	printf("# fish completion for decoctl: decoctl completion fish | source\n"
	    "function __decoctl_names\n"
	    "\tset -l cmd (commandline -opc)\n"
	    "\tset -l flags\n"
	    "\tfor i in (seq 2 (count $cmd))\n"
	    "\t\tswitch $cmd[$i]\n"
	    "\t\tcase -n --namespace -c --config\n"
	    "\t\t\tset -a flags $cmd[$i] $cmd[(math $i + 1)]\n"
	    "\t\tend\n"
	    "\tend\n"
	    "\t$cmd[1] get $argv[1] -o name $flags 2>/dev/null | string replace -r '^[^/]*/' ''\n"
	    "end\n"
	    "complete -c decoctl -f\n"
	    "complete -c decoctl -s n -l namespace -x -d 'namespace'\n"
	    "complete -c decoctl -s c -l config -r -F -d 'decod config file'\n"
	    "complete -c decoctl -s h -l help -d 'help'\n"
	    "complete -c decoctl -l version -n __fish_use_subcommand -d 'version and commit'\n"
	    "complete -c decoctl -n __fish_use_subcommand -a help -d 'help for a command'\n");
	cli_commands_each(fish_cmd, NULL);
	printf("complete -c decoctl -n '__fish_seen_subcommand_from completion' -x "
	    "-a 'bash zsh fish'\n"
	    "complete -c decoctl -n '__fish_seen_subcommand_from get delete' -x "
	    "-a '" KINDS "'\n"
	    "complete -c decoctl -n '__fish_seen_subcommand_from get " NAMED "' -x "
	    "-a '(__decoctl_names decofile)'\n");
}

int
cli_completion(struct cli *c)
{
	const char *shell = c->argv[0];

	if (strcmp(shell, "bash") == 0)
		print_bash();
	else if (strcmp(shell, "zsh") == 0)
		print_zsh();
	else if (strcmp(shell, "fish") == 0)
		print_fish();
	else
		return cli_usage_error(c, "no completion for \"%s\" (bash, zsh or fish)", shell);
	if (fflush(stdout) != 0)
		return cli_error("cannot write the output");
	return CLI_OK;
}
