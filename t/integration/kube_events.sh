#!/bin/sh
# kube_events - Kubernetes Events on the CRs, against a real API server,
# decod (supervisor and four stages) as deploy/'s ServiceAccount (RBAC:
# create and patch events.k8s.io events, nothing more): a rollout shows a
# Normal Published Event with reportingController deco.sites/decod, read
# back through the core view (involvedObject.name) and events.k8s.io
# (regarding.name); a broken block is a Warning ValidationError naming the
# file; a source failing again and again (a git URL to a closed port,
# flipped with a working source) is one Event whose series.count grows,
# not one per failure, and so is one failing on and on (status.fetchFailures
# counts it); `kubectl describe decofile` shows the Events.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOD=$top_builddir/decod
[ -x "$DECOD" ] || bail "decod not built"
command -v jq >/dev/null || skip_all "jq not installed"

NS=sites-ev
kube_decod_setup $NS <<CONF
rescan_interval = 200ms
notify_timeout = 2s
notify_attempts = 1
CONF

k() { kubectl_admin -n $NS "$@"; }
# evs NAME: the events.k8s.io Events regarding NAME, as JSON (an array)
evs() { k get events.events.k8s.io --field-selector "regarding.name=$1" -o json | jq -c .items; }
# nev NAME REASON: how many Events regarding NAME have REASON
nev() { evs "$1" | jq --arg r "$2" '[.[] | select(.reason == $r)] | length'; }
has_ev() { [ "$(nev "$1" "$2")" -ge 1 ]; }

kube_decod_start

# --- a rollout: Published ------------------------------------------------------------
mkdir -p "$T/site"
printf '{"title":"loja"}\n' >"$T/site/Home.json"
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"%s"},"spec":{"source":"dir","target":"configmap","dir":{"path":"%s"}}}' \
    $NS "$T/site" | kubectl_admin apply --server-side -f - >/dev/null
check "a rollout: a Published Event on the Decofile" wait_for "$(scaled 30)" has_ev loja Published
e=$(evs loja | jq -c '[.[] | select(.reason == "Published")][0]')
is "$(echo "$e" | jq -r .reportingController)" "deco.sites/decod" "... reportingController deco.sites/decod"
is "$(echo "$e" | jq -r .type)" "Normal" "... type Normal"
is "$(echo "$e" | jq -r .regarding.kind)/$(echo "$e" | jq -r .regarding.apiVersion)" \
    "Decofile/deco.sites/v1alpha1" "... regarding the Decofile"
is "$(echo "$e" | jq -r .regarding.uid)" "$(k get decofile loja -o jsonpath='{.metadata.uid}')" \
    "... its uid"
[ -n "$(echo "$e" | jq -r '.reportingInstance // empty')" ]; ok $? "... a reportingInstance"
echo "$e" | jq -r .eventTime | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z$'
ok $? "... eventTime in RFC 3339 with microseconds"
core() { k get events --field-selector "involvedObject.name=$1" -o json; }
core loja | jq -e '[.items[] | select(.reason == "Published" and
    .reportingComponent == "deco.sites/decod" and .involvedObject.kind == "Decofile")] | length >= 1' \
    >/dev/null
ok $? "kubectl get events --field-selector involvedObject.name=loja shows it"

# --- a broken block: a Warning ValidationError naming the file --------------------------
printf '{\n  "title": "broken",\n  "oops"\n}\n' >"$T/site/Bad.json"
check "a broken block: a ValidationError Event" wait_for "$(scaled 30)" has_ev loja ValidationError
e=$(evs loja | jq -c '[.[] | select(.reason == "ValidationError")][0]')
is "$(echo "$e" | jq -r .type)" "Warning" "... type Warning"
echo "$e" | jq -r .note | grep -q 'Bad'
ok $? "... its note names the file ($(echo "$e" | jq -r .note | head -c 120))"
check "kubectl describe decofile loja shows the Events" sh -c \
    "kubectl --kubeconfig '$KUBE_DIR/admin.kubeconfig' -n $NS describe decofile loja |
     sed -n '/^Events:/,\$p' | grep -q ValidationError"
check "... and the Published one" sh -c \
    "kubectl --kubeconfig '$KUBE_DIR/admin.kubeconfig' -n $NS describe decofile loja |
     sed -n '/^Events:/,\$p' | grep -q Published"

# --- a source failing again and again: one Event, its series counts -------------------
CLOSED=$(free_port)
BAD="{\"spec\":{\"source\":\"git\",\"inline\":null,\"git\":{\"url\":\"http://127.0.0.1:$CLOSED/x.git\",\"ref\":\"main\",\"period\":\"1s\"}}}"
GOOD='{"spec":{"source":"inline","git":null,"inline":{"value":{"v":{"a":1}}}}}'
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"flaky","namespace":"%s"},"spec":{"source":"inline","target":"configmap","inline":{"value":{"v":{"a":1}}}}}' \
    $NS | kubectl_admin apply --server-side -f - >/dev/null
syncing() { # syncing NAME STATUS: the CR's Syncing condition has STATUS
	[ "$(k get decofile "$1" -o json | jq -r '.status.conditions[]? | select(.type=="Syncing") | .status')" = "$2" ]
}
wait_for "$(scaled 30)" syncing flaky True || bail "flaky did not sync"
FAILS=5
i=0
while [ $i -lt $FAILS ]; do
	k patch decofile flaky --type merge -p "$BAD" >/dev/null
	wait_for "$(scaled 30)" syncing flaky False || bail "failure $i not seen"
	k patch decofile flaky --type merge -p "$GOOD" >/dev/null
	wait_for "$(scaled 30)" syncing flaky True || bail "recovery $i not seen"
	i=$((i + 1))
done
diag "Syncing failed $FAILS times"
series() { evs flaky | jq '[.[] | select(.reason == "FetchError") | .series.count // 1] | max // 0'; }
counted() { [ "$(series)" -ge 2 ]; }
# the series is patched at most every 30 s
check "the failing source's Event counts the repeats (series.count)" wait_for "$(scaled 45)" counted
diag "FetchError Events: $(nev flaky FetchError), series.count $(series)"
n=$(nev flaky FetchError)
[ "$n" -ge 1 ] && [ "$n" -le 3 ]; ok $? "$FAILS failures: at most 3 FetchError Events ($n)"
# a source that keeps failing, every second: the fetcher says so once, one Event
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"steady","namespace":"%s"},"spec":{"source":"git","target":"configmap","git":{"url":"http://127.0.0.1:%s/y.git","ref":"main","period":"1s"}}}' \
    $NS "$CLOSED" | kubectl_admin apply --server-side -f - >/dev/null
tries() { grep -c 'name=steady .*reason=FetchError' "$T/decod.log"; }
check "steady: the source fails again and again" wait_for "$(scaled 30)" sh -c "[ \$(grep -c 'name=steady .*reason=FetchError' '$T/decod.log') -ge 4 ]"
is "$(nev steady FetchError)" 1 "$(tries) failures in a row: one FetchError Event"
# each failure is an observation: status.fetchFailures counts them and the
# Event's series follows (patched at most every 30 s)
failures() { k get decofile steady -o json | jq -r '.status.fetchFailures // 0'; }
manyfail() { [ "$(failures)" -ge 4 ]; }
check "steady: status.fetchFailures counts the failures in a row" wait_for "$(scaled 30)" manyfail
sseries() { evs steady | jq '[.[] | select(.reason == "FetchError") | .series.count // 1] | max // 0'; }
scounted() { [ "$(sseries)" -ge 3 ]; }
check "steady: the one Event's series.count follows the failures" wait_for "$(scaled 75)" scounted
diag "steady: $(tries) failures logged, status.fetchFailures $(failures), series.count $(sseries)"
is "$(nev steady FetchError)" 1 "still one FetchError Event for steady"
k patch decofile steady --type merge -p "$GOOD" >/dev/null
wait_for "$(scaled 30)" syncing steady True || bail "steady did not recover"
nofail() { [ "$(k get decofile steady -o json | jq -r '.status | has("fetchFailures")')" = false ]; }
check "a good fetch removes status.fetchFailures" wait_for "$(scaled 15)" nofail
check "decod logged no refused Event" sh -c "! grep -q 'cannot write a Kubernetes Event' '$T/decod.log'"

kube_decod_stop
done_testing
