#!/bin/sh
# cli_ctl - decoctl stages/stop/start/restart against the real supervisor
# (decod) running two stand-in stages: shell scripts that report READY on
# fd 3 and live until the supervisor closes it.
. "$top_srcdir/t/lib/common.sh"

DECOCTL=$(bin decoctl)
DECOD=$(bin decod)
[ -x "$DECOD" ] || skip_all "decod not built"

mkdir -p "$T/state" "$T/run" "$T/libexec"
for s in alpha beta; do
	printf '#!/bin/sh\nprintf "READY\\n" >&3\nexec cat <&3 >/dev/null\n' >"$T/libexec/$s"
	chmod +x "$T/libexec/$s"
done
cat >"$T/decod.conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
libexec_dir = $T/libexec
stages = alpha beta
EOF
dc() { "$DECOCTL" -c "$T/decod.conf" "$@"; }
both_ready() { [ "$(dc stages | grep -c ' READY ')" = 2 ]; }
alpha_down() { dc stages | grep -q '^alpha  *DOWN (stopped by admin)'; }
alpha_pid() { dc stages -o json | tr -d ' \n' | sed 's/.*"name":"alpha","pid":\([0-9]*\).*/\1/'; }

"$DECOD" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
track_pid $!
wait_for 20 both_ready
ok $? "decoctl stages shows both stages READY"
dc stages >"$T/out"
check "stages table header" grep -q "^STAGE  *STATE  *PID  *RESTARTS  *UPTIME" "$T/out"
dc stages -o json >"$T/out"
check "stages -o json passes the supervisor's JSON" grep -q '"name": "beta"' "$T/out"
pid1=$(alpha_pid)

dc stop alpha >"$T/out" 2>&1
is "$?" 0 "stop alpha"
wait_for 20 alpha_down
ok $? "alpha is down, stopped by admin"
dc start alpha >/dev/null 2>&1
is "$?" 0 "start alpha"
wait_for 20 both_ready
ok $? "alpha is back"
pid2=$(alpha_pid)
check "alpha runs as a new process" test "$pid1" != "$pid2"

dc restart nope >"$T/out" 2>&1
is "$?" 1 "restart of an unknown stage: exit 1"
check "the supervisor's error is printed" grep -q 'no stage named "nope"' "$T/out"
dc restart 'a b' >/dev/null 2>&1
is "$?" 2 "a bad stage name is a usage error"
dc restart >/dev/null 2>&1
is "$?" 2 "restart without a stage: exit 2"

done_testing
