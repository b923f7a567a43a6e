#!/bin/sh
# bench_idle.sh - the resident memory and threads of every stage, idle:
# the real supervisor on a local store with metrics_listen set (so each
# stage serves /metrics, as in production), no decofile; once every stage
# is READY and has answered one scrape, VmRSS, RssAnon, RssFile and
# Threads of each from /proc/PID/status, and its PSS from smaps_rollup.
#   sh bench/bench_idle.sh BUILD_DIR
# STAGES (default "fetcher renderer publisher notifier web"): the stages run;
# webhook wants TLS files and acl a Valkey, so they are left out unless named
# (webhook: a self-signed pair is made with openssl).  SETTLE (default 2):
# seconds left for the stages to settle before reading.
set -eu
build=$(cd "${1:?usage: bench_idle.sh BUILD_DIR}" && pwd)
stages=${STAGES:-fetcher renderer publisher notifier web}
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-idle.XXXXXX")
PID=""
trap '[ -z "$PID" ] || { kill $PID 2>/dev/null; wait $PID 2>/dev/null; }; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)

mkdir -p "$T/libexec"
for s in $stages; do
	ln -s "$build/daemons/$s/$s" "$T/libexec/$s"
done
# a base port with its next 7 free (the stages' metrics ports), and a web port
ports=$(python3 - <<'PY'
import random, socket
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
while True:
    b = random.randrange(20000, 60000)
    if all(free(b + i) for i in range(10)):
        print(b, b + 9); break
PY
)
base=${ports% *}
webport=${ports#* }
n=$(echo $stages | wc -w)
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = $stages
metrics_listen = 127.0.0.1:$base
web_listen = 127.0.0.1:$webport
poll_period = 1h
CONF
case " $stages " in *" webhook "*)
	openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
	    -keyout "$T/tls.key" -out "$T/tls.crt" 2>/dev/null
	chmod 600 "$T/tls.key"
	printf 'webhook_listen = 127.0.0.1:0\nwebhook_cert_file = %s\nwebhook_key_file = %s\n' \
	    "$T/tls.crt" "$T/tls.key" >> "$T/decod.conf";;
esac
export DECOD_CONFIG="$T/decod.conf"
"$build/decod" 2>"$T/decod.log" &
PID=$!
i=0
until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq "$n" ]; do
	i=$((i+1))
	if [ $i -ge 600 ]; then echo "stages not ready:" >&2; cat "$T/decod.log" >&2; exit 1; fi
	sleep 0.05
done
# one scrape each, so the metrics server has run at least once
"$build/decoctl" stages -o json | python3 -c '
import json, sys, urllib.request
for s in json.load(sys.stdin)["stages"]:
    if s.get("metrics"):
        urllib.request.urlopen("http://%s/metrics" % s["metrics"], timeout=10).read()'
sleep "${SETTLE:-2}"
echo "idle stages ($(nproc) cores; $(uptime | sed 's/.*load/load/'))"
"$build/decoctl" stages -o json | python3 -c '
import json, sys
print("| stage | VmRSS | RssAnon | RssFile | PSS | threads |")
print("|---|---:|---:|---:|---:|---:|")
def mib(kb): return "%.1f MiB" % (int(kb.split()[0]) / 1024.0)
for s in json.load(sys.stdin)["stages"]:
    st = {}
    for line in open("/proc/%d/status" % s["pid"]):
        k, v = line.split(":", 1)
        st[k] = v.strip()
    pss = "0 kB"
    for line in open("/proc/%d/smaps_rollup" % s["pid"]):
        if line.startswith("Pss:"):
            pss = line.split(":", 1)[1].strip()
    print("| %s | %s | %s | %s | %s | %s |" % (s["name"], mib(st["VmRSS"]),
        mib(st["RssAnon"]), mib(st["RssFile"]), mib(pss), st["Threads"]))'
