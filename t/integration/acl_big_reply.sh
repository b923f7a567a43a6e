#!/bin/sh
# acl_big_reply.sh - a node that answers the acl stage with a bulk string
# declared 2 GB long and streams filler for it, and one that declares an
# array of 100 million elements and streams them (t/stand-in/bignode.py,
# both Sentinel's known replicas next to a real master): the stage's memory
# stays bounded (VmHWM, /proc/PID/status), each node is reported failed
# with why (not "down"), the real master still gets every user, and the
# stage stays up.  valkey_timeout is long, so the deadline is not what
# bounds it.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/valkey.sh"
. "$top_srcdir/t/lib/acl.sh"

acl_require

vk_start_one
python3 "$top_srcdir/t/stand-in/bignode.py" --port-file "$T/big.port" --log "$T/big.log" &
track_pid $!
wait_for "$(scaled 10)" test -s "$T/big.port" || bail "bignode did not start"
BIG=$(cat "$T/big.port")
# 20 MB of one-byte elements (3 million) is enough to show an unbounded reader
python3 "$top_srcdir/t/stand-in/bignode.py" --port-file "$T/arr.port" --log "$T/arr.log" \
    --array --declare 100000000 --limit 20000000 &
track_pid $!
wait_for "$(scaled 10)" test -s "$T/arr.port" || bail "bignode --array did not start"
ARR=$(cat "$T/arr.port")
VK_S1=$(vk_port)
VK_REPLICA_PORTS="$BIG $ARR" VK_SENTINEL_IDS=1 vk_sentinel_start 1
acl_conf "$VK_ADMIN" "valkey_sentinel_urls = 127.0.0.1:$VK_S1" 60s
knows() { redis-cli -p "$VK_S1" sentinel replicas mymaster 2>/dev/null | grep -qx "$1"; }
check "Sentinel lists the hostile nodes as replicas" wait_for "$(scaled 10)" knows "$BIG"
check "... both" wait_for "$(scaled 10)" knows "$ARR"

kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
start_acl acl.log
# no tenant yet: the start round sends nothing to any node
started() { grep -q 'msg="round done" trigger=start' "$T/acl.log"; }
wait_for "$(scaled 10)" started || bail "the first round did not end"
BASE=$(kb "$APID" VmHWM)
diag "VmHWM before any tenant: $BASE kB"

tenant sites-padaria padaria padaria
tenant sites-loja-do-joao loja loja-do-joao
failed_big() { # NS NAME
	[ "$(cond "$1" "$2" reason)" = ProvisionFailed ] &&
	    cond "$1" "$2" message | grep -q "127.0.0.1:$BIG (reply too large: unparsed bytes" &&
	    cond "$1" "$2" message | grep -q "127.0.0.1:$ARR (reply too large: elements"
}
check "padaria: the hostile node is reported failed, with why" wait_for "$(scaled 30)" failed_big sites-padaria padaria
check "loja-do-joao too" wait_for "$(scaled 10)" failed_big sites-loja-do-joao loja
diag "padaria: $(cond sites-padaria padaria message)"
check "the node was attacked" test -s "$T/big.log"
diag "bignode: $(tr '\n' ' ' < "$T/big.log"); --array: $(tr '\n' ' ' < "$T/arr.log")"
HWM=$(kb "$APID" VmHWM)
RSS=$(kb "$APID" VmRSS)
diag "VmHWM after: $HWM kB, VmRSS $RSS kB"
# the plain build grows by ~3 MB; a sanitizer build keeps freed buffers in
# its quarantine, ~5 MB a round; unbounded, it took 200 MB and 475 MB
check "the stage's peak memory grew by less than 48 MB ($BASE -> $HWM kB)" \
    test "$((HWM - BASE))" -lt 49152
check "every attacked connection was closed before 200 MB" \
    awk '$2 >= 200 * 1024 * 1024 {bad = 1} END {exit bad}' "$T/big.log"
has_user() { [ -n "$(vk_admin "$VK_P1" acl getuser "$1" | tr -d '\r\n')" ]; }
check "the real master still got padaria" has_user padaria
check "... and loja-do-joao" has_user loja-do-joao
PW=$(sed -n 's/^LOADER_CACHE_REDIS_PASSWORD=//p' "$T/state/acl/sites-padaria.env")
is "$(vk_as padaria "$PW" "$VK_P1" set padaria:pão 1)" OK "as padaria: its password works on the master"
check "upsert errors counted" metric_ge 'deco_operator_valkey_acl_errors_total{operation="upsert"}' 1
check "the stage is still up" alive "$APID"
check "and answers /metrics" metric_ge deco_operator_valkey_acl_provisioned_total 0

done_testing
