#!/bin/sh
# install-deps.sh - install what decod needs to build, test and run its demo
# on Debian 12.  Run as root (or it re-runs itself with sudo).  Installs only
# what is missing; safe to run again.  (nodejs and npm run the S3 stand-in
# of the tests, t/stand-in/s3; its npm packages are installed by the test.)
set -eu
PKGS="build-essential autoconf automake libtool pkg-config
libnng-dev libcurl4-openssl-dev libyajl-dev libbrotli-dev libmicrohttpd-dev
libssl-dev libhiredis-dev libsqlite3-dev libyaml-dev libarchive-dev
sqlite3 git curl jq brotli python3 python3-yaml groff-base etcd-server etcd-client"
PKGS="$PKGS libgnutls28-dev"
PKGS="$PKGS python3-jsonpatch openssl"
PKGS="$PKGS docker-registry apache2-utils python3-cryptography"
PKGS="$PKGS python3-kubernetes"
# decoctl completion: its test loads the zsh and fish scripts in real shells
PKGS="$PKGS zsh fish"
# the acl stage's tests and benchmark: a real master, replicas and sentinels
PKGS="$PKGS redis-server redis-sentinel redis-tools"
# deploy/ on a real node (t/integration/deploy_node.sh, t/lib/node.sh): the
# kubelet's container runtime, the image's Debian root, the test's netns
PKGS="$PKGS containerd runc debootstrap iproute2 util-linux libc6-dev"
# metrics: a real Prometheus scrapes every daemon and promtool checks the
# expositions and deploy/monitoring's rules (t/integration/metrics_*.sh)
PKGS="$PKGS prometheus"
# decod's systemd units booted under a real systemd (t/integration/systemd_boot.sh)
PKGS="$PKGS systemd-container"
# the web stage's page in a real browser (t/integration/web_page.sh drives
# Debian's chromium with npm's playwright-core, which downloads no browser)
PKGS="$PKGS chromium"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
# the S3 stand-in of the tests (t/stand-in/s3) runs on node; a host may have
# node and npm from elsewhere (nodesource bundles npm), so ask for the commands
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	exec sudo "$0" "$@"
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq -o DPkg::Lock::Timeout=600
# shellcheck disable=SC2086
apt-get install -y -qq -o DPkg::Lock::Timeout=600 $missing >/dev/null
# the etcd package starts a system etcd on :2379; decod's tests start their own
if command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now etcd >/dev/null 2>&1 || true
	# likewise docker-registry (:5000): the OCI tests start their own
	systemctl disable --now docker-registry >/dev/null 2>&1 || true
	# and containerd: deploy_node.sh runs its own in its own namespace
	systemctl disable --now containerd >/dev/null 2>&1 || true
	# prometheus (:9090) and the node exporter it pulls in (:9100, the port
	# doc/metrics.md's example gives metrics_listen): the tests start their own
	systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
