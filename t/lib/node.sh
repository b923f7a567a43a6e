# t/lib/node.sh - a real Kubernetes node for tests: the kubelet of
# $KUBEBUILDER_ASSETS and Debian's containerd + runc in a network namespace
# of the test's own, joined to this side by a veth pair (the kubelet refuses
# a loopback node IP), images built here and imported, never pulled.
# ../shared/kube/README.md ("A real node") says why each setting is there.
# Source it after t/lib/common.sh and t/lib/kube.sh, then:
#   node_net                 netns + veth; sets NODE_HOST_IP (this side, for
#                            kube_start's KUBE_BIND) and NODE_IP
#   node_runtime_start      containerd and the pause image (no API needed)
#   node_start               the kubelet and the scheduler; waits until the
#                            Node is Ready (after kube_start)
#   node_image_import NAME:TAG DIR
#                            pack root folder DIR as an OCI layout (one
#                            layer) and import it as localhost/NAME:TAG
#   node_base_root TARBALL PKGS...
#                            a Debian 12 minbase root with PKGS, made once
#                            by debootstrap and cached under
#                            /var/cache/decod-test/ (keyed by the list;
#                            DECOD_TEST_CACHE names another folder)
#   node_ctr ARGS...         ctr on the node's containerd, namespace k8s.io
#   node_stop                all of it, in order (also run at exit)
# Needs root, containerd, runc, ctr, nsenter, ip.  Once KUBEBUILDER_ASSETS
# is set (kube.sh skips without it) a missing one fails the test rather than
# skipping it, so CI never passes without running the node; only an assets
# folder without a kubelet (setup-envtest's has none) is a skip.
[ -x "$KUBEBUILDER_ASSETS/kubelet" ] && [ -x "$KUBEBUILDER_ASSETS/kube-scheduler" ] ||
    skip_all "a real node needs kubelet and kube-scheduler in KUBEBUILDER_ASSETS (setup-envtest has neither; ../shared/kube/assets has both)"
[ "$(id -u)" -eq 0 ] || bail "a real node needs root (network namespace, containerd, mounts)"
for c in containerd containerd-shim-runc-v2 runc ctr nsenter ip tar cc; do
	command -v "$c" >/dev/null 2>&1 ||
	    bail "a real node needs $c (examples/install-deps.sh installs it)"
done

NODE_DIR="$T/node"
NODE_NS=""
NODE_VETH=""
NODE_CTRD_PID=""
NODE_KUBELET_PID=""
NODE_SCHED_PID=""
NODE_NAME=decod-test-node

node_ctr() {
	ctr --address "$NODE_DIR/containerd.sock" -n k8s.io "$@"
}
# node_in CMD...: CMD in the node's network namespace (nsenter, not
# `ip netns exec`, which remounts /sys and hides the cgroups)
node_in() { nsenter --net="/run/netns/$NODE_NS" "$@"; }

_node_veth_up() { ip link show dev "$NODE_VETH" | grep -q 'state UP'; }

# node_net: a network namespace and a veth pair on a /30 of 10.213.0.0/16
# that no other namespace of this machine uses
node_net() {
	mkdir -p "$NODE_DIR"
	at_cleanup node_stop
	n=$(( $$ % 16000 ))
	tries=0
	while :; do
		a=$(( n / 64 )); b=$(( (n % 64) * 4 ))
		NODE_NS="decod-node-$n"
		NODE_VETH="dnode$n"
		if ! [ -e "/run/netns/$NODE_NS" ] && ! ip link show "$NODE_VETH" >/dev/null 2>&1 &&
		    ! ip -4 addr show | grep -q "inet 10\.213\.$a\.$((b + 1))/" &&
		    ip netns add "$NODE_NS" 2>/dev/null; then
			break
		fi
		NODE_NS=""
		tries=$((tries + 1))
		[ $tries -lt 50 ] || bail "no free network namespace name"
		n=$(( (n + 1) % 16000 ))
	done
	NODE_HOST_IP="10.213.$a.$((b + 1))"
	NODE_IP="10.213.$a.$((b + 2))"
	ip link add "$NODE_VETH" type veth peer name "${NODE_VETH}n" ||
	    bail "cannot make a veth pair"
	ip link set "${NODE_VETH}n" netns "$NODE_NS" || bail "cannot move the veth"
	ip addr add "$NODE_HOST_IP/30" dev "$NODE_VETH"
	ip link set "$NODE_VETH" up
	node_in ip addr add "$NODE_IP/30" dev "${NODE_VETH}n"
	node_in ip link set "${NODE_VETH}n" up
	node_in ip link set lo up
	wait_for 10 _node_veth_up || bail "the veth pair does not come up"
	export NODE_HOST_IP NODE_IP
}

# _node_pause_image: a static C program that waits for a signal, as
# localhost/pause:test (the sandbox_image; never pulled)
_node_pause_image() {
	d="$NODE_DIR/pause-root"
	mkdir -p "$d"
	cat >"$NODE_DIR/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>
static void done(int s) { (void)s; _exit(0); }
int main(void) {
	signal(SIGTERM, done); signal(SIGINT, done);
	for (;;) pause();
}
C
	cc -static -O2 -o "$d/pause" "$NODE_DIR/pause.c" || return 1
	tar -C "$d" --numeric-owner -cf "$NODE_DIR/pause.tar" . || return 1
	node_image_import pause:test /pause "$NODE_DIR/pause.tar"
}

# _node_blob DIR FILE [SHA256]: move FILE into the layout's blobs as its
# digest (given, or computed); prints "DIGEST SIZE"
_node_blob() {
	sum=${3:-$(sha256sum "$2" | cut -d' ' -f1)}
	size=$(stat -L -c %s "$2")
	if [ -L "$2" ] || [ -n "${3:-}" ]; then
		ln -s "$(readlink -f "$2")" "$1/blobs/sha256/$sum"
	else
		mv "$2" "$1/blobs/sha256/$sum"
	fi
	echo "$sum $size"
}

# node_image_import NAME:TAG ENTRYPOINT LAYER.tar[=SHA256]... : an OCI
# layout (index, manifest, config, the layers as uncompressed tars, bottom
# first) imported as localhost/NAME:TAG.  A layer given with =SHA256 is
# linked, not read (the cached base root's digest is known).
node_image_import() {
	ref="localhost/$1"; entry=$2; shift 2
	o=$(mktemp -d "$NODE_DIR/oci.XXXXXX")
	mkdir -p "$o/blobs/sha256"
	diffs=""; layers=""
	# shellcheck disable=SC2046 # "DIGEST SIZE" split on purpose
	for l in "$@"; do
		case $l in
		*=*) set -- $(_node_blob "$o" "${l%%=*}" "${l##*=}") ;;
		*) set -- $(_node_blob "$o" "$l") ;;
		esac
		diffs="$diffs${diffs:+,}\"sha256:$1\""
		layers="$layers${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$1\",\"size\":$2}"
	done
	ep=null
	[ -n "$entry" ] && ep="[\"$entry\"]"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
	    "$ep" "$diffs" >"$o/config.json"
	# shellcheck disable=SC2046
	set -- $(_node_blob "$o" "$o/config.json")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
	    "$1" "$2" "$layers" >"$o/manifest.json"
	# shellcheck disable=SC2046
	set -- $(_node_blob "$o" "$o/manifest.json")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
	    "$1" "$2" "$ref" "$ref" >"$o/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$o/oci-layout"
	# h: follow the links to the layers
	tar -C "$o" -chf "$o.tar" oci-layout index.json blobs || return 1
	rm -rf "$o"
	# named by the annotation (not --index-name: an image of the same name
	# kept as the index races the manifest's, and the collector removes
	# the index's content under the unpack)
	node_ctr images import "$o.tar" >"$o.log" 2>&1 ||
	    { sed 's/^/#   /' "$o.log"; rm -f "$o.tar"; return 1; }
	rm -f "$o.tar"
	node_ctr images ls -q | grep -qx "$ref"
}

# node_runtime_start: containerd in the node's namespace, with the pause
# image (needs no API server: images can be imported while it starts)
node_runtime_start() {
	c="$NODE_DIR/containerd"
	mkdir -p "$c/root" "$c/state" "$c/opt" "$NODE_DIR/cni/conf" "$NODE_DIR/cni/bin" \
	    "$NODE_DIR/kubelet" "$NODE_DIR/pod-logs"
	cat >"$NODE_DIR/containerd.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$NODE_DIR/containerd.sock"
[ttrpc]
  address = "$NODE_DIR/containerd.ttrpc.sock"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:test"
  restrict_oom_score_adj = true
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$c/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$NODE_DIR/cni/bin"
    conf_dir = "$NODE_DIR/cni/conf"
TOML
	# no CNI here (pods use the node's network), but a runtime without a
	# network config reports NetworkReady=false and the Node stays NotReady;
	# this conflist is never run for a hostNetwork pod
	printf '{"cniVersion":"0.4.0","name":"decod-test","plugins":[{"type":"loopback"}]}\n' \
	    >"$NODE_DIR/cni/conf/10-decod-test.conflist"
	# nsenter, not node_in: a function run with & is a subshell, and $!
	# must be the program's own PID (nsenter execs it)
	nsenter --net="/run/netns/$NODE_NS" containerd --config "$NODE_DIR/containerd.toml" \
	    >"$NODE_DIR/containerd.log" 2>&1 &
	NODE_CTRD_PID=$!
	track_pid "$NODE_CTRD_PID"
	wait_for 30 node_ctr version ||
	    { tail -20 "$NODE_DIR/containerd.log" | sed 's/^/#   /'; bail "containerd did not start"; }
	_node_pause_image || bail "cannot import the pause image"
}

# node_start: the kubelet in the node's namespace, the scheduler beside the
# API server (after kube_start and node_runtime_start); returns once the
# Node is Ready and schedulable
node_start() {
	cat >"$NODE_DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
evictionHard: {memory.available: 1Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerRuntimeEndpoint: unix://$NODE_DIR/containerd.sock
podLogsDir: $NODE_DIR/pod-logs
readOnlyPort: 0
syncFrequency: 5s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 2s
serializeImagePulls: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $KUBE_DIR/ca.crt}
authorization: {mode: AlwaysAllow}
YAML
	nsenter --net="/run/netns/$NODE_NS" "$KUBEBUILDER_ASSETS/kubelet" --config "$NODE_DIR/kubelet.yaml" \
	    --kubeconfig "$KUBE_DIR/admin.kubeconfig" --root-dir "$NODE_DIR/kubelet" \
	    --cert-dir "$NODE_DIR/kubelet/pki" --node-ip "$NODE_IP" \
	    --hostname-override "$NODE_NAME" -v 1 >"$NODE_DIR/kubelet.log" 2>&1 &
	NODE_KUBELET_PID=$!
	track_pid "$NODE_KUBELET_PID"

	"$KUBEBUILDER_ASSETS/kube-scheduler" --kubeconfig "$KUBE_DIR/admin.kubeconfig" \
	    --leader-elect=false --secure-port 0 >"$KUBE_DIR/scheduler.log" 2>&1 &
	NODE_SCHED_PID=$!
	track_pid "$NODE_SCHED_PID"

	if ! wait_for "$(scaled 60)" kubectl_admin wait --for=condition=Ready --timeout=2s \
	    "node/$NODE_NAME"; then
		kubectl_admin get node "$NODE_NAME" \
		    -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}' |
		    sed 's/^/#   /'
		tail -30 "$NODE_DIR/kubelet.log" | sed 's/^/#   /'
		bail "the node did not become Ready"
	fi
	# the kubelet registers the Node with the not-ready taint; the node
	# lifecycle controller, which would lift it, is not run here (it also
	# evicts pods from nodes it thinks unreachable): lift it as it would
	kubectl_admin taint node "$NODE_NAME" node.kubernetes.io/not-ready- >/dev/null 2>&1
	taints=$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.spec.taints}')
	[ -z "$taints" ] || bail "the node keeps taints: $taints"
}

# _node_mounts: the mount points under the node's folder, deepest first
_node_mounts() {
	awk -v d="$NODE_DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r
}

_node_no_tasks() { [ -z "$(node_ctr tasks ls -q 2>/dev/null)" ]; }

# node_stop: the kubelet, then every task containerd runs (killed, so no
# container outlives the test), containerd, the shims and whatever is left
# in the namespace, the mounts under the node's folder, the namespace and
# the veth (its peer goes with the namespace)
node_stop() {
	[ -n "$NODE_NS" ] || return 0
	_kube_kill "$NODE_SCHED_PID" 5
	_kube_kill "$NODE_KUBELET_PID" 5
	ids=""
	if [ -n "$NODE_CTRD_PID" ] && alive "$NODE_CTRD_PID"; then
		ids=$(node_ctr containers ls -q 2>/dev/null)
		for id in $(node_ctr tasks ls -q 2>/dev/null); do
			node_ctr tasks kill -s SIGKILL "$id" >/dev/null 2>&1
		done
		# containerd's CRI plugin deletes a task once it has exited (a
		# `ctr tasks delete` of our own would race it): wait for that
		wait_for 10 _node_no_tasks
		for id in $(node_ctr tasks ls -q 2>/dev/null); do
			node_ctr tasks delete -f "$id" >/dev/null 2>&1
		done
		for id in $(node_ctr containers ls -q 2>/dev/null); do
			node_ctr containers delete "$id" >/dev/null 2>&1
		done
	fi
	_kube_kill "$NODE_CTRD_PID" 5
	# the shims (and anything else still in the namespace): ours by netns
	for np in $(ip netns pids "$NODE_NS" 2>/dev/null); do kill -KILL "$np" 2>/dev/null; done
	i=0
	while [ -n "$(ip netns pids "$NODE_NS" 2>/dev/null)" ] && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	for m in $(_node_mounts); do umount "$m" 2>/dev/null || umount -l "$m"; done
	# what a container killed behind runc's back may leave: its cgroups
	# (cgroupsPerQOS is off: /k8s.io/ID under each hierarchy); runc's own
	# state names them too when containerd could not be asked
	ids="$ids $(ls "$NODE_DIR/containerd/runc/k8s.io" 2>/dev/null)"
	for id in $ids; do
		for cg in /sys/fs/cgroup/*/k8s.io/"$id"; do
			[ -d "$cg" ] && rmdir "$cg" 2>/dev/null
		done
	done
	ip netns delete "$NODE_NS" 2>/dev/null
	ip link delete "$NODE_VETH" 2>/dev/null
	NODE_NS=""; NODE_CTRD_PID=""; NODE_KUBELET_PID=""; NODE_SCHED_PID=""
}

# node_base_root TARBALL PKGS...: a cached Debian 12 minbase root with PKGS
# (t/lib/debroot.sh)
. "$top_srcdir/t/lib/debroot.sh"
node_base_root() { debroot_tar "$@"; }
