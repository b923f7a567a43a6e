#!/bin/sh
# metrics_bind.sh - a metrics port that cannot be had is an error at start,
# not silence: decod exits EX_CONFIG (78) naming the setting when
# metrics_listen's own port, or a stage's port after it, is taken, or when
# metrics_port is set where no acl stage serves it; a stage run alone with
# its port taken exits 78 with a log line naming metrics_listen.  A stage's
# own address (metrics_listen_STAGE) is served and shown by decoctl, and is
# an error at start when taken, malformed or set for a stage not running.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
for s in fetcher renderer; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
	mkdir -p "$T/libexec"
	ln -sf "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
[ -x "$DECOD" ] || bail "decod not built"

# a listener holding a port, on every address as a busy host would
python3 -c 'import socket, sys, time, os
s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)' "$T/busy.port" &
track_pid $!
wait_for "$(scaled 10)" test -s "$T/busy.port" || bail "no listener for the taken port"
BUSY=$(cat "$T/busy.port")

conf() { # conf EXTRA: a config with two stages and EXTRA
	printf 'state_dir = %s\nruntime_dir = %s\nlibexec_dir = %s\nstore = local:%s\nstages = fetcher renderer\n%s\n' \
	    "$T/state" "$T/run" "$T/libexec" "$T/store" "$1" >"$T/c.conf"
}
start() { # start: run decod; its exit status in $st, its stderr in $T/start
	timeout 20 "$DECOD" -c "$T/c.conf" >"$T/start" 2>&1
	st=$?
}

conf "metrics_listen = 127.0.0.1:$BUSY"
start
is "$st" 78 "metrics_listen's own port taken: decod exits EX_CONFIG"
check "... naming the setting and the reason" grep -q "metrics_listen: cannot listen on 127.0.0.1:$BUSY: Address already in use" "$T/start"
check "... having started nothing" sh -c "! grep -q 'supervisor running' '$T/start'"

# the renderer's port is base+2: take it with base = BUSY-2
conf "metrics_listen = 127.0.0.1:$((BUSY - 2))"
start
is "$st" 78 "the renderer's port (metrics_listen+2) taken: decod exits EX_CONFIG"
check "... naming the stage's port" grep -qF "metrics_listen (the renderer's port): cannot listen on 127.0.0.1:$BUSY: Address already in use" "$T/start"
"$DECOD" --check-config -c "$T/c.conf" >"$T/check" 2>&1
is "$?" 1 "... and --check-config says so too"

conf "metrics_listen = 127.0.0.1:65530"
start
is "$st" 78 "a base port the stages cannot follow (65530 + 7 > 65535) is refused"
check "... saying why" grep -q "metrics_listen: .* wants a port from 1 to 65528" "$T/start"

conf "metrics_port = $(free_port)"
start
is "$st" 78 "metrics_port with no acl stage: decod exits EX_CONFIG, not silence"
check "... pointing at metrics_listen" grep -q "metrics_port: only the acl stage serves it.*metrics_listen" "$T/start"

# a stage alone (per-stage mode) whose port is taken
conf "metrics_listen = 127.0.0.1:$((BUSY - 1))"
timeout 20 "$top_builddir/daemons/fetcher/fetcher" -c "$T/c.conf" >"$T/alone" 2>&1
is "$?" 78 "the fetcher alone with its port (metrics_listen+1) taken exits EX_CONFIG"
check "... with a log line naming the setting and the address" \
    grep -q "cannot serve metrics.*setting=metrics_listen addr=127.0.0.1:$BUSY.*Address already in use" "$T/alone"
check "... before it reports ready" sh -c "! grep -q 'msg=ready' '$T/alone'"

# a stage's own address, taken: the setting that gave it is named
conf "metrics_listen_renderer = 127.0.0.1:$BUSY"
start
is "$st" 78 "metrics_listen_renderer's port taken: decod exits EX_CONFIG"
check "... naming that setting" grep -qF "metrics_listen_renderer: cannot listen on 127.0.0.1:$BUSY: Address already in use" "$T/start"

conf "metrics_listen_fetcher = nohost"
start
is "$st" 78 "metrics_listen_fetcher without a port is refused"
check "... saying why" grep -q 'metrics_listen_fetcher: "nohost" is not HOST:PORT' "$T/start"

conf "metrics_listen_notifier = 127.0.0.1:$(free_port)"
start
is "$st" 78 "metrics_listen_notifier while stages has no notifier: EX_CONFIG, not silence"
check "... saying no such stage runs" grep -q "metrics_listen_notifier: only the notifier stage serves it" "$T/start"

conf "metrics_listen_fetcher = 127.0.0.1:$BUSY"
timeout 20 "$top_builddir/daemons/fetcher/fetcher" -c "$T/c.conf" >"$T/alone2" 2>&1
is "$?" 78 "the fetcher alone with its own metrics address taken exits EX_CONFIG"
check "... naming metrics_listen_fetcher" \
    grep -q "cannot serve metrics.*setting=metrics_listen_fetcher addr=127.0.0.1:$BUSY.*Address already in use" "$T/alone2"

# served: the fetcher on its own port, the renderer still on base+2
while :; do
	MB=$(free_port)
	[ "$MB" -lt 65000 ] && ! port_open "$((MB + 1))" && ! port_open "$((MB + 2))" && break
done
OWN=$(free_port)
while [ "$OWN" -ge "$MB" ] && [ "$OWN" -le "$((MB + 7))" ]; do OWN=$(free_port); done
conf "metrics_listen = 127.0.0.1:$MB
metrics_listen_fetcher = 127.0.0.1:$OWN"
"$DECOD" -c "$T/c.conf" >"$T/run.log" 2>&1 &
DPID=$!
track_pid $DPID
ready2() { [ "$(DECOD_CONFIG=$T/c.conf "$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 2 ]; }
wait_for "$(scaled 20)" ready2 || { cat "$T/run.log" >&2; bail "the stages did not start"; }
DECOD_CONFIG=$T/c.conf "$DECOCTL" stages -o json >"$T/stages.json"
python3 - "$T/stages.json" "$OWN" "$MB" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
own, base = sys.argv[2], int(sys.argv[3])
got = {s["name"]: s.get("metrics") for s in doc["stages"]}
want = {"fetcher": "127.0.0.1:%s" % own, "renderer": "127.0.0.1:%d" % (base + 2)}
sys.exit(0 if got == want else "got %r, want %r" % (got, want))
PY
ok $? "decoctl stages -o json: the fetcher on metrics_listen_fetcher, the renderer on base+2"
check "the fetcher answers /metrics on its own address" \
    sh -c "curl -sf --max-time 5 http://127.0.0.1:$OWN/metrics | grep -q 'decod_items_total{stage=\"fetcher\"'"
check "... and the renderer on base+2" \
    sh -c "curl -sf --max-time 5 http://127.0.0.1:$((MB + 2))/metrics | grep -q 'decod_items_total{stage=\"renderer\"'"
port_open "$((MB + 1))"
is "$?" 1 "nothing serves the fetcher's place after metrics_listen (base+1)"

# the stage's loop answers them itself: what a client sends cannot stall it
python3 - "$OWN" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
def ask(raw):
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.settimeout(5)
    s.sendall(raw)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out
# a client that sends half a request and waits
stall = socket.create_connection(("127.0.0.1", port), 5)
stall.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
t0 = time.time()
got = ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
assert got.startswith(b"HTTP/1.1 200 "), got[:80]
assert b"decod_items_total" in got
assert time.time() - t0 < 5, "a half-sent request held the scrape back"
head = ask(b"HEAD /metrics HTTP/1.1\r\n\r\n")
assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n"), head[-80:]
assert ask(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").startswith(b"HTTP/1.1 405 ")
assert ask(b"GET /nope HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 ")
assert ask(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000).startswith(b"HTTP/1.1 431 ")
# more connections than it keeps (16) are closed, the loop still answers after
many = [socket.create_connection(("127.0.0.1", port), 5) for _ in range(20)]
for c in many:
    c.close()
stall.close()
assert ask(b"GET /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 200 ")
PY
ok $? "the loop's /metrics: a half-sent request does not stall a scrape; HEAD, 405, 404, 431; 20 connections at once"
kill "$DPID"
wait "$DPID" 2>/dev/null
done_testing
