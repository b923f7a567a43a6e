#!/bin/sh
# kube_e2e - decod in a cluster, end to end: the supervisor and all four
# stages against a real API server and controller-manager, as deploy/'s
# ServiceAccount.  A Decofile CR applied with kubectl becomes ConfigMap
# decofile-loja (owner, keys, the merge decoded and compared), the pods of
# its deployment (Running, each with its own token) are reloaded, and
# `kubectl wait --for=condition=PodsNotified` returns; a Pending pod and
# another deployment's pod are left alone; an edit rolls out again; a
# Decofile with target tanstack-kv gets a condition, not a refusal; deleting
# the CR removes the ConfigMap.  decod's default_target is file: loja names
# no target and gets its ConfigMap from the CRD's default.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"
. "$top_srcdir/t/lib/git.sh"
. "$top_srcdir/t/lib/github.sh"

DECOD=$top_builddir/decod
SITE=$(bin decod-site)
[ -x "$DECOD" ] || bail "decod not built"
[ -x "$SITE" ] || bail "decod-site not built"
command -v brotli >/dev/null || skip_all "brotli command not installed"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kube_start_cm
kubectl_admin create namespace sites-loja >/dev/null
wait_for 30 kubectl_admin -n sites-loja get serviceaccount default || bail "no default ServiceAccount"
# decod runs as this account only (kube_start exported the admin's KUBECONFIG)
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"

# the tanstack-kv Decofile's repository (that target needs source github)
git_work "$T/kv"
git_commit "$T/kv" .deco/blocks/Header.json '{"title":"Olá"}'
gh_serve --repo "deco-sites/loja-kv=$T/kv"

# a host's default target: loja names none, and still gets its ConfigMap,
# from the CRD's default (as with the Go operator)
kube_decod_conf <<CONF
default_target = file
github_api_url = $GH_API
rescan_interval = 200ms
notify_timeout = 4s
notify_attempts = 2
CONF

site() { # site NAME TOKEN: a replica; sets PORT_<name>
	DECO_RELEASE_RELOAD_TOKEN=$2 "$SITE" --port 0 >"$T/$1.out" 2>"$T/$1.err" &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/$1.out" || bail "replica $1 did not start"
	eval "PORT_$1=$(awk '/^listening on/ {print $3}' "$T/$1.out")"
}
pod() { # pod NAME DEPLOYMENT PORT TOKEN PHASE
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
    env: [{name: DECO_RELEASE_RELOAD_TOKEN, value: "$4"}]
Y
	[ "$5" = Pending ] && return 0
	kubectl_admin -n sites-loja patch pod "$1" --subresource=status --type merge \
	    -p '{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}' >/dev/null
}
served() { curl -s --max-time 5 "http://127.0.0.1:$1/.decofile" | jq -c .decofile; }
cond() { kubectl_admin -n sites-loja get decofile "$1" -o json | jq -r --arg t "$2" '.status.conditions[]? | select(.type==$t) | "\(.status) \(.reason) \(.message)"'; }

site a tok-a; site b tok-b; site c tok-c; site o tok-o
pod pa loja "$PORT_a" tok-a Running
pod pb loja "$PORT_b" tok-b Running
pod pc loja "$PORT_c" tok-c Pending
pod po other "$PORT_o" tok-o Running
INITIAL=$(served "$PORT_c")

"$DECOD" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
track_pid $!
check "decod runs its four stages (it leads)" wait_for 30 sh -c "grep -q 'all stages ready' '$T/decod.log'"

cat >"$T/loja.yaml" <<Y
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: loja, namespace: sites-loja}
spec:
  source: inline
  inline:
    value:
      Header.json: {title: "Loja \u00fc"}
      Footer: [1, 2, 3]
Y
kubectl_admin apply --server-side -f "$T/loja.yaml" >/dev/null || bail "cannot apply the CR"
t0=$(date +%s%N)
kubectl_admin -n sites-loja wait --for=condition=PodsNotified decofile/loja --timeout=60s >/dev/null
ok $? "kubectl wait --for=condition=PodsNotified decofile/loja returns ($(( ($(date +%s%N) - t0) / 1000000 )) ms after the apply)"
WANT='{"Footer":[1,2,3],"Header":{"title":"Loja ü"}}'
kubectl_admin -n sites-loja get configmap decofile-loja -o json >"$T/cm.json" || bail "no ConfigMap"
is "$(jq -r '.data | keys | join(",")' "$T/cm.json")" "decofile.bin,timestamp.txt" "ConfigMap keys"
jq -r '.data["decofile.bin"]' "$T/cm.json" | base64 -d | brotli -d >"$T/got.json"
is "$(cat "$T/got.json")" "$WANT" "decofile.bin decodes to the merge (Header.json's .json stripped)"
is "$(jq -r '.metadata.ownerReferences[0].kind + "/" + .metadata.ownerReferences[0].name' "$T/cm.json")" \
    "Decofile/loja" "owned by the Decofile"
is "$(served "$PORT_a")" "$WANT" "pod pa's replica serves it"
is "$(served "$PORT_b")" "$WANT" "pod pb's replica serves it"
is "$(served "$PORT_c")" "$INITIAL" "the Pending pod is left alone"
is "$(served "$PORT_o")" "$INITIAL" "another deployment's pod is left alone"
case "$(cond loja Ready)" in "True ConfigMapCreated ConfigMap decofile-loja created successfully from inline source") ok 0 "Ready on the CR" ;;
*) ok 1 "Ready on the CR: $(cond loja Ready)" ;; esac
case "$(cond loja PodsNotified)" in "True NotificationSucceeded Successfully notified all pods for timestamp:"*) ok 0 "PodsNotified on the CR" ;;
*) ok 1 "PodsNotified on the CR: $(cond loja PodsNotified)" ;; esac
HASH=$(printf '%s' "$WANT" | sha256sum | cut -d' ' -f1)
is "$(kubectl_admin -n sites-loja get decofile loja -o jsonpath='{.status.contentHash}')" "$HASH" \
    "status.contentHash is the bare sha256 of the merge"

# an edit rolls out again
kubectl_admin -n sites-loja patch decofile loja --type merge -p '{"spec":{"inline":{"value":{"Footer":[4]}}}}' >/dev/null
WANT2='{"Footer":[4],"Header":{"title":"Loja ü"}}'
check "an edit reaches the pods" wait_for 30 sh -c "[ '$(printf '%s' "$WANT2")' = \"\$(curl -s --max-time 5 http://127.0.0.1:$PORT_a/.decofile | jq -c .decofile)\" ]"
HASH2=$(printf '%s' "$WANT2" | sha256sum | cut -d' ' -f1)
check "... and the CR says so" wait_for 15 sh -c "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get decofile loja -o json | jq -e '.status.contentHash == \"$HASH2\" and .status.notifiedHash == \"$HASH2\"' >/dev/null"

# a target decod does not support: accepted by the CRD, reported on a condition
kubectl_admin apply --server-side -f - >/dev/null <<Y
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: kv, namespace: sites-loja}
spec:
  source: github
  github: {org: deco-sites, repo: loja-kv, commit: main, path: .deco/blocks/}
  target: tanstack-kv
  tanstackKV: {kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10, siteOrigin: "https://www.loja.com.br"}
Y
ok $? "a Decofile with target tanstack-kv is accepted"
check "... and gets Ready=False naming the target" wait_for 20 sh -c "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get decofile kv -o json | jq -e '.status.conditions[]? | select(.type==\"Ready\" and .status==\"False\") | .message | test(\"tanstack-kv\")' >/dev/null"

# delete: the ConfigMap goes too
kubectl_admin -n sites-loja delete decofile loja >/dev/null
check "deleting the CR removes its ConfigMap" wait_for 30 sh -c "! kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n sites-loja get configmap decofile-loja >/dev/null 2>&1"
if grep -rq "$TOKEN\|tok-a" "$T/decod.log"; then ok 1 "tokens never logged"; else ok 0 "tokens never logged"; fi
done_testing
