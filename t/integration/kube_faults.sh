#!/bin/sh
# kube_faults - a running decod (supervisor and stages, as deploy/'s
# ServiceAccount) against a real API server through t/kube/faultproxy.py,
# under the faults the client library's tests (kube_client.sh) make only to
# the library: 429 with Retry-After and 500 on the ConfigMap apply and the
# status writes (retried, Retry-After honoured, no stage restarted, Ready
# says it while the write fails, then the rollout completes); a watch cut
# and kept down while a CR is edited (seen after the reconnect); a hung
# ConfigMap write that delays no other site and ends at kube_timeout; a real
# 410 Gone (the proxy down, changes made, etcd compacted: decod re-lists and
# reconciles them, a deletion included); the token file rotated and the old
# token revoked (no outage); detach (decod drops its owner reference, the
# garbage collector then leaves the ConfigMap); observedGeneration is the
# CR's own metadata.generation.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$(bin decod-site)
PROXY=$top_srcdir/t/kube/faultproxy.py
[ -x "$DECOD" ] || bail "decod not built"
[ -x "$SITE" ] || bail "decod-site not built"
command -v jq >/dev/null || skip_all "jq not installed"

# without the watch cache every watch is served from etcd, so a compaction
# makes a real 410 for any kind (--watch-cache-sizes cannot name a CRD)
KUBE_APISERVER_EXTRA_ARGS="--watch-cache=false" kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kube_start_cm
NS=sites-f
kubectl_admin create namespace $NS >/dev/null
wait_for 30 kubectl_admin -n $NS get serviceaccount default || bail "no default ServiceAccount"

# decod's tokens are bound to Secrets: deleting one revokes its token
kubectl_admin -n decod-system create secret generic tok1 >/dev/null
kubectl_admin -n decod-system create secret generic tok2 >/dev/null
bound_token() {
	kubectl_admin -n decod-system create token decod --duration 3600s \
	    --bound-object-kind Secret --bound-object-name "$1"
}
umask 077
bound_token tok1 >"$T/token" || bail "no token"
umask 022

python3 "$PROXY" --upstream "$KUBE_URL" --cacert "$KUBE_DIR/ca.crt" --port-file "$T/proxy.port" \
    2>"$T/proxy.log" &
track_pid $!
wait_for 10 test -s "$T/proxy.port" || bail "fault proxy did not start"
PURL=http://127.0.0.1:$(cat "$T/proxy.port")
fault() { curl -sf -X POST -d "$1" "$PURL/__fault" >/dev/null || bail "proxy control failed"; }
clear_faults() { curl -sf -X POST "$PURL/__clear" >/dev/null; }
mark() { curl -sf -X POST -d "{\"mark\":\"$1\"}" "$PURL/__mark" >/dev/null; }
plog() { curl -sf "$PURL/__log"; }
pstats() { curl -sf "$PURL/__stats"; }
# decod reads its token from the file, as in a pod, and reaches the server only through the proxy
kube_token_file_config "$T/decod.kubeconfig" "$T/token" decod-system
sed -i "s#server: \"$KUBE_URL\", certificate-authority: \"$KUBE_DIR/ca.crt\"#server: \"$PURL\"#" \
    "$T/decod.kubeconfig"
grep -q "$PURL" "$T/decod.kubeconfig" || bail "could not point the kubeconfig at the proxy"
export KUBECONFIG="$T/decod.kubeconfig"

# kube_timeout, seconds: calls here take milliseconds, sanitizers or not;
# it bounds how long the cases with a write failing past it take
KT=$((3 + ${DECOD_TEST_TIME_SCALE:-1}))
kube_decod_conf <<CONF
rescan_interval = 200ms
retry_max = 1s
notify_timeout = 4s
notify_attempts = 2
kube_timeout = ${KT}s
leader_lease_duration = 40s
leader_renew_deadline = 30s
CONF

k() { kubectl_admin -n $NS "$@"; }
mkdf() { # mkdf NAME VALUE: apply Decofile NAME with inline {"v":VALUE}
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"%s"},"spec":{"source":"inline","inline":{"value":{"v":%s}}}}' \
	    "$1" $NS "$2" | kubectl_admin apply --server-side -f - >/dev/null
}
edit() { k patch decofile "$1" --type merge -p "{\"spec\":{\"inline\":{\"value\":{\"v\":$2}}}}" >/dev/null; }
hash_of() { printf '{"v":%s}' "$1" | sha256sum | cut -d' ' -f1; }
crjson() { k get decofile "$1" -o json 2>/dev/null; }
# rolled NAME VALUE: the CR says VALUE's merge is published and notified
rolled() {
	crjson "$1" | jq -e --arg h "$(hash_of "$2")" '.status.contentHash == $h and
	    .status.notifiedHash == $h and
	    ([.status.conditions[]? | select((.type == "Ready" or .type == "PodsNotified") and
	      .status == "True")] | length) == 2' >/dev/null
}
cond() { crjson "$1" | jq -r --arg t "$2" '.status.conditions[]? | select(.type==$t) | "\(.status) \(.reason) \(.message)"'; }
gen_ok() { # the status speaks of the CR's own generation
	crjson "$1" | jq -e '.status.observedGeneration == .metadata.generation' >/dev/null
}
stage_pids() { "$DECOCTL" -c "$T/decod.conf" stages -o json | jq -c '[(.stages // .)[] | {(.name): .pid}] | add'; }
cm_patches() { # cm_patches NAME: statuses of the ConfigMap applies since mark $2
	plog | jq -c --arg m "MARK $2" --arg p "PATCH /api/v1/namespaces/$NS/configmaps/decofile-$1?" '
	    (map(.req) | index($m)) as $i | .[$i:] | map(select(.req | startswith($p)))'
}
status_patches() { # status_patches NAME MARK: the status applies (one manager, decod) since MARK
	plog | jq -c --arg m "MARK $2" \
	    --arg p "PATCH /apis/deco.sites/v1alpha1/namespaces/$NS/decofiles/$1/status?fieldManager=decod&" '
	    (map(.req) | index($m)) as $i | .[$i:] | map(select(.req | startswith($p)))'
}
# gap_after_429 JSON: ms from each 429 to the next try (the smallest)
gap_after_429() {
	echo "$1" | jq '[range(0; length - 1) as $i | select(.[$i].status == 429) |
	    .[$i + 1].t - .[$i].t] | min // -1'
}

# one replica, one pod, for the Decofile "one"
DECO_RELEASE_RELOAD_TOKEN=tok-one "$SITE" --port 0 >"$T/site.out" 2>"$T/site.err" &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/site.out" || bail "replica did not start"
SITE_PORT=$(awk '/^listening on/ {print $3}' "$T/site.out")
k apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app.deco/deploymentId: one}}
spec:
  automountServiceAccountToken: false
  containers:
  - name: app
    image: localhost/site:test
    ports: [{containerPort: $SITE_PORT}]
    env: [{name: DECO_RELEASE_RELOAD_TOKEN, value: tok-one}]
Y
k patch pod p1 --subresource=status --type merge \
    -p '{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}' >/dev/null

# a CR created and edited before decod starts: generation 2 at its first sight
mkdf pre 1; edit pre 2
for n in one two three k3 g3 det; do mkdf $n 1; done

"$DECOD" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
track_pid $!
check "decod runs its four stages through the proxy" wait_for 30 grep -q 'all stages ready' "$T/decod.log"
for n in pre:2 one:1 two:1 three:1 k3:1 g3:1 det:1; do
	wait_for "$(scaled 30)" rolled ${n%:*} ${n#*:} ||
	    { crjson ${n%:*} | jq -c .status | sed 's/^/# /'; bail "no initial rollout of ${n%:*}"; }
done
ok 0 "every Decofile rolled out"
is "$(crjson pre | jq -c '[.metadata.generation, .status.observedGeneration]')" "[2,2]" \
    "observedGeneration of a CR edited before decod saw it is its own generation (2)"
PIDS=$(stage_pids)
diag "stages: $PIDS; restarts: $("$DECOCTL" -c "$T/decod.conf" stages -o json | jq -c '[(.stages // .)[] | {(.name): .restarts}] | add')"
echo "$PIDS" | jq -e '.fetcher > 0 and .publisher > 0 and .notifier > 0' >/dev/null ||
    bail "decoctl stages gave no PIDs"

# --- 1. 429 with Retry-After and 500 on a running stage's writes --------------
CMP="PATCH /api/v1/namespaces/$NS/configmaps/decofile-one?"
STP="PATCH /apis/deco.sites/v1alpha1/namespaces/$NS/decofiles/one/status?fieldManager=decod&"
mark s1
fault "{\"match\":\"$CMP\",\"status\":429,\"retry_after\":2,\"count\":1}"
fault "{\"match\":\"$CMP\",\"status\":500,\"count\":1}"
fault "{\"match\":\"$STP\",\"status\":429,\"retry_after\":2,\"count\":1}"
fault "{\"match\":\"$STP\",\"status\":500,\"count\":1}"
edit one 2
check "429 then 500 on the ConfigMap apply and the status write: the rollout completes" \
    wait_for "$(scaled 30)" rolled one 2
CMW=$(cm_patches one s1)
is "$(echo "$CMW" | jq -c '[.[].status][:3]')" "[429,500,200]" "the ConfigMap apply was retried after each"
g=$(gap_after_429 "$CMW")
[ "$g" -ge 2000 ]; ok $? "... not earlier than Retry-After: 2 asked (${g} ms)"
STW=$(status_patches one s1)
is "$(echo "$STW" | jq -c '[.[].status][:3]')" "[429,500,200]" "the CR's status write (manager decod) was retried after each"
g=$(gap_after_429 "$STW")
[ "$g" -ge 2000 ]; ok $? "... not earlier than Retry-After: 2 asked (${g} ms)"
is "$(stage_pids)" "$PIDS" "no stage restarted"

# the ConfigMap apply keeps failing past kube_timeout: Ready says so, the old
# version stays; once the server answers again the rollout completes
mark s1b
fault "{\"match\":\"$CMP\",\"status\":500,\"count\":100000}"
edit one 3
check "a ConfigMap write failing past its deadline: Ready=False ConfigMapFailed on the CR" \
    wait_for "$(scaled 30)" sh -c "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n $NS get decofile one -o json | jq -e '.status.conditions[] | select(.type==\"Ready\" and .status==\"False\" and .reason==\"ConfigMapFailed\") | .message | test(\"HTTP 500\")' >/dev/null"
diag "$(cond one Ready)"
is "$(crjson one | jq -r .status.contentHash)" "$(hash_of 2)" "... and the CR still names the version that is out"
clear_faults
check "the server answers again: the rollout completes" wait_for "$(scaled 30)" rolled one 3
n=$(cm_patches one s1b | jq '[.[] | select(.status == 500)] | length')
[ "$n" -ge 2 ]; ok $? "... after $n refused tries"
is "$(cond one Ready)" "True ConfigMapCreated ConfigMap decofile-one created successfully from inline source" "Ready=True again"

# a status write failing past its deadline is written again later: nothing
# else would bring the CR's status in step
NTP="PATCH /apis/deco.sites/v1alpha1/namespaces/$NS/decofiles/one/status?fieldManager=decod&"
mark s1c
fault "{\"match\":\"$NTP\",\"status\":500,\"count\":100000}"
L0=$(wc -l <"$T/decod.log")
edit one 4
# twice: the write tried again after the pause (the fragments changed meanwhile) fails too
notifier_failed() {
	[ "$(tail -n +$L0 "$T/decod.log" | grep -c "cannot write status to the CR.*decofiles/$NS/one[\" ]")" -ge 2 ]
}
check "the CR's status writes fail past their deadline" wait_for "$(scaled 40)" notifier_failed
clear_faults
check "... and is written once the server answers: the CR shows the rollout" \
    wait_for "$(scaled 30)" rolled one 4
is "$(stage_pids)" "$PIDS" "no stage restarted"

# --- 2. a watch cut and kept down, a slow answer --------------------------------
W="/apis/deco.sites/v1alpha1/decofiles?watch=1"
fault "{\"match\":\"$W\",\"drop\":true,\"delay_ms\":0,\"count\":100000}"
fault "{\"cut\":\"$W\"}"
check "the Decofile watches are cut and refused" wait_for 10 sh -c \
    "curl -sf $PURL/__log | jq -e '[.[] | select(.status == 0 and (.req | contains(\"$W\")))] | length >= 2' >/dev/null"
edit three 2
mark s2
check "... still refused after the edit" wait_for "$(scaled 20)" sh -c \
    "curl -sf $PURL/__log | jq -e '(map(.req) | index(\"MARK s2\")) as \$i | [.[\$i:][] | select(.status == 0 and (.req | contains(\"$W\")))] | length >= 2' >/dev/null"
is "$("$DECOCTL" -c "$T/decod.conf" -n $NS get decofile three -o json | jq -c .spec.inline.value)" '{"v":1}' \
    "decod has not seen the edit while its watch is down"
clear_faults
check "a CR edited while the watch was down is reconciled after the reconnect" \
    wait_for "$(scaled 30)" rolled three 2

# a ConfigMap apply that hangs: other sites go on; it ends at kube_timeout
fault "{\"match\":\"PATCH /api/v1/namespaces/$NS/configmaps/decofile-two?\",\"drop\":true,\"delay_ms\":120000,\"count\":1}"
edit two 2
check "the apply of two hangs" wait_for "$(scaled 20)" sh -c "curl -sf $PURL/__stats | jq -e '.hanging == 1' >/dev/null"
t0=$(date +%s%N)
edit three 3
wait_for "$(scaled 20)" rolled three 3
ok $? "another site rolls out meanwhile ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
is "$(pstats | jq .hanging)" 1 "... while the apply of two still hangs"
check "the hung apply ends at the deadline: Ready=False says so" wait_for "$(scaled 30)" sh -c \
    "kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n $NS get decofile two -o json | jq -e '.status.conditions[] | select(.type==\"Ready\" and .reason==\"ConfigMapFailed\") | .message | test(\"deadline exceeded\")' >/dev/null"
h=$(curl -sf "$PURL/__hangs" | jq -c 'map(select(.req | contains("decofile-two?"))) | .[0] | {by, ms: (.end - .t)}')
diag "hang: $h"
echo "$h" | jq -e --argjson kt "$KT" '.by == "client" and .ms >= $kt * 1000 - 200 and .ms < $kt * 1000 + 3000' >/dev/null
ok $? "... decod gave up on it after kube_timeout (${KT}s)"
check "... and two rolls out on the next try" wait_for "$(scaled 30)" rolled two 2
is "$(stage_pids)" "$PIDS" "no stage restarted"

# --- 6. observedGeneration: two quick spec edits, metadata and status changes ---
edit two 3; edit two 4
check "two quick edits: the last one rolls out" wait_for "$(scaled 30)" rolled two 4
is "$(crjson two | jq -c '[.metadata.generation, .status.observedGeneration]')" "[4,4]" \
    "observedGeneration is the generation of the spec rolled out (4)"
RV2=$(k get configmap decofile-two -o jsonpath='{.metadata.resourceVersion}')
k label decofile two team=x >/dev/null
k annotate decofile two note=y >/dev/null
is "$(crjson two | jq .metadata.generation)" 4 "a label and an annotation do not bump the generation"
edit three 4
wait_for "$(scaled 30)" rolled three 4	# a later change has gone all the way through
is "$(crjson two | jq .status.observedGeneration)" 4 "... nor observedGeneration"
is "$(k get configmap decofile-two -o jsonpath='{.metadata.resourceVersion}')" "$RV2" "... and publish nothing"

# --- 3. 410 Gone for real --------------------------------------------------------
L0=$(wc -l <"$T/decod.log")
fault '{"down":true}'
edit k3 2; edit k3 3
k delete decofile g3 >/dev/null
mkdf n3 7
rev=$("$KUBEBUILDER_ASSETS/etcdctl" --endpoints "$KUBE_ETCD_URL" endpoint status -w json |
    jq '.[0].Status.header.revision')
"$KUBEBUILDER_ASSETS/etcdctl" --endpoints "$KUBE_ETCD_URL" compact "$rev" >/dev/null 2>&1
ok $? "cut off from the server: changes made, etcd compacted at revision $rev"
fault '{"down":false}'
check "decod's watches get 410 Gone and re-list" wait_for "$(scaled 30)" sh -c \
    "tail -n +$L0 '$T/decod.log' | grep -q 'resourceVersion gone (410), re-listing.*resource=decofiles'"
check "a CR created meanwhile rolls out" wait_for "$(scaled 30)" rolled n3 7
check "a CR edited twice meanwhile rolls out its last spec" wait_for "$(scaled 30)" rolled k3 3
is "$(crjson k3 | jq -c '[.metadata.generation, .status.observedGeneration]')" "[3,3]" \
    "... observedGeneration is its generation (3)"
check "a CR deleted meanwhile leaves decod's store" wait_for "$(scaled 30)" sh -c \
    "! '$DECOCTL' -c '$T/decod.conf' -n $NS get decofile g3 >/dev/null 2>&1"
check "... and the publisher removes its ConfigMap (journaled)" wait_for "$(scaled 15)" sh -c \
    "'$DECOCTL' -c '$T/decod.conf' journal 2>/dev/null | grep -q 'decofile/$NS/g3.*prune'"
is "$(stage_pids)" "$PIDS" "no stage restarted"

# --- 4. the token file rotated, the old token revoked -----------------------------
OLD=$(cat "$T/token")
OLDH=$(printf '%s' "$OLD" | sha256sum | cut -c1-12)
umask 077
bound_token tok2 >"$T/token.new" || bail "no second token"
umask 022
NEWH=$(tr -d '\n' <"$T/token.new" | sha256sum | cut -c1-12)
mv "$T/token.new" "$T/token"
check "the rotated token is read and used" wait_for "$(scaled 20)" sh -c \
    "curl -sf $PURL/__stats | jq -e '.tokens[\"$NEWH\"] > 0' >/dev/null"
kubectl_admin -n decod-system delete secret tok1 >/dev/null
old_refused() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KUBE_DIR/ca.crt" \
	    -H "Authorization: Bearer $OLD" "$KUBE_URL/apis/deco.sites/v1alpha1/namespaces/$NS/decofiles")" = 401 ]
}
check "the old token is revoked (its Secret deleted)" wait_for "$(scaled 20)" old_refused
L1=$(wc -l <"$T/decod.log")
edit one 5
check "no outage: a change rolls out with the new token" wait_for "$(scaled 30)" rolled one 5
if tail -n +$L1 "$T/decod.log" | grep -q 'HTTP 401\|cannot write\|write failed'; then
	ok 1 "no call failed after the rotation"
	tail -n +$L1 "$T/decod.log" | grep 'HTTP 401\|cannot write\|write failed' | sed 's/^/# /'
else
	ok 0 "no call failed after the rotation"
fi
is "$(stage_pids)" "$PIDS" "no stage restarted"

# --- 5. delete with detach --------------------------------------------------------
# (delete without detach: publish_configmap.sh at the stage, kube_e2e.sh end to end)
DUID=$(k get decofile det -o jsonpath='{.metadata.uid}')
is "$(k get configmap decofile-det -o jsonpath='{.metadata.ownerReferences[0].uid}')" "$DUID" \
    "det's ConfigMap is owned by its CR"
# a canary the garbage collector must remove: proof it handled det's dependents
k apply -f - >/dev/null <<Y
apiVersion: v1
kind: ConfigMap
metadata:
  name: canary
  ownerReferences: [{apiVersion: deco.sites/v1alpha1, kind: Decofile, name: det, uid: "$DUID"}]
Y
k annotate decofile det deco.sites/deletion=detach >/dev/null
check "detach: decod removes its owner reference" wait_for "$(scaled 20)" sh -c \
    "[ -z \"\$(kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n $NS get configmap decofile-det -o jsonpath='{.metadata.ownerReferences}')\" ]"
k delete decofile det >/dev/null
check "the garbage collector removes det's other dependent" wait_for 60 sh -c \
    "! kubectl --kubeconfig $KUBE_DIR/admin.kubeconfig -n $NS get configmap canary >/dev/null 2>&1"
k get configmap decofile-det >/dev/null 2>&1
ok $? "... and leaves the detached ConfigMap"
check "decod says it kept it" wait_for 10 grep -q 'ConfigMap detached (kept).*name=det' "$T/decod.log"

is "$(stage_pids)" "$PIDS" "no stage restarted in the whole run"
if grep -rq "$OLD" "$T/decod.log" || grep -q "$(cat "$T/token")" "$T/decod.log"; then
	ok 1 "tokens never logged"
else
	ok 0 "tokens never logged"
fi
done_testing
