#!/bin/sh
# cli_habits - kubectl's habits in the real decoctl, against a real local
# store: version and --version with the commit of the checkout (and the
# tarball fallback of cli/gen-version.sh); completion scripts loaded by
# real bash, zsh and fish; -o jsonpath and -o custom-columns (and refusals);
# get -w and status -w printing a line per change until killed; AGE the
# same in get and status; no escapes on a pipe, none under NO_COLOR on a
# terminal; reads that never create a store or folder, and the one notice
# that no config file was read.
. "$top_srcdir/t/lib/common.sh"

DECOCTL=$(bin decoctl)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$DECOCTL" ] || bail "decoctl not built"
[ -x "$TOOL" ] || bail "testtool not built"

mkdir -p "$T/state" "$T/run"
cat >"$T/decod.conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
EOF
export DECOD_CONFIG="$T/decod.conf"
unset NO_COLOR
NS=sites-loja
dc() { "$DECOCTL" -n "$NS" "$@"; }
tool() { "$TOOL" -c "$T/decod.conf" "$@"; }
ESC=$(printf '\033')
has_esc() { grep -q "$ESC" "$1"; }

cat >"$T/loja.yaml" <<'EOF'
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja-sao-paulo
  labels: {team: "vitrine e promoções"}
spec:
  source: inline
  inline:
    value:
      "Página Inicial": {title: "Loja São Paulo", sections: [1, 2]}
      "Trocas%20e%20Devoluções": {prazo: "30 dias"}
EOF
dc apply -f "$T/loja.yaml" >/dev/null 2>&1 || bail "apply failed"

# --- version ------------------------------------------------------------
dc version >"$T/v" 2>&1
is "$?" 0 "version exits 0"
"$DECOCTL" --version >"$T/v2" 2>&1
is "$(cat "$T/v2")" "$(cat "$T/v")" "--version prints what version does"
dc version -o json >"$T/v.json" 2>&1
is "$?" 0 "version -o json exits 0"
commit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["clientVersion"]["gitCommit"])' "$T/v.json")
want=$(git -c safe.directory='*' -C "$top_srcdir" rev-parse HEAD 2>/dev/null)
if [ -n "$want" ] && [ "$(git -c safe.directory='*' -C "$top_srcdir" rev-parse --show-toplevel)" = "$(cd "$top_srcdir" && pwd -P)" ]; then
	is "$commit" "$want" "version -o json: gitCommit is the checkout's HEAD"
else
	check "version -o json: a commit or unknown outside git" \
	    sh -c "echo '$commit' | grep -Eq '^([0-9a-f]{40}|unknown)$'"
fi
check "version names the package version and the commit" \
    grep -Eq "^decoctl [0-9]+\.[0-9]+\.[0-9]+ \(commit $commit, (clean|dirty|archive|unknown)\)$" "$T/v"
# the fallback outside a git checkout: a tarball's .tarball-commit, else unknown
mkdir -p "$T/tarball"
echo 0123456789abcdef0123456789abcdef01234567 >"$T/tarball/.tarball-commit"
(cd "$T" && sh "$top_srcdir/cli/gen-version.sh" "$T/tarball" 9.8.7 "$T/tv.h")
check "gen-version: a tarball's commit, tree state archive" \
    grep -q 'GIT_COMMIT "0123456789abcdef0123456789abcdef01234567"' "$T/tv.h"
check "gen-version: tree state archive" grep -q 'TREE_STATE "archive"' "$T/tv.h"
rm "$T/tarball/.tarball-commit"
sh "$top_srcdir/cli/gen-version.sh" "$T/tarball" 9.8.7 "$T/tv.h"
check "gen-version: no git, no tarball: commit unknown" \
    grep -q 'GIT_COMMIT "unknown"' "$T/tv.h"
check "gen-version: the package version" grep -q 'DECOCTL_VERSION "9.8.7"' "$T/tv.h"

# --- -o jsonpath and -o custom-columns ----------------------------------
printf '%s' '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"vitrine-nova","namespace":"sites-loja"},"spec":{"source":"git","git":{"url":"https://git.example/vitrine%20nova.git","ref":"main"}}}' >"$T/vitrine.json"
dc apply -f "$T/vitrine.json" >/dev/null 2>&1 || bail "apply vitrine failed"
tool condition "$NS" loja-sao-paulo publisher Ready True Published "Published to file:///srv/loja/decofile.json"
is "$(dc get -o 'jsonpath={.items[*].metadata.name}')" "loja-sao-paulo vitrine-nova" \
    "get -o jsonpath: every name"
is "$(dc get -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.source};{end}')" \
    "loja-sao-paulo=inline;vitrine-nova=git;" "get -o jsonpath: range/end"
is "$(dc get loja-sao-paulo -o "jsonpath={.spec.inline.value['Página Inicial'].title}")" \
    "Loja São Paulo" "get NAME -o jsonpath: a quoted key with accents and a space"
is "$(dc get loja-sao-paulo -o 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}')" \
    "Published" "get -o jsonpath: a filter on the merged status"
is "$(dc status -o 'jsonpath={[*].name}')" "loja-sao-paulo vitrine-nova" \
    "status -o jsonpath over its rows"
dc get -o 'jsonpath={..name}' >"$T/out" 2>"$T/err"
is "$?" 1 "get -o jsonpath with .. exits 1"
check "... saying recursive descent is not supported" grep -q "unsupported: recursive descent" "$T/err"
dc get -o 'jsonpath={.items[0]' >/dev/null 2>"$T/err"
check "an unclosed { is named" grep -q "missing }" "$T/err"
dc get -o 'custom-columns=NAME:.metadata.name,TEAM:.metadata.labels.team,READY:.status.conditions[?(@.type=="Ready")].status' >"$T/cc" 2>&1
is "$?" 0 "get -o custom-columns exits 0"
is "$(sed -n 1p "$T/cc" | tr -s ' ')" "NAME TEAM READY" "custom-columns: the header"
check "custom-columns: loja's row" grep -Eq "^loja-sao-paulo +vitrine e promoções +True$" "$T/cc"
check "custom-columns: <none> where there is nothing" grep -Eq "^vitrine-nova +<none> +<none>$" "$T/cc"
is "$(dc status -o custom-columns=N:name,SRC:.source | tr -s ' ' | tail -1)" "vitrine-nova git" \
    "status -o custom-columns"
dc get -o custom-columns=NAME >/dev/null 2>"$T/err"
is "$?" 1 "custom-columns without :EXPR exits 1"
check "... naming the column" grep -q '"NAME" is not NAME:EXPR' "$T/err"
dc describe loja-sao-paulo -o 'jsonpath={.x}' >/dev/null 2>"$T/err"
is "$?" 2 "jsonpath is refused where it is not supported (describe): exit 2"

# --- AGE: since creation, kubectl's format, the same in every table -----
same_age() {
	g=$(dc get | awk '$1 == "loja-sao-paulo" { print $NF }')
	s=$(dc status | awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "AGE") c = i } $2 == "loja-sao-paulo" { print $c }')
	echo "get=$g status=$s" >"$T/ages"
	# the two commands run apart: under load a second may pass between them
	echo "$g" | grep -Eq '^[0-9]+s$' && echo "$s" | grep -Eq '^[0-9]+s$' &&
	    [ $(( ${s%s} - ${g%s} )) -ge 0 ] && [ $(( ${s%s} - ${g%s} )) -le 1 ]
}
ok_age=1
for i in 1 2 3; do same_age && { ok_age=0; break; }; done
ok $ok_age "AGE is the same in get and status (a second apart at most), in seconds after creation ($(cat "$T/ages"))"
check "status: PUBLISHED (time since the last publish) beside AGE" \
    sh -c "\"$DECOCTL\" -n $NS status | head -1 | grep -q 'PODSNOTIFIED   PUBLISHED   AGE   OWNER'"

# --- no escapes on a pipe; none under NO_COLOR on a terminal ------------
C1=3f2a9c0d1e2b3a4c5d6e7f8091a2b3c4d5e6f708
tool fetch "$NS" loja-sao-paulo inline "$C1" \
    aaaa000000000000000000000000000000000000000000000000000000000000 >/dev/null
tool audit publisher "decofile/$NS/loja-sao-paulo" publish "hash=aaaa" >/dev/null
dc history loja-sao-paulo >/dev/null 2>&1
is "$?" 0 "history reads the journal (so its output below is checked)"
for args in "get" "get -o wide" "status" "describe loja-sao-paulo" "history loja-sao-paulo" \
    "journal" "version"; do
	# shellcheck disable=SC2086
	dc $args >"$T/plain" 2>&1
	if has_esc "$T/plain"; then ok 1 "decoctl $args: no escape on a pipe"; else
		ok 0 "decoctl $args: no escape on a pipe"; fi
done
if command -v script >/dev/null 2>&1; then
	# wait's progress line is the one thing decoctl redraws on a terminal
	script -qec "\"$DECOCTL\" -n $NS wait vitrine-nova --for ready --timeout 1s" /dev/null \
	    >"$T/tty" 2>&1 </dev/null
	check "on a terminal, wait redraws its progress line (the check below can see escapes)" \
	    has_esc "$T/tty"
	NO_COLOR=1 script -qec "\"$DECOCTL\" -n $NS wait vitrine-nova --for ready --timeout 1s" \
	    /dev/null >"$T/tty" 2>&1 </dev/null
	check "NO_COLOR=1: the progress is printed" grep -q "notified" "$T/tty"
	if has_esc "$T/tty"; then ok 1 "NO_COLOR=1 on a terminal: no escape"; else
		ok 0 "NO_COLOR=1 on a terminal: no escape"; fi
	NO_COLOR=1 script -qec "\"$DECOCTL\" -n $NS status" /dev/null >"$T/tty" 2>&1 </dev/null
	if has_esc "$T/tty"; then ok 1 "NO_COLOR=1: status has no escape"; else
		ok 0 "NO_COLOR=1: status has no escape"; fi
else
	diag "no script(1): the terminal checks are skipped"
fi

# --- reads never create a store; the no-config notice -------------------
cat >"$T/other.conf" <<EOF
state_dir = $T/nostate
store = local:$T/nostore
EOF
for args in "get" "status" "describe loja-sao-paulo" "wait loja-sao-paulo --for ready --timeout 1s" \
    "get -w"; do
	# shellcheck disable=SC2086
	DECOD_CONFIG="$T/other.conf" timeout "$(scaled 20)" "$DECOCTL" $args >"$T/out" 2>"$T/err"
	is "$?" 1 "decoctl $args with no store: exit 1"
	check "decoctl $args: the error names the missing store's path" \
	    grep -q "no store at $T/nostore" "$T/err"
	if grep -q "No resources found" "$T/out" "$T/err"; then
		ok 1 "decoctl $args: not 'No resources found'"
	else ok 0 "decoctl $args: not 'No resources found'"; fi
done
for args in "history loja-sao-paulo" "journal"; do
	# shellcheck disable=SC2086
	DECOD_CONFIG="$T/other.conf" "$DECOCTL" $args >"$T/out" 2>"$T/err"
	is "$?" 1 "decoctl $args with no journal: exit 1"
	check "decoctl $args: names the missing journal" grep -q "no journal at $T/nostate/journal.db" "$T/err"
done
check "no read created the store" test ! -e "$T/nostore"
check "no read created state_dir" test ! -e "$T/nostate"
default_conf=$("$DECOCTL" --help | sed -n 's/.*default \(\/.*decod\.conf\).*/\1/p')
if [ -n "$default_conf" ] && [ ! -e "$default_conf" ]; then
	(unset DECOD_CONFIG; "$DECOCTL" get --store "local:$T/store" -n "$NS") >"$T/out" 2>"$T/err"
	is "$?" 0 "no config file: get with --store works"
	is "$(grep -c 'no config file' "$T/err")" 1 "no config file: said once on stderr"
	check "... naming the file looked for and the store used" \
	    grep -q "decoctl: no config file ($default_conf does not exist; .*store local:$T/store" "$T/err"
	check "... and stdout is the table alone" grep -q "^NAME " "$T/out"
	(unset DECOD_CONFIG; "$DECOCTL" version) >/dev/null 2>"$T/err"
	is "$(cat "$T/err")" "" "version says nothing about the config"
	dc get >/dev/null 2>"$T/err"
	is "$(grep -c 'no config file' "$T/err")" 0 "with a config file: no notice"
else
	diag "$default_conf exists: the no-config notice is not checked"
fi

# --- get -w, status -w ---------------------------------------------------
# watch_start FILE ARGS...: decoctl ARGS in the background into FILE
watch_start() {
	f=$1; shift
	"$DECOCTL" -n "$NS" "$@" >"$f" 2>&1 &
	WPID=$!
	track_pid "$WPID"
}
lines() { grep -c "$2" "$1" 2>/dev/null; }
watch_start "$T/w1" get -w
check "get -w prints the table first" wait_for "$(scaled 10)" grep -q "^NAME .*AGE" "$T/w1"
wait_for "$(scaled 10)" grep -q "^vitrine-nova " "$T/w1"
is "$(lines "$T/w1" '^loja-sao-paulo ')" 1 "get -w: loja once in the first table"
tool condition "$NS" loja-sao-paulo publisher Ready False PublishFailed "target refused: 403"
check "get -w: a new line when loja's Ready changes" \
    wait_for "$(scaled 10)" sh -c "grep -Eq '^loja-sao-paulo .* False ' '$T/w1'"
sed 's/vitrine-nova/vitrine-antiga/' "$T/vitrine.json" >"$T/v3.json"
dc apply -f "$T/v3.json" >/dev/null 2>&1
check "get -w: a line for a decofile created meanwhile" \
    wait_for "$(scaled 10)" grep -q "^vitrine-antiga " "$T/w1"
is "$(lines "$T/w1" '^vitrine-nova ')" 1 "get -w: an unchanged row is not printed again"
is "$(lines "$T/w1" '^NAME ')" 1 "get -w: one header"
check "get -w is still running" kill -0 "$WPID"
kill -INT "$WPID"
wait "$WPID"
is "$?" 0 "get -w ends on SIGINT with exit 0"
has_esc "$T/w1"; ok $((1 - $?)) "get -w: no escape in its output"

watch_start "$T/w2" status -w
check "status -w prints the table first" wait_for "$(scaled 10)" grep -q "^NAMESPACE .*MESSAGE" "$T/w2"
tool condition "$NS" vitrine-nova fetcher Syncing False FetchFailed "git: repository not found"
check "status -w: a line with the new failure" \
    wait_for "$(scaled 10)" grep -q "vitrine-nova .*FetchFailed: git: repository not found" "$T/w2"
kill -TERM "$WPID"
wait "$WPID"
is "$?" 0 "status -w ends on SIGTERM with exit 0"

dc get -w -o json >/dev/null 2>"$T/err"
is "$?" 2 "get -w -o json: exit 2"
check "... saying what --watch prints" grep -q "watch prints a table" "$T/err"

# --- completion: bash, zsh, fish -----------------------------------------
dc completion bash >"$T/c.bash"
is "$?" 0 "completion bash exits 0"
dc completion tcsh >/dev/null 2>"$T/err"
is "$?" 2 "completion tcsh: exit 2"
check "... naming the shells there are" grep -q "bash, zsh or fish" "$T/err"
# comp WORDS...: what bash's completion offers for the last word
comp() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _decoctl
	    printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' comp "$T/c.bash" "$DECOCTL" "$@"
}
is "$(comp st)" "stages start status stop " "bash: verbs"
is "$(comp ver)" "version " "bash: version"
check "bash: every verb of --help is offered" sh -c "
	for v in \$(\"$DECOCTL\" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print \$1} /^$/ {on = 0}'); do
		echo '$(comp "")' | grep -qw \"\$v\" || exit 1
	done"
is "$(comp get --wa)" "--watch " "bash: get's options"
is "$(comp wait x --f)" "--for " "bash: wait's options"
is "$(comp get -o j)" "json jsonpath= " "bash: -o values"
is "$(comp -n "$NS" status "")" "loja-sao-paulo vitrine-antiga vitrine-nova " \
    "bash: decofile names from the store (with -n)"
is "$(comp -n "$NS" describe vitrine-a)" "vitrine-antiga " "bash: a name by its prefix"
is "$(comp completion "")" "bash fish zsh " "bash: completion's shells"
if command -v zsh >/dev/null 2>&1; then
	dc completion zsh >"$T/c.zsh"
	check "zsh: the script parses" zsh -n "$T/c.zsh"
	# compadd and _describe are replaced by printers: what would be offered
	zcomp() {
		zsh -c 'autoload -U compinit; compinit -u -D -d "$1.dump"; . "$1"
		    compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }
		    _describe() { print -rl -- ${(P)2%%:*}; }
		    shift; words=("$@"); CURRENT=$#; _decoctl' zcomp "$T/c.zsh" "$DECOCTL" "$@" |
		    sort | tr '\n' ' '
	}
	check "zsh: the verbs" sh -c "echo '$(zcomp "")' | grep -q 'completion .*status .*version'"
	is "$(zcomp -n "$NS" status "")" "loja-sao-paulo vitrine-antiga vitrine-nova " \
	    "zsh: decofile names from the store"
	check "zsh: get's options" sh -c "echo '$(zcomp get -)' | grep -q -- '--watch'"
	zsh -c 'autoload -U compinit; compinit -u -D -d "$1.dump"; . "$1"; print -r -- $_comps[decoctl]' \
	    z "$T/c.zsh" >"$T/out" 2>&1
	is "$(cat "$T/out")" "_decoctl" "zsh: sourcing it registers _decoctl for decoctl"
else
	diag "zsh is not installed (examples/install-deps.sh installs it): checked by bash only"
fi
if command -v fish >/dev/null 2>&1; then
	dc completion fish >"$T/c.fish"
	check "fish: the script parses" fish -n "$T/c.fish"
	fcomp() {
		fish -c "source '$T/c.fish'; complete -C '$*'" | cut -f1 | sort | tr '\n' ' '
	}
	is "$(fcomp decoctl ver)" "version " "fish: a verb"
	is "$(fcomp "$DECOCTL" -n "$NS" status "")" "loja-sao-paulo vitrine-antiga vitrine-nova " \
	    "fish: decofile names from the store"
	check "fish: get's options" sh -c "echo '$(fcomp decoctl get --)' | grep -q -- '--watch'"
else
	diag "fish is not installed (examples/install-deps.sh installs it): checked by bash only"
fi

done_testing
