#!/bin/sh
# stage_health - `<stage> --health[=SECONDS]`, the exec probe deploy/ gives
# each stage's container (its pipe listens on 127.0.0.1 only, where the
# kubelet cannot dial): not ready before the stage has opened its journal
# and store, ok while its loop turns (heartbeat file in runtime_dir), not
# alive when the loop stops (SIGSTOP), ok again when it runs, not ready
# after a clean stop or when a restarted stage has not yet written its own
# heartbeat (an old file is removed at start); a bad value is a usage error.
. "$top_srcdir/t/lib/common.sh"

REN=$(bin renderer)
[ -x "$REN" ] || bail "renderer not built"

port=$(free_port)
cat >"$T/conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
addr_renderer = tcp://127.0.0.1:$port
EOF
C="-c $T/conf"
health() { "$REN" "$@" $C >"$T/health.out" 2>&1; }

health --health
is "$?" 1 "--health before the stage ever ran: 1 (not ready)"
check "... saying so" grep -q 'renderer: not ready' "$T/health.out"
health --health=0
is "$?" 2 "--health=0 is a usage error"
health --health=soon
is "$?" 2 "--health=soon is a usage error"
check "--help lists --health" sh -c "'$REN' --help | grep -q -- '--health'"

# a stale heartbeat of an earlier run (a container killed with -9)
mkdir -p "$T/run"
echo 1 >"$T/run/renderer.alive"
"$REN" $C >"$T/ren.log" 2>&1 &
PID=$!
track_pid $PID
wait_for 10 grep -q 'msg=ready' "$T/ren.log" || bail "renderer did not start"
wait_for 5 health --health=5
is "$?" 0 "--health=5 of a running stage: 0"
check "... saying ok" grep -q 'renderer: ok' "$T/health.out"
check "the heartbeat file holds the stage's pid" grep -qx "$PID" "$T/run/renderer.alive"

kill -STOP $PID
sleep 4
health --health=2
is "$?" 1 "a stopped loop (SIGSTOP, 4 s): --health=2 fails"
check "... saying not alive" grep -q 'renderer: not alive' "$T/health.out"
health --health
is "$?" 0 "... while the default limit (20 s) still passes"
kill -CONT $PID
wait_for 5 health --health=2
is "$?" 0 "running again: --health=2 passes within a heartbeat"

kill -TERM $PID
wait $PID 2>/dev/null
check "a clean stop removes the heartbeat" test ! -e "$T/run/renderer.alive"
health --health
is "$?" 1 "--health after a clean stop: 1"

done_testing
