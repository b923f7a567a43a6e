#!/bin/sh
# kube_scale_smoke - bench/bench_kube_scale.sh on 50 CRs (no plain client):
# the scale benchmark still runs, 50 CRs created at once all become Ready
# with exactly one ConfigMap apply and one status apply per stage each, and a
# restart with all of them reconciled writes nothing to the API server but
# Lease renewals (counted by the API server, not by decod).
. "$top_srcdir/t/lib/common.sh"
if [ -z "${KUBEBUILDER_ASSETS:-}" ] || [ ! -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]; then
	skip_all "needs a Kubernetes API server: set KUBEBUILDER_ASSETS (setup-envtest use -p path, or ../shared/kube/assets)"
fi
command -v sqlite3 >/dev/null 2>&1 || skip_all "sqlite3 not installed"

N=50 STEPS="1 2" PLAIN=0 sh "$top_srcdir/bench/bench_kube_scale.sh" "$top_builddir" \
    >"$T/out" 2>&1
rc=$?
sed 's/^/#   /' "$T/out" | grep -v 'Ready at' | head -40
is "$rc" 0 "the benchmark ran"
check "all 50 CRs Ready" grep -q '"n": 50, "ready": 50' "$T/out"
check "one ConfigMap apply per CR" grep -q '"APPLY configmaps": 50,' "$T/out"
check "one status apply per stage per CR" grep -q '"APPLY decofiles/status": 200,' "$T/out"
check "50 ConfigMaps" grep -q 'ConfigMaps decofile-\* in bench: 50$' "$T/out"
check "the restart caught up" sh -c '! grep -q "not caught up" "$1"' - "$T/out"
w=$(sed -n 's/.*writes the API server counted across the restart (by verb resource): //p' "$T/out")
diag "writes across the restart: $w"
check "no write to a Decofile, its status or a ConfigMap across the restart" \
    sh -c '! echo "$1" | grep -q "decofiles\|configmaps"' - "$w"
done_testing
