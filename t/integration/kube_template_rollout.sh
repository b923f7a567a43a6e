#!/bin/sh
# kube_template_rollout - a DecofileTemplate CR's rollout status through a
# real API server, decod (fetcher with the Kubernetes front door, renderer,
# publisher; file target) running as deploy/'s ServiceAccount: a template
# generation that the canary site refuses to render (a duplicate block)
# halts the rollout, and the template CR says so: `kubectl wait
# --for=condition=RolloutHalted`, the message naming the site, and
# status.rollout {generation, state} written by decod's field manager.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOD=$top_builddir/decod
DECOCTL=$(bin decoctl)
[ -x "$DECOD" ] || bail "decod not built"
command -v jq >/dev/null || skip_all "jq not installed"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kubectl_admin create namespace sites-loja >/dev/null
kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"
kube_decod_conf <<CONF
store = local:$T/store
stages = fetcher renderer publisher
rescan_interval = 200ms
CONF
published() { cat "$T/state/published/sites-loja/loja/decofile.json" 2>/dev/null; }
holds() { published | grep -q "$1"; }
tcr() { kubectl_admin -n sites-loja get decofiletemplate base -o json "$@"; }

"$DECOD" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
track_pid $!
wait_for "$(scaled 20)" sh -c "[ \$(\"$DECOCTL\" -c '$T/decod.conf' stages 2>/dev/null | grep -c READY) -eq 3 ]"
ok $? "decod: three stages READY"

kubectl_admin apply --server-side -f - >/dev/null <<EOT
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: sites-loja}
spec:
  source: inline
  inline: {value: {Theme: {label: g1}}}
  rollout: {canary: 1, waves: 1, pause: 1s, maxFailed: 0}
---
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: loja, namespace: sites-loja}
spec:
  source: inline
  target: file
  templates: [base]
  inline: {value: {Header: {title: "Loja"}}}
EOT
ok $? "kubectl apply --server-side a DecofileTemplate with spec.rollout and a Decofile"
wait_for "$(scaled 40)" holds '"label":"g1"'
ok $? "the site publishes generation 1"

# generation 2: Header and Header.json are one block name, the render refuses it
kubectl_admin -n sites-loja patch decofiletemplate base --type merge \
    -p '{"spec":{"inline":{"value":{"Theme":{"label":"g2"},"Header":{"a":1},"Header.json":{"b":2}}}}}' >/dev/null
ok $? "a broken generation 2"
kubectl_admin -n sites-loja wait --for=condition=RolloutHalted decofiletemplate/base \
    --timeout="$(scaled 60)s" >/dev/null
ok $? "kubectl wait --for=condition=RolloutHalted"
case "$(tcr | jq -r '.status.conditions[] | select(.type=="RolloutHalted") | .message')" in
*"wave 0 (canary)"*loja*"render error"*) ok 0 "the message names the wave, the site and the render error" ;;
*) ok 1 "the message names the wave, the site and the render error: $(tcr | jq -c .status)" ;;
esac
is "$(tcr | jq -c '[.status.rollout.generation, .status.rollout.state]')" '[2,"halted"]' \
    "status.rollout on the CR"
is "$(tcr --show-managed-fields | jq -r '.metadata.managedFields[] | select(.subresource=="status") | .manager' | sort -u | tr '\n' ' ')" \
    "decod " "one field manager writes the status: decod"
ok "$(holds '"label":"g1"'; echo $?)" "the site keeps generation 1 live"

done_testing
