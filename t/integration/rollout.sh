#!/bin/sh
# rollout.sh - decod's main job end to end, with every real stage under the
# real supervisor: a Decofile whose blocks live in a git remote (served by
# git daemon) rolls out to three reference replicas; a pushed commit rolls
# out after `decoctl sync`; kill -9 of each stage in the middle of a rollout
# still completes it, with exactly one publish per content hash; a malformed
# block publishes nothing and keeps the last good version live; a hanging
# replica is named in PodsNotified=False.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
for s in fetcher renderer publisher notifier; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
done
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
poll_period = 1s
notify_timeout = 2s
notify_attempts = 2
CONF
export DECOD_CONFIG="$T/decod.conf"
DB=$T/state/journal.db
sql() { db_read "$DB" "$1"; }
ctl() { "$DECOCTL" -n sites-loja "$@"; }
pid_of() { "$DECOCTL" stages -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["stages"]:
    if s["name"] == sys.argv[1]: print(s["pid"])' "$1"; }
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
served_sha() {
	curl -s --max-time 5 "http://127.0.0.1:$1/.decofile" |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])'
}
status_field() { ctl get decofile loja -o json | python3 -c '
import json, sys
print(json.load(sys.stdin).get("status", {}).get(sys.argv[1], ""))' "$1"; }
condition() { # condition TYPE FIELD
	ctl get decofile loja -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c["type"] == sys.argv[1]: print(c[sys.argv[2]])' "$1" "$2"; }
all_serve() { # all_serve HASH: every replica serves the document with that hash
	for p in $PORTS; do [ "$(served_sha "$p")" = "$1" ] || return 1; done
}

# the git remote with the site's blocks
git_work "$T/work"
git_commit "$T/work" .deco/blocks/Header.json '{"title": "first"}'
git_commit "$T/work" .deco/blocks/pages/Home%20Page.json '{"path": "/", "sections": [1, 2]}'
git_bare "$T/work" loja
git_serve

"$DECOD" 2>"$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for 10 ready4
ok $? "decod: four stages READY"

PORTS=""
for r in r1 r2 r3; do
	DECO_RELEASE_RELOAD_TOKEN=tok-$r "$SITE" --port 0 --register "local:$T/store" \
	    --namespace sites-loja --deployment loja --id $r --ttl 30 \
	    >"$T/$r.out" 2>"$T/$r.err" &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/$r.out" || bail "replica $r did not start"
	PORTS="$PORTS $(awk '/^listening on/ {print $3}' "$T/$r.out")"
done

cat > "$T/loja.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja
  namespace: sites-loja
spec:
  source: git
  git:
    url: $GIT_BASE/loja.git
    ref: main
    dir: .deco/blocks
    period: 1s
YAML
ctl apply -f "$T/loja.yaml" >/dev/null
ok $? "apply the Decofile"
C1=$(git -C "$T/work" rev-parse HEAD)
ctl wait loja --for "commit:$C1" --timeout 60s >"$T/wait1.out" 2>&1
ok $? "decoctl wait --for commit:<first> succeeds"
grep -q 'notified 3/3' "$T/wait1.out"
ok $? "wait's progress line counts the rollout's three replicas"
H1=$(status_field contentHash)
EXPECT='{"Header":{"title":"first"},"Home Page":{"path":"/","sections":[1,2]}}'
is "$H1" "$(printf '%s' "$EXPECT" | sha256sum | cut -d' ' -f1)" "contentHash is the sha256 of the merged document"
is "$(cat "$T/state/published/sites-loja/loja/decofile.json")" "$EXPECT" "published file is the merged document"
all_serve "$H1"
ok $? "all three replicas serve it"
is "$(condition PodsNotified message)" "Successfully notified all pods for commit:$C1" "PodsNotified message is the operator's"
is "$(condition Ready status)" "True" "Ready=True"

# the journal's filter gives every stage's rows for the decofile, and only them
ctl journal --decofile loja -o json >"$T/journal.json"
ok $? "decoctl journal --decofile loja"
for step in fetcher/fetch renderer/render publisher/publish notifier/notify status/condition; do
	python3 -c 'import json,sys
rows=json.load(open(sys.argv[1])); st,act=sys.argv[2].split("/")
sys.exit(0 if any(r["stage"]==st and r["action"]==act for r in rows) else 1)' "$T/journal.json" "$step"
	ok $? "... has the $step row"
done
python3 -c 'import json,sys
rows=json.load(open(sys.argv[1]))
sys.exit(0 if rows and all(r["object"]=="decofile/sites-loja/loja" for r in rows) else 1)' "$T/journal.json"
ok $? "... each row's object spelled decofile/sites-loja/loja"

# a pushed commit, fetched at once after decoctl sync
git_commit "$T/work" .deco/blocks/Header.json '{"title": "second"}'
git_push "$T/work" loja
C2=$(git -C "$T/work" rev-parse HEAD)
ctl sync loja >/dev/null
ctl wait loja --for "commit:$C2" --timeout 60s >/dev/null 2>&1
ok $? "a new commit rolls out"
H2=$(status_field contentHash)
[ "$H2" != "$H1" ] && all_serve "$H2"
ok $? "all three replicas serve the new version"

# quick edits: publish timestamps only ever increase, so several publishes in
# one second run ahead of the clock; wait must still see each one through
# (a dir-source Decofile with no replicas, so a round takes a fraction of a second)
mkdir -p "$T/quick"
printf '{"n": 0}' > "$T/quick/Q.json"
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"quick","namespace":"sites-loja"},"spec":{"source":"dir","dir":{"path":"%s"}}}' \
    "$T/quick" > "$T/quick.json"
ctl apply -f "$T/quick.json" >/dev/null
ctl wait quick --for ready --timeout 30s >/dev/null 2>&1
fast=0
for i in 1 2 3 4 5 6; do
	last=$(ctl get decofile quick -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["timestamp"])')
	printf '{"n": %d}' "$i" > "$T/quick/Q.json"
	ctl sync quick >/dev/null
	ctl wait quick --for "timestamp:$((last + 1))" --timeout 20s >/dev/null 2>&1 && fast=$((fast + 1))
done
is "$fast" 6 "six quick edits, each waited for with --for timestamp"
ahead=$(( $(ctl get decofile quick -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["timestamp"])') - $(date +%s) ))
diag "publish timestamps ran ${ahead} s ahead of the clock"

# kill -9 of each stage in the middle of a rollout
n=3
for s in fetcher renderer publisher notifier; do
	git_commit "$T/work" .deco/blocks/Header.json "{\"title\": \"kill $s\"}"
	git_push "$T/work" loja
	C=$(git -C "$T/work" rev-parse HEAD)
	case $s in
	fetcher) ;;
	renderer) wait_for 20 sh -c "[ \$(sqlite3 -readonly -cmd '.timeout 5000' $DB \"SELECT count(*) FROM fetches WHERE commit_id='$C'\") -ge 1 ]" ;;
	publisher) wait_for 20 sh -c "[ \$(sqlite3 -readonly -cmd '.timeout 5000' $DB \"SELECT count(*) FROM items WHERE stage='publisher' AND detail LIKE '%$C%'\") -ge 1 ]" ;;
	notifier) wait_for 20 sh -c "[ \$(sqlite3 -readonly -cmd '.timeout 5000' $DB \"SELECT count(*) FROM items WHERE stage='notifier' AND detail LIKE '%$C%'\") -ge 1 ]" ;;
	esac
	ctl sync loja >/dev/null
	kill -9 "$(pid_of $s)"
	ctl wait loja --for "commit:$C" --timeout 60s >/dev/null 2>&1
	ok $? "kill -9 of the $s mid-rollout: the rollout still completes"
	H=$(status_field contentHash)
	all_serve "$H"
	ok $? "after the $s's kill every replica serves the new version"
	n=$((n + 1))
done
is "$(sql "SELECT count(*) FROM (SELECT content_hash FROM publishes GROUP BY content_hash HAVING count(*) > 1)")" 0 \
	"exactly one publish per content hash"
is "$(sql "SELECT count(DISTINCT content_hash) FROM publishes WHERE name='loja'")" "$((n - 1))" "one publish for each of the $((n - 1)) versions"

# a malformed block: nothing published, the last good version stays live
GOOD=$(status_field contentHash)
printf '{\n  "title": "broken",\n  "oops"\n}\n' > "$T/work/.deco/blocks/Bad.json"
git -C "$T/work" add -A && git -C "$T/work" commit -q -m broken && git_push "$T/work" loja
ctl sync loja >/dev/null
wait_for 30 sh -c "\"$DECOCTL\" -n sites-loja get decofile loja -o json | grep -q ValidationError"
ok $? "a malformed block: Syncing=False ValidationError"
msg=$(condition Syncing message)
case "$msg" in *Bad.json:4:*) ok 0 "the message names the file and line ($msg)" ;;
*) ok 1 "the message names the file and line ($msg)" ;; esac
is "$(status_field contentHash)" "$GOOD" "the last good version stays published"
ctl journal --decofile loja | grep -q "renderer  *decofile/sites-loja/loja  *refused"
ok $? "the refusal is in the decofile's journal"
all_serve "$GOOD"
ok $? "replicas keep the last good version"
git -C "$T/work" rm -q .deco/blocks/Bad.json && git -C "$T/work" commit -q -m fixed && git_push "$T/work" loja

# a replica that hangs is named in PodsNotified=False
"$SITE" --port 0 --hang --lenient --register "local:$T/store" --namespace sites-loja \
    --deployment loja --id hanger --ttl 30 >"$T/hang.out" 2>&1 &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/hang.out"
git_commit "$T/work" .deco/blocks/Header.json '{"title": "with a hanging replica"}'
git_push "$T/work" loja
C=$(git -C "$T/work" rev-parse HEAD)
ctl sync loja >/dev/null
ctl wait loja --for "commit:$C" --timeout 60s >"$T/waitfail.out" 2>&1
rc=$?
ctl get decofile loja -o json | python3 -c "import json,sys; s=json.load(sys.stdin)[\"status\"]; print(\"# status\", s.get(\"githubCommit\"), s.get(\"renderedCommit\"), [(c[\"type\"],c[\"status\"]) for c in s[\"conditions\"]])"
sed "s/^/# wait: /" "$T/waitfail.out" | tail -3
is "$rc" 1 "decoctl wait exits 1 when a replica fails"
is "$(condition PodsNotified reason)" "NotificationFailed" "PodsNotified=False NotificationFailed"
case "$(condition PodsNotified message)" in
*hanger*|*"$(awk '/^listening on/ {print $3}' "$T/hang.out")"*) ok 0 "the message names the hanging replica" ;;
*) ok 1 "the message names the hanging replica: $(condition PodsNotified message)" ;;
esac
all_serve "$(status_field contentHash)"
ok $? "the healthy replicas got it anyway"

kill -TERM $SUP
wait_for 10 sh -c "! kill -0 $SUP 2>/dev/null"
ok $? "decod stops"
done_testing
