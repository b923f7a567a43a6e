#!/bin/sh
# fetch_git - the fetcher against a real `git daemon`: a branch, an
# annotated tag and a sha are fetched (shallow) with the right commit; a
# folder inside the repository; an unchanged commit gives no new item over
# several polls; a pushed commit gives a new tree; `sync` skips the wait
# for a long period; an unreachable remote gives Syncing=False FetchError
# and is retried with a doubling delay; a secret's content never reaches
# the log.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"

FETCHER=$(bin fetcher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$FETCHER" ] || bail "fetcher not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"

cat >"$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
rescan_interval = 100ms
fetch_timeout = 10s
log_level = debug
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { db_read "$DB" "$1"; }
items() { sql "SELECT count(*) FROM items WHERE stage='renderer' AND name='$1'" 2>/dev/null; }
items_are() { [ "$(items "$1")" = "$2" ]; }
last() { sql "SELECT $2 FROM items WHERE stage='renderer' AND name='$1' ORDER BY id DESC LIMIT 1"; }
status_has() { "$TOOL" $C status sites-loja "$1" fetcher | grep -qF "$2"; }
blob_of() { # blob_of TREE_HASH KEY: the bytes of KEY's blob in that manifest
	m="$T/state/spool/$(printf %.2s "$1")/$1"
	b=$(sed 's/.*"key":"'"$2"'","path":"[^"]*","blob":"\([0-9a-f]*\)".*/\1/' "$m")
	cat "$T/state/spool/$(printf %.2s "$b")/$b"
}
gitdf() { # gitdf NAME URL REF DIR PERIOD [SECRET]
	sec=""
	[ -n "${6:-}" ] && sec=",\"secret\":\"$6\""
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"git","git":{"url":"%s","ref":"%s","dir":"%s","period":"%s"%s}}}' \
	    "$1" "$2" "$3" "$4" "$5" "$sec" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}
polls() { grep -c "msg=\"poll done\" ns=sites-loja name=$1 " "$T/fetcher.log"; }
polls_at_least() { [ "$(polls "$1")" -ge "$2" ]; }

# a repository: blocks under .deco/blocks, a tag v1 on the first commit
W="$T/work"
git_work "$W"
git_commit "$W" .deco/blocks/Header.json '{"v":1}'
git_commit "$W" docs/Other.json '{"doc":true}'
git -C "$W" tag -a v1 -m v1
C1=$(git -C "$W" rev-parse HEAD)
git_commit "$W" .deco/blocks/Header.json '{"v":2}'
C2=$(git -C "$W" rev-parse HEAD)
git_bare "$W" site
git_serve
URL="$GIT_BASE/site.git"
mkdir -p "$T/state/secrets"
printf 'deploy:TOPSECRET-pw-42\n' >"$T/state/secrets/git-creds"

"$FETCHER" $C >>"$T/fetcher.log" 2>&1 &
track_pid $!
wait_for 10 grep -q 'msg=ready' "$T/fetcher.log" || bail "fetcher did not start"

# --- branch, tag, sha, folder --------------------------------------------
check "apply: branch main" gitdf br "$URL" main .deco/blocks 1s git-creds
check "branch: renderer item" wait_for 15 items_are br 1
is "$(last br detail)" "source=git commit=$C2 generation=1" "branch: the newest commit"
is "$(blob_of "$(last br hash)" Header)" '{"v":2}' "branch: the block at that commit"
check "branch: githubCommit in status" wait_for 5 status_has br "\"sourceType\":\"git\",\"githubCommit\":\"$C2\""
check "cache repository is shallow" test -f "$T/state/git/$(printf %s "$URL" | sha256sum | cut -d' ' -f1)/shallow"

check "apply: tag v1" gitdf tag "$URL" v1 .deco/blocks 1m
check "tag: renderer item" wait_for 15 items_are tag 1
is "$(last tag detail)" "source=git commit=$C1 generation=1" "tag: peeled to its commit"
is "$(blob_of "$(last tag hash)" Header)" '{"v":1}' "tag: the block at the tag"

check "apply: sha" gitdf sha "$URL" "$C1" docs 1m
check "sha: renderer item" wait_for 15 items_are sha 1
is "$(last sha detail)" "source=git commit=$C1 generation=1" "sha: that commit"
is "$(blob_of "$(last sha hash)" Other)" '{"doc":true}' "sha: another folder of the repository"

# --- unchanged, then a new commit ------------------------------------------
N=$(polls br)
check "branch: polled again and again" wait_for 15 polls_at_least br $((N + 3))
is "$(items br)" 1 "unchanged commit: no new item"
is "$(sql "SELECT count(*) FROM fetches WHERE name='br'")" 1 "unchanged commit: no new fetch recorded"
H1=$(last br hash)
git_commit "$W" .deco/blocks/Header.json '{"v":3}'
C3=$(git -C "$W" rev-parse HEAD)
git_push "$W" site
check "new commit: a new item" wait_for 15 items_are br 2
is "$(last br detail)" "source=git commit=$C3 generation=1" "new commit handed on"
[ "$(last br hash)" != "$H1" ]; ok $? "new commit, new tree hash"
is "$(blob_of "$(last br hash)" Header)" '{"v":3}' "new commit: new bytes"

# --- sync skips the wait ------------------------------------------------------
check "apply: long period" gitdf slow "$URL" main .deco/blocks 1h
check "slow: first item" wait_for 15 items_are slow 1
git_commit "$W" .deco/blocks/Header.json '{"v":4}'
git_push "$W" site
check "sync trigger" "$TOOL" $C sync sites-loja slow
check "sync: fetched at once" wait_for 15 items_are slow 2

# --- an unreachable remote ------------------------------------------------------
DEAD=$(free_port)
check "apply: unreachable remote" gitdf dead "git://127.0.0.1:$DEAD/none.git" main "" 1s
check "dead: Syncing=False FetchError" wait_for 15 status_has dead '"status":"False","reason":"FetchError","message":"git ls-remote git://127.0.0.1:'"$DEAD"'/none.git:'
check "dead: retried after 1 s, then 2 s" wait_for 15 grep -q 'msg="fetch failed" ns=sites-loja name=dead .*retry_ms=2000' "$T/fetcher.log"
check "dead: then 4 s" wait_for 15 grep -q 'msg="fetch failed" ns=sites-loja name=dead .*retry_ms=4000' "$T/fetcher.log"
is "$(items dead)" 0 "dead: no item"
check "fetcher still alive" kill -0 $!

! grep -q 'TOPSECRET' "$T/fetcher.log" "$DB" "$T/df-br.json"; ok $? "the secret is in no log, journal or resource"
done_testing
