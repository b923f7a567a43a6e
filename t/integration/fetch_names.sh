#!/bin/sh
# fetch_names - block names as real sites have them (issue 24, defects 1
# and 9), end to end under the real supervisor (fetcher, renderer,
# publisher; file target), the daemons in the C locale.  One repository
# with Portuguese, Chinese and emoji block names, a subfolder, and names
# percent- and plus-encoded, published from three sources: its GitHub
# zipball (the stand-in's `git archive`, names flagged UTF-8), the
# repository itself over `git daemon`, and an OCI artifact in Debian's
# docker-registry whose tar layer is written as Go's archive/tar writes
# one (PAX path records): each publishes exactly the reference merge.  A
# name that is not UTF-8 (a folder file named %FF.json or with a raw 0xff
# byte, a git tree path in Latin-1) gives Syncing=False FetchError naming
# the file, quoted so the message is UTF-8, `decoctl wait --for ready`
# fails at once with it, and the good Decofiles publish on.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"
. "$top_srcdir/t/lib/github.sh"
. "$top_srcdir/t/lib/registry.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
OCI="$top_srcdir/t/lib/oci.py"
for p in "$DECOD" "$DECOCTL"; do [ -x "$p" ] || bail "$p not built"; done
for s in fetcher renderer publisher; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
done
command -v curl >/dev/null || skip_all "curl not installed"
# the daemons run in the C locale, where libarchive could not name the entries
export LC_ALL=C
unset LANG LC_CTYPE

mkdir -p "$T/libexec" "$T/state/secrets"
for s in fetcher renderer publisher; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done

# --- the repository ---------------------------------------------------------------
W="$T/work"
git_work "$W"
git_commit "$W" '.deco/blocks/Página Institucional.json' '{ "título": "Página Institucional", "seções": [1, 2] }'
git_commit "$W" '.deco/blocks/pt-BR/Política de Privacidade.json' '{"texto": "Olá"}'
git_commit "$W" '.deco/blocks/首页.json' '{"标题":"首页"}'
git_commit "$W" '.deco/blocks/🎉 Promoção.json' '{"emoji":"🎉"}'
git_commit "$W" '.deco/blocks/Home%20Page.json' '{"home":true}'
git_commit "$W" '.deco/blocks/Caf%C3%A9.json' '{"menu":"café"}'
git_commit "$W" '.deco/blocks/Ofertas+de+Verão.json' '{"sale":true}'
git_commit "$W" '.deco/blocks/LEIA-ME.md' 'not a block'
git_commit "$W" 'docs/Manual do Usuário.json' '{"not":"published"}'
C1=$(git -C "$W" rev-parse HEAD)
# the reference merge: keys form-decoded, in ascending byte order, values compacted
REF='{"Café":{"menu":"café"},"Home Page":{"home":true},"Ofertas de Verão":{"sale":true},"Política de Privacidade":{"texto":"Olá"},"Página Institucional":{"título":"Página Institucional","seções":[1,2]},"首页":{"标题":"首页"},"🎉 Promoção":{"emoji":"🎉"}}'

# a repository with one block named in Latin-1 (not UTF-8)
B="$T/bad"
git_work "$B"
git_commit "$B" .deco/blocks/Header.json '{"v":1}'
printf '{"latin1":true}' >"$B/.deco/blocks/Caf$(printf '\351').json"
git -C "$B" add -A && git -C "$B" commit -q -m "a block named in Latin-1" || bail "commit"

git_bare "$W" site
git_bare "$B" bad
git_serve
gh_serve --repo "acme/loja=$W"

# the OCI artifact: the blocks folder as one PAX tar layer
mkdir -p "$T/art"
git -C "$W" archive --format=tar HEAD .deco/blocks | tar -C "$T/art" -xf - || bail "cannot unpack the blocks"
python3 "$OCI" pax-tar "$T/art" "$T/layer.tar" || bail "cannot make the layer"
printf 'decod:unused\n' >"$T/creds"
reg_serve reg none
REG=127.0.0.1:$REG_PORT
python3 "$OCI" push "http://$REG" decofile/loja prod "$T/creds" oci \
    "$T/layer.tar:application/vnd.oci.image.layer.v1.tar" >/dev/null || bail "push"

# folders with a name that is not UTF-8
mkdir -p "$T/dir-pct" "$T/dir-raw"
printf '{}' >"$T/dir-pct/Header.json"
printf '{}' >"$T/dir-pct/%FF.json"
printf '{}' >"$T/dir-raw/Header.json"
printf '{}' >"$T/dir-raw/$(printf '\377').json"

cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = fetcher renderer publisher
rescan_interval = 300ms
github_api_url = $GH_API
oci_insecure_registries = $REG
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-loja "$@"; }
ready3() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 3 ]; }
doc() { cat "$T/state/published/sites-loja/$1/decofile.json" 2>/dev/null; }
doc_is() { [ "$(doc "$1")" = "$2" ]; }
condition() { # condition NAME TYPE FIELD
	ctl get decofile "$1" -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]: print(c[sys.argv[2]])' "$2" "$3"; }
field() { # field NAME FIELD: a status field
	ctl get decofile "$1" -o json | python3 -c '
import json, sys
print(json.load(sys.stdin).get("status", {}).get(sys.argv[1], ""))' "$2"; }
field_is() { [ "$(field "$1" "$2")" = "$3" ]; }
condition_is() { [ "$(condition "$1" "$2" "$3")" = "$4" ]; }
apply() { # apply NAME SOURCE SPEC
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"%s","target":"file",%s}}' \
	    "$1" "$2" "$3" >"$T/df-$1.json"
	ctl apply -f "$T/df-$1.json"
}

"$DECOD" >>"$T/decod.log" 2>&1 &
track_pid $!
wait_for 20 ready3 || bail "stages not ready"

# --- one repository, three sources, one document ------------------------------------------
check "apply: github" apply gh github '"github":{"org":"acme","repo":"loja","commit":"main","path":".deco/blocks"}'
check "apply: git" apply git git '"git":{"url":"'"$GIT_BASE"'/site.git","ref":"main","dir":".deco/blocks","period":"1m"}'
check "apply: oci" apply oci oci '"oci":{"image":"'"$REG"'/decofile/loja:prod","dir":".deco/blocks","period":"1m"}'
check "github zipball (names flagged UTF-8): the reference merge" wait_for 30 doc_is gh "$REF"
check "git: the reference merge" wait_for 30 doc_is git "$REF"
check "oci (PAX tar layer): the reference merge" wait_for 30 doc_is oci "$REF"
is "$(condition gh Syncing status)" True "github: Syncing=True"
check "github: githubCommit is the sha" wait_for 5 field_is gh githubCommit "$C1"

# --- names that are not UTF-8 ------------------------------------------------------------------
check "apply: folder with %FF.json" apply pct dir '"dir":{"path":"'"$T/dir-pct"'"}'
check "apply: folder with a raw 0xff name" apply raw dir '"dir":{"path":"'"$T/dir-raw"'"}'
check "apply: git tree with a Latin-1 name" apply badgit git '"git":{"url":"'"$GIT_BASE"'/bad.git","ref":"main","dir":".deco/blocks","period":"1m"}'
check "%FF.json: Syncing=False FetchError" wait_for 20 condition_is pct Syncing reason FetchError
is "$(condition pct Syncing message)" \
    "%FF.json: file name URL-decodes to a block key that is not valid UTF-8 ('\\xff')" \
    "%FF.json: the message names the file and the key, quoted"
check "raw 0xff: Syncing=False FetchError" wait_for 20 condition_is raw Syncing reason FetchError
is "$(condition raw Syncing message)" "file '\\xff.json' has a name that is not valid UTF-8" \
    "raw 0xff: the message names the file, quoted"
check "git Latin-1: Syncing=False FetchError" wait_for 20 condition_is badgit Syncing reason FetchError
is "$(condition badgit Syncing message)" \
    "file '.deco/blocks/Caf\\xe9.json' has a name that is not valid UTF-8" \
    "git Latin-1: the message names the file, quoted"
ctl wait pct --for ready --timeout 20s >"$T/wait.out" 2>&1
is "$?" 1 "decoctl wait --for ready fails at once (no timeout)"
grep -q "URL-decodes to a block key that is not valid UTF-8" "$T/wait.out"; ok $? "decoctl wait says why"
for n in pct raw badgit; do
	[ ! -e "$T/state/published/sites-loja/$n/decofile.json" ]; ok $? "$n: nothing published"
done
! grep -q "tree manifest is not JSON" "$T/decod.log"; ok $? "the renderer was never handed a manifest it cannot read"
doc_is gh "$REF" && doc_is git "$REF" && doc_is oci "$REF"; ok $? "the good Decofiles still publish the reference merge"
done_testing
