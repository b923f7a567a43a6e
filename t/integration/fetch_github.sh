#!/bin/sh
# fetch_github - the fetcher against the GitHub stand-in (t/stand-in/github.py)
# serving a real git repository: a ref is resolved through the commits API
# and its zipball (302 to another origin, which never sees the token) read
# by the operator's rules (root folder, plain string prefix, flattened,
# form-decoded keys); an unchanged ref costs one conditional request (304)
# per poll, made on the stage loop (curl multi), and no download; a pushed commit is picked up; a full sha is not
# polled; a wrong or missing token and an unknown repository give
# Syncing=False FetchError with GitHub's message; a spent rate limit is
# said on the condition and waited out until X-RateLimit-Reset; hostile
# zipballs (zip-slip, absolute path, symlink, bomb, too many entries, a
# name not UTF-8, one 2 GiB entry in 2 MiB) are refused and hand nothing
# on, the bombs with the fetcher's peak memory bounded; the token is in no
# log, journal or store.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"
. "$top_srcdir/t/lib/github.sh"

FETCHER=$(bin fetcher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$FETCHER" ] || bail "fetcher not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"
command -v curl >/dev/null || skip_all "curl not installed"

TOKEN="ghp_TOPSECRET$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
mkdir -p "$T/state/secrets/gh-token" "$T/stand-in"
printf '%s\n' "$TOKEN" >"$T/state/secrets/gh-token/token"	# a mounted Secret: key "token"
printf '%s\n' "$TOKEN" >"$T/stand-in/token"
printf 'ghp_wrong\n' >"$T/state/secrets/gh-wrong"

# the repository: blocks under .deco/blocks, with the operator's corner cases
W="$T/work"
git_work "$W"
git_commit "$W" .deco/blocks/Header.json '{"v":1}'
git_commit "$W" '.deco/blocks/pages/Home+Page%21.json' '{"home":true}'
git_commit "$W" .deco/blocks/x.json.json '{"double":true}'
git_commit "$W" .deco/blocks/README.md 'not a block'
git_commit "$W" .deco/blocks-extra/Extra.json '{"extra":true}'
git_commit "$W" other/Other.json '{"other":true}'
C1=$(git -C "$W" rev-parse HEAD)

# hostile zipballs, each served as its own repository
for k in slip abs symlink bomb; do
	python3 "$top_srcdir/t/lib/hostile_zip.py" $k "$T/$k.zip" || bail "cannot make $k.zip"
done
python3 "$top_srcdir/t/lib/hostile_zip.py" many "$T/many.zip" 600 || bail "cannot make many.zip"
python3 "$top_srcdir/t/lib/hostile_zip.py" latin1 "$T/latin1.zip" || bail "cannot make latin1.zip"
python3 "$top_srcdir/t/lib/hostile_zip.py" bigbomb "$T/bigbomb.zip" || bail "cannot make bigbomb.zip"

gh_serve --repo "acme/loja=$W" --repo "acme/pinned=$W" --token "$T/stand-in/token" \
    --zip "acme/slip=$T/slip.zip" --zip "acme/abs=$T/abs.zip" \
    --zip "acme/symlink=$T/symlink.zip" --zip "acme/bomb=$T/bomb.zip" \
    --zip "acme/many=$T/many.zip" --zip "acme/latin1=$T/latin1.zip" \
    --zip "acme/bigbomb=$T/bigbomb.zip"

cat >"$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
rescan_interval = 100ms
fetch_timeout = 10s
log_level = debug
github_api_url = $GH_API
max_archive_entries = 500
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
items() { sql "SELECT count(*) FROM items WHERE stage='renderer' AND name='$1'" 2>/dev/null; }
items_are() { [ "$(items "$1")" = "$2" ]; }
last() { sql "SELECT $2 FROM items WHERE stage='renderer' AND name='$1' ORDER BY id DESC LIMIT 1"; }
status_has() { "$TOOL" $C status sites-loja "$1" fetcher | grep -qF "$2"; }
keys_of() { # the keys of a tree manifest, one line
	m="$T/state/spool/$(printf %.2s "$1")/$1"
	python3 -c 'import json,sys; print(" ".join(e["key"] for e in json.load(open(sys.argv[1]))["entries"]))' "$m"
}
blob_of() { # blob_of TREE_HASH KEY
	m="$T/state/spool/$(printf %.2s "$1")/$1"
	b=$(python3 -c 'import json,sys; print([e["blob"] for e in json.load(open(sys.argv[1]))["entries"] if e["key"]==sys.argv[2]][0])' "$m" "$2")
	cat "$T/state/spool/$(printf %.2s "$b")/$b"
}
ghdf() { # ghdf NAME REPO COMMIT PATH PERIOD [SECRET]
	sec=""
	[ -n "${6:-}" ] && sec=",\"secret\":\"$6\""
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"github","github":{"org":"acme","repo":"%s","commit":"%s","path":"%s","period":"%s"%s}}}' \
	    "$1" "$2" "$3" "$4" "$5" "$sec" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}
polls() { grep -c "msg=\"poll done\" ns=sites-loja name=$1 " "$T/fetcher.log"; }
polls_at_least() { [ "$(polls "$1")" -ge "$2" ]; }
requests_for() { grep -c "^GET /repos/acme/$1/$2" "$T/github.log"; }

# under AddressSanitizer, freed memory waits in a quarantine (256 MB by
# default) and counts in the peak RSS asserted below: keep it small, so the
# bound measures the fetcher and not the sanitizer
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" \
    env -u GITHUB_TOKEN "$FETCHER" $C >>"$T/fetcher.log" 2>&1 &
FPID=$!
track_pid $FPID
wait_for 10 grep -q 'msg=ready' "$T/fetcher.log" || bail "fetcher did not start"

# --- publish from GitHub ------------------------------------------------------
check "apply: github main, path .deco/blocks" ghdf site loja main .deco/blocks 1s gh-token
check "site: renderer item" wait_for 15 items_are site 1
is "$(last site detail)" "source=github commit=$C1 generation=1" "site: the commit of main"
is "$(keys_of "$(last site hash)")" "Extra Header Home Page! x.json" \
    "keys: flattened, form-decoded, one .json stripped, README ignored, plain prefix takes blocks-extra"
is "$(blob_of "$(last site hash)" Header)" '{"v":1}' "site: the block's bytes"
check "site: githubCommit = the sha" wait_for 5 status_has site "\"sourceType\":\"github\",\"githubCommit\":\"$C1\""
check "site: Syncing=True" wait_for 5 status_has site '"type":"Syncing","status":"True"'
is "$(gh_stat codeload_with_auth)" 0 "the token never went to the codeload origin"
is "$(gh_stat codeload)" 1 "one zipball download"

# --- unchanged ref: one conditional request, no download -------------------
P=$(polls site)
set -- $(gh_stat zipball commits commits_304)
Z=$1 N=$2 N304=$3
# a poll whose request the stand-in counted before N was read is finished
# (and counted in polls) only after P: four polls leave at least three
# requests between the two readings
check "site: polled again and again" wait_for 15 polls_at_least site $((P + 4))
P2=$(polls site)
set -- $(gh_stat zipball commits commits_304)
Z2=$1 N2=$2 N304b=$3
is "$Z2" "$Z" "unchanged ref: no zipball request"
is "$((N2 - N))" "$((N304b - N304))" "unchanged ref: every commits request was a 304"
[ $((N2 - N)) -ge 3 ] && [ $((N2 - N)) -le $((P2 - P + 1)) ]; ok $? "unchanged ref: one conditional request per poll ($((N2 - N)) requests, $((P2 - P)) polls)"
is "$(items site)" 1 "unchanged ref: no new item"
check "unchanged ref: polled on the loop (curl multi), not on a worker" \
    grep -q 'msg="poll done" ns=sites-loja name=site .*unchanged=1 on=loop' "$T/fetcher.log"

# --- a new commit is picked up ----------------------------------------------------
git_commit "$W" .deco/blocks/Header.json '{"v":2}'
C2=$(git -C "$W" rev-parse HEAD)
check "new commit: a new item" wait_for 15 items_are site 2
is "$(last site detail)" "source=github commit=$C2 generation=1" "new commit handed on"
is "$(blob_of "$(last site hash)" Header)" '{"v":2}' "new commit: new bytes"
check "new commit: githubCommit moves" wait_for 5 status_has site "\"githubCommit\":\"$C2\""

# --- a full sha is fetched once, never polled ----------------------------------------
check "apply: pinned to a sha" ghdf pin pinned "$C1" .deco/blocks/ 1s gh-token
check "pin: renderer item" wait_for 15 items_are pin 1
is "$(last pin detail)" "source=github commit=$C1 generation=1" "pin: that commit"
P=$(polls site)
check "meanwhile site polls on" wait_for 15 polls_at_least site $((P + 3))
is "$(requests_for pinned commits)" 0 "pin: the commits API was never asked"
is "$(requests_for pinned zipball)" 1 "pin: one zipball"

# --- tokens -------------------------------------------------------------------------
check "apply: wrong token" ghdf wrong loja main .deco/blocks 1s gh-wrong
check "wrong token: 401 Bad credentials on the condition" wait_for 15 status_has wrong \
    '"status":"False","reason":"FetchError","message":"GitHub acme/loja: 401 Bad credentials: the token was refused'
check "apply: no token" ghdf anon loja main .deco/blocks 1s
check "no token: 401 on the condition" wait_for 15 status_has anon \
    '"status":"False","reason":"FetchError","message":"GitHub acme/loja: 401 Bad credentials: no token was sent'
check "apply: unknown repository" ghdf nope nosuch main "" 1s gh-token
check "unknown repository: 404" wait_for 15 status_has nope \
    '"status":"False","reason":"FetchError","message":"GitHub acme/nosuch: 404 Not Found'
is "$(items wrong)$(items anon)$(items nope)" 000 "refused sources hand nothing on"

# --- hostile zipballs ------------------------------------------------------------------
for k in slip abs symlink bomb many latin1 bigbomb; do
	ghdf "evil-$k" "$k" main blocks 1m gh-token || ok 1 "apply evil-$k"
done
check "zip-slip refused" wait_for 15 status_has evil-slip \
    '"reason":"FetchError","message":"zipball: refused: entry '"'"'acme-evil-0000000/blocks/../../../evil.json'"'"' has a \"..\" component'
check "absolute path refused" wait_for 15 status_has evil-abs \
    '"reason":"FetchError","message":"zipball: refused: entry '"'"'/etc/evil.json'"'"' has an absolute path'
check "symlink refused" wait_for 15 status_has evil-symlink \
    '"reason":"FetchError","message":"zipball: refused: entry '"'"'acme-evil-0000000/blocks/Link.json'"'"' is a symbolic link'
check "bomb refused (ratio)" wait_for 15 status_has evil-bomb \
    '"reason":"FetchError","message":"zipball: refused: compression ratio over 100:1'
check "too many entries refused" wait_for 15 status_has evil-many \
    '"reason":"FetchError","message":"zipball: refused: more than 500 entries'
# issue 24: a name not UTF-8 is refused, named, quoted (the message stays UTF-8)
check "a Latin-1 name refused, quoted" wait_for 15 status_has evil-latin1 \
    '"reason":"FetchError","message":"zipball: refused: entry '"'"'acme-evil-0000000/blocks/Caf\\xe9.json'"'"' has a name that is not valid UTF-8"'
# issue 24: one 2 GiB entry in 2 MiB; the whole archive's ratio let 200 MB out
check "one 2 GiB entry refused (ratio of the entry)" wait_for 15 status_has evil-bigbomb \
    '"reason":"FetchError","message":"zipball: refused: compression ratio over 100:1 ('
OUT=$("$TOOL" $C status sites-loja evil-bigbomb fetcher | sed -n 's/.*compression ratio over 100:1 (\([0-9]*\) bytes out of.*/\1/p')
[ -n "$OUT" ] && [ "$OUT" -le $(((1 << 20) + 65536)) ]; ok $? "the 2 GiB entry stopped at its first MiB as it streamed ($OUT bytes out)"
is "$(items evil-slip)$(items evil-abs)$(items evil-symlink)$(items evil-bomb)$(items evil-many)$(items evil-latin1)$(items evil-bigbomb)" 0000000 \
    "hostile zipballs hand nothing on"
RSS=$(awk '/VmHWM/ {print $2}' /proc/$FPID/status)
[ "${RSS:-999999}" -lt 60000 ]; ok $? "the bombs were stopped early: peak RSS ${RSS} kB < 60 MB"

# --- rate limit ------------------------------------------------------------------------------
gh_ratelimit 0 4
git_commit "$W" .deco/blocks/Header.json '{"v":3}'
C3=$(git -C "$W" rev-parse HEAD)
check "rate limit said on the condition" wait_for 15 status_has site \
    '"status":"False","reason":"FetchError","message":"GitHub rate limit reached (403, X-RateLimit-Remaining: 0): waiting until'
check "rate limit: the retry waits for the reset, not the backoff" \
    grep -q 'msg="fetch failed" ns=sites-loja name=site .*retry_ms=[1-4][0-9][0-9][0-9]$' "$T/fetcher.log"
check "after the reset: the new commit" wait_for 20 items_are site 3
is "$(last site detail)" "source=github commit=$C3 generation=1" "after the reset: that commit"
check "after the reset: Syncing=True again" wait_for 5 status_has site '"type":"Syncing","status":"True"'

check "fetcher still alive" kill -0 $FPID
! grep -rq "$TOKEN" "$T/fetcher.log" "$DB" "$T/store" "$T/github.log"; ok $? "the token is in no log, journal or store"
ps -eo args >"$T/ps.txt"
! grep -q "$TOKEN" "$T/ps.txt"; ok $? "the token is in no process's argv"
done_testing
