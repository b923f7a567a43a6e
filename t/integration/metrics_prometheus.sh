#!/bin/sh
# metrics_prometheus.sh - every daemon's metrics read back through a real
# Prometheus (Debian's, on loopback, with this test's own config): decod
# with its four stages under the supervisor on metrics_listen and the next
# ports, a site rolled out from a git remote to a replica, then the series
# queried over Prometheus's HTTP API (items done by every stage, the step
# histograms, Ready, the publish time, restarts and up, the journal's
# size); every exposition passes `promtool check metrics`; then the same
# stages run alone (per-stage mode, no supervisor) serve on the same ports
# and are scraped again.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
STAGES="fetcher renderer publisher notifier"
for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
for s in $STAGES; do [ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"; done
command -v prometheus >/dev/null || skip_all "prometheus is not installed (Debian's prometheus)"
command -v promtool >/dev/null || skip_all "promtool is not installed"

# free_ports N: a port P with P..P+N-1 all free on 127.0.0.1 now
free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
n = int(sys.argv[1])
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p + n > 65535:
        continue
    socks = []
    try:
        for i in range(n):
            t = socket.socket(); t.bind(("127.0.0.1", p + i)); socks.append(t)
    except OSError:
        continue
    finally:
        for t in socks: t.close()
    print(p); break
PY
}

MBASE=$(free_ports 5)
[ -n "$MBASE" ] || bail "no five free ports in a row"
mkdir -p "$T/libexec"
for s in $STAGES; do ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"; done
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
poll_period = 1s
notify_timeout = 2s
notify_attempts = 2
metrics_listen = 127.0.0.1:$MBASE
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-loja "$@"; }
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }

git_work "$T/work"
git_commit "$T/work" .deco/blocks/Header.json '{"title": "first"}'
git_bare "$T/work" loja
git_serve

"$DECOD" 2>"$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for "$(scaled 15)" ready4
ok $? "decod: four stages READY"

# decoctl stages gives each address: the supervisor's, then +1..+4 in order
"$DECOCTL" stages -o json >"$T/stages.json"
python3 - "$T/stages.json" "$MBASE" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); b = int(sys.argv[2])
want = {"fetcher": 1, "renderer": 2, "publisher": 3, "notifier": 4}
assert v["metrics"] == "127.0.0.1:%d" % b, v["metrics"]
for s in v["stages"]:
    assert s["metrics"] == "127.0.0.1:%d" % (b + want[s["name"]]), s
PY
ok $? "decoctl stages -o json: supervisor on metrics_listen, stages on the next ports in order"
"$DECOCTL" stages | grep -q "^fetcher .*127.0.0.1:$((MBASE + 1))\$"
ok $? "decoctl stages shows a METRICS column"

# a replica, then the site
DECO_RELEASE_RELOAD_TOKEN=tok-r1 "$SITE" --port 0 --register "local:$T/store" \
    --namespace sites-loja --deployment loja --id r1 --ttl 30 >"$T/r1.out" 2>"$T/r1.err" &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/r1.out" || bail "the replica did not start"
cat > "$T/loja.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja
  namespace: sites-loja
spec:
  source: git
  git:
    url: $GIT_BASE/loja.git
    ref: main
    dir: .deco/blocks
    period: 1s
YAML
ctl apply -f "$T/loja.yaml" >/dev/null
ok $? "apply the Decofile"
C1=$(git -C "$T/work" rev-parse HEAD)
ctl wait loja --for "commit:$C1" --timeout 60s >/dev/null 2>&1
ok $? "the rollout finishes (decoctl wait --for commit)"

# Prometheus on loopback, scraping the five targets every second
PPORT=$(free_port)
cat > "$T/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: decod
    static_configs:
      - targets: ['127.0.0.1:$MBASE']
        labels: {program: decod}
      - targets: ['127.0.0.1:$((MBASE + 1))']
        labels: {program: fetcher}
      - targets: ['127.0.0.1:$((MBASE + 2))']
        labels: {program: renderer}
      - targets: ['127.0.0.1:$((MBASE + 3))']
        labels: {program: publisher}
      - targets: ['127.0.0.1:$((MBASE + 4))']
        labels: {program: notifier}
YAML
promtool check config "$T/prometheus.yml" >"$T/promtool-config.out" 2>&1 ||
    bail "promtool rejects the test's own config: $(cat "$T/promtool-config.out")"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
    --web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.log" 2>&1 &
track_pid $!
wait_for "$(scaled 30)" curl -sf "http://127.0.0.1:$PPORT/-/ready" ||
    bail "prometheus did not get ready: $(tail -5 "$T/prometheus.log")"

# q EXPR: the single value of an instant query ("" when no series, "many" if several)
q() {
	curl -s --max-time 5 -G "http://127.0.0.1:$PPORT/api/v1/query" \
	    --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print("" if not r else r[0]["value"][1] if len(r) == 1 else "many")'
}
# has EXPR: the query gives one series (a filter such as "> 0" keeps it or not)
has() { [ -n "$(q "$1")" ] && [ "$(q "$1")" != many ]; }

wait_for "$(scaled 20)" has 'count(up{job="decod"} == 1) == 5'
ok $? "prometheus scrapes all five targets (up == 1)"
for s in $STAGES; do
	wait_for "$(scaled 10)" has "sum(decod_items_total{stage=\"$s\",result=\"done\",program=\"$s\"}) > 0"
	ok $? "decod_items_total{stage=\"$s\",result=\"done\"} > 0, from the $s's own port"
done
for step in fetch render publish notify; do
	wait_for "$(scaled 10)" has "sum(decod_${step}_duration_seconds_count) > 0"
	ok $? "decod_${step}_duration_seconds histogram has observations"
done
wait_for "$(scaled 10)" has 'decod_decofile_ready{namespace="sites-loja",name="loja"} == 1'
ok $? "decod_decofile_ready{namespace=\"sites-loja\",name=\"loja\"} == 1"
ts=$(q 'decod_decofile_last_publish_timestamp_seconds{namespace="sites-loja",name="loja"}')
now=$(date +%s)
[ -n "$ts" ] && [ "${ts%.*}" -le "$((now + 5))" ] && [ "${ts%.*}" -ge "$((now - 300))" ]
ok $? "decod_decofile_last_publish_timestamp_seconds is a recent time ($ts, now $now)"
is "$(q 'sum(decod_publishes_total)')" 1 "decod_publishes_total is 1: one publish for one content hash"
wait_for "$(scaled 10)" has 'sum(decod_replicas_notified_total) >= 1'
ok $? "decod_replicas_notified_total counts the replica"
is "$(q 'sum(decod_replicas_failed_total)')" 0 "decod_replicas_failed_total is 0"
has 'sum(decod_published_bytes_total{target="file"}) > 0'
ok $? "decod_published_bytes_total{target=\"file\"} > 0"
is "$(q 'count(decod_stage_up{program="decod"} == 1)')" 4 "decod_stage_up is 1 for the four stages"
is "$(q 'sum(decod_stage_restarts_total)')" 0 "no restarts yet"
has 'decod_journal_size_bytes{program="decod"} > 4096'
ok $? "decod_journal_size_bytes (supervisor) is the journal's size"
has 'sum(decod_store_request_duration_seconds_count{program="fetcher"}) > 0'
ok $? "the fetcher's store calls are timed"
is "$(q 'sum(decod_items_total{result="failed"})')" 0 "no item failed"

# a stage killed: the supervisor counts its restart, Prometheus sees it
REN_PID=$("$DECOCTL" stages -o json | python3 -c '
import json, sys
print([s["pid"] for s in json.load(sys.stdin)["stages"] if s["name"] == "renderer"][0])')
kill -KILL "$REN_PID"
wait_for "$(scaled 20)" has 'decod_stage_restarts_total{stage="renderer"} == 1'
ok $? "kill -9 of the renderer: decod_stage_restarts_total{stage=\"renderer\"} == 1"
wait_for "$(scaled 20)" has 'decod_stage_up{stage="renderer"} == 1 and on() up{program="renderer"} == 1'
ok $? "... and it is up and scraped again"

# every exposition passes promtool check metrics
for i in 0 1 2 3 4; do
	curl -s --max-time 5 "http://127.0.0.1:$((MBASE + i))/metrics" >"$T/expo$i.txt"
	promtool check metrics <"$T/expo$i.txt" >"$T/check$i.out" 2>&1
	st=$?
	[ "$st" -eq 0 ] && [ ! -s "$T/check$i.out" ] && grep -q '^# TYPE ' "$T/expo$i.txt"
	ok $? "promtool check metrics passes on port +$i ($(head -c 200 "$T/check$i.out"))"
done
# HELP and TYPE before every family's samples
python3 - "$T"/expo[0-4].txt <<'PY'
import re, sys
bad = []
for f in sys.argv[1:]:
    help, typ = set(), set()
    for line in open(f):
        if line.startswith("# HELP "): help.add(line.split()[2])
        elif line.startswith("# TYPE "): typ.add(line.split()[2])
        elif line.strip():
            n = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
            fam = n if n in typ else re.sub(r"_(bucket|sum|count)$", "", n)
            if fam not in help or fam not in typ: bad.append((f, n))
sys.exit(1 if bad else 0)
PY
ok $? "every family has HELP and TYPE before its samples"

# per-stage mode: stop the supervisor, run each stage alone on the same config
kill -TERM $SUP
wait $SUP 2>/dev/null
for s in $STAGES; do
	"$top_builddir/daemons/$s/$s" >"$T/$s-alone.log" 2>&1 &
	track_pid $!
done
wait_for "$(scaled 20)" sh -c "grep -q 'serving metrics' '$T/notifier-alone.log' && grep -q 'serving metrics' '$T/fetcher-alone.log'"
ok $? "stages alone serve metrics on their own ports"
"$DECOCTL" stages -o json >"$T/units.json" 2>/dev/null
python3 - "$T/units.json" "$MBASE" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); b = int(sys.argv[2])
want = {"fetcher": 1, "renderer": 2, "publisher": 3, "notifier": 4}
assert v["role"] == "unit"
assert sorted(s["name"] for s in v["stages"]) == sorted(want)
for s in v["stages"]:
    assert s["metrics"] == "127.0.0.1:%d" % (b + want[s["name"]]), s
PY
ok $? "decoctl stages -o json without a supervisor: each stage's own address"
# a new commit rolls out in per-stage mode and is counted there
git_commit "$T/work" .deco/blocks/Header.json '{"title": "second"}'
git_push "$T/work" loja
C2=$(git -C "$T/work" rev-parse HEAD)
ctl sync loja >/dev/null 2>&1
ctl wait loja --for "commit:$C2" --timeout 60s >/dev/null 2>&1
ok $? "a second commit rolls out with the stages alone"
for s in $STAGES; do
	wait_for "$(scaled 10)" has "sum(decod_items_total{stage=\"$s\",result=\"done\",program=\"$s\"}) > 0 and on() up{program=\"$s\"} == 1"
	ok $? "per-stage mode: the $s is scraped with items done"
done
wait_for "$(scaled 10)" has 'decod_decofile_ready{namespace="sites-loja",name="loja"} == 1 and on() up{program="publisher"} == 1'
ok $? "per-stage mode: decod_decofile_ready == 1 from the publisher alone"
# a deleted decofile leaves no series behind (bounded: only live decofiles)
ctl delete decofile loja >/dev/null 2>&1
ok $? "delete the Decofile"
gone() { ! curl -s --max-time 5 "http://127.0.0.1:$((MBASE + 3))/metrics" | grep -q 'name="loja"'; }
wait_for "$(scaled 20)" gone
ok $? "the publisher forgets decod_decofile_ready and the publish time of a deleted decofile"
wait_for "$(scaled 10)" sh -c "[ -z \"\$(curl -s -G 'http://127.0.0.1:$PPORT/api/v1/query' --data-urlencode 'query=decod_decofile_ready{name=\"loja\"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"data\"][\"result\"] or \"\")')\" ]"
ok $? "... and Prometheus no longer returns the series"
for i in 1 2 3 4; do
	curl -s --max-time 5 "http://127.0.0.1:$((MBASE + i))/metrics" | promtool check metrics >"$T/ucheck$i.out" 2>&1
	[ $? -eq 0 ] && [ ! -s "$T/ucheck$i.out" ]
	ok $? "per-stage mode: promtool check metrics passes on port +$i"
done
done_testing
