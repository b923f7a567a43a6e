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
kubectl_admin apply --server-side -f "$D/namespace.yaml" -f "$D/rbac.yaml" \
    -f "$D/crd-decofile.yaml" -f "$D/crd-decofiletemplate.yaml" >/dev/null || bail "deploy/ does not apply"
kubectl_admin wait --for=condition=Established crd/decofiles.deco.sites --timeout=30s >/dev/null ||
    bail "CRD not established"
kubectl_admin create namespace sites-loja >/dev/null
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
# the standby answers the control socket: its role, the holder, its stages
"$CTL" "ipc://$T/b/run/control.ipc" stages >"$T/b.stages" 2>&1
ok $? "the standby answers stages"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["role"] == "standby", r
assert r["holder"] == sys.argv[2], r
assert [s["state"] for s in r["stages"]] == ["STANDBY"], r' "$T/b.stages" "$(hostname):$A" 2>&1 | sed 's/^/# /'
ok $? "... as standby, naming the holder (A), its stage STANDBY"
# decoctl's table says so too: who holds the Lease, then the STANDBY row
"$(bin decoctl)" -c "$T/b/decod.conf" stages >"$T/b.table" 2>&1
ok $? "decoctl stages on the standby exits 0"
check "... naming the Lease holder (A)" grep -qx "standby: the stages run where the Lease is held, by $(hostname):$A" "$T/b.table"
check "... and its stage STANDBY" grep -q "^alpha  *STANDBY " "$T/b.table"
"$CTL" "ipc://$T/a/run/control.ipc" stages | grep -q '"role":"leader"'
ok $? "the holder says it leads"
"$CTL" "ipc://$T/b/run/control.ipc" restart alpha >"$T/b.restart" 2>&1
grep -q 'standby' "$T/b.restart"
ok $? "the standby refuses to start a stage ($(cat "$T/b.restart"))"
ready b; [ $? -ne 0 ]; ok $? "... and runs none"

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

# --- deploy/'s pod: no supervisor, the fetcher holds the Lease for its pod ---
FETCHER=$(bin fetcher)
for x in pa pb; do
	mkdir -p "$T/$x/state" "$T/$x/run"
	sed -e "s#$T/a/#$T/$x/#g" -e '/^stages\|^libexec_dir/d' "$T/a/decod.conf" >"$T/$x/decod.conf"
	echo "store = local:$T/$x/store" >>"$T/$x/decod.conf"
done
POD_NAME=pa "$FETCHER" -c "$T/pa/decod.conf" >"$T/pa.log" 2>&1 &
PA=$!
track_pid $PA
check "pod pa's fetcher leads" wait_for 15 grep -q 'leader election: leading' "$T/pa.log"
POD_NAME=pb "$FETCHER" -c "$T/pb/decod.conf" >"$T/pb.log" 2>&1 &
PB=$!
track_pid $PB
wait_for 15 grep -q 'msg=ready' "$T/pb.log" || bail "pb's fetcher did not start"
is "$(holder)" "pa" "the Lease names pod pa"
cr() { printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: %s, namespace: sites-loja}\nspec: {source: inline, inline: {value: {A: {}}}}\n' "$1" |
	kubectl_admin apply --server-side -f - >/dev/null; }
mirrored() { test -s "$T/$1/store/kv/decod.d/decofiles.d/sites-loja.d/$2.v"; }
cr one
check "the leader's pod mirrors the CR" wait_for 10 mirrored pa one
cr two
check "... and the next one" wait_for 10 mirrored pa two
mirrored pb one || mirrored pb two; [ $? -ne 0 ]; ok $? "the standby pod's store stays empty"
t0=$(ms)
kill -KILL $PA
check "pod pb takes over after pa is killed with -9 and mirrors the CRs" wait_for 30 mirrored pb two
took=$(( $(ms) - t0 ))
diag "pod takeover (kill -9 to the standby's store holding the CRs): $took ms; lease duration $LEASE_MS ms"
[ $took -le $(scaled $((LEASE_MS + 2000))) ]; ok $? "within the lease duration ($took ms)"
is "$(holder)" "pb" "the Lease names pod pb"
done_testing
