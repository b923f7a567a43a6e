#!/bin/sh
# notify_pods - the notifier finds its replicas as Kubernetes pods, against
# a real API server, running as deploy/'s ServiceAccount: pods labelled
# app.deco/deploymentId=loja that are Running with an IP (made so through
# pods/status, no node needed), port from the first container's first port,
# each called with the token of its own container `app`; a Pending pod and
# another deployment's pod are left alone; a pod without a token whose
# replica wants one gives MissingReloadToken; a pod deleted before its try
# is not a failure.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

NOTIFIER=$(bin notifier)
SITE=$(bin decod-site)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$NOTIFIER" ] || bail "notifier not built"
[ -x "$SITE" ] || bail "decod-site not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kubectl_admin create namespace sites-loja >/dev/null
# no controller-manager here: the namespace's default ServiceAccount by hand
kubectl_admin -n sites-loja create serviceaccount default >/dev/null
# decod runs as this account only (kube_start exported the admin's KUBECONFIG)
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"
is "$(kubectl --kubeconfig "$T/decod.kubeconfig" auth can-i list pods -A)" yes "decod may list pods"
is "$(kubectl --kubeconfig "$T/decod.kubeconfig" auth can-i delete pods -n sites-loja)" no "... but not delete them"

cat >"$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
kubeconfig = $T/decod.kubeconfig
rescan_interval = 100ms
notify_timeout = 4s
notify_attempts = 2
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
item_is() { [ "$(sql "SELECT state FROM items WHERE id=$1")" = "$2" ]; }
cond() {
	"$TOOL" $C status sites-loja loja | python3 -c '
import json, sys
d = json.load(sys.stdin)
for c in d.get("conditions", []):
    if c["type"] == "PodsNotified":
        print(c[sys.argv[1]])' "$1"
}
site() { # site NAME TOKEN: a replica; sets PORT_<name>
	n=$1
	DECO_RELEASE_RELOAD_TOKEN=$2 "$SITE" --port 0 >"$T/$n.out" 2>"$T/$n.err" &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/$n.out" || bail "replica $n did not start"
	eval "PORT_$n=$(awk '/^listening on/ {print $3}' "$T/$n.out")"
}
served_sha() {
	curl -s --max-time 5 "http://127.0.0.1:$1/.decofile" |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])'
}
# pod NAME DEPLOYMENT PORT TOKEN PHASE: a pod, made PHASE with IP 127.0.0.1
pod() {
	env=""
	[ -n "$4" ] && env="env: [{name: DECO_RELEASE_RELOAD_TOKEN, value: \"$4\"}]"
	kubectl_admin -n sites-loja apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app.deco/deploymentId: $2}}
spec:
  automountServiceAccountToken: false
  containers:
  - name: app
    image: localhost/site:test
    ports: [{containerPort: $3}]
    $env
Y
	[ "$5" = Pending ] && return 0
	kubectl_admin -n sites-loja patch pod "$1" --subresource=status --type merge \
	    -p '{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}' >/dev/null
}

site a tok-a
site b tok-b
site c tok-c
site other tok-o
pod pa loja "$PORT_a" tok-a Running
pod pb loja "$PORT_b" tok-b Running
pod pc loja "$PORT_c" tok-c Pending
pod po other "$PORT_other" tok-o Running

printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-loja"},"spec":{"source":"inline","inline":{"value":{"A":1}}}}' >"$T/df.json"
"$TOOL" $C apply "$T/df.json"
printf '{"A":1,"Title":"first"}' >"$T/doc1.json"
printf '{"A":1,"Title":"second"}' >"$T/doc2.json"
H1=$("$TOOL" $C spool "$T/doc1.json")
H2=$("$TOOL" $C spool "$T/doc2.json")
H0=$(served_sha "$PORT_c")

"$NOTIFIER" $C >"$T/notifier.log" 2>&1 &
track_pid $!
wait_for 15 grep -q 'msg=ready' "$T/notifier.log" || bail "notifier did not start"

ID=$("$TOOL" $C enqueue notifier sites-loja loja "$H1" "timestamp=1731598481 commit=abc123")
check "rollout finishes" wait_for 20 item_is "$ID" done
is "$(cond status)" True "PodsNotified=True"
is "$(cond message)" "Successfully notified all pods for commit:abc123" "the operator's message"
is "$(served_sha "$PORT_a")" "$H1" "pod pa's replica reloaded (its own token)"
is "$(served_sha "$PORT_b")" "$H1" "pod pb's replica reloaded (its own token)"
is "$(served_sha "$PORT_c")" "$H0" "the Pending pod is left alone"
is "$(served_sha "$PORT_other")" "$H0" "another deployment's pod is left alone"
is "$(sql "SELECT group_concat(replica, ',') FROM (SELECT replica FROM acks WHERE content_hash='$H1' AND result='confirmed' ORDER BY replica)")" \
    "pod/pa,pod/pb" "acks name the pods"

# a pod without a token in front of a replica that wants one
site d tok-d
pod pd loja "$PORT_d" "" Running
ID=$("$TOOL" $C enqueue notifier sites-loja loja "$H2" "timestamp=1731598500 commit=def456")
check "second rollout finishes" wait_for 20 item_is "$ID" done
is "$(cond status)" False "PodsNotified=False"
is "$(cond reason)" MissingReloadToken "reason MissingReloadToken"
case "$(cond message)" in *pod/pd*) ok 0 "the message names the pod" ;; *) ok 1 "the message names the pod: $(cond message)" ;; esac
is "$(served_sha "$PORT_a")" "$H2" "the others still reloaded"

# a pod that goes away before its try is not a failure
kubectl_admin -n sites-loja delete pod pd --grace-period=0 --force >/dev/null 2>&1
wait_for 10 sh -c "! kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get pod pd >/dev/null 2>&1"
ID=$("$TOOL" $C enqueue notifier sites-loja loja "$H1" "timestamp=1731598600 commit=0a0a0a")
check "third rollout finishes" wait_for 20 item_is "$ID" done
is "$(cond status)" True "PodsNotified=True once the tokenless pod is gone"
if grep -q "tok-a\|tok-b\|$TOKEN" "$T/notifier.log"; then ok 1 "tokens never logged"; else ok 0 "tokens never logged"; fi
done_testing
