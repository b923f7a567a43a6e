#!/bin/sh
# kube_leader - leader election by a coordination.k8s.io/v1 Lease against a
# real API server, two decod supervisors with the same credentials (deploy/'s
# ServiceAccount, a TokenRequest token) and the local store: only the holder
# runs its stages; the standby stays idle while the holder renews; after the
# holder is killed with -9 the standby takes over within the lease duration;
# the account may touch only its own Lease.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOD=$top_builddir/decod
CTL=$top_builddir/t/stage/ctlreq
[ -x "$DECOD" ] || bail "decod not built"

kube_start
D=$top_srcdir/deploy
kubectl_admin apply --server-side -f "$D/namespace.yaml" -f "$D/rbac.yaml" >/dev/null ||
    bail "deploy/ does not apply"
TOKEN=$(kube_token decod-system decod) || bail "no token"
kube_token_config "$T/decod.kubeconfig" "$TOKEN" decod-system
# decod runs as this account only (kube_start exported the admin's KUBECONFIG)
export KUBECONFIG="$T/decod.kubeconfig"
as_decod() { kubectl --kubeconfig "$T/decod.kubeconfig" "$@"; }
is "$(as_decod auth can-i update leases/decod-leader -n decod-system)" yes "decod may renew its Lease"
is "$(as_decod auth can-i update leases/other -n decod-system)" no "... no other Lease"
is "$(as_decod auth can-i update leases/decod-leader -n kube-system)" no "... nor one in another namespace"

LEASE_MS=3000
for x in a b; do
	mkdir -p "$T/$x/libexec" "$T/$x/state" "$T/$x/run"
	ln -s "$top_builddir/t/stage/teststage" "$T/$x/libexec/alpha"
	cat >"$T/$x/decod.conf" <<CONF
state_dir = $T/$x/state
runtime_dir = $T/$x/run
libexec_dir = $T/$x/libexec
stages = alpha
kubeconfig = $T/decod.kubeconfig
leader_lease_duration = ${LEASE_MS}ms
leader_renew_deadline = 2s
leader_retry_period = 250ms
stop_timeout = 5s
CONF
done
ready() { "$CTL" "ipc://$T/$1/run/control.ipc" stages 2>/dev/null | grep -q '"state":"READY"'; }
holder() { kubectl_admin -n decod-system get lease decod-leader -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
renew() { kubectl_admin -n decod-system get lease decod-leader -o jsonpath='{.spec.renewTime}' 2>/dev/null; }
leases() { kubectl_admin get lease -A -o wide 2>&1 | sed "s/^/# /"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }

"$DECOD" -c "$T/a/decod.conf" >"$T/a.log" 2>&1 &
A=$!
track_pid $A
check "A takes the Lease and runs its stage" wait_for 20 ready a
leases
is "$(holder)" "$(hostname):$A" "the Lease names A (host:pid)"

"$DECOD" -c "$T/b/decod.conf" >"$T/b.log" 2>&1 &
B=$!
track_pid $B
wait_for 10 grep -q 'leader election: contending' "$T/b.log"
# while A renews (twice), B stands by
r0=$(renew); wait_for 10 sh -c "[ \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n decod-system get lease decod-leader -o jsonpath='{.spec.renewTime}')\" != '$r0' ]"
r1=$(renew); wait_for 10 sh -c "[ \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n decod-system get lease decod-leader -o jsonpath='{.spec.renewTime}')\" != '$r1' ]"
is "$(holder)" "$(hostname):$A" "A renews its Lease"
ready b; [ $? -ne 0 ]; ok $? "B runs no stage while A holds the Lease"
! grep -q 'leader election: leading' "$T/b.log"; ok $? "B never led"

t0=$(ms)
kill -KILL $A
check "B takes over after A is killed with -9" wait_for 30 ready b
t1=$(ms)
took=$((t1 - t0))
diag "takeover (kill -9 to B's stage ready): $took ms; lease duration $LEASE_MS ms"
bound=$(scaled $((LEASE_MS + 2000)))
[ $took -le $bound ]; ok $? "within the lease duration plus start-up ($took ms <= $bound ms)"
is "$(holder)" "$(hostname):$B" "the Lease names B"
if grep -q "$TOKEN" "$T/a.log" "$T/b.log"; then ok 1 "token never logged"; else ok 0 "token never logged"; fi

# a clean stop hands the Lease over at once
kill -TERM $B
wait_for 15 sh -c "! kill -0 $B 2>/dev/null"
is "$(holder)" "" "a leader that stops releases the Lease"
done_testing
