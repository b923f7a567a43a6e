#!/bin/sh
# kube_harness - the test control plane of t/lib/kube.sh itself: the real
# API server comes up, kubectl and a ServiceAccount token work, RBAC is
# enforced (the account can do nothing it was not granted), and it all
# stops in order.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

quiet() { "$@" >/dev/null 2>&1; }

kube_start
ok 0 "API server ready at $KUBE_URL"
check "kubectl reaches it as admin" quiet kubectl_admin get --raw /version
kubectl_admin create namespace decod-system >/dev/null
kubectl_admin -n decod-system create serviceaccount probe >/dev/null
check "a ServiceAccount token from TokenRequest" \
    kube_sa_kubeconfig decod-system probe "$T/probe.kubeconfig"
is "$(stat -c %a "$T/probe.kubeconfig")" 600 "its kubeconfig is 0600"
is "$(kubectl --kubeconfig "$T/probe.kubeconfig" auth can-i list configmaps -n decod-system 2>/dev/null)" \
    no "RBAC is enforced: the bare account may not list ConfigMaps"
kubectl_admin -n decod-system create role cm-reader --verb=list --resource=configmaps >/dev/null
kubectl_admin -n decod-system create rolebinding probe-cm --role=cm-reader \
    --serviceaccount=decod-system:probe >/dev/null
check "a granted verb works with the token" \
    quiet kubectl --kubeconfig "$T/probe.kubeconfig" -n decod-system get configmaps
apiserver=$KUBE_APISERVER_PID
etcd=$KUBE_ETCD_PID
kube_stop
check "the API server is stopped" sh -c "! kill -0 $apiserver 2>/dev/null"
check "its etcd is stopped" sh -c "! kill -0 $etcd 2>/dev/null"
done_testing
