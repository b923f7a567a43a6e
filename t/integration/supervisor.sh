#!/bin/sh
# supervisor.sh - decod supervises stages built on the real skeleton
# (t/stage/teststage as "alpha" -> "beta"): all READY fast; kill -9 of a
# stage mid-work is repaired within 1.5 s and every item's effect happens
# exactly once; kill -9 of the supervisor takes the stages down with it and
# a new supervisor finishes the pending work; a stage that fails at start
# is restarted with growing delays; SIGTERM leaves no process behind.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
CTL=$top_builddir/t/stage/ctlreq
[ -x "$DECOD" ] || bail "decod not built"
mkdir -p "$T/libexec" "$T/state" "$T/run"
ln -s "$top_builddir/t/stage/teststage" "$T/libexec/alpha"
ln -s "$top_builddir/t/stage/teststage" "$T/libexec/beta"
ln -s "$top_builddir/t/stage/teststage" "$T/libexec/gamma"
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
stages = alpha beta
rescan_interval = 200ms
stop_timeout = 5s
CONF
export TESTSTAGE_NEXT_alpha=beta TESTSTAGE_DELAY_MS=15
DB=$T/state/journal.db
ADDR=ipc://$T/run/control.ipc

stages() { "$CTL" "$ADDR" stages 2>/dev/null; }
ready_count() { stages | grep -o '"state":"READY"' | wc -l; }
all_ready() { [ "$(ready_count)" -eq "$1" ]; }
pid_of() { stages | sed -n "s/.*\"name\":\"$1\",\"pid\":\([0-9]*\).*/\1/p"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
sql() { db_read "$DB" "$1"; }
enqueue() { # enqueue FROM COUNT: items for alpha named job-N
	i=$1; vals=""
	while [ "$i" -lt $(( $1 + $2 )) ]; do
		vals="$vals('alpha','test','t','job-$i',0),"; i=$((i + 1))
	done
	db_write "$DB" "INSERT INTO items (stage, kind, ns, name, created_ms) VALUES ${vals%,};"
}
effects_ok() { # effects_ok STAGE N: exactly N distinct lines, none twice
	f=$T/state/effects.$1
	[ -f "$f" ] && [ "$(wc -l < "$f")" -eq "$2" ] && [ -z "$(sort "$f" | uniq -d)" ]
}
all_gone() { for p in "$@"; do alive "$p" && return 1; done; return 0; }
both_gone() { all_gone "$@"; }
restart_ms() { # from the supervisor's audit rows: its last exit to its last ready
	sql "SELECT CAST(ROUND((julianday(r.at) - julianday(e.at)) * 86400000) AS INTEGER)
	     FROM audit e, audit r WHERE e.object='$1' AND r.object='$1'
	     AND e.action='exit' AND r.action='ready'
	     AND e.id = (SELECT MAX(id) FROM audit WHERE object='$1' AND action='exit')
	     AND r.id = (SELECT MAX(id) FROM audit WHERE object='$1' AND action='ready')
	     AND r.id > e.id"
}
pending() { sql "SELECT count(*) FROM items WHERE state='pending'"; }

"$DECOD" -c "$T/decod.conf" 2>"$T/decod.log" &
SUP=$!
track_pid $SUP
t0=$(ms)
wait_for 5 all_ready 2
ok $? "decoctl stages: both stages READY within 5 s ($(( $(ms) - t0 )) ms)"
stages | grep -q '"name":"alpha"' && stages | grep -q '"restarts":0'
ok $? "stages reply names each stage with pid, state and restarts"

# kill -9 of each stage while it works
enqueue 0 150
wait_for 10 sh -c "[ -s $T/state/effects.alpha ]"
old=$(pid_of alpha)
kill -9 "$old"
t0=$(ms)
wait_for 3 sh -c "[ \"\$($CTL $ADDR stages | grep -o '\"name\":\"alpha\",\"pid\":[0-9]*,\"state\":\"READY\"' | grep -v \":$old,\")\" != '' ]"
took=$(restart_ms alpha)
b=$(latency_bound 1500); [ -n "$took" ] && [ "$took" -le "$b" ]
ok $? "alpha READY again ${took} ms after kill -9 (<= $b, from the audit table)"
wait_for 10 sh -c "[ -s $T/state/effects.beta ]"
old=$(pid_of beta)
kill -9 "$old"
t0=$(ms)
wait_for 3 sh -c "[ \"\$($CTL $ADDR stages | grep -o '\"name\":\"beta\",\"pid\":[0-9]*,\"state\":\"READY\"' | grep -v \":$old,\")\" != '' ]"
took=$(restart_ms beta)
b=$(latency_bound 1500); [ -n "$took" ] && [ "$took" -le "$b" ]
ok $? "beta READY again ${took} ms after kill -9 (<= $b, from the audit table)"
wait_for 30 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' $DB \"SELECT count(*) FROM items WHERE state='pending'\")\" = 0 ]"
ok $? "every item finished after the kills"
effects_ok alpha 150
ok $? "alpha: 150 effects, each exactly once"
effects_ok beta 150
ok $? "beta: 150 effects, each exactly once"
is "$(sql "SELECT count(*) FROM items WHERE state='done'")" 300 "300 items done in the journal"
n=$(sql "SELECT count(*) FROM audit WHERE stage='decod' AND object='alpha' AND action='exit' AND detail LIKE 'killed by signal 9%'")
is "$n" 1 "audit: alpha's exit by signal 9 recorded"
n=$(sql "SELECT count(*) FROM audit WHERE stage='decod' AND object='alpha' AND action='restart'")
is "$n" 1 "audit: alpha's restart recorded"

# kill -9 of the supervisor: the stages notice and leave
pa=$(pid_of alpha); pb=$(pid_of beta)
kill -9 $SUP
wait $SUP 2>/dev/null
t0=$(ms)
wait_for "$(( $(scaled 2000) / 1000 ))" both_gone $pa $pb
ok $? "stages exit by themselves within $(( $(scaled 2000) / 1000 )) s of the supervisor's death ($(( $(ms) - t0 )) ms)"
enqueue 1000 40
"$DECOD" -c "$T/decod.conf" 2>>"$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for 30 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' $DB \"SELECT count(*) FROM items WHERE state='pending'\")\" = 0 ]"
ok $? "a new supervisor finishes the pending items"
effects_ok alpha 190 && effects_ok beta 190
ok $? "190 effects per stage, each exactly once"

# SIGTERM: everything gone within 10 s
pa=$(pid_of alpha); pb=$(pid_of beta)
kill -TERM $SUP
t0=$(ms)
wait_for 10 all_gone $SUP $pa $pb
ok $? "SIGTERM: supervisor and stages gone within 10 s ($(( $(ms) - t0 )) ms)"
wait $SUP 2>/dev/null
is "$(sql "SELECT group_concat(detail, ',') FROM (SELECT detail FROM audit WHERE stage='decod' AND action='exit' ORDER BY id DESC LIMIT 2)")" "exit status 0,exit status 0" \
	"both stages stopped by their SIGTERM (exit status 0)"

# a stage that fails at start: growing delays, no tight loop
sed -i 's/^stages = .*/stages = alpha gamma/' "$T/decod.conf"
TESTSTAGE_FAIL_START_gamma=1 "$DECOD" -c "$T/decod.conf" 2>"$T/fail.log" &
SUP=$!
track_pid $SUP
wait_for 12 sh -c "grep -c 'stage=gamma' $T/fail.log | grep -q . && [ \$(grep 'died before it was ready' $T/fail.log | grep -c stage=gamma) -ge 3 ]"
ok $? "gamma restarted at least three times"
delays=$(grep 'died before it was ready' "$T/fail.log" | grep 'stage=gamma' | sed -n 's/.*delay=\([0-9]*\)ms.*/\1/p' | head -3 | tr '\n' ' ')
is "$delays" "1000 2000 4000 " "restart delays grow: 1 s, 2 s, 4 s"
all_ready 1
ok $? "the healthy stage stays READY meanwhile"
stages | grep -q '"name":"gamma",[^}]*"state":"\(BACKOFF\|STARTING\)"'
ok $? "gamma shows BACKOFF or STARTING, not READY"
kill -TERM $SUP
wait_for 10 sh -c "! kill -0 $SUP 2>/dev/null"
ok $? "stopped"

# SIGTERM while the last stage cannot finish its work (a notifier whose
# replica never answers): every stage is asked at once and each has its own
# stop_timeout; the others stop at once by their SIGTERM, none is SIGKILLed
# for the slow one's sake
sed -i 's/^stages = .*/stages = alpha beta/; s/^stop_timeout = .*/stop_timeout = '"$(scaled 10)"'s/' "$T/decod.conf"
TESTSTAGE_HOLD_beta=1 "$DECOD" -c "$T/decod.conf" 2>"$T/hold.log" &
SUP=$!
track_pid $SUP
wait_for 20 all_ready 2
ok $? "alpha and a beta that holds its items READY"
enqueue 2000 1
wait_for 20 grep -q 'holding the item.*item=job-2000' "$T/hold.log"
ok $? "an item reached beta, which keeps it in flight"
pa=$(pid_of alpha); pb=$(pid_of beta)
kill -TERM $SUP
wait_for "$(scaled 5)" sh -c "! kill -0 $pa 2>/dev/null"
ok $? "alpha stopped while beta still drains"
alive "$pb"
ok $? "... beta is still draining then"
wait_for "$(( $(scaled 10) * 2 ))" all_gone $SUP $pa $pb
ok $? "SIGTERM: all gone"
wait $SUP 2>/dev/null
is "$(sql "SELECT detail FROM audit WHERE stage='decod' AND action='exit' AND object='alpha' ORDER BY id DESC LIMIT 1")" "exit status 0" \
	"alpha exited by its own SIGTERM, not SIGKILL"
grep -q 'did not stop in time; killing.*stage=alpha' "$T/hold.log"
ok $((! $?)) "alpha was never killed (decod's log)"
done_testing
