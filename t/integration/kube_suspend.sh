#!/bin/sh
# kube_suspend - the hold of a Decofile CR through kubectl, against a real
# API server, decod (fetcher, renderer, publisher; file target) running as
# deploy/'s ServiceAccount: `kubectl patch` of spec.suspend stops an edit
# from publishing (the Suspended printer column says so) and setting it
# false publishes it; `kubectl annotate deco.sites/rollback-to=HASH`
# publishes that earlier version again, and decod consumes the annotation
# and sets spec.suspend on the CR, so the rollback holds.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOD=$top_builddir/decod
DECOCTL=$(bin decoctl)
[ -x "$DECOD" ] || bail "decod not built"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kubectl_admin create namespace sites-loja >/dev/null
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"
kube_decod_conf <<CONF
store = local:$T/store
stages = fetcher renderer publisher
rescan_interval = 200ms
CONF
ctl() { "$DECOCTL" -c "$T/decod.conf" -n sites-loja "$@"; }
cr() { kubectl_admin -n sites-loja get decofile loja -o json; }
published() { cat "$T/state/published/sites-loja/loja/decofile.json" 2>/dev/null; }
holds() { published | grep -q "$1"; }
hash() { ctl status loja -o json | jq -r '.[0].contentHash'; }
cond_reason() { # cond_reason REASON: the CR's Syncing condition has it
	cr | jq -e --arg r "$1" '.status.conditions[] | select(.type=="Syncing" and .reason==$r)' >/dev/null
}
edit() { # edit TITLE: the CR's inline Header title
	kubectl_admin -n sites-loja patch decofile loja --type merge \
	    -p "{\"spec\":{\"inline\":{\"value\":{\"Header\":{\"title\":\"$1\"}}}}}" >/dev/null
}

"$DECOD" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
track_pid $!
wait_for "$(scaled 20)" sh -c "[ \$(\"$DECOCTL\" -c '$T/decod.conf' stages 2>/dev/null | grep -c READY) -eq 3 ]"
ok $? "decod: three stages READY"

kubectl_admin apply --server-side -f - >/dev/null <<EOF
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: loja, namespace: sites-loja}
spec:
  source: inline
  target: file
  inline: {value: {Header: {title: "Loja São Paulo v1"}}}
EOF
ok $? "kubectl apply the Decofile"
wait_for "$(scaled 30)" holds "São Paulo v1"
ok $? "v1 is published"
V1=$(hash)
edit "Loja São Paulo v2"
wait_for "$(scaled 30)" holds "São Paulo v2"
ok $? "an edit publishes v2"

# --- spec.suspend through kubectl ---------------------------------------------
kubectl_admin -n sites-loja patch decofile loja --type merge -p '{"spec":{"suspend":true}}' >/dev/null
ok $? "kubectl patch spec.suspend=true (the CRD accepts it)"
check "the Suspended printer column says true" wait_for 10 sh -c \
    "kubectl --kubeconfig '$KUBE_DIR/admin.kubeconfig' -n sites-loja get decofile loja | grep -q 'true'"
wait_for "$(scaled 20)" cond_reason Suspended
ok $? "Syncing=False Suspended shows on the CR"
edit "Loja São Paulo v3"
# the fetcher has seen the edit when the mirror has it and a sync is answered
wait_for "$(scaled 10)" sh -c "\"$DECOCTL\" -c '$T/decod.conf' -n sites-loja get df loja -o json | grep -q 'Paulo v3'"
ok $? "the edit is mirrored into the store"
ctl sync loja >/dev/null
wait_for "$(scaled 20)" sh -c "\"$DECOCTL\" -c '$T/decod.conf' -n sites-loja get df loja -o json | grep -q lastHandledSyncAt"
ok $? "the fetcher answered a sync while suspended"
check "suspended: the edit is not published (still v2)" holds "São Paulo v2"
kubectl_admin -n sites-loja patch decofile loja --type merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for "$(scaled 30)" holds "São Paulo v3"
ok $? "spec.suspend=false: the edit made while suspended is published"

# --- a rollback through kubectl -------------------------------------------------
kubectl_admin -n sites-loja annotate decofile loja "deco.sites/rollback-to=$(echo "$V1" | cut -c1-12)" >/dev/null
ok $? "kubectl annotate deco.sites/rollback-to"
wait_for "$(scaled 30)" holds "São Paulo v1"
ok $? "the rollback published v1 again"
is "$(hash)" "$V1" "status: v1's content hash"
wait_for "$(scaled 10)" sh -c "kubectl --kubeconfig '$KUBE_DIR/admin.kubeconfig' -n sites-loja get decofile loja -o json | jq -e '.spec.suspend == true and (.metadata.annotations[\"deco.sites/rollback-to\"] == null)' >/dev/null"
ok $? "decod consumed the annotation and set spec.suspend on the CR"
check "held: still v1 while the CR says v3" holds "São Paulo v1"
check "the fetcher journaled the rollback" sh -c \
    "sqlite3 -readonly '$T/state/journal.db' \"SELECT detail FROM audit WHERE stage='fetcher' AND action='rollback'\" | grep -q 'to=$V1'"
kubectl_admin -n sites-loja annotate decofile loja "deco.sites/rollback-to=0123abcd" >/dev/null
wait_for "$(scaled 20)" cond_reason RollbackFailed
ok $? "an unknown hash: Syncing=False RollbackFailed on the CR"
check "... and v1 stays" holds "São Paulo v1"
kubectl_admin -n sites-loja patch decofile loja --type merge -p '{"spec":{"suspend":false}}' >/dev/null
wait_for "$(scaled 30)" holds "São Paulo v3"
ok $? "resumed: the newest (v3) is back"

# decoctl does not edit a CR's mirror: it says to use kubectl
ctl suspend loja --reason "from the host" >"$T/m.out" 2>&1
is "$?" 1 "decoctl suspend of a CR's mirror exits 1"
check "... and says to change the CR with kubectl" grep -q "mirrors the Decofile CR sites-loja/loja: change the CR with kubectl" "$T/m.out"
is "$(cr | jq -r '.spec.suspend')" "false" "... nothing changed on the CR"

done_testing
