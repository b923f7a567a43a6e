#!/bin/sh
# deploy_node - deploy/ for real, on a node: the kubelet and kube-scheduler
# of $KUBEBUILDER_ASSETS with Debian's containerd and runc in a network
# namespace of this test (t/lib/node.sh).  The image is `make install` of
# the build under test over a cached Debian 12 minbase root with the
# runtime packages deploy/Dockerfile installs, packed as an OCI layout and
# imported (never pulled).  What `kubectl kustomize deploy/` renders goes
# in, through an overlay that changes only what this node needs: the image
# name and pull policy, hostNetwork (no CNI here) with the API server's
# address in KUBERNETES_SERVICE_HOST/PORT, and the webhook's TLS Secret
# that cert-manager would make.  Then: the Deployment becomes Available with
# every container of the rendered pod ready; one container's process killed
# with -9 restarts that container alone; a Decofile CR gets its ConfigMap
# from the decod running in the pod.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"
. "$top_srcdir/t/lib/node.sh"

PY=python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import yaml' 2>/dev/null && PY=/usr/bin/python3
$PY -c 'import yaml' 2>/dev/null || skip_all "python3-yaml not installed"
t0=$(date +%s)
step() { diag "$(( $(date +%s) - t0 )) s: $*"; }

# --- the image: a cached Debian root + make install ---------------------------
# the runtime packages of deploy/Dockerfile: its last `apt-get install`
pkgs=$(debroot_runtime_pkgs) ||
    bail "cannot read the packages of deploy/Dockerfile: '$pkgs'"
# shellcheck disable=SC2086 # one argument per package
node_base_root "$T/base.tar" $pkgs || bail "cannot make the Debian root (debootstrap)"
base_sum=$(cat "$(readlink -f "$T/base.tar").sha256")
step "base root ready"

# the layer above the base: what the Dockerfile's runtime stage adds.  The
# paths are the Dockerfile's (--prefix=/usr --sysconfdir=/etc ...), given to
# `make install` (the programs are built already; the pod names each file
# it runs, so the compiled-in defaults do not matter here).
R="$T/layer"
mkdir -m 755 "$R"
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" "$@"; }
mk install DESTDIR="$R" prefix=/usr sysconfdir=/etc localstatedir=/var \
    runstatedir=/run >"$T/install.log" 2>&1 ||
    { tail -20 "$T/install.log" | sed 's/^/#   /'; bail "make install failed"; }
rm -rf "$R/usr/lib/systemd" "$R/usr/lib/sysusers.d" "$R/usr/lib/tmpfiles.d"
# the Dockerfile's user and folders
(cd "$R" && tar -xf "$T/base.tar" ./etc/passwd ./etc/group ./etc/shadow ./etc/gshadow) ||
    bail "the base root has no /etc/passwd"
echo 'decod:x:10001:' >>"$R/etc/group"
echo 'decod:!::' >>"$R/etc/gshadow"
echo 'decod:x:10001:10001::/var/lib/decod:/usr/sbin/nologin' >>"$R/etc/passwd"
echo 'decod:!:20000::::::' >>"$R/etc/shadow"
install -d -o 10001 -g 10001 -m 0750 "$R/var/lib/decod" "$R/run/decod"
# a build that links what the base lacks (the sanitizer run's libasan and
# libubsan): the host's copy, the same Debian release
missing=""
tar -tf "$T/base.tar" | sed 's,^\./,/,' >"$T/base.files"
for f in "$R"/usr/sbin/* "$R"/usr/bin/* "$R"/usr/libexec/decod/*; do
	[ -f "$f" ] || continue
	for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
		# Debian 12 is merged-/usr: /lib is a link to usr/lib, and a
		# real lib/ folder in this layer would hide the base's
		to=$(echo "$lib" | sed 's,^/lib/,/usr/lib/,; s,^/lib64/,/usr/lib64/,')
		grep -qxF "$to" "$T/base.files" && continue
		[ -e "$R$to" ] && continue
		mkdir -p "$R$(dirname "$to")"
		cp -L "$lib" "$R$to"
		missing="$missing $(basename "$lib")"
	done
done
[ -z "$missing" ] || diag "copied from the host into the image:$missing"
tar -C "$R" --numeric-owner -cf "$T/decod-layer.tar" . || bail "cannot pack the image layer"
step "image layer packed"

# --- the control plane on this side of the veth, the node on the other -------
node_net
node_runtime_start
# the image goes in while the API server starts
node_image_import decod:test /usr/sbin/decod "$T/base.tar=$base_sum" "$T/decod-layer.tar" \
    >"$T/import.out" 2>&1 &
import_pid=$!
track_pid "$import_pid"
KUBE_BIND=$NODE_HOST_IP	# read by kube_start
export KUBE_BIND
kube_start
step "API server on $KUBE_URL"

# --- what deploy/ renders, through the node's overlay -----------------------
kubectl kustomize "$top_srcdir/deploy" >"$T/base-rendered.yaml" 2>"$T/kustomize.err" ||
    { sed 's/^/# /' "$T/kustomize.err"; bail "kubectl kustomize deploy/ failed"; }
api_port=${KUBE_URL##*:}
mkdir "$T/overlay"
$PY - "$T/base-rendered.yaml" "$T/overlay" "$NODE_HOST_IP" "$api_port" \
    "${ASAN_OPTIONS:-}" "${UBSAN_OPTIONS:-}" "$top_srcdir/deploy" >"$T/containers" 2>"$T/overlay.err" <<'PY'
import os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
out, host, port, asan, ubsan, deploy = sys.argv[2:8]
dep = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "decod"][0]
names = [c["name"] for c in dep["spec"]["template"]["spec"]["containers"]]
env = [{"name": "KUBERNETES_SERVICE_HOST", "value": host},
       {"name": "KUBERNETES_SERVICE_PORT", "value": port}]
if asan:
    env.append({"name": "ASAN_OPTIONS", "value": asan})
if ubsan:
    env.append({"name": "UBSAN_OPTIONS", "value": ubsan})
patch = {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "decod", "namespace": dep["metadata"]["namespace"]},
         "spec": {"template": {"spec": {
             "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
             "containers": [{"name": n, "imagePullPolicy": "Never", "env": env}
                            for n in names]}}}}
yaml.safe_dump(patch, open(os.path.join(out, "node-patch.yaml"), "w"))
kust = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(os.path.abspath(deploy), out)],
        "patches": [{"path": "node-patch.yaml"}],
        "images": [{"name": "decod", "newName": "localhost/decod", "newTag": "test"}]}
yaml.safe_dump(kust, open(os.path.join(out, "kustomization.yaml"), "w"))
print("\n".join(names))
PY
[ $? -eq 0 ] || { sed 's/^/# /' "$T/overlay.err"; bail "cannot write the overlay"; }
CONTAINERS=$(cat "$T/containers")
diag "containers of the rendered pod: $(echo "$CONTAINERS" | tr '\n' ' ')"
kubectl kustomize "$T/overlay" >"$T/rendered.yaml" 2>"$T/kustomize.err" ||
    { sed 's/^/# /' "$T/kustomize.err"; bail "kubectl kustomize of the overlay failed"; }
# cert-manager's kinds are left out (their CRDs do not exist here), as
# deploy_apply.sh does; the test makes the Secret their Certificate would
$PY - "$T/rendered.yaml" "$T/apply.yaml" <<'PY' || bail "cannot filter the rendered objects"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
keep = [d for d in docs if not d["apiVersion"].startswith("cert-manager.io/")]
yaml.safe_dump_all(keep, open(sys.argv[2], "w"), sort_keys=False)
PY
APPLY="kubectl_admin apply --server-side --field-manager=decod-deploy --validate=strict"
$APPLY -f "$T/apply.yaml" >"$T/apply.out" 2>&1
st=$?
is "$st" 0 "the overlay of deploy/ applies (server-side, strict)"
[ "$st" -eq 0 ] || { sed 's/^/#   /' "$T/apply.out" | tail -20; bail "apply failed"; }
(
	cd "$T" || exit 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout wh.key -out wh.crt -subj /CN=decod-webhook.decod-system.svc -days 2 \
	    -addext subjectAltName=DNS:decod-webhook.decod-system.svc,DNS:decod-webhook.decod-system.svc.cluster.local \
	    2>/dev/null
) || bail "cannot make the webhook's certificate"
kubectl_admin -n decod-system create secret tls decod-webhook-tls \
    --cert "$T/wh.crt" --key "$T/wh.key" >/dev/null || bail "cannot create decod-webhook-tls"
kube_start_cm
step "objects applied, controller-manager up"

# --- the node -----------------------------------------------------------------
wait "$import_pid" ||
    { sed 's/^/#   /' "$T/import.out"; bail "cannot import the decod image"; }
rm -f "$T/decod-layer.tar"
step "image imported"
node_start
step "node Ready"

# --- the Deployment becomes Available, every container ready ------------------
avail() {
	kubectl_admin -n decod-system get deployment decod \
	    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null |
	    grep -qx True
}
pod_json() {
	kubectl_admin -n decod-system get pods -l app.kubernetes.io/name=decod -o json >"$T/pods.json"
}
# pod_state: one line per container "NAME READY RESTARTS CONTAINERID" of
# the one pod, after a line "POD UID READY"
pod_state() {
	pod_json || return 1
	$PY - "$T/pods.json" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
if len(items) != 1:
    sys.exit(1)
p = items[0]
ready = [c["status"] for c in p["status"].get("conditions", []) if c["type"] == "Ready"]
print("POD", p["metadata"]["name"], p["metadata"]["uid"], ready[0] if ready else "None")
for c in p["status"].get("containerStatuses", []):
    print(c["name"], str(c["ready"]).lower(), c["restartCount"],
          c.get("containerID", "").split("//")[-1])
PY
}
# crashing: a container restarted three times already (no use waiting)
crashing() {
	pod_state >"$T/state.c" 2>/dev/null &&
	    [ "$(awk '$1 != "POD" && $3 >= 3' "$T/state.c")" != "" ]
}
avail_or_crashing() { avail || crashing; }
# container_logs: the last lines each container wrote (the kubelet's files)
container_logs() {
	for f in "$NODE_DIR"/pod-logs/*/*/*.log; do
		[ -f "$f" ] || continue
		echo "# --- $(basename "$(dirname "$f")") $(basename "$f")"
		tail -5 "$f" 2>/dev/null | cut -c1-300 | sed 's/^/#   /'
	done
}
wait_for "$(scaled 60)" avail_or_crashing
if avail; then ok 0 "the Deployment becomes Available"; else
	ok 1 "the Deployment becomes Available"
	kubectl_admin -n decod-system describe pods >"$T/describe.txt" 2>&1
	grep -A12 '^Events' "$T/describe.txt" | sed 's/^/#   /'
	container_logs
	bail "decod's pod did not become ready"
fi
step "Deployment Available"
pod_state >"$T/state0" || bail "no single decod pod"
pod_uid=$(awk '$1 == "POD" {print $3}' "$T/state0")
is "$(awk '$1 == "POD" {print $4}' "$T/state0")" True "the pod is Ready"
for c in $CONTAINERS; do
	is "$(awk -v c="$c" '$1 == c {print $2, $3}' "$T/state0")" "true 0" \
	    "container $c is ready, never restarted"
done
is "$(grep -vc '^POD' "$T/state0")" "$(echo "$CONTAINERS" | wc -l)" \
    "the pod runs exactly the rendered containers"

# the fetcher holds the Lease under the pod's name (POD_NAME from the
# downward API: with hostNetwork the hostname is the node's)
pod_name=$(awk '$1 == "POD" {print $2}' "$T/state0")
holder() {
	kubectl_admin -n decod-system get lease decod-leader \
	    -o jsonpath='{.spec.holderIdentity}' 2>/dev/null
}
holder_is_pod() { [ "$(holder)" = "$pod_name" ]; }
wait_for "$(scaled 30)" holder_is_pod
is "$(holder)" "$pod_name" "Lease decod-leader is held by the pod, by its name"

# --- kill one container's process: that one alone restarts --------------------
victim=$(echo "$CONTAINERS" | sed -n 2p)
[ -n "$victim" ] || victim=$(echo "$CONTAINERS" | sed -n 1p)
cid=$(awk -v c="$victim" '$1 == c {print $4}' "$T/state0")
pid=$(node_ctr tasks ls 2>/dev/null | awk -v id="$cid" '$1 == id {print $2}')
check "containerd knows the $victim container's process ($pid)" test -n "$pid"
check "... it runs the $victim stage" \
    sh -c "tr '\\0' ' ' </proc/$pid/cmdline | grep -q '/$victim '"
kill -KILL "$pid"
step "killed $victim (pid $pid)"
restarted() {
	pod_state >"$T/state1" || return 1
	[ "$(awk -v c="$victim" '$1 == c {print $2, $3}' "$T/state1")" = "true 1" ] &&
	    [ "$(awk '$1 == "POD" {print $4}' "$T/state1")" = True ]
}
if wait_for "$(scaled 60)" restarted; then ok 0 "$victim restarts once and is ready again"; else
	ok 1 "$victim restarts once and is ready again"
	sed 's/^/#   /' "$T/state1"
fi
step "pod Ready again"
is "$(awk '$1 == "POD" {print $3}' "$T/state1")" "$pod_uid" "... in the same pod"
for c in $CONTAINERS; do
	[ "$c" = "$victim" ] && continue
	is "$(awk -v c="$c" '$1 == c {print $2, $3, $4}' "$T/state1")" \
	    "$(awk -v c="$c" '$1 == c {print "true", 0, $4}' "$T/state0")" \
	    "container $c did not restart (same container, ready)"
done
check "the Deployment is Available again" avail

# --- the pod's decod at work: a Decofile CR gets its ConfigMap -----------------
kubectl_admin create namespace sites-node >/dev/null
cat >"$T/df.yaml" <<'EOF'
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja
  namespace: sites-node
spec:
  source: inline
  inline:
    value:
      Header: {title: "from the node"}
EOF
$APPLY -f "$T/df.yaml" >/dev/null 2>&1
is "$?" 0 "a Decofile CR applies"
cm_ok() {
	kubectl_admin -n sites-node get configmap decofile-loja \
	    -o jsonpath='{.data.decofile\.bin}' >"$T/bin.b64" 2>/dev/null &&
	    [ -s "$T/bin.b64" ]
}
if wait_for "$(scaled 60)" cm_ok; then
	ok 0 "the pod's decod writes ConfigMap decofile-loja"
	base64 -d "$T/bin.b64" | brotli -d >"$T/doc.json" 2>/dev/null
	check "... whose decofile.bin holds the CR's document" \
	    grep -q 'from the node' "$T/doc.json"
else
	ok 1 "the pod's decod writes ConfigMap decofile-loja"
	kubectl_admin -n sites-node get decofile loja -o yaml 2>&1 | sed 's/^/#   /' | tail -30
fi
step "Decofile reconciled"

# --- decoctl in the pod: what `kubectl exec deploy/decod -c fetcher --` runs
# (the CRI's exec is containerd's: same image, user, mounts, no supervisor)
pod_state >"$T/state2"
fcid=$(awk '$1 == "fetcher" {print $4}' "$T/state2")
in_pod() { node_ctr tasks exec --exec-id "decoctl-$$-$1" "$fcid" /usr/bin/decoctl "$@"; }
in_pod stages >"$T/pod-stages" 2>&1
is "$?" 0 "decoctl stages runs in the fetcher's container, with the pod's decod.conf"
sed 's/^/#   /' "$T/pod-stages"
for c in $CONTAINERS; do
	check "... and lists $c READY, from its own control socket" \
	    grep -q "^$c  *READY " "$T/pod-stages"
done
in_pod status -A >"$T/pod-status" 2>&1
is "$?" 0 "decoctl status -A runs in the pod"
check "... and shows the Decofile from the pod's store" grep -q '^sites-node  *loja ' "$T/pod-status"

is "$(awk '$1 != "POD" {s += $3} END {print s}' "$T/state2")" 1 \
    "no container restarted but the one killed"
done_testing
