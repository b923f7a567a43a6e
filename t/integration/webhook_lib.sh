# t/integration/webhook_lib.sh - what the webhook's tests share: a test CA
# and serving certificates made by openssl, starting the stage on a free
# port (it binds port 0 and logs the port it got), and a small Python
# helper (Debian's python3 with python3-jsonpatch, an implementation
# independent of ours) that builds reviews and applies returned patches.
# Source it after t/lib/common.sh.

WEBHOOK=$(bin webhook)
TOOL="$top_builddir/t/stage/testtool"
PY=python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import jsonpatch' 2>/dev/null && PY=/usr/bin/python3

webhook_prereqs() {
	[ -x "$WEBHOOK" ] || bail "webhook not built"
	[ -x "$TOOL" ] || bail "t/stage/testtool not built"
	command -v openssl >/dev/null || skip_all "openssl command not installed"
	command -v curl >/dev/null || skip_all "curl not installed"
	$PY -c 'import jsonpatch' 2>/dev/null ||
		skip_all "python3-jsonpatch not installed (apt-get install python3-jsonpatch)"
}

# make_ca DIR: ca.crt/ca.key in DIR
make_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$1/ca.key" -out "$1/ca.crt" -days 2 -subj /CN=decod-test-ca 2>/dev/null
}

# make_cert DIR NAME: NAME.crt/NAME.key for 127.0.0.1 signed by DIR's CA
make_cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$1/$2.key" -out "$1/$2.csr" -subj /CN=127.0.0.1 2>/dev/null &&
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$1/$2.ext" &&
	openssl x509 -req -in "$1/$2.csr" -CA "$1/ca.crt" -CAkey "$1/ca.key" \
	    -CAcreateserial -out "$1/$2.crt" -days 2 -extfile "$1/$2.ext" 2>/dev/null
}

# fingerprint FILE: sha256 of a PEM certificate, lowercase hex
fingerprint() {
	openssl x509 -in "$1" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' |
	    tr 'A-F' 'a-f'
}

# served_fingerprint PORT: sha256 of the certificate a new connection gets
served_fingerprint() {
	echo | openssl s_client -connect "127.0.0.1:$1" -servername localhost 2>/dev/null |
	    openssl x509 -noout -fingerprint -sha256 2>/dev/null | sed 's/.*=//; s/://g' |
	    tr 'A-F' 'a-f'
}

# start_webhook CONF LOG: start the stage; sets WH_PID and WH_PORT
start_webhook() {
	"$WEBHOOK" -c "$1" > "$2" 2>&1 &
	WH_PID=$!
	track_pid $WH_PID
	wait_for 20 grep -q 'msg=ready' "$2" || { cat "$2"; bail "webhook did not start"; }
	WH_PORT=$(sed -n 's/.*msg="webhook listening".* port=\([0-9]*\).*/\1/p' "$2" | tail -1)
	[ -n "$WH_PORT" ] || bail "webhook did not say its port"
}

# stop_webhook: SIGTERM and wait for it; WH_STATUS is its exit status
stop_webhook() {
	kill -TERM "$WH_PID" 2>/dev/null
	wait "$WH_PID" 2>/dev/null
	WH_STATUS=$?
}

cat > "$T/wh.py" <<'PY'
# wh.py - build AdmissionReviews and look at answers, for the webhook tests
import base64, json, sys
import jsonpatch

def load(p):
    with open(p) as f:
        return json.load(f)

def at(doc, path):
    for part in path.split("."):
        if isinstance(doc, list):
            doc = doc[int(part)]
        else:
            doc = doc[part]
    return doc

def container(obj, name=None):
    cs = obj["spec"]["template"]["spec"]["containers"]
    for c in cs:
        if c.get("name") == (name or "app"):
            return c
    return cs[0]

cmd = sys.argv[1]
if cmd == "review":            # review OP OBJ OLD|- [KIND]
    op, obj, old = sys.argv[2], sys.argv[3], sys.argv[4]
    kind = sys.argv[5] if len(sys.argv) > 5 else "serving.knative.dev/v1/Service"
    g, v, k = kind.split("/")
    o = load(obj) if obj != "-" else None
    meta = (o or (load(old) if old != "-" else {})).get("metadata", {})
    print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "uid-" + op.lower(), "kind": {"group": g, "version": v, "kind": k},
            "resource": {"group": g, "version": v, "resource": k.lower() + "s"},
            "namespace": meta.get("namespace", "sites-x"), "name": meta.get("name", ""),
            "operation": op, "userInfo": {"username": "test"},
            "object": o, "oldObject": load(old) if old != "-" else None}}))
elif cmd == "field":           # field FILE PATH: JSON of the value, strings bare
    try:
        v = at(load(sys.argv[2]), sys.argv[3])
    except (KeyError, IndexError, TypeError):
        print("<absent>")
        sys.exit(0)
    print(v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":")))
elif cmd == "apply":           # apply RESP OBJ: the patched object (exit 3: no patch)
    r = load(sys.argv[2])["response"]
    if "patch" not in r:
        sys.exit(3)
    assert r["patchType"] == "JSONPatch"
    patch = jsonpatch.JsonPatch(json.loads(base64.b64decode(r["patch"])))
    print(json.dumps(patch.apply(load(sys.argv[3]))))
elif cmd == "env":             # env OBJ NAME [CONTAINER]: value of an env var of the container
    c = container(load(sys.argv[2]), sys.argv[4] if len(sys.argv) > 4 else None)
    print(next((e.get("value", "<valueFrom>") for e in c.get("env", [])
                if e["name"] == sys.argv[3]), "<absent>"))
elif cmd == "container":       # container OBJ FIELD [CONTAINER]: a field of the container
    c = container(load(sys.argv[2]), sys.argv[4] if len(sys.argv) > 4 else None)
    print(json.dumps(c.get(sys.argv[3]), sort_keys=True, separators=(",", ":")))
PY
wh() { $PY "$T/wh.py" "$@"; }
