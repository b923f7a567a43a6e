#!/bin/sh
# metrics_alerts.sh - deploy/components/metrics renders (kubectl kustomize)
# with every container on its metrics_listen port in decod's fixed order and
# a ServiceMonitor over them; deploy/monitoring/decod-alerts.yaml is a valid rule
# file (`promtool check rules` on its spec) and its alerts fire when they
# should and not otherwise (`promtool test rules` over synthetic series:
# a decofile not Ready for 15 minutes, a fetcher failing every poll, a stage
# restarting, a stage down), with the series named as decod exports them.
. "$top_srcdir/t/lib/common.sh"

command -v promtool >/dev/null || skip_all "promtool is not installed (Debian's prometheus)"
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed"
RULES=$top_srcdir/deploy/monitoring/decod-alerts.yaml

python3 -c 'import yaml, sys
d = yaml.safe_load(open(sys.argv[1]))
assert d["kind"] == "PrometheusRule" and d["apiVersion"] == "monitoring.coreos.com/v1"
yaml.safe_dump(d["spec"], open(sys.argv[2], "w"))' "$RULES" "$T/decod.rules.yml"
ok $? "decod-alerts.yaml is a PrometheusRule; its spec extracted"
promtool check rules "$T/decod.rules.yml" >"$T/check.out" 2>&1
ok $? "promtool check rules passes ($(tr '\n' ' ' <"$T/check.out" | head -c 200))"

# every series the rules use is one decod exports (doc/metrics.md lists them)
for s in $(grep -o 'decod_[a-z_]*' "$RULES" | sort -u); do
	grep -q "\`$s" "$top_srcdir/doc/metrics.md"
	ok $? "$s is a series doc/metrics.md lists"
done

cat > "$T/test.yml" <<'YAML'
rule_files: [decod.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'decod_decofile_ready{namespace="sites-loja",name="loja",job="decod",instance="p"}'
        values: '0x30'
      - series: 'decod_decofile_ready{namespace="sites-loja",name="ok",job="decod",instance="p"}'
        values: '1x30'
      - series: 'decod_decofile_ready{namespace="sites-loja",name="blip",job="decod",instance="p"}'
        values: '0x5 1x25'
      - series: 'decod_items_total{stage="fetcher",result="retry",job="decod",instance="f"}'
        values: '0+2x40'
      - series: 'decod_items_total{stage="fetcher",result="done",job="decod",instance="f"}'
        values: '0x40'
      - series: 'decod_items_total{stage="fetcher",result="retry",job="decod",instance="g"}'
        values: '0+2x40'
      - series: 'decod_items_total{stage="fetcher",result="unchanged",job="decod",instance="g"}'
        values: '0+5x40'
      - series: 'decod_stage_restarts_total{stage="renderer",job="decod",instance="s"}'
        values: '0 1 2 3 3 3 3 3 3 3 3'
      - series: 'decod_stage_restarts_total{stage="publisher",job="decod",instance="s"}'
        values: '0 1 1 1 1 1 1 1 1 1 1'
      - series: 'decod_stage_up{stage="notifier",job="decod",instance="s"}'
        values: '0x10'
      - series: 'decod_stage_up{stage="fetcher",job="decod",instance="s"}'
        values: '1x10'
      - series: 'decod_items_total{stage="renderer",result="failed",job="decod",instance="r"}'
        values: '0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'
    alert_rule_test:
      - eval_time: 10m
        alertname: DecodRolloutStuck
        exp_alerts: []
      - eval_time: 20m
        alertname: DecodRolloutStuck
        exp_alerts:
          - exp_labels: {severity: warning, namespace: sites-loja, name: loja, job: decod, instance: p}
            exp_annotations:
              summary: "Decofile sites-loja/loja is not Ready"
              description: "The decofile's Ready condition has been False for 15 minutes: its last version is not published. `decoctl describe loja -n sites-loja` gives the reason."
      - eval_time: 30m
        alertname: DecodFetchesFailing
        exp_alerts:
          - exp_labels: {severity: warning, job: decod, instance: f}
            exp_annotations:
              summary: "decod's fetcher on f fails every poll"
              description: "Every poll of the last 10 minutes failed and none succeeded: a source (git remote, GitHub, registry) is unreachable or refuses its credentials. `decoctl status` shows the failing decofiles."
      - eval_time: 5m
        alertname: DecodStageRestarting
        exp_alerts:
          - exp_labels: {severity: warning, stage: renderer, job: decod, instance: s}
            exp_annotations:
              summary: "decod stage renderer keeps restarting"
              description: "The supervisor restarted renderer more than twice in 15 minutes. Its log says why it died (journalctl -u decod)."
      - eval_time: 8m
        alertname: DecodStageDown
        exp_alerts:
          - exp_labels: {severity: critical, stage: notifier, job: decod, instance: s}
            exp_annotations:
              summary: "decod stage notifier is not running"
              description: "notifier has not been READY for 5 minutes under the supervisor (backing off, stopped, or standing by)."
      - eval_time: 10m
        alertname: DecodItemsFailing
        exp_alerts:
          - exp_labels: {severity: warning, stage: renderer, result: failed, job: decod, instance: r}
            exp_annotations:
              summary: "decod's renderer parked failed items"
              description: "Work items failed for good in the last 15 minutes; `decoctl journal` lists them with their errors."
      - eval_time: 25m
        alertname: DecodItemsFailing
        exp_alerts: []
YAML
(cd "$T" && promtool test rules test.yml) >"$T/test.out" 2>&1
st=$?
ok $st "promtool test rules: stuck rollout after 15 min (not a blip), a fetcher failing every poll (not one that also succeeds), a restarting stage (not one restart), a stage down"
[ $st -eq 0 ] || sed 's/^/# /' "$T/test.out" | head -40

# the pod's component: each container its own port, as metrics_addr orders them
if command -v kubectl >/dev/null; then
	mkdir -p "$T/overlay"
	R=$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
	    "$(cd "$top_srcdir/deploy" && pwd)" "$T/overlay")
	printf 'resources: [%s]\ncomponents: [%s/components/metrics]\n' "$R" "$R" \
	    >"$T/overlay/kustomization.yaml"
	kubectl kustomize "$T/overlay" >"$T/rendered.yaml" 2>"$T/kz.err"
	ok $? "deploy/ with components/metrics renders ($(head -c 200 "$T/kz.err"))"
	python3 - "$T/rendered.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
order = ["fetcher", "renderer", "publisher", "notifier", "webhook", "acl", "web"]
dep = [d for d in docs if d["kind"] == "Deployment"][0]
ports = {}
for c in dep["spec"]["template"]["spec"]["containers"]:
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    assert env.get("METRICS_LISTEN") == "0.0.0.0:9100", c["name"]
    p = [x for x in c["ports"] if x["name"].startswith("m-")]
    assert p[0]["containerPort"] == 9101 + order.index(c["name"]), c["name"]
    ports[p[0]["name"]] = p[0]["containerPort"]
svc = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "decod-metrics"][0]
assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == ports
sm = [d for d in docs if d["kind"] == "ServiceMonitor"][0]
assert sorted(e["port"] for e in sm["spec"]["endpoints"]) == sorted(ports)
assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
PY
	ok $? "every container serves metrics on metrics_listen's port for it; the Service and ServiceMonitor name them all"
fi
done_testing
