#!/bin/sh
# metrics_busy.sh - a busy stage answers /metrics between its items, not
# after the whole pass (issue 22: the fetcher gave no answer while it
# worked through 10,000 decofiles).  t/stage/teststage runs as "renderer"
# (so it is served on metrics_listen_renderer) with 64 items due at once,
# one pass of the skeleton's stage_process_due, each item taking
# TESTSTAGE_DELAY_MS.  Once the first item's effect is written, a scrape:
# it is answered (HTTP 200, a valid exposition with the stage's series)
# while the pass is still going, i.e. before the last of the 64 effects.
# Before the fix the answer came only once all 64 were done.  Timings are
# bench/bench_web.sh's; this asserts where in the pass the answer comes.
. "$top_srcdir/t/lib/common.sh"

STAGE=$top_builddir/t/stage/teststage
[ -x "$STAGE" ] || bail "teststage not built"
command -v curl >/dev/null || skip_all "curl is not installed"
N=64			# one pass: the skeleton reads 64 due items at a time
mkdir -p "$T/bin" "$T/state" "$T/run"
ln -s "$STAGE" "$T/bin/renderer"
PORT=$(free_port)
cat >"$T/c.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
rescan_interval = 100ms
metrics_listen_renderer = 127.0.0.1:$PORT
CONF
DB=$T/state/journal.db
EFFECTS=$T/state/effects.renderer
done_count() { [ -f "$EFFECTS" ] && wc -l <"$EFFECTS" | tr -d ' ' || echo 0; }

# the pass lasts N items of DELAY each: long next to one item, whatever the load
TESTSTAGE_DELAY_MS=$(scaled 150) "$T/bin/renderer" -c "$T/c.conf" 2>"$T/stage.log" &
track_pid $!
wait_for "$(scaled 20)" grep -q 'msg=ready' "$T/stage.log" || bail "the stage did not start: $(tail -3 "$T/stage.log")"
code=$(curl -s -o "$T/idle.txt" -w '%{http_code}' --max-time 30 "http://127.0.0.1:$PORT/metrics")
is "$code" 200 "an idle stage answers /metrics"

vals=""
i=0
while [ $i -lt $N ]; do
	vals="$vals('renderer','test','t','job-$i',0),"
	i=$((i + 1))
done
db_write "$DB" "INSERT INTO items (stage, kind, ns, name, created_ms) VALUES ${vals%,};"
wait_for "$(scaled 30)" sh -c "[ -s '$EFFECTS' ]" || bail "the stage did not start on the items"
before=$(done_count)
# no time bound on the answer: without the fix it comes after the pass
code=$(curl -s -o "$T/busy.txt" -w '%{http_code}' --max-time 120 "http://127.0.0.1:$PORT/metrics")
after=$(done_count)
diag "items done when the scrape was sent: $before, when it was answered: $after of $N"
is "$code" 200 "the busy stage answers /metrics"
check "... while the pass is still going (answered with $after of $N items done)" \
	test "$after" -lt "$N"
check "... a whole exposition: the stage's items counter with HELP and TYPE" sh -c "
	grep -q '^# HELP decod_items_total ' '$T/busy.txt' &&
	grep -q '^# TYPE decod_items_total counter' '$T/busy.txt' &&
	grep -q '^decod_items_total{stage=\"renderer\",result=\"done\"} [0-9]' '$T/busy.txt'"
done_mid=$(sed -n 's/^decod_items_total{stage="renderer",result="done"} \([0-9]*\).*/\1/p' "$T/busy.txt")
check "... counting the items done so far ($done_mid), not all $N" \
	test "${done_mid:-$N}" -ge 1 -a "${done_mid:-$N}" -lt "$N"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/busy.txt" >"$T/promtool.out" 2>&1
	ok $? "... which promtool check metrics passes"
fi
wait_for "$(scaled 60)" sh -c "[ \$(wc -l <'$EFFECTS') -ge $N ]"
ok $? "the pass finished: all $N items done"
done_testing
