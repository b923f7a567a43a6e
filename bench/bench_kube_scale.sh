#!/bin/sh
# bench_kube_scale.sh - decod in a cluster at scale, against the real API
# server of ../shared/kube (KUBEBUILDER_ASSETS) on loopback, decod as
# deploy/'s ServiceAccount:
#   1. N Decofile CRs created at once (bench/kube_ssa, 16 connections) ->
#      all Ready (N ConfigMaps, N status writes), beside what the API server
#      sustains for the same 2N writes from a plain client in the same run
#      (bench/kube_ssa: N ConfigMap applies + N status applies of a copy of
#      the CRD in its own group, 16 keep-alive connections);
#   2. decod restarted with all N reconciled: time to ready and caught up,
#      and the writes the API server counted meanwhile (apiserver_request_total);
#   3. PODS pods of one site (Running through pods/status, one bench/replica
#      listening on every 127.0.X.Y) -> CR change to Ready and to PodsNotified;
#   4. cold start: N Decofile CRs created in namespace cold while decod is not
#      running (untimed, as the plain client's CRs are), then decod started
#      with an empty state and timed from its start to all N Ready: the very
#      2N writes the plain client makes from the same starting state, beside
#      the plain client's figure of the same run (which step 4 runs too),
#      with the CPU of each process and the API server's counts.  Run before
#      step 1's creation when both are asked for (decod then goes on running
#      into step 1 with the N of cold reconciled); step 2 alone after step 4
#      restarts with cold's N reconciled.
#   sh bench/bench_kube_scale.sh BUILD_DIR        (or `make bench-kube-scale`)
#   N=10000 PODS=1000 ROUNDS=5 STEPS="1 2 3" are the defaults (4: on demand)
#   (PLAIN=0: no plain client at all, for a quick look at decod alone;
#   PLAIN_SA=1: the plain client's writes again as a ServiceAccount;
#   PERF2_OUT=FILE: perf record -a -g of the restart in step 2;
#   PERF2_STAGE=fetcher PERF2_STAGE_OUT=FILE: perf record --call-graph dwarf
#   of that stage from its start to caught up, FILE.<restart>, from restart
#   PERF2_FROM on (1: every one); PERF4="fetcher renderer" PERF4_OUT=FILE [PERF4_HZ=99]:
#   the same of step 4's cold start, from the stages ready to all Ready;
#   TIMELINE4=FILE: step 4's journal items by stage and state and each
#   process's CPU every 2 s; RESTARTS=n: step 2's restart n times; HANG_OUT=PREFIX keeps the logs of
#   one that took over 15 s).
top_builddir=$(cd "${1:-.}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-10000}
PODS=${PODS:-1000}
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-1 2 3}
export top_srcdir top_builddir
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"
ulimit -n "$(ulimit -Hn)" 2>/dev/null

PY="$KUBE_PY $top_srcdir/bench/bench_kube_scale.py"
SSA=$(bin kube_ssa)
step() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

kube_start
D=$top_srcdir/deploy
kube_apply_deploy || bail "deploy/ does not apply"
# the plain client's own copy of the CRD (same schema, its own group), so
# decod never sees its objects
sed -e 's/decofiles\.deco\.sites/decofiles.plain.bench/' -e 's/group: deco\.sites/group: plain.bench/' \
    "$D/crd-decofile.yaml" | kubectl_admin apply --server-side -f - >/dev/null || bail "plain CRD"
kubectl_admin wait --for=condition=Established crd/decofiles.deco.sites \
    crd/decofiles.plain.bench --timeout=30s >/dev/null
for ns in bench plain pods; do kubectl_admin create namespace $ns >/dev/null; done
kubectl_admin -n pods create serviceaccount default >/dev/null
ADM="-s $KUBE_URL -a $KUBE_DIR/ca.crt -c $KUBE_DIR/admin.crt -k $KUBE_DIR/admin.key"
AP=application/apply-patch+yaml
echo "# machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); kube-apiserver $("$KUBEBUILDER_ASSETS/kube-apiserver" --version | awk '{print $2}'), etcd 3.5 on loopback; N=$N"
. "$top_srcdir/bench/fs_note.sh"
fs_note "$T"

# cpu PID...: "comm utime+stime" in seconds for each process
cpu() {
	for p in "$@"; do
		[ -r /proc/$p/stat ] || continue
		sed 's/^[0-9]* (\([^)]*\)) /\1 /' /proc/$p/stat |
		    awk -v hz="$(getconf CLK_TCK)" '{printf "%s=%.2f ", $1, ($13 + $14) / hz}'
	done
	echo
}
decod_pids() { echo "$DECOD_PID $(ps -o pid= --ppid "$DECOD_PID" | tr '\n' ' ')"; }
cpu_delta() {	# BEFORE AFTER: per-process difference
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); for (i = 1; i <= n; i++) { split(x[i], kv, "="); s[kv[1]] = kv[2] }
		n = split(b, y, " "); for (i = 1; i <= n; i++) { split(y[i], kv, "=");
			printf "%s %.2f s, ", kv[1], kv[2] - s[kv[1]] } print "" }'
}

# --- the plain client: N plain CRs (untimed), then 2N timed writes
CM_BODY='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"decofile-d@N@","namespace":"plain","labels":{"app.kubernetes.io/managed-by":"decod"}},"data":{"decofile.bin":"G7cAAIwKJmGSRmRw0Uq1dXm4jHa7GDkQ8xyxA0CMoGWqyHEL/9JC6MQyP+NlgCcW5V9cRj8kLqIBBBPAZy@N@=","timestamp.txt":"1764800000"}}'
ST_BODY='{"apiVersion":"plain.bench/v1alpha1","kind":"Decofile","metadata":{"name":"d@N@","namespace":"plain"},"status":{"observedGeneration":1,"sourceType":"inline","resolvedTemplates":[],"configMapName":"decofile-d@N@","contentHash":"3f1a0c9ef0b2a4d1c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8","timestamp":1796404529,"lastUpdated":"2026-12-04T10:00:00Z","location":"configmap/plain/decofile-d@N@","format":"bin","notifiedHash":"3f1a0c9ef0b2a4d1c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8","notifiedReplicas":0,"totalReplicas":0,"conditions":[{"type":"Syncing","status":"True","reason":"Fetched","message":"Fetched from the source","lastTransitionTime":"2026-12-04T10:00:00Z"},{"type":"Ready","status":"True","reason":"ConfigMapCreated","message":"ConfigMap decofile-d@N@ created successfully from inline source","lastTransitionTime":"2026-12-04T10:00:00Z"},{"type":"Drifted","status":"False","reason":"InSync","message":"The ConfigMap holds the published version","lastTransitionTime":"2026-12-04T10:00:00Z"},{"type":"PodsNotified","status":"True","reason":"NotificationSucceeded","message":"Successfully notified all pods for timestamp:1796404529","lastTransitionTime":"2026-12-04T10:00:00Z"}]}}'
CR_BODY='{"apiVersion":"@G@/v1alpha1","kind":"Decofile","metadata":{"name":"d@N@","namespace":"@NS@"},"spec":{"source":"inline","inline":{"value":{"Header":{"title":"site @N@"},"Footer":{"n":"@N@"}}}}}'
if { step 1 || step 4; } && [ "${PLAIN:-1}" = 1 ]; then
	echo "$CR_BODY" | sed -e 's/@G@/plain.bench/' -e 's/@NS@/plain/' >"$T/plain-cr.json"
	"$SSA" $ADM -n "$N" -w PATCH "/apis/plain.bench/v1alpha1/namespaces/plain/decofiles/d@N@?fieldManager=bench" \
	    $AP @"$T/plain-cr.json" >"$T/plain-create.out" || bail "plain CRs: $(cat "$T/plain-create.out")"
	echo "# plain client, creating $N CRs (untimed setup): $(cat "$T/plain-create.out")"
	apis=$(cpu "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")
	"$SSA" $ADM -n "$N" \
	    -w PATCH "/api/v1/namespaces/plain/configmaps/decofile-d@N@?fieldManager=plain&force=true" $AP "$CM_BODY" \
	    -w PATCH "/apis/plain.bench/v1alpha1/namespaces/plain/decofiles/d@N@/status?fieldManager=plain&force=true" $AP "$ST_BODY" \
	    >"$T/plain.out" || bail "plain client: $(cat "$T/plain.out")"
	echo "# plain client, $N ConfigMap applies + $N status applies: $(cat "$T/plain.out")"
	echo "#   CPU: $(cpu_delta "$apis" "$(cpu "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")")"
fi
# PLAIN_SA=1: the same writes once more, in namespace plainsa, as a
# ServiceAccount (a bearer token, the API server's service-accounts flow
# schema, as decod is) rather than as admin (a client certificate of
# system:masters, the exempt priority level): what the identity alone costs
if { step 1 || step 4; } && [ "${PLAIN_SA:-0}" = 1 ]; then
	kubectl_admin create namespace plainsa >/dev/null
	kubectl_admin -n plainsa create serviceaccount plain >/dev/null
	kubectl_admin apply -f - >/dev/null <<'RBAC' || bail "plainsa RBAC"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: plain, namespace: plainsa}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, create, patch]}
- {apiGroups: [plain.bench], resources: [decofiles, decofiles/status], verbs: [get, create, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: plain, namespace: plainsa}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: plain}
subjects: [{kind: ServiceAccount, name: plain, namespace: plainsa}]
RBAC
	(umask 077; kube_token plainsa plain 36000 >"$T/plainsa.token") || bail "plainsa token"
	echo "$CR_BODY" | sed -e 's/@G@/plain.bench/' -e 's/@NS@/plainsa/' >"$T/plainsa-cr.json"
	"$SSA" $ADM -n "$N" -w PATCH "/apis/plain.bench/v1alpha1/namespaces/plainsa/decofiles/d@N@?fieldManager=bench" \
	    $AP @"$T/plainsa-cr.json" >/dev/null || bail "plainsa CRs"
	apis=$(cpu "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")
	"$SSA" -s "$KUBE_URL" -a "$KUBE_DIR/ca.crt" -t "$T/plainsa.token" -n "$N" \
	    -w PATCH "/api/v1/namespaces/plainsa/configmaps/decofile-d@N@?fieldManager=plain&force=true" $AP \
	    "$(echo "$CM_BODY" | sed 's/"namespace":"plain"/"namespace":"plainsa"/')" \
	    -w PATCH "/apis/plain.bench/v1alpha1/namespaces/plainsa/decofiles/d@N@/status?fieldManager=plain&force=true" $AP \
	    "$(echo "$ST_BODY" | sed 's/"namespace":"plain"/"namespace":"plainsa"/')" \
	    >"$T/plainsa.out" || bail "plain client as a ServiceAccount: $(cat "$T/plainsa.out")"
	echo "# plain client as a ServiceAccount, the same $N + $N applies: $(cat "$T/plainsa.out")"
	echo "#   CPU: $(cpu_delta "$apis" "$(cpu "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")")"
fi

# --- decod
TOKEN=$(kube_token decod-system decod 36000) || bail "no token"
kube_token_config "$T/decod.kubeconfig" "$TOKEN" decod-system
kube_decod_conf </dev/null
DECOD_PID=
start_decod() {
	: >"$T/decod.log"
	"$top_builddir/decod" -c "$T/decod.conf" >>"$T/decod.log" 2>&1 &
	DECOD_PID=$!
	track_pid $DECOD_PID
}
stop_decod() {
	kill -TERM "$DECOD_PID" 2>/dev/null
	wait "$DECOD_PID" 2>/dev/null
	# decod's own count of its status applies, by why each was made
	grep 'front door stopping' "$T/decod.log" | sed 's/^/#   /'
}
now_ms() { date +%s%3N; }
# nothing pending: no journal item waits for a stage, and every site's newest
# render has had its background recompression (brotli_recompress_quality,
# 11 by default): one still to do is done after a restart, and its swap,
# when smaller, is a ConfigMap write (daemons/renderer/render_recompress.c)
nothing_pending() {
	[ "$(sqlite3 "file:$T/state/journal.db?mode=ro" \
	    "SELECT count(*) FROM items WHERE state = 'pending'" 2>/dev/null)" = 0 ] &&
	[ "$(sqlite3 "file:$T/state/journal.db?mode=ro" \
	    "SELECT count(*) FROM renders r WHERE r.id = (SELECT max(id) FROM renders x
	     WHERE x.ns = r.ns AND x.name = r.name) AND r.format = 'bin'
	     AND coalesce(r.quality, 0) < 11" 2>/dev/null)" = 0 ]
}
caught_up() {
	grep -q 'front door caught up' "$T/decod.log" &&
	    grep -q 'configmap target synced' "$T/decod.log" && nothing_pending
}
# delta BEFORE AFTER: what grew between two JSON counts of $PY writes/requests
delta() {
	$KUBE_PY -c 'import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
d = {k: b[k] - a.get(k, 0) for k in b if b[k] - a.get(k, 0)}
print(json.dumps(d, sort_keys=True) if d else "none")' "$1" "$2"
}

# ratio DECOD_SECONDS: decod's time beside the plain client's of this run
ratio() {
	for f in plain plainsa; do
		[ -s "$T/$f.out" ] || continue
		awk -v p="$(sed -n 's/.*seconds \([0-9.]*\).*/\1/p' "$T/$f.out")" -v d="$1" \
		    -v who="$([ $f = plain ] && echo "the plain client" || echo "the plain client as a ServiceAccount")" \
		    'BEGIN { if (p > 0 && d > 0) printf "#   ratio to %s: %.2fx (%.1f s / %.1f s)\n", who, d / p, d, p }'
	done
}
# status_per_cr REQUESTS: the API server's APPLY decofiles/status per CR
status_per_cr() {
	echo "$1" | sed -n 's/.*"APPLY decofiles\/status": \([0-9]*\).*/\1/p' |
	    awk -v n="$N" '{ printf "#   APPLY decofiles/status per CR: %.4f (%d for %d CRs)\n", $1 / n, $1, n }'
}

if step 4; then
	kubectl_admin create namespace cold >/dev/null
	echo "$CR_BODY" | sed -e 's/@G@/deco.sites/' -e 's/@NS@/cold/' >"$T/cold-cr.json"
	"$SSA" $ADM -n "$N" -w PATCH "/apis/deco.sites/v1alpha1/namespaces/cold/decofiles/d@N@?fieldManager=bench" \
	    $AP @"$T/cold-cr.json" >"$T/cold-create.out" || bail "cold CRs: $(cat "$T/cold-create.out")"
	echo "# cold start, creating $N CRs while decod is not running (untimed setup): $(cat "$T/cold-create.out")"
	r0=$($PY requests "$KUBE_ADMIN")
	before=$(cpu "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")
	# the watch is on before decod starts; the times are taken from decod's start
	rm -f "$T/watching"
	$PY ready "$KUBE_ADMIN" cold "$N" 900 -- touch "$T/watching" >"$T/cold.out" &
	READY_PID=$!
	track_pid $READY_PID
	wait_for 60 test -e "$T/watching" || bail "no watch on cold"
	t0=$(now_ms)
	start_decod
	wait_for 60 grep -q 'all stages ready' "$T/decod.log" || bail "decod did not start"
	t1=$(now_ms)
	if [ -n "${PERF4:-}" ]; then	# PERF4=fetcher: perf record (DWARF) of that stage, ready to all Ready
		perf record --call-graph dwarf,16384 -F "${PERF4_HZ:-99}" -o "${PERF4_OUT:-/tmp/perf4.data}" \
		    -p "$(ps -o pid= --ppid "$DECOD_PID" -o comm= |
		    awk -v s=" $PERF4 " 'index(s, " " $2 " ") {printf "%s%s", n++ ? "," : "", $1}')" \
		    >/dev/null 2>&1 &
		PERF4_PID=$!
	fi
	if [ -n "${TIMELINE4:-}" ]; then	# TIMELINE4=FILE: every 2 s, the journal's items by stage and state, and CPU
		( while :; do
			echo "t=$(( $(now_ms) - t0 )) ms $(sqlite3 "file:$T/state/journal.db?mode=ro" \
			    "SELECT group_concat(stage || '/' || state || '=' || n, ' ') FROM
			     (SELECT stage, state, count(*) n FROM items GROUP BY stage, state)" 2>/dev/null)"
			echo "   $(cpu $(decod_pids) "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")"
			sleep 2
		done ) >"$TIMELINE4" 2>&1 &
		TL_PID=$!
		track_pid $TL_PID
	fi
	wait "$READY_PID" || { cat "$T/cold.out"; tail -20 "$T/decod.log"; bail "cold: not all Ready"; }
	after=$(cpu $(decod_pids) "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")
	if [ -n "${PERF4_PID:-}" ]; then kill -INT "$PERF4_PID"; wait "$PERF4_PID"; fi
	if [ -n "${TL_PID:-}" ]; then kill "$TL_PID"; wait "$TL_PID" 2>/dev/null; fi
	last=$(sed -n 's/.*"last_at": \([0-9.]*\).*/\1/p' "$T/cold.out")
	first=$(sed -n 's/.*"first_at": \([0-9.]*\).*/\1/p' "$T/cold.out")
	d=$(awk -v l="$last" -v t="$t0" 'BEGIN { printf "%.1f", l - t / 1000 }')
	echo "# cold start: decod started with $N CRs waiting -> all Ready: $d s (first Ready $(awk -v f="$first" -v t="$t0" 'BEGIN { printf "%.1f", f - t / 1000 }') s, stages ready $((t1 - t0)) ms)"
	ratio "$d"
	echo "#   CPU from decod's start to all Ready: $(cpu_delta "$before" "$after")python3 (the watch timing it) $(sed -n 's/.*"cpu_s": \([0-9.]*\).*/\1/p' "$T/cold.out") s"
	$PY settled "$KUBE_ADMIN" cold "$N" 300 && $PY quiet "$KUBE_ADMIN" 2 120
	echo "#   CPU from decod's start to settled: $(cpu_delta "$before" "$(cpu $(decod_pids) "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")")"
	r1=$($PY requests "$KUBE_ADMIN")
	echo "#   requests the API server counted from decod's start to settled (by verb resource): $(delta "$r0" "$r1")"
	status_per_cr "$(delta "$r0" "$r1")"
	cms=$(kubectl_admin -n cold get configmaps -o name --chunk-size=500 | grep -c decofile-)
	echo "#   ConfigMaps decofile-* in cold: $cms"
fi

if step 1 || { step 2 && ! step 4; }; then
	if [ -z "$DECOD_PID" ]; then
		start_decod
		wait_for 60 grep -q 'all stages ready' "$T/decod.log" || bail "decod did not start"
	fi
	before=$(cpu $(decod_pids) "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")
	r0=$($PY requests "$KUBE_ADMIN")
	if [ -n "${PERF:-}" ]; then	# PERF=fetcher: perf record -g of that stage during step 1
		perf record -g -o "$PERF_OUT" -p "$(ps -o pid= --ppid "$DECOD_PID" -o comm= | awk -v s="$PERF" '$2 == s {print $1}')" \
		    >/dev/null 2>&1 &
		PERF_PID=$!
	fi
	if [ -n "${STRACE:-}" ]; then	# STRACE=renderer: strace -c -w of that stage during step 1
		strace -f -c -w -o "$STRACE_OUT" -p "$(ps -o pid= --ppid "$DECOD_PID" -o comm= | awk -v s="$STRACE" '$2 == s {print $1}')" \
		    >/dev/null 2>&1 &
		PERF_PID=$!
	fi
	echo "$CR_BODY" | sed -e 's/@G@/deco.sites/' -e 's/@NS@/bench/' >"$T/cr.json"
	$PY ready "$KUBE_ADMIN" bench "$N" 900 -- "$SSA" $ADM -n "$N" \
	    -w PATCH "/apis/deco.sites/v1alpha1/namespaces/bench/decofiles/d@N@?fieldManager=bench" \
	    $AP @"$T/cr.json" >"$T/ready.out" || { cat "$T/ready.out"; tail -20 "$T/decod.log"; bail "not all Ready"; }
	after=$(cpu $(decod_pids) "$KUBE_APISERVER_PID" "$KUBE_ETCD_PID")
	if [ -n "${PERF_PID:-}" ]; then kill -INT "$PERF_PID"; wait "$PERF_PID"; fi
	echo "# decod, $N CRs created at once -> all Ready (seconds from the start of the creation): $(cat "$T/ready.out")"
	ratio "$(sed -n 's/.*"last": \([0-9.]*\).*/\1/p' "$T/ready.out")"	# the plain client's 2N writes, same run
	echo "#   CPU: $(cpu_delta "$before" "$after")"
	# requests counted once every stage's write has landed (PodsNotified
	# and the Syncing recheck land after Ready)
	$PY settled "$KUBE_ADMIN" bench "$N" 300 && $PY quiet "$KUBE_ADMIN" 2 120
	echo "#   requests the API server counted (by verb resource, the creation included): $(delta "$r0" "$($PY requests "$KUBE_ADMIN")")"
	cms=$(kubectl_admin -n bench get configmaps -o name --chunk-size=500 | grep -c decofile-)
	echo "#   ConfigMaps decofile-* in bench: $cms"
	if [ -n "${SHOW:-}" ]; then kubectl_admin -n bench get decofile d1 -o yaml --show-managed-fields; fi
fi

if step 2; then
	# reconciled: every stage's status on every CR (the notifier's lands last)
	if step 1; then $PY settled "$KUBE_ADMIN" bench "$N" 300 || bail "not every CR settled"; fi
	if step 4; then $PY settled "$KUBE_ADMIN" cold "$N" 300 || bail "not every CR of cold settled"; fi
	# and done: no journal item waits for any stage, and no write to a
	# Decofile, its status or a ConfigMap has landed for 2 s (a status write
	# still in flight, or the recheck it brings, daemons/kube/kube_front_status.c)
	wait_for 120 nothing_pending || bail "journal items still pending"
	$PY quiet "$KUBE_ADMIN" 2 120 || bail "writes did not stop"
	r=0
	while [ $r -lt "${RESTARTS:-1}" ]; do	# RESTARTS=n: restart n times in a row
	r=$((r + 1))
	w0=$($PY writes "$KUBE_ADMIN")
	stop_decod
	if [ -n "${PERF2_OUT:-}" ]; then	# PERF2_OUT=FILE: perf record -a -g of the whole restart
		perf record -a -g -o "$PERF2_OUT" >/dev/null 2>&1 &
		PERF2_PID=$!
		sleep 1		# perf is attached before decod starts (not a readiness wait)
	fi
	t0=$(now_ms)
	start_decod
	if [ -n "${PERF2_STAGE:-}" ] && [ $r -ge "${PERF2_FROM:-1}" ]; then	# PERF2_STAGE=fetcher: perf record (DWARF call graphs) of that stage from its start to caught up
		wait_for 10 sh -c "ps -o comm= --ppid $DECOD_PID | grep -qx $PERF2_STAGE"
		perf record --call-graph dwarf,32768 -F 499 -o "${PERF2_STAGE_OUT:-/tmp/perf2.data}.$r" \
		    -p "$(ps -o pid= --ppid "$DECOD_PID" -o comm= | awk -v s="$PERF2_STAGE" '$2 == s {print $1}')" \
		    >/dev/null 2>&1 &
		PERF2S_PID=$!
	fi
	wait_for 60 grep -q 'all stages ready' "$T/decod.log" || bail "decod did not restart"
	t1=$(now_ms)
	before=$(cpu $(decod_pids))
	# caught up: the front door listed, mirrored and compared every CR (and
	# its status writes landed), the publisher compared every ConfigMap, and
	# no journal item waits for any stage
	wait_for 60 caught_up || echo "# not caught up in 60 s"
	t2=$(now_ms)
	if [ -n "${PERF2_PID:-}" ]; then kill -INT "$PERF2_PID"; wait "$PERF2_PID"; fi
	if [ -n "${PERF2S_PID:-}" ]; then kill -INT "$PERF2S_PID"; wait "$PERF2S_PID"; PERF2S_PID=; fi
	grep 'front door caught up' "$T/decod.log" | sed 's/^/#   /'
	sleep 10
	w1=$($PY writes "$KUBE_ADMIN")
	echo "# restart with $N reconciled: stages ready $((t1 - t0)) ms, caught up $((t2 - t0)) ms"
	echo "#   CPU from ready to 10 s after caught up: $(cpu_delta "$before" "$(cpu $(decod_pids))")"
	echo "#   writes the API server counted across the restart (by verb resource): $(delta "$w0" "$w1")"
	grep -c 'cannot\|error' "$T/decod.log" | sed 's/^/#   log lines with cannot or error: /'
	if [ -n "${LOG_OUT:-}" ]; then cp "$T/decod.log" "$LOG_OUT.$r"; fi	# LOG_OUT=PREFIX: each restart's log
	if [ -n "${HANG_OUT:-}" ] && [ $((t2 - t0)) -gt 15000 ]; then	# keep what a slow one logged
		cp "$KUBE_DIR/apiserver.log" "$HANG_OUT.apiserver.$r"; cp "$T/decod.log" "$HANG_OUT.decod.$r"
	fi
	done
	if [ -n "${SHOW:-}" ]; then kubectl_admin -n bench get decofile d1 -o yaml --show-managed-fields; fi
fi

if step 3; then
	[ -n "$DECOD_PID" ] || { start_decod; wait_for 60 grep -q 'all stages ready' "$T/decod.log" || bail "decod"; }
	"$(bin replica)" --any --keepalive --port 0 >"$T/replica.out" 2>&1 &
	track_pid $!
	wait_for 10 grep -q 'listening' "$T/replica.out" || bail "replica"
	port=$(sed -n 's/.*listening.* \([0-9][0-9]*\).*/\1/p' "$T/replica.out" | head -1)
	POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p@N@","namespace":"pods","labels":{"app.deco/deploymentId":"site"}},"spec":{"automountServiceAccountToken":false,"containers":[{"name":"app","image":"localhost/site:bench","ports":[{"containerPort":'$port'}],"env":[{"name":"DECO_RELEASE_RELOAD_TOKEN","value":"tok-@N@"}]}]}}'
	"$SSA" $ADM -n "$PODS" -w PATCH "/api/v1/namespaces/pods/pods/p@N@?fieldManager=bench" $AP "$POD" \
	    >"$T/pods.out" || bail "pods: $(cat "$T/pods.out")"
	# pod i at 127.0.(i/250).(i%250+1): pods/status by a merge patch each
	i=0
	: >"$T/podstatus.sh"
	while [ $i -lt "$PODS" ]; do
		echo "$i 127.0.$((i / 250 + 1)).$((i % 250 + 1))"
		i=$((i + 1))
	done >"$T/ips"
	$KUBE_PY - "$KUBE_ADMIN" "$T/ips" <<'E' || bail "pods/status"
import sys, concurrent.futures
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
api = client.CoreV1Api()
def run(line):
    i, ip = line.split()
    api.patch_namespaced_pod_status("p" + i, "pods", {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}})
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    list(ex.map(run, open(sys.argv[2]).read().splitlines()))
E
	echo "# $PODS pods Running at 127.0.X.Y:$port (one bench/replica)"
	printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: site, namespace: pods}\nspec: {source: inline, inline: {value: {Bench: {round: -1, at: "0"}, Header: {title: bench}}}}\n' |
	    kubectl_admin apply --server-side -f - >/dev/null
	kubectl_admin -n pods wait --for=condition=PodsNotified decofile/site --timeout=120s >/dev/null || bail "first rollout"
	$KUBE_PY "$top_srcdir/bench/bench_kube.py" "$KUBE_ADMIN" pods site "$ROUNDS" || bail "bench failed"
	echo "#   PodsNotified: $(kubectl_admin -n pods get decofile site -o jsonpath='{.status.conditions[?(@.type=="PodsNotified")].message}, {.status.notifiedReplicas} of {.status.totalReplicas} replicas')"
fi
stop_decod
if [ -n "${KEEP_LOG:-}" ]; then cp "$T/decod.log" "$KEEP_LOG"; fi
