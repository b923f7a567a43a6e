#!/bin/sh
# github_publish - a GitHub-sourced Decofile end to end under the real
# supervisor (fetcher, renderer, publisher; file target), against the GitHub
# stand-in: the published document is the merge of the blocks under
# github.path at the ref's commit; a pushed commit is republished with
# status.githubCommit following it; decod stays strict where the operator
# was lax: a block that is not JSON, or two files giving one key, stop the
# publish with Syncing=False ValidationError naming the file(s), and the last
# good document stays live until the repository is fixed.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"
. "$top_srcdir/t/lib/github.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
for p in "$DECOD" "$DECOCTL"; do [ -x "$p" ] || bail "$p not built"; done
for s in fetcher renderer publisher; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
done
command -v curl >/dev/null || skip_all "curl not installed"

mkdir -p "$T/libexec" "$T/state/secrets"
for s in fetcher renderer publisher; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
printf 'ghp_pub%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$T/token"
cp "$T/token" "$T/state/secrets/gh"

W="$T/work"
git_work "$W"
git_commit "$W" blocks/Header.json '{ "title": "Loja" }'
git_commit "$W" 'blocks/pages/Home%20Page.json' '{"sections":[1,2]}'
git_commit "$W" README.md 'not published'
C1=$(git -C "$W" rev-parse HEAD)
gh_serve --repo "acme/loja=$W" --token "$T/token"

cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = fetcher renderer publisher
rescan_interval = 300ms
github_api_url = $GH_API
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-loja "$@"; }
ready3() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 3 ]; }
DOC="$T/state/published/sites-loja/loja/decofile.json"
doc_is() { [ "$(cat "$DOC" 2>/dev/null)" = "$1" ]; }
field() { ctl get decofile loja -o json | python3 -c '
import json, sys
print(json.load(sys.stdin).get("status", {}).get(sys.argv[1], ""))' "$1"; }
field_is() { [ "$(field "$1")" = "$2" ]; }
condition() { # condition TYPE FIELD
	ctl get decofile loja -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]: print(c[sys.argv[2]])' "$1" "$2"; }
condition_is() { [ "$(condition "$1" "$2")" = "$3" ]; }

"$DECOD" >>"$T/decod.log" 2>&1 &
track_pid $!
wait_for 20 ready3 || bail "stages not ready"
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-loja"},"spec":{"source":"github","target":"file","github":{"org":"acme","repo":"loja","commit":"main","path":"blocks/","period":"1s","secret":"gh"}}}' >"$T/df.json"
check "apply a github Decofile" ctl apply -f "$T/df.json"

V1='{"Header":{"title":"Loja"},"Home Page":{"sections":[1,2]}}'
check "published: the merge of the blocks at main" wait_for 20 doc_is "$V1"
check "status.githubCommit is the sha" wait_for 5 field_is githubCommit "$C1"
is "$(field sourceType)" github "status.sourceType"
check "Ready=True" wait_for 5 condition_is Ready status True

git_commit "$W" blocks/Footer.json '{"links":["a"]}'
C2=$(git -C "$W" rev-parse HEAD)
V2='{"Footer":{"links":["a"]},"Header":{"title":"Loja"},"Home Page":{"sections":[1,2]}}'
check "a pushed commit is republished" wait_for 20 doc_is "$V2"
check "githubCommit follows" wait_for 5 field_is githubCommit "$C2"

git_commit "$W" blocks/Broken.json '{"a": '
check "a block that is not JSON: Syncing=False ValidationError" wait_for 20 \
    condition_is Syncing reason ValidationError
condition Syncing message | grep -q "Broken.json"; ok $? "the message names the file ($(condition Syncing message | cut -c1-80))"
doc_is "$V2"; ok $? "the last good document stays live"

git -C "$W" rm -q blocks/Broken.json && git -C "$W" commit -qm fix
git_commit "$W" blocks/more/Header.json '{"title":"twice"}'
check "two files, one key: ValidationError" wait_for 20 sh -c \
    "$DECOCTL -n sites-loja get decofile loja -o json | grep -q 'blocks/Header.json' && $DECOCTL -n sites-loja get decofile loja -o json | grep -q 'blocks/more/Header.json'"
is "$(condition Syncing reason)" ValidationError "duplicate key: reason"
doc_is "$V2"; ok $? "still the last good document"

git -C "$W" rm -q blocks/more/Header.json && git -C "$W" commit -qm fix
C4=$(git -C "$W" rev-parse HEAD)
check "fixed: published again" wait_for 20 field_is githubCommit "$C4"
check "fixed: Syncing=True" wait_for 10 condition_is Syncing status True
doc_is "$V2"; ok $? "fixed: the same document (same blocks)"
! grep -q "$(cat "$T/token")" "$T/decod.log" "$T/state/journal.db"; ok $? "the token is in no log or journal"
done_testing
