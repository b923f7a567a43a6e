#!/bin/sh
# kube_status_owner - one owner of every CR's status, against a real API
# server, decod (supervisor and four stages) as deploy/'s ServiceAccount:
# after a rollout the status subresource has one field manager, `decod`;
# the API server counts the status applies per CR per change (its
# apiserver_request_total): a burst of fragments of several stages is one
# apply, a rollout at most one per stage that had something new to say,
# a restart none; a condition and a status field a person added by hand
# stay through decod's writes; a CR whose status was written by the old
# per-stage managers (decod-<stage>) and the Go operator's (`manager`) is
# adopted by one guarded JSON patch, and no stale entry is left.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOD=$top_builddir/decod
TOOL="$top_builddir/t/stage/testtool"
[ -x "$DECOD" ] || bail "decod not built"
command -v jq >/dev/null || skip_all "jq not installed"

NS=sites-own
kube_decod_setup $NS <<CONF
rescan_interval = 200ms
notify_timeout = 2s
notify_attempts = 1
log_level = debug
CONF

k() { kubectl_admin -n $NS "$@"; }
cr() { k get decofile "$1" -o json --show-managed-fields; }
managers() { # the field managers of NAME's status subresource, sorted
	cr "$1" | jq -r '[.metadata.managedFields[] | select(.subresource=="status") | .manager] | sort | join(",")'
}
adm() { curl -sf --cacert "$KUBE_DIR/ca.crt" --cert "$KUBE_DIR/admin.crt" --key "$KUBE_DIR/admin.key" "$@"; }
# requests VERB SUBRESOURCE: requests on decofiles the API server counted
requests() {
	adm "$KUBE_URL/metrics" | awk -v v="verb=\"$1\"" -v s="subresource=\"$2\"" '
	    /^apiserver_request_total\{/ && /resource="decofiles"/ && index($0, v) && index($0, s) {
	    n += $NF } END { print n + 0 }'
}
# applies: server-side applies of decofiles/status
applies() { requests APPLY status; }
mkdf() { # mkdf NAME VALUE
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"%s"},"spec":{"source":"inline","target":"configmap","inline":{"value":{"v":%s}}}}' \
	    "$1" $NS "$2" | kubectl_admin apply --server-side -f - >/dev/null
}
hash_of() { printf '{"v":%s}' "$1" | sha256sum | cut -d' ' -f1; }
# rolled NAME VALUE: VALUE's merge is published and the notifier has said so
rolled() {
	cr "$1" | jq -e --arg h "$(hash_of "$2")" '.status.contentHash == $h and
	    .status.observedGeneration == .metadata.generation and
	    ([.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length) == 1 and
	    ([.status.conditions[]? | select(.type == "PodsNotified" and .status != "Unknown")] | length) == 1 and
	    ([.status.conditions[]? | select(.type == "Syncing" and .status == "True")] | length) == 1' >/dev/null
}
# settled: the status applies counted stayed the same over five polls in a
# row (the last stage's write and its recheck have landed)
settled() {
	_a=$(applies)
	if [ "$_a" = "${_last:-}" ]; then _same=$((_same + 1)); else _same=0; fi
	_last=$_a
	[ "$_same" -ge 5 ]
}
quiet() { _last=; _same=0; wait_for "$(scaled 20)" settled; }

kube_decod_start

# --- a rollout: one manager; applies per CR per change ---------------------------
mkdf one 1
check "a new CR rolls out" wait_for "$(scaled 30)" rolled one 1
is "$(managers one)" "decod" "after a rollout the status has one field manager: decod"
# each edit: the applies the API server counted between the edit and the CR
# showing the rollout (every stage's fragment).  Each stage writes its
# fragment once or twice per change (the fetcher's and the renderer's Syncing
# moves, the publisher's Ready, the notifier's PodsNotified); the one writer
# holds the CR while the journal says an earlier stage still has the change
# and the notifier's word is not in, so a change is one apply
# edits NAME VALUE...: each value in turn; $per the applies each cost
edits() {
	_n=$1; shift
	per=""
	for v in "$@"; do
		a0=$(applies)
		k patch decofile "$_n" --type merge -p "{\"spec\":{\"inline\":{\"value\":{\"v\":$v}}}}" >/dev/null
		wait_for "$(scaled 30)" rolled "$_n" $v || bail "edit $v did not roll out"
		quiet || bail "the status applies did not settle"
		per="$per $(($(applies) - a0))"
	done
}
l0=$(wc -l <"$T/decod.log")
edits one 2 3 4
[ "$per" = " 1 1 1" ] ||
	tail -n +"$((l0 + 1))" "$T/decod.log" | grep -E 'name=one|sites-own/one' |
	    grep -v 'msg=doorbell' | cut -c1-300 | sed 's/^/# /'
diag "status applies per change (three edits):$per"
is "$per" " 1 1 1" "each change (fetched, rendered, published, rolled out): exactly one status apply"
is "$(managers one)" "decod" "... still one manager"

# --- a burst of fragments of several stages is one apply ---------------------------
quiet || bail "the status applies did not settle"
a0=$(applies)
l0=$(wc -l <"$T/decod.log")
"$TOOL" $C burst $NS one Burst True Probe "burst probe" fetcher renderer publisher notifier ||
    bail "testtool burst failed"
burst_on() {
	[ "$(cr one | jq '[.status.conditions[] | select(.type | startswith("Burst-"))] | length')" = 4 ]
}
check "four stages' fragments written back to back reach the CR" wait_for 10 burst_on
nb=$(($(applies) - a0))
is "$nb" 1 "... in one status apply (coalesced within 10 ms)"
[ "$nb" = 1 ] ||
	tail -n +"$((l0 + 1))" "$T/decod.log" | grep -E 'status apply|name=one|sites-own/one' |
	    grep -v 'msg=doorbell' | sed 's/^/# /'

# --- a condition and a field added by hand stay ------------------------------------
k patch decofile one --subresource=status --type=json -p '[
  {"op":"add","path":"/status/conditions/-","value":{"type":"HandMade","status":"True","reason":"ByHand","message":"a person wrote this","lastTransitionTime":"2026-01-01T00:00:00Z"}},
  {"op":"add","path":"/status/s3URL","value":"https://by.hand/x"}]' >/dev/null ||
    bail "cannot add a condition by hand"
is "$(managers one)" "decod,kubectl-patch" "the person's patch has its own manager"
a0=$(applies)
k patch decofile one --type merge -p '{"spec":{"inline":{"value":{"v":5}}}}' >/dev/null
check "a change rolls out after the hand edit" wait_for "$(scaled 30)" rolled one 5
[ "$(($(applies) - a0))" -ge 1 ]; ok $? "... through decod's applies"
is "$(cr one | jq -r '.status.conditions[] | select(.type=="HandMade") | .message')" \
    "a person wrote this" "the hand-added condition stays (decod's one manager does not own it)"
is "$(cr one | jq -r .status.s3URL)" "https://by.hand/x" "... and the hand-added field"
is "$(managers one)" "decod,kubectl-patch" "... and the person's manager keeps them"

# --- a restart writes nothing --------------------------------------------------------
kube_decod_stop
a0=$(applies)
kube_decod_start
check "restarted: the front door caught up" wait_for "$(scaled 30)" \
    grep -q 'Kubernetes front door caught up' "$T/decod.log"
check "... having written no status" grep -q 'front door caught up.*status_writes=0' "$T/decod.log"
is "$(($(applies) - a0))" 0 "the API server counted no status apply across the restart"

# --- adoption from the old managers ---------------------------------------------------
kube_decod_stop
mkdf old 1
SP="$KUBE_URL/apis/deco.sites/v1alpha1/namespaces/$NS/decofiles/old/status"
seed() { # seed MANAGER TYPE STATUS: a condition applied under MANAGER, as decod <= 0.x did
	adm -X PATCH -H 'Content-Type: application/apply-patch+yaml' "$SP?fieldManager=$1&force=true" \
	    -d "{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\",\"metadata\":{\"name\":\"old\",\"namespace\":\"$NS\"},\"status\":{\"conditions\":[{\"type\":\"$2\",\"status\":\"$3\",\"reason\":\"Old\",\"message\":\"old writer\",\"lastTransitionTime\":\"2025-01-01T00:00:00Z\"}]}}" >/dev/null
}
seed decod-fetcher Syncing Unknown && seed decod-renderer Rendered True &&
    seed decod-publisher Ready False && seed decod-notifier PodsNotified Unknown ||
    bail "cannot seed the old managers"
# the Go operator: an update of the whole status (operation Update), manager "manager"
cr old | jq 'del(.metadata.managedFields) | .status.configMapName = "decofile-old" | .status.sourceType = "inline"' >"$T/op.json"
adm -X PUT -H 'Content-Type: application/json' "$SP?fieldManager=manager" --data-binary @"$T/op.json" \
    >/dev/null || bail "cannot seed the operator's status update"
is "$(managers old)" "decod-fetcher,decod-notifier,decod-publisher,decod-renderer,manager" \
    "seeded: the CR's status written by the four old managers and the Go operator"
p0=$(requests PATCH "")
kube_decod_start
check "decod adopts it" wait_for "$(scaled 30)" grep -q 'CR adopted.*decofiles/sites-own/old' "$T/decod.log"
check "... and rolls it out" wait_for "$(scaled 30)" rolled old 1
is "$(managers old)" "decod" "no stale managedFields: the status has the one manager decod"
is "$(cr old | jq '[.metadata.managedFields[] | select(.manager | startswith("decod-") or . == "manager")] | length')" 0 \
    "... and no entry of an old manager is left anywhere"
is "$(($(requests PATCH "") - p0))" 1 "one JSON patch of the CR adopted it"
is "$(grep -c 'CR adopted' "$T/decod.log")" 1 "... once: only the old CR needed it"
is "$(cr old | jq -r '.status.conditions[] | select(.type=="Ready") | .status')" "True" \
    "decod's Ready replaced the old publisher's"
kube_decod_stop
if grep -q "$TOKEN" "$T/decod.log"; then ok 1 "token never logged"; else ok 0 "token never logged"; fi

# --- without a notifier: the publisher's word is the last ----------------------------
# a pipeline that ends at the publisher (stages without notifier): Ready and
# its fields are the change's last word, so a change is one apply, and Ready
# shows without waiting for the hold's cap
# (log_level = debug above: each apply's log line names its reason and what
# differed, shown on a failure)
printf 'stages = fetcher renderer publisher\n' >>"$T/decod.conf"
kube_decod_start
a0=$(applies)
mkdf solo 1
# published NAME VALUE: VALUE's merge is published (Ready=True, its hash, this generation)
published() {
	cr "$1" | jq -e --arg h "$(hash_of "$2")" '.status.contentHash == $h and
	    .status.observedGeneration == .metadata.generation and
	    ([.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length) == 1 and
	    ([.status.conditions[]? | select(.type == "Syncing" and .status == "True")] | length) == 1' >/dev/null
}
t0=$(date +%s)
check "without a notifier: a new CR is published" wait_for "$(scaled 30)" published solo 1
quiet || bail "the status applies did not settle"
is "$(($(applies) - a0))" 1 "... its creation (fetched, rendered, published) in one status apply"
[ $(($(date +%s) - t0)) -lt 60 ]; ok $? "... and Ready did not wait for the hold's 60 s cap"
is "$(cr solo | jq '[.status.conditions[]? | select(.type == "PodsNotified")] | length')" 0 \
    "... no PodsNotified: no notifier runs"
rolled() { published "$@"; }
edits solo 2 3
diag "status applies per change without a notifier (two edits):$per"
is "$per" " 1 1" "each change without a notifier: exactly one status apply"
if [ "$per" != " 1 1" ]; then
	grep -E 'name=solo|decofiles/sites-own/solo' "$T/decod.log" | grep -v 'msg=doorbell' |
	    cut -c1-300 | sed 's/^/# /'
fi
kube_decod_stop
grep 'Kubernetes front door stopping' "$T/decod.log" | sed 's/^/# /'
check "decod's own count: every apply of this run made when a change had passed its last stage" \
    grep -q 'front door stopping.*status_applies="settled=3,failure=0,hold_expired=0,' "$T/decod.log"
done_testing
