#!/bin/sh
# etcd_watch_restart - a watcher on a stream of 1,000 puts (and deletes)
# while etcd is restarted twice and its history compacted.  The watcher must
# see every change once, in order; when it was away across a compaction it
# gets one RELIST, after which its re-listed state equals the store's.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"

drv="$top_builddir/t/unit/store_etcd_test"
P=/w/
etcd_start || bail "etcd did not start"
S="etcd:$ETCD_URL"

"$drv" watch "$S" $P >"$T/watch.out" 2>"$T/watch.err" &
WPID=$!
track_pid $WPID
check "watcher is up" wait_for 20 grep -q READY "$T/watch.out"
seen() { grep -q "^PUT ${P}k$1 " "$T/watch.out"; }

# A: 250 puts on a live stream
"$drv" puts "$S" $P 1 250
check "A: watcher saw the 250th put" wait_for 20 seen 0250

# B: restart etcd under the watcher, 250 more, compact after it caught up
etcd_stop
etcd_restart || bail "etcd did not restart"
"$drv" puts "$S" $P 251 500
check "B: watcher reconnected and saw the 500th put" wait_for 30 seen 0500
etcd_compact
check "B: history compacted" test $? -eq 0

# C: the watcher is frozen while etcd restarts, 250 puts land and history
# is compacted past what it saw: on thawing it must ask for a re-list
kill -STOP $WPID
etcd_stop
etcd_restart || bail "etcd did not restart"
"$drv" puts "$S" $P 501 750
etcd_compact
kill -CONT $WPID
check "C: watcher got a RELIST" wait_for 30 grep -q "^RELIST" "$T/watch.out"

# D: 250 puts and 50 deletes after the re-list, then the end mark
"$drv" puts "$S" $P 751 1000
"$drv" dels "$S" $P 20 1000 20
"$drv" done "$S" $P
check "watcher finished" wait_for 30 grep -q "^STATE" "$T/watch.out"
wait $WPID
is "$?" 0 "watcher exited cleanly"

count() { grep -c "$1" "$T/watch.out"; }
is "$(count '^DUP')" 0 "no event twice or out of order"
is "$(count '^RELIST')" 1 "exactly one RELIST"
is "$(awk '$1 == "PUT" { split($2, a, "k"); n = a[2] + 0; if (n >= 1 && n <= 500) c++ } END { print c + 0 }' "$T/watch.out")" \
    500 "every put of A and B seen once"
is "$(awk '$1 == "PUT" { split($2, a, "k"); n = a[2] + 0; if (n >= 751 && n <= 1000) c++ } END { print c + 0 }' "$T/watch.out")" \
    250 "every put of D seen once"
is "$(count '^DELETE')" 50 "every delete seen once"
is "$(sed -n 's/^STATE \([a-z]*\) .*/\1/p' "$T/watch.out")" ok "state from events + re-list equals the store"
is "$(sed -n 's/^STATE [a-z]* \([0-9]*\) keys/\1/p' "$T/watch.out")" 951 "store holds 950 keys and the end mark"
is "$(awk '$1 == "PUT" || $1 == "DELETE" { print $3 }' "$T/watch.out" | sort -n -c 2>&1 && echo sorted)" sorted \
    "revisions ascending"

# etcd unreachable from the start: a clear error, not a crash
etcd_stop
out=$(DECOD_ETCD_TIMEOUT=500ms "$drv" puts "$S" $P 1 1 2>&1)
rc=$?
is "$rc" 2 "unreachable etcd: open fails with exit 2, no crash"
case "$out" in *"$ETCD_URL"*"no answer"*|*"no answer"*"$ETCD_URL"*) r=0 ;; *) r=1 ;; esac
ok $r "error names the endpoint: $out"
done_testing
