# t/lib/kube.sh - a real Kubernetes API server for a test file (sourced after
# common.sh).  kube_start brings up etcd 3.5 and kube-apiserver (and, with
# --controller-manager, kube-controller-manager) from $KUBEBUILDER_ASSETS on
# 127.0.0.1 with free ports and fresh certificates; kube_stop (run at exit)
# stops them by PID, the API server before etcd.  Without KUBEBUILDER_ASSETS
# the test skips with one line saying how to get the binaries.
#
# After kube_start:
#   $KUBE_URL          https://127.0.0.1:PORT
#   $KUBE_DIR          certificates, kubeconfigs, logs
#   $KUBE_ADMIN        admin kubeconfig (client certificate, system:masters)
#   $KUBE_ETCD_URL     the API server's etcd (for etcdctl compact)
#   $KUBE_PY           the Python that has Debian's python3-kubernetes
#   kc ARGS...         kubectl as admin
# $KUBE_APISERVER_ARGS adds flags to kube-apiserver.
#   kube_token NS SA [SECONDS]        a TokenRequest token for a ServiceAccount
#   kube_token_config FILE TOKEN [NS] a kubeconfig that uses TOKEN
#   kube_token_file_config FILE TOKENFILE [NS]  one that reads the token from a file

kube_need_assets() {
	if [ -z "${KUBEBUILDER_ASSETS:-}" ] || [ ! -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] ||
	    [ ! -x "$KUBEBUILDER_ASSETS/etcd" ]; then
		skip_all "needs a Kubernetes API server: set KUBEBUILDER_ASSETS (go install sigs.k8s.io/controller-runtime/tools/setup-envtest@latest && export KUBEBUILDER_ASSETS=\$(setup-envtest use -p path), or ../shared/kube/assets)"
	fi
	command -v kubectl >/dev/null 2>&1 || skip_all "needs kubectl"
	command -v openssl >/dev/null 2>&1 || skip_all "needs openssl"
}

# Debian's python3-kubernetes lives in /usr/bin/python3's path, which may not
# be the first python3 on PATH
KUBE_PY=python3
[ -x /usr/bin/python3 ] && KUBE_PY=/usr/bin/python3

KUBE_PIDS_CM=""
KUBE_PID_API=""
KUBE_PID_ETCD=""

kube_stop_pid() { # kube_stop_pid PID SECONDS: TERM, wait, KILL
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	i=0
	while alive "$1" && [ $i -lt $(( $2 * 20 )) ]; do sleep 0.05; i=$((i + 1)); done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

kube_stop() {
	kube_stop_pid "$KUBE_PIDS_CM" 5
	KUBE_PIDS_CM=""
	kube_stop_pid "$KUBE_PID_API" 5
	KUBE_PID_API=""
	kube_stop_pid "$KUBE_PID_ETCD" 5
	KUBE_PID_ETCD=""
}

kube_cleanup() {
	kube_stop
	cleanup
}
trap kube_cleanup EXIT

kube_certs() { # kube_certs DIR
	d=$1
	(
	cd "$d" || exit 1
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
	    -subj /CN=decod-test-ca 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
	    -subj /CN=kube-apiserver 2>/dev/null &&
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' >san.ext &&
	openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
	    -out apiserver.crt -days 2 -extfile san.ext 2>/dev/null &&
	openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
	    -subj "/O=system:masters/CN=decod-test-admin" 2>/dev/null &&
	openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
	    -out admin.crt -days 2 2>/dev/null &&
	openssl genrsa -out sa.key 2048 2>/dev/null &&
	openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	)
}

# kube_start [--controller-manager]
kube_start() {
	want_cm=0
	[ "${1:-}" = "--controller-manager" ] && want_cm=1
	KUBE_DIR=$T/kube
	mkdir -p "$KUBE_DIR/etcd"
	kube_certs "$KUBE_DIR" || bail "openssl could not make the test certificates"
	ep=$(free_port); pp=$(free_port); kp=$(free_port)
	while [ "$pp" = "$ep" ]; do pp=$(free_port); done
	while [ "$kp" = "$ep" ] || [ "$kp" = "$pp" ]; do kp=$(free_port); done
	KUBE_ETCD_URL=http://127.0.0.1:$ep
	"$KUBEBUILDER_ASSETS/etcd" --data-dir "$KUBE_DIR/etcd" --name kube-test \
	    --listen-client-urls "$KUBE_ETCD_URL" --advertise-client-urls "$KUBE_ETCD_URL" \
	    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
	    --initial-cluster "kube-test=http://127.0.0.1:$pp" \
	    --unsafe-no-fsync >"$KUBE_DIR/etcd.log" 2>&1 &
	KUBE_PID_ETCD=$!
	wait_for 20 curl -sf "$KUBE_ETCD_URL/health" || bail "etcd did not start (see $KUBE_DIR/etcd.log)"
	"$KUBEBUILDER_ASSETS/kube-apiserver" --etcd-servers "$KUBE_ETCD_URL" \
	    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$kp" \
	    --tls-cert-file "$KUBE_DIR/apiserver.crt" --tls-private-key-file "$KUBE_DIR/apiserver.key" \
	    --client-ca-file "$KUBE_DIR/ca.crt" --authorization-mode RBAC \
	    --service-account-issuer https://kubernetes.default.svc \
	    --service-account-key-file "$KUBE_DIR/sa.pub" \
	    --service-account-signing-key-file "$KUBE_DIR/sa.key" \
	    --service-cluster-ip-range 10.96.0.0/16 --profiling=false \
	    ${KUBE_APISERVER_ARGS:-} >"$KUBE_DIR/apiserver.log" 2>&1 &
	KUBE_PID_API=$!
	KUBE_URL=https://127.0.0.1:$kp
	kube_ready() {
		[ "$(curl -s --cacert "$KUBE_DIR/ca.crt" --cert "$KUBE_DIR/admin.crt" \
		    --key "$KUBE_DIR/admin.key" "$KUBE_URL/readyz")" = ok ]
	}
	wait_for 60 kube_ready || bail "kube-apiserver did not become ready (see $KUBE_DIR/apiserver.log)"
	KUBE_ADMIN=$KUBE_DIR/admin.kubeconfig
	cat >"$KUBE_ADMIN" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $KUBE_URL
    certificate-authority: $KUBE_DIR/ca.crt
users:
- name: admin
  user:
    client-certificate: $KUBE_DIR/admin.crt
    client-key: $KUBE_DIR/admin.key
contexts:
- name: test
  context: {cluster: test, user: admin, namespace: default}
current-context: test
EOF
	if [ $want_cm -eq 1 ]; then kube_start_cm; fi
	export KUBE_URL KUBE_DIR KUBE_ADMIN KUBE_ETCD_URL
}

# kube_start_cm - the controller-manager (garbage collector, namespaces,
# ServiceAccounts); start it after the CRDs exist (see the README)
kube_start_cm() {
	"$KUBEBUILDER_ASSETS/kube-controller-manager" --kubeconfig "$KUBE_ADMIN" \
	    --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
	    --service-account-private-key-file "$KUBE_DIR/sa.key" --root-ca-file "$KUBE_DIR/ca.crt" \
	    --controllers '*,-nodeipam,-nodelifecycle,-persistentvolume-binder,-attachdetach,-persistentvolume-expander,-cloud-node-lifecycle,-ttl,-bootstrapsigner,-tokencleaner' \
	    >"$KUBE_DIR/controller-manager.log" 2>&1 &
	KUBE_PIDS_CM=$!
}

kc() { kubectl --kubeconfig "$KUBE_ADMIN" "$@"; }

kube_token() { # kube_token NS SA [SECONDS]
	kc -n "$1" create token "$2" --duration "${3:-3600}s"
}

kube_token_config() { # kube_token_config FILE TOKEN [NS]
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$KUBE_URL", certificate-authority: "$KUBE_DIR/ca.crt"}
users:
- name: sa
  user: {token: "$2"}
contexts:
- name: test
  context: {cluster: test, user: sa, namespace: "${3:-default}"}
current-context: test
EOF
}

kube_token_file_config() { # kube_token_file_config FILE TOKENFILE [NS]
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$KUBE_URL", certificate-authority: "$KUBE_DIR/ca.crt"}
users:
- name: sa
  user: {tokenFile: "$2"}
contexts:
- name: test
  context: {cluster: test, user: sa, namespace: "${3:-default}"}
current-context: test
EOF
}
