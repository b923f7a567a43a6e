#!/bin/sh
# t/chaos.sh [SECONDS] - the chaos soak (issue 13): 20 inline Decofiles
# edited continuously (each edit a content never seen before), one
# reference replica per Decofile confirming every push, while kill -9 hits
# a random stage or the supervisor every 0.5-4 s; bounded by SECONDS
# (default 300; CI runs 45).  Then the edits stop and, once the pipeline
# settles, it checks: every Decofile at its last edit on the target and on
# its replica (lost = 0), every content hash published exactly once per
# target (duplicates = 0), no item left pending in the journal, no stage in
# BACKOFF.  Prints the counts; TAP output; needs a build folder
# (top_builddir, default ./_build) and sqlite3.
#   CHAOS_DECOFILES=N   decofiles (and replicas), default 20
#   CHAOS_SEED=N        random seed (printed; reuse it to replay a run)
#   CHAOS_STORE=etcd    the store is a real etcd, which the chaos also
#                       kill -9s and restarts, and compacts
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir/_build}"
# a folder of its own: a shared /tmp may be swept by other runs' clean-ups
TMPDIR=${CHAOS_TMPDIR:-$top_builddir/chaos-tmp}
mkdir -p "$TMPDIR" && export TMPDIR
. "$top_srcdir/t/lib/common.sh"

SECS=${1:-300}
NDF=${CHAOS_DECOFILES:-20}
SEED=${CHAOS_SEED:-$$}
DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
command -v python3 >/dev/null || skip_all "python3 not installed"
STORE=${CHAOS_STORE:-local}
diag "chaos: $SECS s, $NDF decofiles, seed $SEED, $STORE store"
if [ "$STORE" = etcd ]; then
	. "$top_srcdir/t/lib/etcd.sh"
	etcd_start e1 || bail "etcd did not start"
	STORE_URL="etcd:$ETCD_URL"
else
	STORE_URL="local:$T/store"
fi

mkdir -p "$T/libexec" "$T/last" "$T/apply"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = $STORE_URL
rescan_interval = 500ms
poll_period = 2s
notify_timeout = 2s
notify_attempts = 3
restart_min = 200ms
restart_max = 3s
stable_after = 10s
stop_timeout = 3s
reload_token_file = $T/reload.token
CONF
# the replicas are as strict as the runtime: a reload needs the token
umask 077
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/reload.token"
umask 022
export DECOD_CONFIG="$T/decod.conf"
DB=$T/state/journal.db
sql() { sqlite3 -cmd '.timeout 10000' "$DB" "$1"; }
ctl() { "$DECOCTL" -n chaos "$@"; }
# rnd N: R = a number in 0..N-1 from the seeded stream (no subshell, so
# the stream advances)
RN=$SEED
R=0
rnd() { RN=$(( (RN * 1103515245 + 12345) % 2147483648 )); R=$(( (RN / 65536) % $1 )); }

# one replica per decofile
PORTS=""
i=1
while [ $i -le "$NDF" ]; do
	"$SITE" --port 0 --token-file "$T/reload.token" > "$T/site$i.out" 2> "$T/site$i.err" &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/site$i.out" || bail "replica $i did not start"
	PORTS="$PORTS $(awk '/^listening on/ {print $3}' "$T/site$i.out")"
	i=$((i + 1))
done
port_of() { echo $PORTS | cut -d' ' -f"$1"; }

SUP=""
start_decod() {
	"$DECOD" 2>>"$T/decod.log" &
	SUP=$!
	track_pid $SUP
}
start_decod
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
wait_for 20 ready4 || bail "decod did not start"

# edit DF N: apply decofile DF with content number N (a content never seen before)
edit() {
	f=$T/apply/df$1.json
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"df%d","namespace":"chaos"},"spec":{"source":"inline","inline":{"value":{"Header":{"v":"df%d-%d"}}},"endpoints":["http://127.0.0.1:%s"]}}' \
	    "$1" "$1" "$2" "$(port_of "$1")" > "$f"
	if ctl apply -f "$f" >/dev/null 2>>"$T/apply.err"; then
		printf '%s' "$2" > "$T/last/df$1"
		return 0
	fi
	return 1
}
i=1
while [ $i -le "$NDF" ]; do edit $i 0 || bail "cannot apply df$i"; i=$((i + 1)); done

# the editor: runs until the stop file appears (or the time is well past)
chaos_end=$(( $(date +%s) + SECS )) # not "end": wait_for uses that name
(
	RN=$((SEED + 1)); n=0
	while [ ! -e "$T/stop" ] && [ "$(date +%s)" -lt $((chaos_end + 30)) ]; do
		n=$((n + 1))
		rnd "$NDF"
		edit $((R + 1)) "$n" && echo "$n" > "$T/edits"
		rnd 3
		sleep 0.$((R + 1))
	done
) &
EDITOR=$!
track_pid $EDITOR

# the killer (this shell, so it can restart the supervisor)
kills=0; supkills=0; etcd_kills=0; compactions=0
nvictims=5
[ "$STORE" = etcd ] && nvictims=7
stage_pids() { "$DECOCTL" stages -o json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["stages"]:
    if s.get("pid"): print(s["name"], s["pid"])' 2>/dev/null; }
while [ "$(date +%s)" -lt $chaos_end ]; do
	rnd 3500
	ms=$((500 + R))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	rnd $nvictims
	victim=$R
	if [ $victim -eq 5 ]; then
		kill -9 "$(etcd_pid e1)" 2>/dev/null && etcd_kills=$((etcd_kills + 1))
		wait "$(etcd_pid e1)" 2>/dev/null
		etcd_restart e1 || diag "etcd did not come back"
	elif [ $victim -eq 6 ]; then
		etcd_compact e1 && compactions=$((compactions + 1))
	elif [ $victim -eq 4 ]; then
		pids=$(stage_pids | awk '{print $2}')
		kill -9 "$SUP" 2>/dev/null && supkills=$((supkills + 1)) && kills=$((kills + 1))
		wait "$SUP" 2>/dev/null
		# stages leave when the supervisor's fd closes; wait for that
		for p in $pids; do wait_for 10 sh -c "! kill -0 $p 2>/dev/null"; done
		start_decod
		wait_for 20 ready4 || diag "decod not ready 20 s after a restart"
	else
		name=$(echo fetcher renderer publisher notifier | cut -d' ' -f$((victim + 1)))
		pid=$(stage_pids | awk -v n="$name" '$1 == n {print $2}')
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && kills=$((kills + 1))
	fi
done
touch "$T/stop"
wait $EDITOR 2>/dev/null
edits=$(cat "$T/edits" 2>/dev/null || echo 0)
diag "stopped after $kills kills ($supkills of the supervisor), $etcd_kills etcd kills, $compactions compactions and $edits edits"

# settle: every stage READY, every decofile at its last edit everywhere
wait_for 60 ready4
ok $? "every stage READY after the chaos"
expected_doc() { printf '{"Header":{"v":"df%d-%s"}}' "$1" "$(cat "$T/last/df$1")"; }
settled() {
	i=1
	while [ $i -le "$NDF" ]; do
		want=$(expected_doc $i)
		[ "$(cat "$T/state/published/chaos/df$i/decofile.json" 2>/dev/null)" = "$want" ] || return 1
		sha=$(printf '%s' "$want" | sha256sum | cut -d' ' -f1)
		curl -s --max-time 5 "http://127.0.0.1:$(port_of $i)/.decofile" | grep -q "\"sha256\":\"$sha\"" || return 1
		i=$((i + 1))
	done
}
wait_for 120 settled
lost=0
i=1
while [ $i -le "$NDF" ]; do
	want=$(expected_doc $i)
	sha=$(printf '%s' "$want" | sha256sum | cut -d' ' -f1)
	if [ "$(cat "$T/state/published/chaos/df$i/decofile.json" 2>/dev/null)" != "$want" ] ||
	    ! curl -s --max-time 5 "http://127.0.0.1:$(port_of $i)/.decofile" | grep -q "\"sha256\":\"$sha\""; then
		lost=$((lost + 1))
		diag "df$i: want $want, target has $(cat "$T/state/published/chaos/df$i/decofile.json" 2>/dev/null)"
	fi
	i=$((i + 1))
done
is "$lost" 0 "every decofile at its last edit on its target and its replica (lost = 0)"
noneleft() { [ "$(sql "SELECT count(*) FROM items WHERE state='pending'")" = 0 ]; }
wait_for 60 noneleft
is "$(sql "SELECT count(*) FROM items WHERE state='pending'")" 0 "no item left pending in the journal"
publishes=$(sql "SELECT count(*) FROM publishes WHERE ns='chaos'")
dups=$(sql "SELECT count(*) FROM (SELECT 1 FROM publishes WHERE ns='chaos' GROUP BY target, location, content_hash HAVING count(*) > 1)")
is "$dups" 0 "every content hash published exactly once per target (duplicates = 0)"
backoff=$("$DECOCTL" stages 2>/dev/null | grep -c BACKOFF)
is "$backoff" 0 "no stage in BACKOFF"
confirmed=0
for i in $(seq 1 "$NDF"); do
	c=$(grep -c 'decofile reloaded' "$T/site$i.err")
	confirmed=$((confirmed + c))
done
echo "# chaos: seconds=$SECS decofiles=$NDF seed=$SEED store=$STORE kills=$kills supervisor_kills=$supkills etcd_kills=$etcd_kills compactions=$compactions edits=$edits publishes=$publishes pushes_confirmed=$confirmed duplicates=$dups lost=$lost"
done_testing
