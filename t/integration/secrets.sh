#!/bin/sh
# secrets.sh - no secret the pipeline handles shows anywhere people or
# other users look (issue 13): a git token (an HTTP remote that demands it)
# and a reload token (a replica that demands it) go through a whole
# rollout, a second commit, a wrong token and a stage restart; then every
# log, the journal, the store, every `ps` listing taken during the run and
# every decoctl output is searched for each: zero hits.  A positive control
# (the secret files) proves the search finds what is there.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
command -v python3 >/dev/null || skip_all "python3 not installed"
git help -a 2>/dev/null | grep -q http-backend || skip_all "git http-backend not installed"

GIT_TOKEN="gitTok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
RELOAD_TOKEN="reloadTok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
WRONG_TOKEN="wrongTok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

mkdir -p "$T/libexec" "$T/state/secrets" "$T/out"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
printf 'deploy:%s\n' "$GIT_TOKEN" > "$T/state/secrets/git-creds"
printf 'deploy:%s\n' "$WRONG_TOKEN" > "$T/state/secrets/wrong-creds"
printf '%s\n' "$RELOAD_TOKEN" > "$T/reload-token"
chmod 600 "$T/state/secrets/git-creds" "$T/state/secrets/wrong-creds" "$T/reload-token"
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
poll_period = 1s
notify_timeout = 2s
notify_attempts = 2
reload_token_file = $T/reload-token
log_level = debug
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-sec "$@"; }

# ps listings every 50 ms for the whole run
( while :; do ps -eo pid,args >> "$T/ps.txt" 2>/dev/null; sleep 0.05; done ) &
track_pid $!

# the remote: git http-backend behind Basic auth deploy:<token>
git_work "$T/work"
git_commit "$T/work" .deco/blocks/Header.json '{"title": "one"}'
git_bare "$T/work" site
printf '%s' "$GIT_TOKEN" > "$T/git-server-token"
python3 "$top_srcdir/t/lib/git_http.py" "$T/remotes" "$T/git.port" deploy "$T/git-server-token" \
    2> "$T/git-http.log" &
track_pid $!
wait_for 10 test -s "$T/git.port" || bail "git http server did not start"
URL="http://127.0.0.1:$(cat "$T/git.port")/site.git"

# the replica demands the reload token (read from a file, not argv)
"$SITE" --port 0 --token-file "$T/reload-token" > "$T/site.out" 2> "$T/site.err" &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/site.out" || bail "replica did not start"
PORT=$(awk '/^listening on/ {print $3}' "$T/site.out")

"$DECOD" 2> "$T/decod.log" &
track_pid $!
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
wait_for 10 ready4 || bail "decod did not start"

cat > "$T/df.json" <<JSON
{"apiVersion": "deco.sites/v1alpha1", "kind": "Decofile",
 "metadata": {"name": "loja", "namespace": "sites-sec"},
 "spec": {"source": "git", "git": {"url": "$URL", "ref": "main", "dir": ".deco/blocks",
          "period": "1s", "secret": "git-creds"},
          "endpoints": ["http://127.0.0.1:$PORT"]}}
JSON
ctl apply -f "$T/df.json" > "$T/out/apply.txt" 2>&1
ok $? "apply a Decofile whose remote and replica both need a token"
C1=$(git -C "$T/work" rev-parse HEAD)
ctl wait loja --for "commit:$C1" --timeout 60s > "$T/out/wait1.txt" 2>&1
ok $? "the first commit rolls out (git token and reload token both used)"
served() { curl -s "http://127.0.0.1:$PORT/.decofile" | grep -q "\"$1\""; }
check "the replica serves it" served one
git_commit "$T/work" .deco/blocks/Header.json '{"title": "two"}'
git_push "$T/work" site
C2=$(git -C "$T/work" rev-parse HEAD)
ctl sync loja > "$T/out/sync.txt" 2>&1
ctl wait loja --for "commit:$C2" --timeout 60s > "$T/out/wait2.txt" 2>&1
ok $? "a second commit rolls out"
check "the replica serves it" served two

# a wrong token: a FetchError that must not quote what was sent
sed "s/\"loja\"/\"wrong\"/; s/git-creds/wrong-creds/" "$T/df.json" > "$T/df-wrong.json"
ctl apply -f "$T/df-wrong.json" > "$T/out/apply-wrong.txt" 2>&1
fetcherr() { ctl get decofile wrong -o json 2>/dev/null | grep -q FetchError; }
wait_for 30 fetcherr
ok $? "a wrong git token gives FetchError"

# a stage restart re-reads every secret
"$DECOCTL" restart fetcher > "$T/out/restart.txt" 2>&1
"$DECOCTL" restart notifier >> "$T/out/restart.txt" 2>&1
wait_for 20 ready4
ok $? "fetcher and notifier restarted"

# every decoctl read command, every output format
for o in "" "-o json" "-o yaml"; do
	tag=$(echo "$o" | tr -d ' -')
	ctl get decofiles $o > "$T/out/get$tag.txt" 2>&1
	ctl get decofile loja $o > "$T/out/getone$tag.txt" 2>&1
	ctl get decofile wrong $o > "$T/out/getwrong$tag.txt" 2>&1
	ctl status $o > "$T/out/status$tag.txt" 2>&1
	ctl describe loja $o > "$T/out/describe$tag.txt" 2>&1
	ctl describe wrong $o > "$T/out/describewrong$tag.txt" 2>&1
	ctl history loja $o > "$T/out/history$tag.txt" 2>&1
	"$DECOCTL" journal $o > "$T/out/journal$tag.txt" 2>&1
	"$DECOCTL" stages $o > "$T/out/stages$tag.txt" 2>&1
	ctl get endpoints $o > "$T/out/endpoints$tag.txt" 2>&1
done
check "decoctl outputs were captured" grep -q '"name": "loja"' "$T/out/getoneojson.txt"

# stop everything that could still write, then search
"$DECOCTL" stages > /dev/null 2>&1
kill -TERM $(jobs -p) 2>/dev/null
sleep 0.2 # let the ps loop write its last listing
ps -eo pid,args >> "$T/ps.txt"
n=$(grep -c . "$T/ps.txt")
check "ps was sampled during the run ($n lines)" [ "$n" -gt 100 ]
check "git ran during the run (seen by ps)" grep -q 'git.*ls-remote\|git.*fetch\|git-remote-http' "$T/ps.txt"

# the positive control: the search finds a token where it is
check "control: the search finds the git token in its secret file" \
    grep -rqF "$GIT_TOKEN" "$T/state/secrets"
check "control: and the reload token in its file" grep -qF "$RELOAD_TOKEN" "$T/reload-token"

for name in GIT_TOKEN RELOAD_TOKEN WRONG_TOKEN; do
	eval "tok=\$$name"
	where=$(grep -rlaF "$tok" "$T/decod.log" "$T/site.err" "$T/site.out" "$T/git-http.log" \
	    "$T/state/journal.db"* "$T/store" "$T/ps.txt" "$T/out" 2>/dev/null | tr '\n' ' ')
	is "$where" "" "$name: zero hits in logs, journal, store, ps listings and decoctl outputs"
	# the spool holds fetched blocks and rendered documents only
	where=$(grep -rlaF "$tok" "$T/state/spool" "$T/state/published" 2>/dev/null | tr '\n' ' ')
	is "$where" "" "$name: zero hits in the spool and published files"
done
done_testing
