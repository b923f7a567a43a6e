#!/bin/sh
# bench_webhook.sh BUILD_DIR - the admission webhook under load: 200
# keep-alive HTTPS clients (bench/bench_webhook, libcurl multi) POST the
# configmap-case AdmissionReview to the stage, first back to back (closed
# loop: the throughput ceiling) then at a fixed rate (open loop: latency at
# a given load); then memory (VmRSS) after a warm-up and after 100,000 more
# admissions.  Prints Markdown on stdout.
#   CLIENTS=200 REQUESTS=20000 RATES="5 10" MEM_REQUESTS=100000
set -eu
B=${1:?usage: bench_webhook.sh BUILD_DIR}
CLIENTS=${CLIENTS:-200}
REQUESTS=${REQUESTS:-20000}
RATES=${RATES:-5 10}
MEM_REQUESTS=${MEM_REQUESTS:-100000}
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-webhook.XXXXXX")
WPID=
cleanup() { [ -n "$WPID" ] && kill "$WPID" 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/ca.key" \
    -out "$T/ca.crt" -days 1 -subj /CN=bench-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/tls.key" \
    -out "$T/tls.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$T/ext"
openssl x509 -req -in "$T/tls.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
    -out "$T/tls.crt" -days 1 -extfile "$T/ext" 2>/dev/null
cat > "$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
webhook_listen = 127.0.0.1:0
webhook_cert_file = $T/tls.crt
webhook_key_file = $T/tls.key
webhook_max_connections = 1024
CONF
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-x"},"spec":{"source":"inline","inline":{"value":{"A":1}},"target":"configmap"}}' > "$T/df.json"
"$B/t/stage/testtool" -c "$T/conf" apply "$T/df.json" >/dev/null
# the Service a site's manifest describes (about 1.3 KB of review)
cat > "$T/review.json" <<'J'
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","kind":{"group":"serving.knative.dev","version":"v1","kind":"Service"},"resource":{"group":"serving.knative.dev","version":"v1","resource":"services"},"requestKind":{"group":"serving.knative.dev","version":"v1","kind":"Service"},"namespace":"sites-x","name":"web","operation":"CREATE","userInfo":{"username":"system:serviceaccount:argocd:argocd-application-controller","groups":["system:serviceaccounts","system:authenticated"]},"object":{"apiVersion":"serving.knative.dev/v1","kind":"Service","metadata":{"name":"web","namespace":"sites-x","annotations":{"deco.sites/decofile-inject":"true","autoscaling.knative.dev/min-scale":"1"},"labels":{"app.deco/deploymentId":"loja","app.kubernetes.io/part-of":"loja"}},"spec":{"template":{"metadata":{"annotations":{"autoscaling.knative.dev/target":"100"}},"spec":{"containerConcurrency":0,"timeoutSeconds":300,"containers":[{"name":"app","image":"registry.example/loja/site:2026.12.04","ports":[{"containerPort":8000}],"env":[{"name":"PORT","value":"8000"},{"name":"NODE_ENV","value":"production"}],"resources":{"requests":{"cpu":"250m","memory":"512Mi"},"limits":{"memory":"1Gi"}},"readinessProbe":{"httpGet":{"path":"/_healthcheck"}}}]}}}},"oldObject":null,"dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}
J
"$B/daemons/webhook/webhook" -c "$T/conf" > "$T/webhook.log" 2>&1 &
WPID=$!
i=0
until grep -q 'msg=ready' "$T/webhook.log"; do
	i=$((i + 1)); [ $i -gt 200 ] && { cat "$T/webhook.log" >&2; exit 1; }
	sleep 0.05
done
PORT=$(sed -n 's/.*msg="webhook listening".* port=\([0-9]*\).*/\1/p' "$T/webhook.log")
[ -n "$PORT" ] || { echo "cannot find the webhook's port" >&2; exit 1; }
URL="https://127.0.0.1:$PORT/mutate-serving-knative-dev-v1-service"
run() { "$B/bench/bench_webhook" "$URL" "$T/ca.crt" "$T/review.json" "$@"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$WPID/status"; }
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo "| load | requests | errors | req/s | p50 ms | p90 ms | p99 ms | max ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
line() {
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$(field "$2" requests)" \
	    "$(field "$2" errors)" "$(field "$2" rps)" "$(field "$2" p50_ms)" \
	    "$(field "$2" p90_ms)" "$(field "$2" p99_ms)" "$(field "$2" max_ms)"
}
run -c "$CLIENTS" -n 2000 >/dev/null || true	# connections up, caches warm
out=$(run -c "$CLIENTS" -n "$REQUESTS") || true
line "$CLIENTS clients, back to back" "$out"
for r in $RATES; do
	out=$(run -c "$CLIENTS" -n "$REQUESTS" -r "$r") || true
	line "$CLIENTS clients x $r/s = $((CLIENTS * r))/s" "$out"
done
rss0=$(rss)
out=$(run -c "$CLIENTS" -n "$MEM_REQUESTS") || true
rss1=$(rss)
echo
echo "Memory (VmRSS of the webhook): $rss0 kB after $((REQUESTS * (1 + $(echo $RATES | wc -w)) + 2000)) admissions," \
    "$rss1 kB after $MEM_REQUESTS more ($(field "$out" errors) errors)."
curl -s --cacert "$T/ca.crt" "https://127.0.0.1:$PORT/metrics" > "$T/metrics"
conns=$(awk '/^decod_webhook_connections_total/ {print $2}' "$T/metrics")
awk -F'[ "]' '/^decod_webhook_admission_seconds_bucket/ {b[$2] = $NF}
    /^decod_webhook_admission_seconds_count/ {n = $2}
    END {printf "Server side (headers in to answer queued, all runs): %.2f%% within 0.5 ms, %.2f%% within 1 ms, %.3f%% within 5 ms of %d.\n",
        100 * b["0.0005"] / n, 100 * b["0.001"] / n, 100 * b["0.005"] / n, n}' "$T/metrics"
echo "Connections opened in all: $conns (keep-alive: about one per client per run)."
