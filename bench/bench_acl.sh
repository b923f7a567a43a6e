#!/bin/sh
# bench_acl.sh - the acl stage with N tenants (default 1,000) against a real
# cluster on loopback (one master, two replicas, three sentinels; see
# t/lib/valkey.sh), `make bench-acl` or sh bench/bench_acl.sh BUILDDIR:
#   1. first provisioning: decoctl apply of N Tenants -> every one provisioned
#      (new passwords, env files written and fsynced, users on 3 nodes)
#   2. full resync: decoctl acl resync -> the round done (N x 3 nodes)
#   3. idle CPU of the stage between resyncs, over 30 s
#   4. failover: every user deleted by hand on both replicas, kill -9 of the
#      master; from the stage receiving +switch-master to every user right
#      on every live node (checked from outside with ACL USERS)
top_builddir=$(cd "${1:-.}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
export top_srcdir top_builddir
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/valkey.sh"
N=${N:-1000}
ACL=$(bin acl)
CTL=$(bin decoctl)
[ -x "$ACL" ] || bail "acl not built"
vk_require

ms_now() { echo $(( $(date +%s%N) / 1000000 )); }
ms_of_ts() { date -d "$1" +%s%3N; }	# a log line's ts=...Z
log_ts() { # PATTERN: ts of the last log line matching it
	grep -- "$1" "$T/acl.log" | tail -1 | sed 's/^ts=\([^ ]*\) .*/\1/'
}
field() { # LINE KEY
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

echo "# machine: $(nproc) cores, $(uname -sr), $(redis-server --version | awk '{print $1, $2, $3}')"
VK_DOWN_AFTER=1000 vk_start
printf '%s\n' "$VK_ADMIN" > "$T/admin.pw"
MPORT=$(vk_port)
cat > "$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
valkey_sentinel_urls = $VK_SENTINELS
valkey_admin_password_file = $T/admin.pw
metrics_port = $MPORT
CONF
"$ACL" -c "$T/conf" > "$T/acl.log" 2>&1 &
APID=$!
track_pid $APID
wait_for 10 grep -q 'msg=ready' "$T/acl.log" || bail "acl did not start"
gauge() {
	curl -s "http://127.0.0.1:$MPORT/metrics" |
	    awk '$1 == "deco_operator_valkey_tenants_provisioned" {print $2}'
}

# 1. first provisioning
i=1
while [ $i -le "$N" ]; do
	printf -- '---\napiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: t%04d, namespace: sites-t%04d}\nspec: {valkeyAcl: true, site: t%04d}\n' $i $i $i
	i=$((i + 1))
done > "$T/tenants.yaml"
t0=$(ms_now)
"$CTL" -c "$T/conf" apply -f "$T/tenants.yaml" >/dev/null || bail "apply failed"
t1=$(ms_now)
all_in() { [ "$(gauge)" = "$N" ]; }
wait_for 300 all_in || bail "not every tenant was provisioned"
t2=$(ms_now)
echo "first provisioning of $N tenants: apply took $((t1 - t0)) ms; every one provisioned $((t2 - t0)) ms after the apply began"
users_on() { vk_admin "$1" acl users | grep -c '^t[0-9]'; }
for p in $VK_P1 $VK_P2 $VK_P3; do
	[ "$(users_on "$p")" = "$N" ] || bail "node $p does not have $N users"
done

# 2. full resync
before=$(grep -c 'trigger=requested' "$T/acl.log")
t0=$(ms_now)
"$CTL" -c "$T/conf" acl resync >/dev/null
resynced() { [ "$(grep -c 'trigger=requested' "$T/acl.log")" -gt "$before" ]; }
wait_for 60 resynced || bail "no resync round"
line=$(grep 'trigger=requested' "$T/acl.log" | tail -1)
tend=$(ms_of_ts "$(echo "$line" | sed 's/^ts=\([^ ]*\) .*/\1/')")
echo "full resync of $N tenants on 3 nodes: round $(field "$line" ms) ms (GETUSER+SETUSER pipelined, $((2 * N)) commands per node), conditions $(field "$line" report_ms) ms; decoctl acl resync -> round done $((tend - t0)) ms"

# 3. idle CPU
ticks() { awk '{print $14 + $15}' "/proc/$APID/stat"; }
hz=$(getconf CLK_TCK)
c0=$(ticks); w0=$(ms_now)
sleep 30
c1=$(ticks); w1=$(ms_now)
echo "idle: $((c1 - c0)) CPU ticks (1/$hz s) in $((w1 - w0)) ms: $(awk -v c=$((c1 - c0)) -v hz="$hz" -v w=$((w1 - w0)) 'BEGIN {printf "%.3f", 100 * c / hz / (w / 1000)}')% of a core; RSS $(awk '/VmRSS/ {print $2, $3}' "/proc/$APID/status")"

# 4. failover
names=$(i=1; while [ $i -le "$N" ]; do printf 't%04d ' $i; i=$((i + 1)); done)
# shellcheck disable=SC2086
vk_admin "$VK_P2" acl deluser $names >/dev/null
# shellcheck disable=SC2086
vk_admin "$VK_P3" acl deluser $names >/dev/null
[ "$(users_on "$VK_P2")" = 0 ] && [ "$(users_on "$VK_P3")" = 0 ] || bail "users not deleted on the replicas"
tk=$(ms_now)
vk_kill 1
right_everywhere() {
	m=$(vk_master_port) && [ "$m" != "$VK_P1" ] || return 1
	for p in $VK_P2 $VK_P3; do [ "$(users_on "$p")" = "$N" ] || return 1; done
}
wait_for 60 right_everywhere || bail "users not back after the failover"
tok=$(ms_now)
tev=$(ms_of_ts "$(log_ts 'sentinel failover')")
# the round's log line comes after its conditions are written
wait_for 120 grep -q 'trigger=failover' "$T/acl.log" || bail "no failover round logged"
line=$(grep 'trigger=failover' "$T/acl.log" | tail -1)
echo "failover: kill -9 -> +switch-master received $((tev - tk)) ms (Sentinel: down-after 1 s, election); +switch-master -> round done $(field "$line" ms) ms on $(field "$line" nodes) nodes (the dead one counted down), conditions $(field "$line" report_ms) ms; +switch-master -> every user seen right from outside on both live nodes $((tok - tev)) ms (polling with redis-cli)"
grep -E 'round done|failover|node back' "$T/acl.log" | tail -6 | cut -c1-220 | sed 's/^/#   /' 
