#!/bin/sh
# bench_template.sh - DecofileTemplate fan-out (issue 21), end to end through
# the real supervisor and its four stages on the local store.  N Auto
# decofiles list one inline template; an unrelated inline site "other" has
# REPLICAS static spec.endpoints on one epoll bench replica (bench/replica).
# The N template sites have no replicas (1,000 sites x replicas is too heavy
# for the shared 2-core machine; only "other" is measured to replicas).
#   phase idle:  E edits of "other" -> `decoctl wait --for timestamp:` (all its
#                replicas confirmed), nothing else running;
#   phase 1:     one template edit, no spec.rollout: time to full adoption
#                (every site's template_uses on the new generation), the
#                enqueue rate from the journal's rollout item times vs
#                template_rollout_rate, and E edits of "other" during it;
#   phase 2:     one template edit with spec.rollout {canary: 5%, waves: 4,
#                pause: PAUSE}: time to full adoption vs the sum of the
#                pauses (and vs pauses + N / rate, the enqueue floor).
#   sh bench/bench_template.sh BUILD_DIR [N] [RATE] [PAUSE_S] [EDITS] [REPLICAS]
set -eu
build=$(cd "${1:?usage: bench_template.sh BUILD_DIR [N] [RATE] [PAUSE_S] [EDITS] [REPLICAS]}" && pwd)
n=${2:-1000}
rate=${3:-20}
pause=${4:-5}
edits=${5:-20}
nrep=${6:-10}
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null || :; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
command -v sqlite3 >/dev/null || { echo "sqlite3 not installed" >&2; exit 77; }

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$build/daemons/$s/$s" "$T/libexec/$s"
done

"$build/bench/replica" --port 0 > "$T/replica.out" 2>&1 &
PIDS="$PIDS $!"
i=0
until grep -q '^listening on' "$T/replica.out"; do i=$((i+1)); [ $i -lt 200 ]; sleep 0.05; done
port=$(awk '/^listening on/ {print $3}' "$T/replica.out")

cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
poll_period = 1h
rescan_interval = 300ms
template_rollout_rate = $rate
CONF
export DECOD_CONFIG="$T/decod.conf"
"$build/decod" 2>"$T/decod.log" &
PIDS="$PIDS $!"
i=0
until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq 4 ]; do
	i=$((i+1)); [ $i -lt 400 ]; sleep 0.05
done

NS=bench
ctl() { "$build/decoctl" -n $NS "$@"; }
DB=$T/state/journal.db
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
load() { uptime | sed 's/.*load average: //'; }

tpl() { # LABEL [ROLLOUT]
	{
		printf '{"apiVersion":"deco.sites/v1alpha1","kind":"DecofileTemplate",'
		printf '"metadata":{"name":"base","namespace":"%s"},' $NS
		printf '"spec":{"source":"inline","inline":{"value":{"Theme":{"label":"%s"}}}' "$1"
		[ -z "${2:-}" ] || printf ',"rollout":%s' "$2"
		printf '}}\n'
	} > "$T/base.json"
	ctl apply -f "$T/base.json" >/dev/null
}
eps=$(python3 -c "import sys; print(','.join('\"http://127.0.0.1:%s/o/%d\"' % (sys.argv[1], i) for i in range(int(sys.argv[2]))))" "$port" "$nrep")
other() { # LABEL
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"other","namespace":"%s"},"spec":{"source":"inline","inline":{"value":{"Page":{"label":"%s"}}},"endpoints":[%s]}}\n' \
	    $NS "$1" "$eps" > "$T/other.json"
	ctl apply -f "$T/other.json" >/dev/null
}
i=1
while [ $i -le "$n" ]; do
	printf -- '---\napiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: s%04d, namespace: %s}\nspec:\n  source: inline\n  inline: {value: {Page: {"n": %d}}}\n  templates: [base]\n' \
	    $i $NS $i >> "$T/sites.yaml"
	i=$((i + 1))
done

# every site on generation G (the test's query, t/integration/template_fanout.sh)
on_gen() { sql "SELECT count(*) FROM template_uses u JOIN template_trees t ON t.ns=u.ns AND t.name=u.template AND t.tree_hash=u.tree_hash WHERE u.template='base' AND t.generation=$1"; }
wait_gen() { # G TIMEOUT_S: poll (no fixed sleep) until all N sites are on G
	end=$(( $(date +%s) + $2 ))
	until [ "$(on_gen "$1")" -eq "$n" ]; do
		[ "$(date +%s)" -lt $end ] || { echo "timeout waiting for generation $1 ($(on_gen "$1")/$n)" >&2; return 1; }
		sleep 0.1
	done
}
# a background watcher that writes the wall-clock ms at which G is reached
watch_gen() { # G FILE
	( wait_gen "$1" 900 && ms > "$2" ) &
	PIDS="$PIDS $!"
}
hash_other() { ctl get decofile other -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["contentHash"])'; }
newest_other() { sql "SELECT content_hash FROM renders WHERE name='other' ORDER BY id DESC LIMIT 1"; }
k=0
edit_other() { # -> prints ms of one edit -> all replicas confirmed
	k=$((k + 1))
	t0=$(ms)
	other "e$k"
	# ready: observedGeneration is the applied spec's, its render is the
	# newest, and PodsNotified=True (every replica confirmed)
	ctl wait other --for ready --timeout 120s >/dev/null
	t1=$(ms)
	[ "$(hash_other)" = "$(newest_other)" ] || { echo "other: status is not the newest render" >&2; exit 1; }
	echo $((t1 - t0))
}
pct() { # P VALUES...: nearest-rank percentile
	p=$1; shift
	echo "$@" | tr ' ' '\n' | grep . | sort -n | awk -v p="$p" '{a[NR]=$1} END {r=int((p*NR+99)/100); if (r<1) r=1; print a[r]}'
}

tpl g1
ctl apply -f "$T/sites.yaml" >/dev/null
other e0
wait_gen 1 600
ctl wait other --for ready --timeout 120s >/dev/null
echo "template fan-out: $n Auto decofiles on one inline template, template_rollout_rate = $rate;"
echo "  'other': an unrelated inline site with $nrep static endpoints on bench/replica"
echo "  (the $n template sites have no replicas)"

# --- idle: other's edit -> confirmed, nothing else going on -------------------
edit_other >/dev/null	# warm-up, not counted
L0=$(load)
idle=""
j=0
while [ $j -lt "$edits" ]; do idle="$idle $(edit_other)"; j=$((j + 1)); done
echo "idle: other edit -> $nrep replicas confirmed, $edits edits: p50 $(pct 50 $idle) ms, p99 $(pct 99 $idle) ms (load $L0)"
echo "  ms:$idle"

# --- phase 1: one template edit, no spec.rollout --------------------------------
L1=$(load)
rm -f "$T/g2.ms"
maxitem=$(sql "SELECT coalesce(MAX(id),0) FROM items")
t0=$(ms)
tpl g2
watch_gen 2 "$T/g2.ms"
# edits of other only while the fan-out is under way
# edits of other spread over the fan-out: edit j once j/(E+1) of the sites
# adopted (polled, not slept), so they see the queue early, mid-way and late
busy=""
at=""
j=1
while [ $j -le "$edits" ] && [ ! -s "$T/g2.ms" ]; do
	want=$((j * n / (edits + 1)))
	until [ "$(on_gen 2)" -ge $want ] || [ -s "$T/g2.ms" ]; do sleep 0.1; done
	[ ! -s "$T/g2.ms" ] || break
	at="$at $(on_gen 2)"
	busy="$busy $(edit_other)"
	j=$((j + 1))
done
wait_gen 2 900
i=0
until [ -s "$T/g2.ms" ]; do i=$((i+1)); [ $i -lt 100 ]; sleep 0.05; done
t1=$(cat "$T/g2.ms")
L1e=$(load)
span=$(sql "SELECT MAX(created_ms) - MIN(created_ms) FROM items WHERE kind='rollout' AND id > $maxitem")
cnt=$(sql "SELECT count(*) FROM items WHERE kind='rollout' AND id > $maxitem")
maxw=$(sql "SELECT MAX(c) FROM (SELECT (SELECT count(*) FROM items b WHERE b.kind='rollout' AND b.id > $maxitem AND b.created_ms >= a.created_ms AND b.created_ms < a.created_ms + 1000) AS c FROM items a WHERE a.kind='rollout' AND a.id > $maxitem)")
echo "phase 1 (no spec.rollout): template edit -> all $n adopted in $((t1 - t0)) ms (load $L1 -> $L1e)"
echo "  rollout items: $cnt, enqueued over $span ms: $(python3 -c "import sys; print('%.1f' % ((int(sys.argv[1]) - 1) * 1000.0 / max(int(sys.argv[2]), 1)))" "$cnt" "$span")/s achieved vs rate $rate/s; at most $maxw in any 1 s window"
echo "  floor N/rate = $((n * 1000 / rate)) ms"
bn=$(echo $busy | wc -w)
echo "during fan-out: other edit -> $nrep replicas confirmed, $bn edits: p50 $(pct 50 $busy) ms, p99 $(pct 99 $busy) ms"
echo "  ms:$busy"
echo "  sites adopted when each edit began:$at"
python3 -c "
import sys
i50, i99, b50, b99 = (float(x) for x in sys.argv[1:5])
print('  ratio to idle: p50 %.2fx, p99 %.2fx (target <= 1.5x)' % (b50 / i50, b99 / i99))" \
    "$(pct 50 $idle)" "$(pct 99 $idle)" "$(pct 50 $busy)" "$(pct 99 $busy)"
# --- phase 2: canary 5 %, 4 waves, pause ------------------------------------------
L2=$(load)
rm -f "$T/g3.ms"
maxitem=$(sql "SELECT coalesce(MAX(id),0) FROM items")
t0=$(ms)
tpl g3 "{\"canary\":\"5%\",\"waves\":4,\"pause\":\"${pause}s\"}"
wait_gen 3 900
t1=$(ms)
L2e=$(load)
RID=$(sql "SELECT MAX(id) FROM template_rollouts WHERE name='base'")
echo "phase 2 (canary 5%, 4 waves, pause ${pause}s): template edit -> all $n adopted in $((t1 - t0)) ms (load $L2 -> $L2e)"
echo "  rollout $RID state $(sql "SELECT state FROM template_rollouts WHERE id=$RID"); waves: $(sql "SELECT wave || ':' || count(*) FROM template_rollout_sites WHERE rollout=$RID GROUP BY wave ORDER BY wave" | tr '\n' ' ')"
sql "WITH q AS (SELECT s.wave AS wave, i.created_ms AS t FROM items i JOIN template_rollout_sites s ON s.site=i.name AND s.rollout=$RID
  WHERE i.kind='rollout' AND i.id > $maxitem)
SELECT wave, count(*), MIN(t), MAX(t) FROM q GROUP BY wave ORDER BY wave" |
    awk -F'|' -v t0="$t0" '{printf "  wave %s: %s sites enqueued from +%d ms to +%d ms\n", $1, $2, $3 - t0, $4 - t0}'
pauses=$((4 * pause * 1000))
echo "  sum of pauses: $pauses ms (target: adoption <= $((pauses * 11 / 10)) ms);" \
    "pauses + N/rate floor: $((pauses + n * 1000 / rate)) ms"
