#!/bin/sh
# replica_register.sh - decod-site registers itself as an Endpoint in a
# local store: the record (url, style, tsFile, token kept out of the log),
# heartbeats that push the TTL forward, removal on a clean exit, and a
# record that stops being renewed when the replica is killed.
. "$top_srcdir/t/lib/common.sh"

SITE=$(bin decod-site)
[ -x "$SITE" ] || bail "decod-site not built"
S=$T/store
REC=$S/kv/decod.d/endpoints.d/shop.d/loja.d/r1.v

start() {
	DECO_RELEASE_RELOAD_TOKEN=tok-123 "$SITE" --port 0 --style poll \
	    --ts-file "$T/ts.txt" --register "local:$S" --namespace shop \
	    --deployment loja --id r1 --ttl 3 > "$T/site.out" 2> "$T/site.err" &
	PID=$!
	track_pid $PID
	wait_for 10 grep -q '^listening on' "$T/site.out" || bail "site did not start"
	PORT=$(awk '/^listening on/ {print $3}' "$T/site.out")
}
# expiry: the record's expiry (unix ms) from its header line
expiry() { head -n 1 "$REC" | awk '{print $3}'; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

start
check "the Endpoint record exists" test -f "$REC"
v=$(tail -n +2 "$REC")
is "$(printf '%s' "$v" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["url"], d["style"], d["tsFile"], d["token"])')" \
    "http://127.0.0.1:$PORT poll $T/ts.txt tok-123" "url, style, tsFile and token recorded"
e1=$(expiry)
check "it has a TTL" [ "$e1" -gt "$(now_ms)" ]
check "the heartbeat pushes the expiry forward" wait_for 5 sh -c "[ \$(head -n 1 '$REC' | awk '{print \$3}') -gt $e1 ]"
check "the token is not in the log" sh -c "! grep -q tok-123 '$T/site.err'"

kill -TERM $PID
wait $PID
is $? 0 "clean exit"
check "the record is removed on a clean exit" sh -c "! test -f '$REC'"

start
check "registered again" wait_for 5 test -f "$REC"
kill -KILL $PID
wait $PID 2>/dev/null
e2=$(expiry)
check "a killed replica's record is not renewed and expires" \
    wait_for 6 sh -c "[ $e2 -le \$(( \$(date +%s%N) / 1000000 )) ]"
is "$(expiry)" "$e2" "nobody renewed it"

"$SITE" --port 0 --register "local:$S" > /dev/null 2> "$T/bad.err"
is $? 1 "--register without --deployment fails"
check "with a clear message" grep -q 'needs --deployment' "$T/bad.err"

done_testing
