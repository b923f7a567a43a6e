#!/bin/sh
# etcd_cluster - three etcd members; the leader is killed in the middle of
# a stream of puts.  Puts fail over, the watch sees every change once, and a
# lock on a kept-alive session stays with its holder.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"

drv="$top_builddir/t/unit/store_etcd_test"
etcd_cluster_start || bail "etcd cluster did not start"
mkfifo "$T/in"
DECOD_SESSION_TTL=5s "$drv" cluster "etcd:$ETCD_URLS" <"$T/in" >"$T/cluster.out" 2>"$T/cluster.err" &
CPID=$!
track_pid $CPID
exec 3>"$T/in"
check "first half written" wait_for 30 grep -q HALF "$T/cluster.out"
leader=$(etcd_leader)
check "found the leader ($leader)" test -n "$leader"
kill -KILL "$(etcd_pid "$leader")"
echo go >&3
exec 3>&-
wait $CPID
rc=$?
sed -n '/^ok\|^not ok\|^#/s/^/# cluster: /p' "$T/cluster.out"
is "$(grep -c '^not ok' "$T/cluster.out")" 0 "every cluster check passed"
is "$(grep -c '^ok' "$T/cluster.out")" 9 "all cluster checks ran"
is "$rc" 0 "driver exited cleanly"
done_testing
