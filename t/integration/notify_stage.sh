#!/bin/sh
# notify_stage.sh - the notifier alone with three real decod-site replicas
# registered in a local store: a change reaches all three (same content
# hash), PodsNotified goes True with the operator's message and the journal
# keeps one ack per replica; a replica that went away is not a failure; a
# replica that wants a token nobody has gives MissingReloadToken; a failing
# replica gives NotificationFailed naming it; a silent decofile notifies
# nobody; a newer change supersedes a rollout in flight.
. "$top_srcdir/t/lib/common.sh"

NOTIFIER=$(bin notifier)
SITE=$(bin decod-site)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$NOTIFIER" ] || bail "notifier not built"
[ -x "$SITE" ] || bail "decod-site not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"

printf 'tok-abc' > "$T/token"
chmod 600 "$T/token"
cat > "$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
rescan_interval = 100ms
notify_timeout = 4s
notify_attempts = 2
reload_token_file = $T/token
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { db_read "$DB" "$1"; }
item_is() { [ "$(sql "SELECT state FROM items WHERE id=$1")" = "$2" ]; }

# site NAME ARGS...: start a replica; sets PORT, PORT_<name>, PID_<name>
site() {
	n=$1; shift
	"$SITE" --port 0 "$@" > "$T/$n.out" 2> "$T/$n.err" &
	track_pid $!
	eval "PID_$n=$!"
	wait_for 10 grep -q '^listening on' "$T/$n.out" || bail "replica $n did not start"
	PORT=$(awk '/^listening on/ {print $3}' "$T/$n.out")
	eval "PORT_$n=$PORT"
}
decofile() { # decofile NAME [SPEC_EXTRA_JSON]
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"inline","inline":{"value":{"A":1}}%s}}' \
	    "$1" "${2:-}" > "$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}
# cond NAME FIELD: PodsNotified's status, reason or message ("" if none)
cond() {
	"$TOOL" $C status sites-loja "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for c in d.get("conditions", []):
    if c["type"] == "PodsNotified":
        print(c[sys.argv[1]])' "$2"
}
served_sha() {
	curl -s --max-time 5 "http://127.0.0.1:$1/.decofile" |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])'
}

for r in r1 r2 r3; do
	DECO_RELEASE_RELOAD_TOKEN=tok-abc site $r --register "local:$T/store" \
	    --namespace sites-loja --deployment loja --id $r --ttl 30
done
is "$(ls "$T/store/kv/decod.d/endpoints.d/sites-loja.d/loja.d" | wc -l)" 3 "three replicas registered"

printf '{"A":1,"Title":"first"}' > "$T/doc1.json"
printf '{"A":1,"Title":"second"}' > "$T/doc2.json"
H1=$("$TOOL" $C spool "$T/doc1.json")
H2=$("$TOOL" $C spool "$T/doc2.json")
decofile loja

"$NOTIFIER" $C > "$T/notifier.log" 2>&1 &
NPID=$!
track_pid $NPID
wait_for 10 grep -q 'msg=ready' "$T/notifier.log" || bail "notifier did not start"

# --- a change reaches every replica ------------------------------------
ID=$("$TOOL" $C enqueue notifier sites-loja loja "$H1" "timestamp=1731598481 commit=abc123")
check "rollout finishes" wait_for 15 item_is "$ID" done
is "$(cond loja status)" True "PodsNotified=True"
is "$(cond loja reason)" NotificationSucceeded "reason NotificationSucceeded"
is "$(cond loja message)" "Successfully notified all pods for commit:abc123" "the operator's message"
for r in r1 r2 r3; do
	eval "p=\$PORT_$r"
	is "$(served_sha "$p")" "$H1" "replica $r serves the new content hash"
done
is "$(sql "SELECT COUNT(*) FROM acks WHERE ns='sites-loja' AND name='loja' AND content_hash='$H1' AND result='confirmed'")" 3 \
    "one confirmed ack per replica"
is "$(sql "SELECT group_concat(replica, ',') FROM (SELECT replica FROM acks WHERE content_hash='$H1' ORDER BY replica)")" \
    "r1,r2,r3" "acks name the replicas"
is "$(sql "SELECT DISTINCT timestamp FROM acks WHERE content_hash='$H1'")" 1731598481 \
    "acks keep the publish timestamp"
check "the token is never logged" sh -c "! grep -q tok-abc '$T/notifier.log' '$T'/r?.err"

# --- a replica that went away is not a failure --------------------------
kill -TERM "$PID_r3"
wait "$PID_r3" 2>/dev/null
ID=$("$TOOL" $C enqueue notifier sites-loja loja "$H2" "timestamp=1731598500 commit=-")
check "second rollout finishes" wait_for 15 item_is "$ID" done
is "$(cond loja status)" True "still PodsNotified=True"
is "$(cond loja message)" "Successfully notified all pods for timestamp:1731598500" \
    "no commit: the change is named by its timestamp"
is "$(served_sha "$PORT_r1")" "$H2" "r1 has the second version"
is "$(sql "SELECT COUNT(*) FROM acks WHERE content_hash='$H2'")" 2 "two replicas were left to tell"

# --- a failing replica ---------------------------------------------------
site bad --fail --lenient
decofile bad ",\"endpoints\":[\"http://127.0.0.1:$PORT_r1\",\"http://127.0.0.1:$PORT_bad\"]"
ID=$("$TOOL" $C enqueue notifier sites-loja bad "$H1" "timestamp=1731598481 commit=abc123")
check "failing rollout finishes" wait_for 20 item_is "$ID" done
is "$(cond bad status)" False "PodsNotified=False"
is "$(cond bad reason)" NotificationFailed "reason NotificationFailed"
msg=$(cond bad message)
case "$msg" in
"Failed to notify pods for commit:abc123: "*"http://127.0.0.1:$PORT_bad (HTTP 500"*)
	ok 0 "the message names the failing replica" ;;
*)	ok 1 "the message names the failing replica"; diag "got: $msg" ;;
esac
case "$msg" in
*"$PORT_r1"*) ok 1 "the good replica is not named" ;;
*) ok 0 "the good replica is not named" ;;
esac
is "$(sql "SELECT result FROM acks WHERE name='bad' AND replica='http://127.0.0.1:$PORT_bad'")" \
    'failed: HTTP 500: {"success":false,"error":"failing on purpose"}' "the journal keeps why it failed"

# --- silent: publish, notify nobody --------------------------------------
decofile quiet ",\"silent\":true,\"endpoints\":[\"http://127.0.0.1:$PORT_bad\"]"
ID=$("$TOOL" $C enqueue notifier sites-loja quiet "$H1" "timestamp=1731598481 commit=abc123")
check "silent item done" wait_for 10 item_is "$ID" done
is "$(cond quiet status)" "" "no PodsNotified for a silent decofile"
is "$(sql "SELECT COUNT(*) FROM acks WHERE name='quiet'")" 0 "nobody was called"

# --- a newer change supersedes a rollout in flight -----------------------
site hang --hang --lenient
decofile slow ",\"endpoints\":[\"http://127.0.0.1:$PORT_hang\"]"
ID6=$("$TOOL" $C enqueue notifier sites-loja slow "$H1" "timestamp=1731598481 commit=old111")
check "slow rollout in progress" wait_for 10 grep -q 'change=commit:old111' "$T/notifier.log"
is "$(cond slow reason)" NotificationInProgress "PodsNotified=Unknown while in flight"
is "$(cond slow message)" "Notifying pods for commit:old111" "in-progress message"
ID7=$("$TOOL" $C enqueue notifier sites-loja slow "$H2" "timestamp=1731598500 commit=new222")
check "the old rollout is superseded" wait_for 10 sh -c \
    "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' 'SELECT result FROM items WHERE id=$ID6')\" = superseded ]"
check "the new one runs" wait_for 10 grep -q 'change=commit:new222' "$T/notifier.log"
check "and ends when the hanging replica times out" wait_for 20 item_is "$ID7" done
case "$(cond slow message)" in
"Failed to notify pods for commit:new222: "*) ok 0 "the result names the newer change" ;;
*) ok 1 "the result names the newer change"; diag "got: $(cond slow message)" ;;
esac

# --- a replica wants a token we do not have -----------------------------
DECO_RELEASE_RELOAD_TOKEN=other-token site tk
decofile tok ",\"endpoints\":[\"http://127.0.0.1:$PORT_tk\"]"
sed -i '/reload_token_file/d' "$T/conf"
kill -HUP "$NPID"
wait_for 5 grep -q 'reloaded configuration' "$T/notifier.log" || diag "no reload seen"
ID=$("$TOOL" $C enqueue notifier sites-loja tok "$H1" "timestamp=1731598481 commit=abc123")
check "token rollout finishes" wait_for 15 item_is "$ID" done
is "$(cond tok status)" False "PodsNotified=False"
is "$(cond tok reason)" MissingReloadToken "reason MissingReloadToken"

# --- poll style: a replica that names no tsFile gets the published one -----
# (a poll-era runtime, like the strict decod-site, answers 400 without it)
mkdir -p "$T/pub/sites-loja/pl"
printf '1731598700' >"$T/pub/sites-loja/pl/timestamp.txt"
DECO_RELEASE_RELOAD_TOKEN=tok-p site pl
decofile pl ",\"notify\":{\"style\":\"poll\"},\"endpoints\":[\"http://127.0.0.1:$PORT_pl\"]"
"$TOOL" $C fields sites-loja pl publisher "{\"location\":\"file://$T/pub/sites-loja/pl/decofile.json\"}" >/dev/null
printf 'tok-p' >"$T/token"
echo "reload_token_file = $T/token" >>"$T/conf"
kill -HUP "$NPID"
ID=$("$TOOL" $C enqueue notifier sites-loja pl "$H1" "timestamp=1731598700 commit=p011")
check "poll rollout finishes" wait_for 15 item_is "$ID" done
is "$(cond pl status)" True "PodsNotified=True: the replica was sent the published timestamp.txt"

kill -TERM "$NPID"
wait "$NPID"
is $? 0 "the notifier stops cleanly"
done_testing
