#!/bin/sh
# kube_scale_smoke - bench/bench_kube_scale.sh on 50 CRs (no plain client):
# the scale benchmark still runs, 50 CRs created at once all become Ready
# with exactly one ConfigMap apply each, and a
# restart with all of them reconciled writes nothing at all: no ConfigMap,
# no Decofile, no status apply (counted by the API server, not by decod).
# Status applies: one writer under one manager, one per CR (the creation is
# one change: held until it has passed the last stage), and decod's own
# count says each was made when the change was through.
. "$top_srcdir/t/lib/common.sh"
if [ -z "${KUBEBUILDER_ASSETS:-}" ] || [ ! -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]; then
	skip_all "needs a Kubernetes API server: set KUBEBUILDER_ASSETS (setup-envtest use -p path, or ../shared/kube/assets)"
fi
command -v sqlite3 >/dev/null 2>&1 || skip_all "sqlite3 not installed"

N=50 STEPS="1 2" PLAIN=0 LOG_OUT="$T/restart.log" sh "$top_srcdir/bench/bench_kube_scale.sh" \
    "$top_builddir" >"$T/out" 2>&1
rc=$?
sed 's/^/#   /' "$T/out" | grep -v 'Ready at' | head -40
is "$rc" 0 "the benchmark ran"
check "all 50 CRs Ready" grep -q '"n": 50, "ready": 50' "$T/out"
check "one ConfigMap apply per CR" grep -q '"APPLY configmaps": 50,' "$T/out"
# one writer, one manager (decod): one apply per CR per change (the four
# managers made 200-250 here)
st=$(sed -n 's/.*"APPLY decofiles\/status": \([0-9]*\),.*/\1/p' "$T/out" | head -1)
diag "status applies: $st (per CR: $(echo "${st:-0}" | awk '{printf "%.2f", $1 / 50}'))"
is "${st:-0}" 50 "one status apply per CR (the API server's count)"
check "... each made when its change had passed the last stage (decod's count)" \
    grep -q 'front door stopping.*status_applies="settled=50,' "$T/out"
check "50 ConfigMaps" grep -q 'ConfigMaps decofile-\* in bench: 50$' "$T/out"
check "the restart caught up" sh -c '! grep -q "not caught up" "$1"' - "$T/out"
w=$(sed -n 's/.*writes the API server counted across the restart (by verb resource): //p' "$T/out")
diag "writes across the restart: $w"
check "no write to a Decofile or a ConfigMap across the restart" \
    sh -c '! echo "$1" | grep -q "\"[A-Z]* decofiles\"\|configmaps"' - "$w"
if echo "$w" | grep -q '"[A-Z]* decofiles"\|configmaps'; then
	diag "what the publisher and the front door said across the restart:"
	grep 'prog=publisher\|prog=renderer\|front door' "$T/restart.log.1" 2>/dev/null |
	    grep -v 'msg=ready' | tail -40 | sed 's/^/#   /'
fi
# One write per CR in flight, and the recheck compares the answer with the
# merge (daemons/kube/kube_front_status.c), so no CR is left with an older merged status
# for the restart to put right.
sw=$(echo "$w" | sed -n 's/.*"APPLY decofiles\/status": \([0-9]*\).*/\1/p')
diag "status applies across the restart: ${sw:-0}"
is "${sw:-0}" 0 "no status apply across the restart"
done_testing
