#!/bin/sh
# cli_units - decoctl against stages run without the supervisor, as the
# per-stage systemd units (decod-<stage>.service) and deploy/'s pod run
# them: each stage answers on its own <runtime_dir>/<stage>.ctl.ipc, and
# `decoctl stages` lists them from there instead of failing on the absent
# supervisor; a configured stage that does not run is DOWN with the reason;
# restart/stop/start name the systemctl command; with nothing running at
# all decoctl says it reached neither the supervisor nor a stage.
. "$top_srcdir/t/lib/common.sh"

DECOCTL=$(bin decoctl)
FET=$(bin fetcher)
REN=$(bin renderer)
[ -x "$FET" ] && [ -x "$REN" ] || bail "stages not built"

mkdir -p "$T/state" "$T/run"
cat >"$T/decod.conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
stages = fetcher renderer publisher
EOF
dc() { "$DECOCTL" -c "$T/decod.conf" "$@"; }
ready_n() { [ "$(dc stages 2>/dev/null | grep -c ' READY ')" = "$1" ]; }

dc stages >"$T/out" 2>&1
is "$?" 1 "nothing running: decoctl stages fails"
check "... saying it reached neither the supervisor nor a stage" \
    grep -q "cannot reach the supervisor at ipc://$T/run/control.ipc nor a stage's own control socket" "$T/out"

# as ExecStart= of decod-fetcher.service and decod-renderer.service: no supervisor
"$FET" -c "$T/decod.conf" >"$T/fetcher.log" 2>&1 &
FET_PID=$!
track_pid $FET_PID
"$REN" -c "$T/decod.conf" >"$T/renderer.log" 2>&1 &
REN_PID=$!
track_pid $REN_PID
wait_for "$(scaled 20)" ready_n 2
st=$?
ok $st "decoctl stages lists both stages READY, each from its own socket"
if [ $st -ne 0 ]; then	# seen once in CI: say which stage, and what it logged
	dc stages 2>&1 | sed 's/^/# stages: /'
	for p in "$FET_PID:fetcher" "$REN_PID:renderer"; do
		kill -0 "${p%%:*}" 2>/dev/null || diag "${p#*:} (pid ${p%%:*}) is not running"
		tail -15 "$T/${p#*:}.log" | sed "s/^/# ${p#*:}.log: /"
	done
fi
dc stages >"$T/out" 2>"$T/err"
is "$?" 0 "stages exits 0 while some stages answer"
check "... says there is no supervisor" grep -q "^no supervisor: each stage answered on its own control socket" "$T/out"
check "... the fetcher's row has its pid" grep -q "^fetcher  *READY  *$FET_PID " "$T/out"
check "... the renderer's row has its pid" grep -q "^renderer  *READY  *$REN_PID " "$T/out"
check "... the publisher (configured, not running) is DOWN" grep -q "^publisher  *DOWN  *- " "$T/out"
check "... with the reason on stderr" grep -q "^publisher: ipc://$T/run/publisher.ctl.ipc: " "$T/err"
check "no 'cannot reach the supervisor'" sh -c "! grep -q 'cannot reach' '$T/out' '$T/err'"

dc stages -o json >"$T/json" 2>/dev/null
python3 - "$T/json" "$FET_PID" >"$T/py" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["role"] == "unit", r
by = {s["name"]: s for s in r["stages"]}
assert by["fetcher"]["state"] == "READY" and by["fetcher"]["pid"] == int(sys.argv[2]), r
assert by["publisher"]["state"] == "DOWN" and "error" in by["publisher"], r
PY
st=$?
sed 's/^/# /' "$T/py"
ok $st "stages -o json: role unit, the fetcher's pid, the publisher DOWN"

dc restart fetcher >"$T/out" 2>&1
is "$?" 1 "restart of a stage run as its own unit is refused"
check "... naming the systemctl command" grep -qF "use systemctl restart|stop|start decod-fetcher" "$T/out"
check "... and the fetcher still runs" kill -0 "$FET_PID"

# a stage that stops is DOWN in the list, the other still READY
kill -TERM "$REN_PID"
wait "$REN_PID" 2>/dev/null
wait_for "$(scaled 20)" ready_n 1
ok $? "after the renderer stops, one stage is READY"
dc stages >"$T/out" 2>/dev/null
check "... and the renderer is DOWN" grep -q "^renderer  *DOWN " "$T/out"

done_testing
