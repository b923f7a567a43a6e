#!/bin/sh
# metrics_busy.sh - a busy stage answers /metrics at once, whatever its
# loop is doing (issue 22: the fetcher gave no answer while it worked
# through 10,000 decofiles, then made a scrape wait for whatever one
# operation its loop was in).  t/stage/teststage runs as "renderer" (so it
# is served on metrics_listen_renderer).
#  1. 64 items due at once, one pass of the skeleton's stage_process_due,
#     each taking TESTSTAGE_DELAY_MS: a scrape sent once the first effect
#     is written is answered (HTTP 200, a valid exposition counting the
#     items done so far) before the last of the 64 effects.
#  2. one item that is ONE long operation with no stage_yield in it
#     (TESTSTAGE_LONG_ITEM, as a journal commit or a store write of 127
#     fragments is): a scrape sent once it started is answered before it
#     ends (its effect not written, "long item ended" not logged), which
#     only the metrics thread can do; the loop is inside on_item all along.
#  3. SIGTERM inside that item: the stage stops (the metrics thread woken
#     and joined) and exits 0.
# Timings are bench/bench_web.sh's; this asserts where the answer comes.
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

# the pass lasts N items of DELAY each: long next to one item, whatever the load;
# the long item far longer than any scrape, whatever the load (a stop cuts it short)
LONG_MS=$(scaled 120000)
TESTSTAGE_DELAY_MS=$(scaled 150) TESTSTAGE_LONG_ITEM=long-1 TESTSTAGE_LONG_MS=$LONG_MS \
    "$T/bin/renderer" -c "$T/c.conf" 2>"$T/stage.log" &
SPID=$!
track_pid $SPID
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

# 2. inside one long operation: only a thread of its own can answer now
db_write "$DB" "INSERT INTO items (stage, kind, ns, name, created_ms) VALUES ('renderer','test','t','long-1',0);"
wait_for "$(scaled 30)" grep -q 'long item started' "$T/stage.log" ||
	bail "the long item did not start: $(tail -3 "$T/stage.log")"
# no time bound on the answer either: without the thread it comes after the item
out=$(curl -s -o "$T/long.txt" -w '%{http_code} %{time_total}' --max-time $((LONG_MS / 1000 + 60)) \
    "http://127.0.0.1:$PORT/metrics")
ended=$(grep -c 'long item ended' "$T/stage.log")
diag "inside the long item ($LONG_MS ms): answered in ${out#* } s; 'long item ended' logged $ended times"
is "${out% *}" 200 "a stage inside one long operation answers /metrics"
check "... before that operation ends (not logged as ended, its effect not written)" \
	sh -c "[ $ended -eq 0 ] && ! grep -qx long-1 '$EFFECTS'"
check "... with the items done before it ($N), not the one in progress" \
	grep -qx "decod_items_total{stage=\"renderer\",result=\"done\"} $N" "$T/long.txt"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/long.txt" >"$T/promtool-long.out" 2>&1
	ok $? "... which promtool check metrics passes"
fi

# 3. a stop inside the item: the metrics thread is woken and joined, the stage exits 0
kill -TERM "$SPID"
# "stopped" is logged once the metrics thread is joined (stage_main's order)
wait_for "$(scaled 20)" grep -q 'msg=stopped' "$T/stage.log"
ok $? "SIGTERM inside the long item: the stage stops, its metrics thread joined"
grep -q 'msg=stopped' "$T/stage.log" || kill -KILL "$SPID" 2>/dev/null
wait "$SPID"
is "$?" 0 "... and exits 0"
done_testing
