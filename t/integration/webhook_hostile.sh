#!/bin/sh
# webhook_hostile.sh - the webhook under hostile clients (issue 24, defects
# 7 and 8), with the wire prefixes of t/fuzz/seeds/webhook-wire:
# - connections that send one byte of a TLS record (or the head of a
#   ClientHello) and hold cost no CPU (one, then 50: under 0.5 s of CPU in a
#   3 s window, where a busy loop burnt a core), and a real review is
#   answered while they are held;
# - slow clients filling webhook_max_connections (half dribbling a
#   ClientHello, half the headers inside TLS, a byte a second, reconnecting)
#   are closed at webhook_request_timeout counted from accept
#   (decod_webhook_deadline_closed_total rises), and a real review and
#   /metrics are answered within the API server's 5 s while they hold the
#   slots, also with more of them waiting in the listen queue.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/integration/webhook_lib.sh"
webhook_prereqs
WIRE="$top_srcdir/t/fuzz/seeds/webhook-wire"
[ -d "$WIRE" ] || bail "no $WIRE"

make_ca "$T" && make_cert "$T" tls || bail "openssl could not make the test certificates"
# conf FILE MAX REQUEST_TIMEOUT
conf() {
	cat > "$1" <<CONF
state_dir = $T/state
runtime_dir = $T/run-$2
store = local:$T/store
webhook_listen = 127.0.0.1:0
webhook_cert_file = $T/tls.crt
webhook_key_file = $T/tls.key
webhook_max_connections = $2
webhook_request_timeout = $3
default_target = configmap
CONF
}
conf "$T/conf1" 512 60s
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"pagina-loja","namespace":"sites-x"},"spec":{"source":"inline","inline":{"value":{"A":1}},"deploymentId":"loja","target":"configmap"}}' \
    > "$T/df.json"
"$TOOL" -c "$T/conf1" apply "$T/df.json" >/dev/null || bail "cannot apply the Decofile"
printf '{"apiVersion":"serving.knative.dev/v1","kind":"Service","metadata":{"name":"loja-web","namespace":"sites-x","annotations":{"deco.sites/decofile-inject":"true"},"labels":{"app.deco/deploymentId":"loja"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"site:1"}]}}}}' \
    > "$T/svc.json"
wh review CREATE "$T/svc.json" - > "$T/svc.review"

# review N: a real review, answered within the API server's 5 s with a patch
review() {
	code=$(curl -s --cacert "$T/ca.crt" --max-time "$(scaled 5)" -o "$T/review$1.resp" \
	    -w '%{http_code}' -H 'Content-Type: application/json' \
	    --data-binary "@$T/svc.review" \
	    "https://127.0.0.1:$WH_PORT/mutate-serving-knative-dev-v1-service")
	[ "$code" = 200 ] && grep -q '"patch"' "$T/review$1.resp"
}
metric() { # metric NAME: its value now, via /metrics
	curl -s --cacert "$T/ca.crt" --max-time "$(scaled 5)" \
	    "https://127.0.0.1:$WH_PORT/metrics" | sed -n "s/^$1 //p"
}
metric_at_least() { v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }

cat > "$T/hostile.py" <<'PY'
# hostile.py hold PORT N SEED READY SECS: N connections send SEED, then hold
# hostile.py slow PORT N CA SECS UPLOG: N clients dribble a byte a second,
#   reconnecting when closed; odd ones the raw ClientHello head (tcp-*), even
#   ones headers inside TLS; a line in UPLOG per connection established
import os, socket, ssl, sys, threading, time
mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
wire = os.environ["WIRE"]
def seed(name):
    with open(os.path.join(wire, name), "rb") as f:
        return f.read()
if mode == "hold":
    data, ready, secs = seed(sys.argv[4]), sys.argv[5], float(sys.argv[6])
    held = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(data)
        held.append(s)
    with open(ready, "w") as f:
        f.write("%d\n" % len(held))
    time.sleep(secs)
    sys.exit(0)
ctx = ssl.create_default_context(cafile=sys.argv[4])
end = time.monotonic() + float(sys.argv[5])
uplog, lock = sys.argv[6], threading.Lock()
hello, headers = seed("tcp-clienthello-head"), seed("tls-slow-headers")
def up():
    with lock, open(uplog, "a") as f:
        f.write("up\n")
def client(i):
    while time.monotonic() < end:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            data = hello
            if i % 2 == 0:
                s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
                data = headers
            up()
            for k in range(10**6):
                if time.monotonic() >= end:
                    break
                s.send(data[k % len(data):k % len(data) + 1])
                time.sleep(1)
        except (OSError, ssl.SSLError):
            time.sleep(0.05)
ts = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
PY
export WIRE

CLK=$(getconf CLK_TCK)
cpu() { awk '{ print $14 + $15 }' "/proc/$WH_PID/stat"; }
# idle_cpu LABEL: the webhook's CPU over a 3 s window (a measurement, not a wait)
idle_cpu() {
	c0=$(cpu)
	sleep 3
	c1=$(cpu)
	used=$((c1 - c0))
	diag "$1: $used ticks of CPU ($CLK a second) in 3 s"
	[ "$used" -lt $((CLK / 2)) ]
}

# ---- defect 7: a half-read TLS record waits for readability ----
start_webhook "$T/conf1" "$T/webhook1.log"
check "a real review is answered before anything hostile" review 0
for seedname in tcp-tls-record-byte tcp-clienthello-head; do
	for n in 1 50; do
		rm -f "$T/held"
		$PY "$T/hostile.py" hold "$WH_PORT" "$n" "$seedname" "$T/held" 600 &
		HP=$!
		track_pid $HP
		wait_for "$(scaled 20)" test -s "$T/held" || bail "the holding client did not start"
		wait_for "$(scaled 20)" metric_at_least decod_webhook_connections_open "$((n + 1))" ||
			bail "the webhook does not count the held connections"
		check "$n connection(s) holding $seedname: under 0.5 s of CPU in 3 s" \
		    idle_cpu "$seedname x $n"
		check "... and a real review is answered meanwhile" review "$seedname$n"
		check "... the held connections are still open (no deadline reached yet)" \
		    metric_at_least decod_webhook_connections_open "$((n + 1))"
		kill "$HP"
		wait "$HP" 2>/dev/null
	done
done
stop_webhook
is "$WH_STATUS" 0 "SIGTERM: exits 0"

# more connections than select() sets can hold: refused at start, by name
conf "$T/conf9" 1000 10s
"$WEBHOOK" -c "$T/conf9" > "$T/webhook9.log" 2>&1
rc=$?
check "webhook_max_connections 1000: refused at start ($rc), naming the setting and its range" \
    sh -c "[ $rc -ne 0 ] && grep -q 'webhook_max_connections: 1000 is out of range 1..960' '$T/webhook9.log'"

# ---- defect 8: slow clients at the connection limit ----
MAX=16
conf "$T/conf2" "$MAX" "$(scaled 3)s"
T0=$(date +%s)
start_webhook "$T/conf2" "$T/webhook2.log"
: > "$T/up"
$PY "$T/hostile.py" slow "$WH_PORT" "$MAX" "$T/ca.crt" "$(scaled 60)" "$T/up" &
SP=$!
track_pid $SP
filled() { [ "$(wc -l < "$T/up")" -ge "$MAX" ]; }
wait_for "$(scaled 20)" filled || bail "the slow clients did not connect"
check "slow clients are closed at webhook_request_timeout, counted from accept" \
    wait_for "$(scaled 20)" metric_at_least decod_webhook_deadline_closed_total 1
# the slots refilled by the closed clients coming back
wait_for "$(scaled 20)" sh -c "[ \$(wc -l < '$T/up') -ge $((2 * MAX)) ]" ||
	diag "the slow clients did not come back"
check "$MAX slow clients hold every slot: a real review is answered within 5 s" review s1
check "... and again" review s2
check "... and /metrics answers within 5 s" metric_at_least decod_webhook_connections_total 1
$PY "$T/hostile.py" slow "$WH_PORT" 8 "$T/ca.crt" "$(scaled 60)" "$T/up" &
SP2=$!
track_pid $SP2
n0=$(wc -l < "$T/up")
wait_for "$(scaled 20)" sh -c "[ \$(wc -l < '$T/up') -ge $((n0 + MAX)) ]" ||
	diag "the slow clients did not get new connections"
check "$((MAX + 8)) slow clients, 8 of them waiting in the listen queue: a real review is answered within 5 s" \
    review s3
check "the slow ones were closed to make room: decod_webhook_evicted_total counts them" \
    metric_at_least decod_webhook_evicted_total 1
lines=$(grep -c 'slow connections closed' "$T/webhook2.log")
check "the log says it in one line per 10 s, not one per connection ($lines lines)" \
    test "$lines" -le $(( ($(date +%s) - T0) / 10 + 1 ))
check "the webhook is still alive" kill -0 "$WH_PID"
kill "$SP" "$SP2"
wait "$SP" "$SP2" 2>/dev/null
stop_webhook
is "$WH_STATUS" 0 "SIGTERM: exits 0"
check "no sanitizer report in the logs" \
    sh -c "! grep -q -e 'Sanitizer' -e 'runtime error' '$T/webhook1.log' '$T/webhook2.log'"
done_testing
