#!/bin/sh
# etcd_lock_kill - a lock holder killed with SIGKILL: its session lease is
# no longer kept alive, so another process takes the lock once it runs out
# (session_ttl 2 s), and not before.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"

drv="$top_builddir/t/unit/store_etcd_test"
etcd_start || bail "etcd did not start"
S="etcd:$ETCD_URL"
export DECOD_SESSION_TTL=2s

"$drv" hold "$S" /lock/job >"$T/hold.out" 2>"$T/hold.err" &
HPID=$!
track_pid $HPID
check "holder took the lock" wait_for 20 grep -q HELD "$T/hold.out"
"$drv" take "$S" /lock/job 300 >"$T/take0.out"
is "$?" 1 "while it lives nobody else takes it"
holder=$(sed -n 's/^HELD //p' "$T/hold.out")
is "$(sed -n 's/^HOLDER //p' "$T/take0.out")" "$holder" "the others see who holds it"

kill -KILL $HPID
wait $HPID 2>/dev/null
"$drv" take "$S" /lock/job 10000 >"$T/take.out"
is "$?" 0 "another process takes the lock after the kill"
ms=$(sed -n 's/^TAKEN //p' "$T/take.out")
diag "lock takeover after kill -9 with session_ttl 2s: ${ms:-none} ms"
# The TTL + 1 s target is a benchmark figure (bench/bench_scaleout.sh,
# doc/benchmarks.md); a timed assertion that tight fails on a loaded machine.
# Here: the lease had to run out first, and nothing stalled after it did.
ok "$([ -n "$ms" ] && [ "$ms" -le $((2000 + $(scaled 4000))) ]; echo $?)" "soon after the lease ran out (${ms:-none} ms <= $((2000 + $(scaled 4000))))"
done_testing
