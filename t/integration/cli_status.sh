#!/bin/sh
# cli_status - failures where people look, through the real decoctl against
# decod and its real stages (dir source, one reference replica): a broken
# block shows in `status` and `get -o wide` as SYNCING False with the
# file:line:col message while READY stays True (the last good version is
# live); `wait` for that change exits 1 with the reason long before its
# --timeout; a timeout exits 3 (2 stays the usage error); a `sync` of an
# unchanged source is observable as done (`wait --for synced`, and
# `--for timestamp:N` for N up to the sync request).
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

pipeline_setup "fetcher renderer publisher notifier" "notify_timeout = 2s" "notify_attempts = 2"
# col HEADERFILE COLUMN: the value under COLUMN in a two-line table
col() {
	python3 - "$1" "$2" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
head, row = lines[0], lines[1]
i = head.index(sys.argv[2])
# a column's value starts where its header does; MESSAGE, the last, runs on
nxt = [head.index(h, i + 1) for h in head[i:].split()[1:2]]
print(row[i:nxt[0]].strip() if nxt else row[i:].strip())
PY
}
elapsed_since() { echo $(( $(date +%s) - $1 )); }

BLOCKS="$T/site/ções e páginas"
mkdir -p "$BLOCKS"
printf '{"title": "Loja São Paulo"}\n' >"$BLOCKS/Header.json"
printf '{"links": ["/ajuda", "/trocas%%20e%%20devoluções"]}\n' >"$BLOCKS/Footer.json"
printf '{"path": "/", "sections": [1, 2]}\n' >"$BLOCKS/Página%20Inicial.json"

pipeline_start
replica_start r1

# a long period: only `decoctl sync` makes the fetcher look again
apply_dir loja "$BLOCKS"
ctl wait loja --for ready --timeout "$(scaled 60)s" >"$T/w0.out" 2>&1
ok $? "wait --for ready: the first version is live"
GOOD=$(status_json contentHash)
check "a content hash is published" test -n "$GOOD"

# --- a sync of an unchanged source is observable as done -------------------
# the last publish lies in an earlier second than N, so only the sync can meet it
PUB=$(status_json timestamp)
wait_for 3 sh -c "[ \$(date +%s) -gt $PUB ]"
N=$(date +%s)
ctl sync loja >/dev/null
ok $? "sync of the unchanged source"
ctl wait loja --for synced --timeout "$(scaled 30)s" >"$T/w1.out" 2>&1
is "$?" 0 "wait --for synced completes on a no-op sync"
check "... and says the condition is met" grep -q "condition met (synced)" "$T/w1.out"
ctl wait loja --for "timestamp:$N" --timeout "$(scaled 20)s" >"$T/w2.out" 2>&1
is "$?" 0 "wait --for timestamp:N (N before the no-op sync) completes"
is "$(status_json contentHash)" "$GOOD" "nothing was published again"
is "$(status_json timestamp)" "$PUB" "the publish timestamp did not move"
check "the fetcher recorded the handled sync" sh -c \
    "ctl() { \"$DECOCTL\" -n \"$NS\" \"\$@\"; }; ctl get df loja -o json | grep -q lastHandledSyncAt"

# --- a broken block: failures where people look ----------------------------
TMO=$(scaled 60)
# N is the second of the no-op sync above: that sync, requested at or after
# N, came before this change, so only the newest sync may speak for N
HANDLED=$(ctl get df loja -o json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["status"]["lastHandledSyncAt"])')
N=$(( HANDLED / 1000 ))
# the fetcher held still: the newest sync is not handled yet, and the no-op
# sync of N's second must not complete the wait
FPID=$(cat "$T/run/fetcher.alive")
kill -STOP "$FPID"
printf '{"links": [\n  "/ajuda" "/trocas"]}\n' >"$BLOCKS/Footer.json"
ctl sync loja >/dev/null
ctl wait loja --for "timestamp:$N" --timeout 2s >/dev/null 2>&1
is "$?" 3 "wait: an earlier sync within N's second does not speak for a later change"
kill -CONT "$FPID"
T0=$(date +%s)
ctl wait loja --for "timestamp:$N" --timeout "${TMO}s" >"$T/w3.out" 2>"$T/w3.err"
is "$?" 1 "wait for a change with a broken block exits 1"
took=$(elapsed_since "$T0")
ok "$([ "$took" -lt $((TMO / 2)) ] && echo 0 || echo 1)" \
    "... well before its --timeout (${took}s of ${TMO}s)"
check "... with the reason (file:line:col)" grep -q "ValidationError.*Footer.json:2:[0-9]" "$T/w3.err"

ctl status >"$T/st.txt" 2>&1
is "$?" 0 "status"
sed "s/^/# /" "$T/st.txt"
is "$(col "$T/st.txt" READY)" True "status: READY stays True (the last good version is live)"
is "$(col "$T/st.txt" SYNCING)" False "status: SYNCING False"
check "status: MESSAGE has the reason and file:line:col" \
    grep -q "ValidationError: Footer.json:2:[0-9]" "$T/st.txt"
is "$(status_json syncing)" False "status -o json: syncing False"
case "$(status_json message)" in
ValidationError:*Footer.json:2:*) ok 0 "status -o json: the message" ;;
*) ok 1 "status -o json: the message ($(status_json message))" ;;
esac
is "$(status_json contentHash)" "$GOOD" "the last good version stays published"

ctl get df loja -o wide >"$T/wide.txt" 2>&1
is "$?" 0 "get -o wide"
sed "s/^/# /" "$T/wide.txt"
is "$(col "$T/wide.txt" READY)" True "get -o wide: READY True"
is "$(col "$T/wide.txt" SYNCING)" False "get -o wide: SYNCING False"
check "get -o wide: MESSAGE" grep -q "ValidationError: Footer.json:2:" "$T/wide.txt"
ctl get df loja >"$T/narrow.txt" 2>&1
check "plain get keeps its columns" sh -c "! grep -q SYNCING '$T/narrow.txt'"

ctl sync loja >/dev/null
ctl wait loja --for synced --timeout "${TMO}s" >/dev/null 2>"$T/w4.err"
is "$?" 1 "wait --for synced with the block still broken exits 1"
check "... with the reason" grep -q "Footer.json:2:" "$T/w4.err"
ctl wait loja --for ready --timeout "${TMO}s" >/dev/null 2>"$T/w5.err"
is "$?" 1 "wait --for ready exits 1 while the newest render failed"

# --- fixed: synced waits for the whole rollout ------------------------------
printf '{"links": ["/ajuda", "/trocas"]}\n' >"$BLOCKS/Footer.json"
ctl sync loja >/dev/null
ctl wait loja --for synced --timeout "${TMO}s" >"$T/w6.out" 2>&1
is "$?" 0 "wait --for synced after the fix"
NEW=$(status_json contentHash)
ok "$([ -n "$NEW" ] && [ "$NEW" != "$GOOD" ] && echo 0 || echo 1)" "... the fixed version is published"
is "$(status_json syncing)" True "... SYNCING True again"
is "$(status_json podsNotified)" True "... and the replica was notified"
check "the replica serves it" sh -c "curl -s --max-time 5 \
    http://127.0.0.1:$(awk '/^listening on/ {print $3}' "$T/r1.out")/.decofile | grep -q $NEW"

# --- a timeout has its own exit code -----------------------------------------
ctl wait loja --for "timestamp:$(( $(date +%s) + 86400 ))" --timeout 1s >/dev/null 2>"$T/w7.err"
is "$?" 3 "wait: a timeout exits 3"
check "... and says it timed out" grep -q "timed out" "$T/w7.err"
ctl wait loja --for bogus >/dev/null 2>&1
is "$?" 2 "wait: a usage error still exits 2"
"$DECOCTL" -n nowhere wait loja --for ready --timeout 1s >/dev/null 2>&1
is "$?" 1 "wait on a missing decofile exits 1"

done_testing
