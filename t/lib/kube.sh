# t/lib/kube.sh - a real Kubernetes control plane for tests, as envtest
# runs it: etcd and kube-apiserver (and, on request, kube-controller-manager)
# from $KUBEBUILDER_ASSETS on 127.0.0.1, free ports, certificates made here
# by openssl, everything under $T and stopped in order at exit (API server
# first: with etcd gone first it hangs in its graceful shutdown).
# Source it after t/lib/common.sh.  Without KUBEBUILDER_ASSETS the test is
# skipped with one line that says how to get the binaries.
#   kube_start              etcd + API server; sets KUBE_URL, KUBE_DIR,
#                           KUBECONFIG (admin, exported), KUBE_ETCD_URL.
#                           KUBE_BIND=ADDR serves on ADDR instead of
#                           127.0.0.1 (a real node's kubelet cannot use
#                           loopback: t/lib/node.sh), with the flags the
#                           API server needs to reach that kubelet
#   kube_start_cm           the controller-manager (after the CRDs exist)
#   kube_stop               stop all of it now (also run at exit)
#   kube_sa_kubeconfig NS SA FILE [SECONDS]
#                           a kubeconfig for ServiceAccount NS/SA with a
#                           TokenRequest token (never the admin's)
#   kube_ca                 path of the cluster CA certificate
#   kubectl_admin ARGS...   kubectl with the admin kubeconfig
if [ -z "${KUBEBUILDER_ASSETS:-}" ] || [ ! -x "${KUBEBUILDER_ASSETS}/kube-apiserver" ]; then
	skip_all "needs a Kubernetes API server: set KUBEBUILDER_ASSETS to a folder with etcd and kube-apiserver (setup-envtest use -p path, or ../shared/kube/assets)"
fi
command -v kubectl >/dev/null 2>&1 || skip_all "kubectl not installed"
command -v openssl >/dev/null 2>&1 || skip_all "openssl not installed"

KUBE_DIR="$T/kube"
KUBE_APISERVER_PID=""
KUBE_ETCD_PID=""
KUBE_CM_PID=""
KUBE_BIND=${KUBE_BIND:-127.0.0.1}

kube_ca() { echo "$KUBE_DIR/ca.crt"; }
kubectl_admin() { kubectl --kubeconfig "$KUBE_DIR/admin.kubeconfig" "$@"; }

# _kube_certs: CA, serving cert for 127.0.0.1, admin client cert, SA keys
_kube_certs() {
	d=$KUBE_DIR
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt \
		    -subj /CN=decod-test-ca -days 2 2>/dev/null || exit 1
		san="IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
		[ "$KUBE_BIND" = 127.0.0.1 ] || san="$san,IP:$KUBE_BIND"
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >san.ext
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
		    -subj /CN=kube-apiserver 2>/dev/null || exit 1
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
		    -out apiserver.crt -days 2 -extfile san.ext 2>/dev/null || exit 1
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
		    -subj "/O=system:masters/CN=admin" 2>/dev/null || exit 1
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
		    -out admin.crt -days 2 -extfile client.ext 2>/dev/null || exit 1
		openssl genrsa -out sa.key 2048 2>/dev/null || exit 1
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null || exit 1
		chmod 600 ./*.key
	)
}

# _kube_ready: the API server answers /readyz with ok
_kube_ready() {
	curl -sf -m 2 --cacert "$KUBE_DIR/ca.crt" --cert "$KUBE_DIR/admin.crt" \
	    --key "$KUBE_DIR/admin.key" "$KUBE_URL/readyz" 2>/dev/null | grep -qx ok
}

kube_start() {
	mkdir -p "$KUBE_DIR/etcd"
	_kube_certs || bail "cannot make the test certificates"
	ep=$(free_port); pp=$(free_port)
	while [ "$pp" = "$ep" ]; do pp=$(free_port); done
	KUBE_ETCD_URL="http://127.0.0.1:$ep"
	"$KUBEBUILDER_ASSETS/etcd" --data-dir "$KUBE_DIR/etcd" \
	    --listen-client-urls "$KUBE_ETCD_URL" --advertise-client-urls "$KUBE_ETCD_URL" \
	    --listen-peer-urls "http://127.0.0.1:$pp" --log-level warn \
	    >"$KUBE_DIR/etcd.log" 2>&1 &
	KUBE_ETCD_PID=$!
	track_pid "$KUBE_ETCD_PID"
	at_cleanup kube_stop
	wait_for 30 sh -c "curl -sf -m 2 $KUBE_ETCD_URL/health | grep -q true" ||
	    { sed 's/^/#   /' "$KUBE_DIR/etcd.log" | tail -20; bail "kube etcd did not start"; }
	kp=$(free_port)
	while [ "$kp" = "$ep" ] || [ "$kp" = "$pp" ]; do kp=$(free_port); done
	KUBE_URL="https://$KUBE_BIND:$kp"
	node_args=""
	# logs and exec through a kubelet: by its InternalIP, with a client
	# certificate its client CA (the cluster CA) signed -- the admin's
	[ "$KUBE_BIND" = 127.0.0.1 ] ||
	    node_args="--kubelet-preferred-address-types InternalIP
	    --kubelet-client-certificate $KUBE_DIR/admin.crt
	    --kubelet-client-key $KUBE_DIR/admin.key"
	# shellcheck disable=SC2086
	"$KUBEBUILDER_ASSETS/kube-apiserver" --etcd-servers "$KUBE_ETCD_URL" \
	    --bind-address "$KUBE_BIND" --advertise-address "$KUBE_BIND" --secure-port "$kp" \
	    --tls-cert-file "$KUBE_DIR/apiserver.crt" --tls-private-key-file "$KUBE_DIR/apiserver.key" \
	    --client-ca-file "$KUBE_DIR/ca.crt" --authorization-mode RBAC \
	    --service-account-issuer https://kubernetes.default.svc \
	    --service-account-key-file "$KUBE_DIR/sa.pub" \
	    --service-account-signing-key-file "$KUBE_DIR/sa.key" \
	    --service-cluster-ip-range 10.96.0.0/16 --profiling=false \
	    $node_args ${KUBE_APISERVER_EXTRA_ARGS:-} \
	    >"$KUBE_DIR/apiserver.log" 2>&1 &
	KUBE_APISERVER_PID=$!
	track_pid "$KUBE_APISERVER_PID"
	cat >"$KUBE_DIR/admin.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$KUBE_URL", certificate-authority: "$KUBE_DIR/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$KUBE_DIR/admin.crt", client-key: "$KUBE_DIR/admin.key"}
contexts:
- name: test
  context: {cluster: test, user: admin, namespace: default}
current-context: test
KC
	chmod 600 "$KUBE_DIR/admin.kubeconfig"
	KUBECONFIG="$KUBE_DIR/admin.kubeconfig"
	export KUBE_URL KUBE_DIR KUBECONFIG KUBE_ETCD_URL
	if ! wait_for "$(scaled 60)" _kube_ready; then
		sed 's/^/#   /' "$KUBE_DIR/apiserver.log" | tail -30
		bail "kube-apiserver did not become ready"
	fi
	# the default namespace and RBAC bootstrap roles exist once ready; wait
	# for the namespace so a test can use it at once
	wait_for 30 kubectl_admin get namespace default || bail "no default namespace"
}

# kube_start_cm: garbage collection, namespace deletion, default SAs
kube_start_cm() {
	"$KUBEBUILDER_ASSETS/kube-controller-manager" --kubeconfig "$KUBE_DIR/admin.kubeconfig" \
	    --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
	    --service-account-private-key-file "$KUBE_DIR/sa.key" --root-ca-file "$KUBE_DIR/ca.crt" \
	    --controllers '*,-nodeipam,-nodelifecycle,-persistentvolume-binder,-attachdetach,-persistentvolume-expander,-cloud-node-lifecycle,-ttl,-bootstrapsigner,-tokencleaner' \
	    >"$KUBE_DIR/controller-manager.log" 2>&1 &
	KUBE_CM_PID=$!
	track_pid "$KUBE_CM_PID"
	# ready when it has made the default ServiceAccount of a namespace
	kubectl_admin create namespace kube-cm-probe >/dev/null 2>&1
	wait_for 30 kubectl_admin -n kube-cm-probe get serviceaccount default ||
	    bail "kube-controller-manager did not start"
}

# _kube_kill PID SECONDS: TERM, wait, KILL
_kube_kill() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	i=0
	while alive "$1" && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

kube_stop() {
	_kube_kill "$KUBE_CM_PID" 5
	_kube_kill "$KUBE_APISERVER_PID" 5
	_kube_kill "$KUBE_ETCD_PID" 5
	KUBE_CM_PID=""; KUBE_APISERVER_PID=""; KUBE_ETCD_PID=""
}

# kube_sa_kubeconfig NS SA FILE [SECONDS]: the account's own kubeconfig
kube_sa_kubeconfig() {
	tok=$(kubectl_admin -n "$1" create token "$2" --duration "${4:-3600}s") ||
	    return 1
	umask_old=$(umask); umask 077
	cat >"$3" <<KC
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$KUBE_URL", certificate-authority: "$KUBE_DIR/ca.crt"}
users:
- name: $2
  user: {token: "$tok"}
contexts:
- name: test
  context: {cluster: test, user: $2, namespace: $1}
current-context: test
KC
	umask "$umask_old"
}

# --- helpers for the client's tests (kube_client.sh and the stages' tests)
# Debian's python3-kubernetes is in /usr/bin/python3's path, which may not be
# the first python3 on PATH
KUBE_PY=python3
[ -x /usr/bin/python3 ] && KUBE_PY=/usr/bin/python3
KUBE_ADMIN="$KUBE_DIR/admin.kubeconfig"

# kube_apply_deploy: what every test of decod against the API server starts
# with: deploy/'s namespace, CRDs and RBAC applied by the admin (server-side,
# so an unknown field fails), the CRDs Established
kube_apply_deploy() {
	_d=$top_srcdir/deploy
	kubectl_admin apply --server-side -f "$_d/namespace.yaml" -f "$_d/crd-decofile.yaml" \
	    -f "$_d/crd-decofiletemplate.yaml" -f "$_d/rbac.yaml" >/dev/null || return 1
	kubectl_admin wait --for=condition=Established crd/decofiles.deco.sites \
	    crd/decofiletemplates.deco.sites --timeout=30s >/dev/null
}

# kube_as_decod FILE [SECONDS]: FILE becomes a kubeconfig holding a token of
# deploy/'s ServiceAccount (decod-system/decod), exported as KUBECONFIG, so
# decod runs with deploy/'s RBAC and nothing more; TOKEN holds the token
# (tests check it never reaches a log)
kube_as_decod() {
	TOKEN=$(kube_token decod-system decod "${2:-3600}") || return 1
	kube_token_config "$1" "$TOKEN" decod-system
	export KUBECONFIG="$1"
}

# kube_decod_conf: $T/decod.conf for decod's supervisor and four stages
# (fetcher, renderer, publisher, notifier: their programs linked into
# $T/libexec) against the cluster of $T/decod.kubeconfig with the configmap
# target; setting lines on standard input are appended
kube_decod_conf() {
	mkdir -p "$T/libexec"
	for _s in fetcher renderer publisher notifier; do ln -sf "$(bin $_s)" "$T/libexec/$_s"; done
	{
		cat <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
kubeconfig = $T/decod.kubeconfig
default_target = configmap
CONF
		cat
	} >"$T/decod.conf"
}

# kube_decod_setup NS: a cluster with deploy/ applied, the namespace NS,
# decod as deploy/'s ServiceAccount and $T/decod.conf from kube_decod_conf
# (setting lines on standard input appended); C holds decod's -c argument
kube_decod_setup() {
	kube_start
	kube_apply_deploy || bail "deploy/ does not apply"
	kubectl_admin create namespace "$1" >/dev/null || bail "cannot create namespace $1"
	kube_as_decod "$T/decod.kubeconfig" || bail "no token for decod-system/decod"
	kube_decod_conf
	C="-c $T/decod.conf"
}

# kube_decod_start: decod (the supervisor and its stages) on $T/decod.conf,
# logging to $T/decod.log, until it says all stages are ready; D_PID its pid
kube_decod_start() {
	"$top_builddir/decod" -c "$T/decod.conf" >"$T/decod.log" 2>&1 &
	D_PID=$!
	track_pid $D_PID
	wait_for 30 grep -q 'all stages ready' "$T/decod.log" || bail "decod did not start"
}

# kube_decod_stop: decod stopped (TERM) and waited for
kube_decod_stop() { kill -TERM $D_PID; wait $D_PID 2>/dev/null; }

# kube_token NS SA [SECONDS]: a TokenRequest token for a ServiceAccount
kube_token() {
	kubectl_admin -n "$1" create token "$2" --duration "${3:-3600}s"
}

# kube_token_config FILE TOKEN [NS] / kube_token_file_config FILE TOKENFILE [NS]:
# a kubeconfig with the token inline, or read from a file (re-read on change)
kube_token_config() {
	_kube_user_config "$1" "token: \"$2\"" "${3:-default}"
}
kube_token_file_config() {
	_kube_user_config "$1" "tokenFile: \"$2\"" "${3:-default}"
}
_kube_user_config() {
	umask_old=$(umask); umask 077
	cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$KUBE_URL", certificate-authority: "$KUBE_DIR/ca.crt"}
users:
- name: sa
  user: {$2}
contexts:
- name: test
  context: {cluster: test, user: sa, namespace: "$3"}
current-context: test
KC
	umask "$umask_old"
}
