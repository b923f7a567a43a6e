#!/bin/sh
# webhook_tls.sh - the webhook stage alone over real TLS (a test CA, curl):
# every injection case of the issue with the returned JSONPatch applied by
# python3-jsonpatch; re-admission gives no patch; the reload token survives
# an UPDATE without it; Decofiles in use cannot be deleted and the record
# survives a restart; malformed bodies (truncated, wrong kind, object not an
# object, 600-deep, 10 MB) get clear errors and the next request is served;
# plain HTTP is never answered; a stalled request is cut at its deadline;
# connections beyond webhook_max_connections wait and are then served (in
# the slot of the oldest idle one if none closes);
# the certificate rotates (rename, then rewrite in place) while clients
# loop requests, with no failed request.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/integration/webhook_lib.sh"
webhook_prereqs

make_ca "$T" && make_cert "$T" tls && make_cert "$T" tls2 && make_cert "$T" tls3 ||
	bail "openssl could not make the test certificates"
# the webhook's metrics port is metrics_listen + 5: a free port, less 5
WM_PORT=$(free_port)
cat > "$T/conf" <<CONF
metrics_listen = 127.0.0.1:$((WM_PORT - 5))
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
webhook_listen = 127.0.0.1:0
webhook_cert_file = $T/tls.crt
webhook_key_file = $T/tls.key
webhook_request_timeout = $(scaled 1)s
s3_public_host = cdn.example
s3_prefix = pfx
default_target = configmap
CONF
C="-c $T/conf"
decofile() { # decofile NAME SPEC_JSON
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-x"},"spec":%s}' \
	    "$1" "$2" > "$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json" >/dev/null
}
decofile loja '{"source":"inline","inline":{"value":{"A":1}},"target":"configmap"}'
decofile shop '{"source":"inline","inline":{"value":{"A":1}},"target":"s3"}'
decofile blog-site '{"source":"inline","inline":{"value":{"A":1}},"deploymentId":"blog"}'

start_webhook "$T/conf" "$T/webhook.log"
URL="https://127.0.0.1:$WH_PORT"
MUT="/mutate-serving-knative-dev-v1-service"
VAL="/validate-deco-sites-v1alpha1-decofile"
TRK="/validate-serving-knative-dev-v1-service"

# post PATH FILE OUT: POST a review over TLS; prints the HTTP status
post() {
	curl -s --cacert "$T/ca.crt" -o "$3" -w '%{http_code}' -H 'Content-Type: application/json' \
	    --data-binary "@$2" "$URL$1"
}
# svc FILE NAME ANNOTATIONS LABELS CONTAINERS: a Knative Service in sites-x
svc() {
	printf '{"apiVersion":"serving.knative.dev/v1","kind":"Service","metadata":{"name":"%s","namespace":"sites-x","annotations":{%s},"labels":{%s}},"spec":{"template":{"spec":{"containers":%s}}}}' \
	    "$2" "$3" "$4" "$5" > "$1"
}
INJ='"deco.sites/decofile-inject":"true"'
# admit NAME OP OBJ OLD: review, post, and the patched object in $T/NAME.out
admit() {
	wh review "$2" "$3" "$4" > "$T/$1.review"
	code=$(post "$MUT" "$T/$1.review" "$T/$1.resp")
	wh apply "$T/$1.resp" "$3" > "$T/$1.out"
	patched=$?
}

# ---- configmap: create, then re-admission ----
svc "$T/cm.json" web "$INJ" '"app.deco/deploymentId":"loja"' '[{"name":"app","image":"site:1"}]'
admit cm CREATE "$T/cm.json" -
is "$code" 200 "configmap: HTTP 200"
is "$(wh field "$T/cm.resp" response.uid)" uid-create "configmap: the request's uid comes back"
is "$patched" 0 "configmap: a JSONPatch that python's jsonpatch applies"
is "$(wh env "$T/cm.out" DECO_RELEASE)" "file:///app/decofile/decofile.bin" "configmap: DECO_RELEASE"
is "$(wh field "$T/cm.out" spec.template.spec.volumes)" \
    '[{"configMap":{"name":"decofile-loja"},"name":"decofile-config"}]' "configmap: the volume"
is "$(wh container "$T/cm.out" volumeMounts)" \
    '[{"mountPath":"/app/decofile","name":"decofile-config","readOnly":true}]' \
    "configmap: mounted read-only, no subPath"
is "$(wh field "$T/cm.out" spec.template.metadata.labels)" '{"app.deco/deploymentId":"loja"}' \
    "configmap: the template label"
is "$(wh container "$T/cm.out" envFrom)" '[{"secretRef":{"name":"valkey-acl","optional":true}}]' \
    "configmap: envFrom valkey-acl, optional"
TOKEN=$(wh env "$T/cm.out" DECO_RELEASE_RELOAD_TOKEN)
check "configmap: a fresh random reload token (64 hex)" \
    sh -c "printf '%s' '$TOKEN' | grep -Eq '^[0-9a-f]{64}$'"
check "the token is never logged" sh -c "! grep -q '$TOKEN' '$T/webhook.log'"

admit again UPDATE "$T/cm.out" "$T/cm.out"
is "$(wh field "$T/again.resp" response.allowed)" true "re-admission: allowed"
is "$patched" 3 "re-admission of an injected Service: no patch"

# what kubectl apply / Argo CD send: the site's own manifest, token absent
admit resync UPDATE "$T/cm.json" "$T/cm.out"
is "$patched" 0 "UPDATE without the token: patched"
is "$(wh env "$T/resync.out" DECO_RELEASE_RELOAD_TOKEN)" "$TOKEN" \
    "UPDATE without the token: the token of oldObject, not a new one"

# ---- s3 ----
svc "$T/s3.json" shop "$INJ" '"app.deco/deploymentId":"shop"' '[{"name":"app"}]'
admit s3 CREATE "$T/s3.json" -
is "$(wh env "$T/s3.out" DECO_RELEASE)" "https://cdn.example/pfx/sites-x/shop/decofile.json" \
    "s3: DECO_RELEASE from s3_public_host and the shared key"
is "$(wh env "$T/s3.out" DECO_ALLOWED_AUTHORITIES)" \
    "configs.decocdn.com,configs.deco.cx,admin.deco.cx,localhost,cdn.example" \
    "s3: DECO_ALLOWED_AUTHORITIES from the runtime defaults, host last"
is "$(wh field "$T/s3.out" spec.template.spec.volumes)" "<absent>" "s3: no volume"
svc "$T/s3b.json" shop "$INJ" '"app.deco/deploymentId":"shop"' \
    '[{"name":"app","env":[{"name":"DECO_ALLOWED_AUTHORITIES","value":" x.com, cdn.example ,x.com"}]}]'
admit s3b CREATE "$T/s3b.json" -
is "$(wh env "$T/s3b.out" DECO_ALLOWED_AUTHORITIES)" "x.com,cdn.example" \
    "s3: an existing DECO_ALLOWED_AUTHORITIES is merged (trimmed, no duplicates)"

# ---- left alone, refused, unknown ----
svc "$T/plain.json" plain '' '"app.deco/deploymentId":"loja"' '[{"name":"app"}]'
admit plain CREATE "$T/plain.json" -
is "$(wh field "$T/plain.resp" response.allowed)/$patched" true/3 "no annotation: allowed, no patch"
svc "$T/false.json" f '"deco.sites/decofile-inject":"false"' '"app.deco/deploymentId":"loja"' \
    '[{"name":"app"}]'
admit false CREATE "$T/false.json" -
is "$(wh field "$T/false.resp" response.allowed)/$patched" true/3 \
    "annotation not \"true\": allowed, no patch"
svc "$T/nolabel.json" nolabel "$INJ" '' '[{"name":"app"}]'
admit nolabel CREATE "$T/nolabel.json" -
is "$(wh field "$T/nolabel.resp" response.allowed)" false "missing label: denied"
check "missing label: the message names app.deco/deploymentId" \
    grep -q 'no label app.deco/deploymentId' "$T/nolabel.resp"
svc "$T/unknown.json" u "$INJ" '"app.deco/deploymentId":"nobody"' '[{"name":"app"}]'
admit unknown CREATE "$T/unknown.json" -
is "$(wh field "$T/unknown.resp" response.allowed)/$patched" true/3 \
    "unknown deploymentId: allowed unchanged"

# ---- which container, where ----
svc "$T/second.json" second "$INJ" '"app.deco/deploymentId":"blog"' \
    '[{"name":"proxy","image":"envoy"},{"name":"app","image":"site:2"}]'
admit second CREATE "$T/second.json" -
is "$(wh field "$T/second.out" spec.template.spec.containers.0)" '{"image":"envoy","name":"proxy"}' \
    "app not first: the first container is untouched"
is "$(wh env "$T/second.out" DECO_RELEASE app)" "file:///app/decofile/decofile.bin" \
    "app not first: the app container is injected"
is "$(wh field "$T/second.out" spec.template.spec.volumes.0.configMap.name)" "decofile-blog-site" \
    "deploymentId blog finds Decofile blog-site"
svc "$T/mount.json" mount "$INJ,\"deco.sites/decofile-mount-path\":\"/srv/cfg\"" \
    '"app.deco/deploymentId":"loja"' '[{"name":"app"}]'
admit mount CREATE "$T/mount.json" -
is "$(wh env "$T/mount.out" DECO_RELEASE)" "file:///srv/cfg/decofile.bin" "custom mount path: DECO_RELEASE"
is "$(wh field "$T/mount.out" spec.template.spec.containers.0.volumeMounts.0.mountPath)" "/srv/cfg" \
    "custom mount path: the mount"

# ---- the index follows the store while running ----
decofile late '{"source":"inline","inline":{"value":{"A":1}},"target":"configmap"}'
svc "$T/late.json" late "$INJ" '"app.deco/deploymentId":"late"' '[{"name":"app"}]'
late_is() { admit late CREATE "$T/late.json" -; [ "$patched" = "$1" ]; }
check "a Decofile put in the store while running is used (store watch)" wait_for 10 late_is 0
"$TOOL" $C delete sites-x late >/dev/null
check "... and forgotten once deleted from the store" wait_for 10 late_is 3

# ---- malformed bodies, each followed by a good request ----
good() { # a good request right after a bad one is served normally
	c=$(post "$MUT" "$T/cm.review" "$T/good.resp")
	[ "$c" = 200 ] && grep -q '"patch"' "$T/good.resp"
}
head -c 100 "$T/cm.review" > "$T/trunc.review"
is "$(post "$MUT" "$T/trunc.review" "$T/trunc.resp")" 400 "truncated JSON: HTTP 400"
check "truncated JSON: says it is not JSON" grep -q 'malformed AdmissionReview: not JSON' "$T/trunc.resp"
check "the next request is served" good
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"serving.knative.dev","version":"v1","kind":"Service"},"operation":"CREATE","object":"nope"}}' > "$T/str.review"
post "$MUT" "$T/str.review" "$T/str.resp" >/dev/null
is "$(wh field "$T/str.resp" response.allowed)/$(wh field "$T/str.resp" response.status.code)" \
    false/400 "request.object not an object: allowed false, code 400"
wh review CREATE "$T/cm.json" - apps/v1/Deployment > "$T/kind.review"
post "$MUT" "$T/kind.review" "$T/kind.resp" >/dev/null
is "$(wh field "$T/kind.resp" response.allowed)/$(wh field "$T/kind.resp" response.status.code)" \
    false/400 "wrong kind: allowed false, code 400"
check "the next request is served" good
$PY -c 'print("[" * 600 + "]" * 600)' > "$T/deep.review"
is "$(post "$MUT" "$T/deep.review" "$T/deep.resp")" 400 "600-deep nesting: HTTP 400"
head -c 10485760 /dev/zero | tr '\0' ' ' > "$T/big.review"
is "$(post "$MUT" "$T/big.review" "$T/big.resp")" 413 "a 10 MB body: HTTP 413"
check "the next request is served" good
is "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$WH_PORT/healthz")" 000 \
    "plain HTTP is never answered"
check "after plain HTTP, HTTPS still works" good
is "$(curl -s --cacert "$T/ca.crt" -o /dev/null -w '%{http_code}' "$URL/nowhere")" 404 "unknown path: 404"
is "$(curl -s --cacert "$T/ca.crt" -o /dev/null -w '%{http_code}' "$URL$MUT")" 405 "GET on a review path: 405"

# a request that stalls mid-body is cut at webhook_request_timeout (1 s,
# scaled: counted from accept, it also covers the 10 MB body above under the
# sanitizers)
stalled() {
	$PY - "$WH_PORT" "$T/ca.crt" <<'PY'
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))),
                    server_hostname="127.0.0.1")
s.sendall(b"POST /mutate-serving-knative-dev-v1-service HTTP/1.1\r\nHost: x\r\n"
          b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
s.settimeout(10)
t = time.monotonic()
try:
    data = s.recv(100)
except (ssl.SSLError, OSError):
    data = b""
sys.exit(0 if data == b"" and time.monotonic() - t < 8 else 1)
PY
}
check "a request stalled mid-body: its connection is closed at the deadline" stalled

# ---- Decofiles in use ----
check "the injected Service is recorded in the store" \
    wait_for 10 test -f "$T/store/kv/decod.d/injected.d/sites-x.d/web.v"
printf '{"metadata":{"name":"loja","namespace":"sites-x"}}' > "$T/df.json"
wh review DELETE - "$T/df.json" deco.sites/v1alpha1/Decofile > "$T/del.review"
post "$VAL" "$T/del.review" "$T/del.resp" >/dev/null
is "$(wh field "$T/del.resp" response.allowed)" false "deleting a Decofile a Service uses: refused"
check "the refusal names the Services" \
    grep -q 'in use by 2 Knative Services it was injected into: mount, web' "$T/del.resp"

stop_webhook
is "$WH_STATUS" 0 "SIGTERM: the webhook exits 0"
start_webhook "$T/conf" "$T/webhook2.log"
URL="https://127.0.0.1:$WH_PORT"
post "$VAL" "$T/del.review" "$T/del2.resp" >/dev/null
is "$(wh field "$T/del2.resp" response.allowed)" false "after a restart the record is still there: refused"
wh review DELETE - "$T/cm.out" > "$T/svcdel.review"
post "$TRK" "$T/svcdel.review" "$T/svcdel.resp" >/dev/null
is "$(wh field "$T/svcdel.resp" response.allowed)" true "deleting a Service: allowed"
post "$VAL" "$T/del.review" "$T/del2b.resp" >/dev/null
check "with one Service left, the refusal names only it" \
    grep -q 'in use by 1 Knative Service it was injected into: mount;' "$T/del2b.resp"
wh review UPDATE "$T/plain.json" "$T/mount.out" > "$T/unmount.review"
sed -i 's/"name": "plain"/"name": "mount"/g' "$T/unmount.review"
post "$MUT" "$T/unmount.review" "$T/unmount.resp" >/dev/null
is "$(wh field "$T/unmount.resp" response.allowed)" true \
    "the other Service drops its annotation: allowed, and it no longer uses the Decofile"
post "$VAL" "$T/del.review" "$T/del3.resp" >/dev/null
is "$(wh field "$T/del3.resp" response.allowed)" true "once the Service is gone, the Decofile may go"
check "the record leaves the store" \
    wait_for 10 test ! -e "$T/store/kv/decod.d/injected.d/sites-x.d/web.v"
curl -s --cacert "$T/ca.crt" "$URL/metrics" > "$T/metrics"
check "/metrics counts admissions by outcome" \
    grep -q '^decod_webhook_requests_total{path="validate-decofile",outcome="allowed"} 1$' "$T/metrics"
check "/metrics has the latency histogram" grep -q '^decod_webhook_admission_seconds_count ' "$T/metrics"
curl -s "http://127.0.0.1:$WM_PORT/metrics" > "$T/metrics-plain"
check "the same series on the webhook's metrics_listen port (+5), from the shared registry" \
    grep -q '^decod_webhook_requests_total{path="validate-decofile",outcome="allowed"} 1$' "$T/metrics-plain"
check "... with the latency histogram" grep -q '^decod_webhook_admission_seconds_bucket{le="+Inf"} [1-9]' "$T/metrics-plain"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/metrics" >"$T/promtool.out" 2>&1 && ! [ -s "$T/promtool.out" ]
	ok $? "promtool check metrics passes on the HTTPS /metrics"
	promtool check metrics <"$T/metrics-plain" >"$T/promtool.out" 2>&1 && ! [ -s "$T/promtool.out" ]
	ok $? "promtool check metrics passes on the metrics_listen port"
fi
is "$(curl -s --cacert "$T/ca.crt" "$URL/healthz")" ok "/healthz"

# ---- drift prevention, and a live setting changed by SIGHUP ----
MAN="/validate-decod-managed"
printf '{"metadata":{"name":"decofile-loja","namespace":"sites-x","labels":{"app.kubernetes.io/managed-by":"decod"}}}' \
    > "$T/cmobj.json"
wh review UPDATE "$T/cmobj.json" "$T/cmobj.json" /v1/ConfigMap > "$T/cm-edit.review"
post "$MAN" "$T/cm-edit.review" "$T/cm-edit.resp" >/dev/null
is "$(wh field "$T/cm-edit.resp" response.allowed)" false \
    "a hand edit of a ConfigMap decod manages: refused"
check "... saying what and who" grep -q 'managed by decod.*a hand edit by test is refused' "$T/cm-edit.resp"
echo "webhook_managers = test" >> "$T/conf"
kill -HUP "$WH_PID"
managed_allowed() {
	post "$MAN" "$T/cm-edit.review" "$T/cm-edit2.resp" >/dev/null &&
	    [ "$(wh field "$T/cm-edit2.resp" response.allowed)" = true ]
}
check "SIGHUP: webhook_managers applies without a restart" wait_for 10 managed_allowed
check "... the same process" kill -0 "$WH_PID"

# ---- certificate rotation while clients loop ----
FP1=$(fingerprint "$T/tls.crt")
FP2=$(fingerprint "$T/tls2.crt")
FP3=$(fingerprint "$T/tls3.crt")
served_is() { [ "$(served_fingerprint "$WH_PORT")" = "$1" ]; }
is "$(served_fingerprint "$WH_PORT")" "$FP1" "the first certificate is served"
: > "$T/loop.fail"
: > "$T/loop.ok"
loop() { # one new TLS connection per request until $T/stop exists
	while [ ! -e "$T/stop" ]; do
		if [ "$(post "$MUT" "$T/cm.review" "$T/loop$1.resp")" = 200 ]; then
			echo . >> "$T/loop.ok"
		else
			echo "$1" >> "$T/loop.fail"
		fi
	done
}
keepalive() { # one keep-alive connection, requests back to back
	$PY - "$WH_PORT" "$T/ca.crt" "$T/cm.review" "$T/stop" <<'PY'
import http.client, os, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
body = open(sys.argv[3], "rb").read()
c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[1]), context=ctx, timeout=10)
n = bad = 0
while not os.path.exists(sys.argv[4]):
    try:
        c.request("POST", "/mutate-serving-knative-dev-v1-service", body,
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        n += 1
        bad += r.status != 200
    except Exception as e:
        bad += 1
        print("keep-alive error:", e, file=sys.stderr)
        c.close()
print(n, bad)
PY
}
loop a & LA=$!
loop b & LB=$!
keepalive > "$T/ka.out" 2> "$T/ka.err" & KA=$!
track_pid $LA; track_pid $LB; track_pid $KA
wait_for 10 test -s "$T/loop.ok" || bail "the client loops do not run"
# rotation 1: new files renamed into place (cert-manager's secret volume does the same)
cp "$T/tls2.crt" "$T/new.crt" && cp "$T/tls2.key" "$T/new.key"
mv "$T/new.key" "$T/tls.key" && mv "$T/new.crt" "$T/tls.crt"
check "rename: new connections get the new certificate" wait_for 10 served_is "$FP2"
# rotation 2: rewritten in place, certificate first (a moment of mismatch)
cat "$T/tls3.crt" > "$T/tls.crt"
cat "$T/tls3.key" > "$T/tls.key"
check "rewrite: new connections get the new certificate" wait_for 10 served_is "$FP3"
n0=$(wc -l < "$T/loop.ok")
wait_for 10 sh -c "[ \$(wc -l < '$T/loop.ok') -ge $((n0 + 20)) ]"
touch "$T/stop"
wait $LA $LB $KA
diag "requests during rotation: $(wc -l < "$T/loop.ok") new-connection, $(cut -d' ' -f1 "$T/ka.out") keep-alive"
is "$(wc -l < "$T/loop.fail" | tr -d ' ')" 0 "no new-connection request failed during rotation"
is "$(cut -d' ' -f2 "$T/ka.out")" 0 "no keep-alive request failed during rotation"
check "the served certificate was reloaded twice" \
    sh -c "curl -s --cacert '$T/ca.crt' '$URL/metrics' | grep -q '^decod_webhook_cert_loads_total 3$'"
check "the webhook is still alive" kill -0 "$WH_PID"
stop_webhook
is "$WH_STATUS" 0 "SIGTERM after the rotations: exits 0"
check "the webhook stopped cleanly" grep -q 'msg=stopped' "$T/webhook2.log"

# ---- bounded connections: with 2 held, a third waits and is served once one
# closes; with 2 held idle for good, the oldest idle one makes room for it ----
sed -e 's/^webhook_request_timeout.*/webhook_max_connections = 2/' \
    -e "s|^runtime_dir.*|runtime_dir = $T/run3|" "$T/conf" > "$T/conf3"
start_webhook "$T/conf3" "$T/webhook3.log"
$PY - "$WH_PORT" "$T/ca.crt" "$(scaled 3)" > "$T/limit.out" 2>&1 <<'PY'
import http.client, ssl, sys, threading, time
port, ctx = int(sys.argv[1]), ssl.create_default_context(cafile=sys.argv[2])
slack = float(sys.argv[3])
def conn():
    return http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=20)
def get(c):
    c.request("GET", "/healthz")
    return c.getresponse().read()
held = []
for i in range(2):
    c = conn()
    assert get(c) == b"ok\n"
    held.append(c)
t0 = time.monotonic()
closed_at = []
def close_one():
    time.sleep(0.2)
    closed_at.append(time.monotonic() - t0)
    held[0].close()
threading.Thread(target=close_one).start()
third = conn()
body = get(third)
t = time.monotonic() - t0
print("third served after %.2f s, first closed at %.2f s" % (t, closed_at[0]))
ok1 = body == b"ok\n" and closed_at and closed_at[0] <= t < closed_at[0] + slack
# held[1] and third stay open and idle; held[1] has been idle longest
t0 = time.monotonic()
fourth = conn()
body = get(fourth)
t = time.monotonic() - t0
try:
    gone = get(held[1]) != b"ok\n"
except (http.client.HTTPException, OSError):
    gone = True
alive = get(third) == b"ok\n"
print("fourth served after %.2f s; oldest idle closed: %s; the other still served: %s"
      % (t, gone, alive))
ok2 = body == b"ok\n" and t < slack and gone and alive
sys.exit(0 if ok1 and ok2 else 1)
PY
is "$?" 0 "webhook_max_connections 2: a waiting connection is served once one closes, else in the slot of the oldest idle one"
while read -r line; do diag "$line"; done < "$T/limit.out"
check "/metrics counts the eviction" sh -c \
    "curl -s --cacert '$T/ca.crt' 'https://127.0.0.1:$WH_PORT/metrics' | grep -q '^decod_webhook_evicted_total [1-9]'"
stop_webhook
is "$WH_STATUS" 0 "it exits 0"
check "no sanitizer report in the logs" \
    sh -c "! grep -q -e 'Sanitizer' -e 'runtime error' '$T/webhook.log' '$T/webhook2.log' '$T/webhook3.log'"
done_testing
