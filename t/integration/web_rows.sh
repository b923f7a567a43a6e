#!/bin/sh
# web_rows - the web stage answers /api/v1/status from rows it keeps in
# memory (daemons/web/web_rows.c); they must follow the store and the
# journal, not just be fast.  On a real etcd, with the web stage alone
# under decod and t/stage/testtool writing what the other stages write:
# a new Decofile appears; a condition written changes its row (Ready, the
# message, escaped as JSON); a content hash and the journal's acks give
# replicas x/y; a deleted Decofile disappears; after SIGHUP (the store
# watches opened again and every row read again) changes are still
# followed; and when the stage was away while etcd restarted and its
# history was compacted, the watch's RELIST makes it read everything again
# and the rows hold what was written meanwhile (a new Decofile, a deleted
# one, a changed condition).  Every check waits on the answer, no sleeps.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"

DECOD=$(bin decod)
DECOCTL=$(bin decoctl)
TOOL="$top_builddir/t/stage/testtool"
for p in "$DECOD" "$DECOCTL" "$TOOL" "$top_builddir/daemons/web/web"; do
	[ -x "$p" ] || bail "$p not built"
done
etcd_start || bail "etcd did not start"
PORT=$(free_port)
mkdir -p "$T/libexec"
ln -s "$top_builddir/daemons/web/web" "$T/libexec/web"
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = etcd:$ETCD_URL
etcd_timeout = 2s
stages = web
web_listen = 127.0.0.1:$PORT
web_static_dir = $top_srcdir/daemons/web/static
CONF
export DECOD_CONFIG="$T/decod.conf"
BASE="http://127.0.0.1:$PORT"
NS=sites-rows
tool() { "$TOOL" -c "$T/decod.conf" "$@"; }
df() { # df NAME: apply Decofile NAME (inline)
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"%s"},"spec":{"source":"inline","inline":{"value":{"A":1}}}}' \
	    "$1" "$NS" >"$T/$1.json"
	tool apply "$T/$1.json" >/dev/null
}
# row EXPR: /api/v1/status answers and the Python expression EXPR holds
# of it (rows: the rows by name, as dicts)
row() {
	curl -sf --max-time 5 "$BASE/api/v1/status" | python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin) if r["namespace"] == sys.argv[2]}
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" "$NS"
}
# same_as_decoctl: the rows are what `decoctl status -A -o json` reads
# from the store and the journal itself, row for row
same_as_decoctl() {
	curl -sf --max-time 5 "$BASE/api/v1/status" >"$T/api.json" &&
	    "$DECOCTL" status -A -o json >"$T/ctl.json" &&
	    python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
	    "$T/api.json" "$T/ctl.json"
}
dump() { curl -s --max-time 5 "$BASE/api/v1/status" | sed 's/^/#   /'; }

df alpha
df beta
"$DECOD" 2>"$T/decod.log" &
track_pid $!
check "decod: the web stage is READY" wait_for "$(scaled 20)" sh -c \
    "'$DECOCTL' stages 2>/dev/null | grep -q 'web.*READY'"
check "both Decofiles are rows" wait_for 10 row 'set(rows) == {"alpha", "beta"}'
WEB=$("$DECOCTL" stages 2>/dev/null | awk '$1 == "web" { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; exit } }')
[ -n "$WEB" ] && kill -0 "$WEB" 2>/dev/null || bail "no pid for the web stage: $("$DECOCTL" stages 2>&1)"

# the watch: a new one, a condition, a hash and the journal's acks, a delete
df gamma
check "a new Decofile appears" wait_for 10 row '"gamma" in rows'
tool condition $NS alpha publisher Ready False UnsupportedTarget 'block <b>"x"</b> is not JSON' >/dev/null
check "a condition written changes the row: Ready False with its message" wait_for 10 row \
    'rows["alpha"]["ready"] == "False" and rows["alpha"]["message"] == "UnsupportedTarget: block <b>\"x\"</b> is not JSON"'
tool fields $NS alpha publisher '{"contentHash":"h1"}' >/dev/null
tool ack $NS alpha r1 h1 1 ok >/dev/null
check "the journal's ack gives replicas 1/1" wait_for 10 row \
    'rows["alpha"]["contentHash"] == "h1" and (rows["alpha"]["replicasConfirmed"], rows["alpha"]["replicasTotal"]) == (1, 1)'
tool ack $NS alpha r2 h0 1 ok >/dev/null
check "another replica on an older hash: 1/2" wait_for 10 row \
    '(rows["alpha"]["replicasConfirmed"], rows["alpha"]["replicasTotal"]) == (1, 2)'
tool ack $NS alpha r2 h1 2 ok >/dev/null
check "... and once it confirms the current one: 2/2" wait_for 10 row \
    '(rows["alpha"]["replicasConfirmed"], rows["alpha"]["replicasTotal"]) == (2, 2)'
check "every row is what decoctl status reads itself" wait_for 10 same_as_decoctl
tool delete $NS beta >/dev/null
check "a deleted Decofile disappears" wait_for 10 row '"beta" not in rows and "alpha" in rows'
[ "$TAP_FAILED" -eq 0 ] || dump

# SIGHUP: the watches opened again, every row read again
loads() { grep -c 'status rows loaded' "$T/decod.log"; }
n=$(loads)
kill -HUP "$WEB"
check "SIGHUP: every row read again" wait_for 10 sh -c "[ \$(grep -c 'status rows loaded' '$T/decod.log') -gt $n ]"
check "... with the same rows" row 'set(rows) == {"alpha", "gamma"} and rows["alpha"]["replicasTotal"] == 2'
tool condition $NS gamma publisher Ready True Published ok >/dev/null
check "... and the new watches follow a condition" wait_for 10 row 'rows["gamma"]["ready"] == "True"'

# the stage away while etcd restarts, changes land and history is
# compacted past what its watches saw: their RELIST reads everything again
kill -STOP "$WEB"
etcd_stop
etcd_restart || { kill -CONT "$WEB"; bail "etcd did not restart"; }
df delta
tool delete $NS gamma >/dev/null
tool condition $NS alpha publisher Ready True Published fixed >/dev/null
etcd_compact
kill -CONT "$WEB"
check "after a compaction: the watch asked for a re-list and got it" wait_for 30 \
    grep -q 'lost its history' "$T/decod.log"
check "... the rows are the store's: delta new, gamma gone, alpha Ready again" wait_for 20 row \
    'set(rows) == {"alpha", "delta"} and rows["alpha"]["ready"] == "True" and rows["alpha"]["replicasTotal"] == 2'
tool condition $NS delta publisher Ready False TooLarge 'after the re-list' >/dev/null
check "... and the watch goes on after it" wait_for 10 row 'rows["delta"]["ready"] == "False"'
check "... every row what decoctl status reads itself" wait_for 10 same_as_decoctl
[ "$TAP_FAILED" -eq 0 ] || { dump; grep 'web' "$T/decod.log" | tail -20 | sed 's/^/# /'; }
done_testing
