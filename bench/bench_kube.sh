#!/bin/sh
# bench_kube.sh - decod in a cluster: CR change -> condition visible on the
# CR, p50 over ROUNDS edits, against the real API server of ../shared/kube
# (KUBEBUILDER_ASSETS) on loopback, decod (supervisor + four stages) as
# deploy/'s ServiceAccount, two Running pods as replicas.
#   sh bench/bench_kube.sh BUILD_DIR [ROUNDS]      (or `make bench-kube`)
top_builddir=$(cd "${1:-.}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${2:-40}
export top_srcdir top_builddir
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kubectl_admin create namespace bench >/dev/null
kubectl_admin -n bench create serviceaccount default >/dev/null
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"
kube_decod_conf </dev/null
for r in a b; do
	DECO_RELEASE_RELOAD_TOKEN=tok-$r "$(bin decod-site)" --port 0 >"$T/$r.out" 2>&1 &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/$r.out" || bail "replica"
	port=$(awk '/^listening on/ {print $3}' "$T/$r.out")
	kubectl_admin -n bench apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: p$r, labels: {app.deco/deploymentId: site}}
spec:
  automountServiceAccountToken: false
  containers:
  - {name: app, image: localhost/site:bench, ports: [{containerPort: $port}],
     env: [{name: DECO_RELEASE_RELOAD_TOKEN, value: tok-$r}]}
Y
	kubectl_admin -n bench patch pod p$r --subresource=status --type merge \
	    -p '{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}' >/dev/null
done
"$top_builddir/decod" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
track_pid $!
wait_for 30 grep -q 'all stages ready' "$T/decod.log" || bail "decod did not start"
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: site, namespace: bench}\nspec: {source: inline, inline: {value: {Bench: {round: -1, at: "0"}, Header: {title: bench}}}}\n' |
    kubectl_admin apply --server-side -f - >/dev/null
kubectl_admin -n bench wait --for=condition=PodsNotified decofile/site --timeout=60s >/dev/null || bail "first rollout"
echo "# machine: $(nproc) cores, $(uname -sr); kube-apiserver $("$KUBEBUILDER_ASSETS/kube-apiserver" --version | awk '{print $2}'), etcd 3.5 on loopback"
$KUBE_PY "$top_srcdir/bench/bench_kube.py" "$KUBE_DIR/admin.kubeconfig" bench site "$ROUNDS" || bail "bench failed"
