# t/lib/etcd.sh - start and stop real etcd members for tests.  Source it
# after t/lib/common.sh.  Every member gets free loopback ports and a data
# folder under $T, is tracked for cleanup, and is waited on until healthy.
#   etcd_start [NAME]      one member; sets ETCD_URL, ETCD_PID
#   etcd_stop [NAME]       stop it by PID (SIGTERM) and wait
#   etcd_restart [NAME]    start it again on the same ports and data
#   etcd_cluster_start     three members c1 c2 c3; sets ETCD_URLS (comma
#                          list), ETCD_URL (the first) and ETCD_PID_c1...
#   etcd_leader            name of the current leader member
#   etcd_pid NAME / etcd_url NAME
#   etcd_compact [NAME]    compact history up to the current revision
command -v etcd >/dev/null 2>&1 || skip_all "etcd not installed (apt-get install etcd-server etcd-client)"
ETCDCTL_API=3
export ETCDCTL_API

# _etcd_spawn NAME: run the member described by $T/etcd-NAME.args
_etcd_spawn() {
	# shellcheck disable=SC2046
	etcd $(cat "$T/etcd-$1.args") >>"$T/etcd-$1.log" 2>&1 &
	echo $! >"$T/etcd-$1.pid"
	track_pid $!
}

etcd_pid() { cat "$T/etcd-$1.pid"; }
etcd_url() { cat "$T/etcd-$1.url"; }

_etcd_healthy() { curl -sf -m 2 "$1/health" 2>/dev/null | grep -q '"health":"true"'; }

# _etcd_wait NAME: wait until the member answers healthy (a leader exists)
_etcd_wait() {
	if ! wait_for 30 _etcd_healthy "$(etcd_url "$1")"; then
		echo "# etcd $1 did not become healthy; its log:"
		sed 's/^/#   /' "$T/etcd-$1.log" | tail -20
		return 1
	fi
}

# _etcd_prepare NAME CPORT PPORT CLUSTER
_etcd_prepare() {
	mkdir -p "$T/etcd-$1"
	echo "http://127.0.0.1:$2" >"$T/etcd-$1.url"
	cat >"$T/etcd-$1.args" <<ARGS
--name $1 --data-dir $T/etcd-$1
--listen-client-urls http://127.0.0.1:$2 --advertise-client-urls http://127.0.0.1:$2
--listen-peer-urls http://127.0.0.1:$3 --initial-advertise-peer-urls http://127.0.0.1:$3
--initial-cluster $4 --initial-cluster-state new --initial-cluster-token decod-test
--log-level warn
ARGS
}

etcd_start() {
	n=${1:-e1}
	cp=$(free_port)
	pp=$(free_port)
	while [ "$pp" = "$cp" ]; do pp=$(free_port); done
	_etcd_prepare "$n" "$cp" "$pp" "$n=http://127.0.0.1:$pp"
	_etcd_spawn "$n"
	ETCD_URL=$(etcd_url "$n")
	ETCD_PID=$(etcd_pid "$n")
	export ETCD_URL ETCD_PID
	_etcd_wait "$n"
}

etcd_stop() {
	p=$(etcd_pid "${1:-e1}")
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	return 0
}

etcd_restart() {
	n=${1:-e1}
	_etcd_spawn "$n"
	ETCD_PID=$(etcd_pid "$n")
	export ETCD_PID
	_etcd_wait "$n"
}

etcd_cluster_start() {
	members="c1 c2 c3"
	cluster=""
	used=""
	for m in $members; do
		cp=$(free_port)
		while echo " $used " | grep -q " $cp "; do cp=$(free_port); done
		used="$used $cp"
		pp=$(free_port)
		while echo " $used " | grep -q " $pp "; do pp=$(free_port); done
		used="$used $pp"
		eval "_cp_$m=$cp _pp_$m=$pp"
		cluster="$cluster${cluster:+,}$m=http://127.0.0.1:$pp"
	done
	ETCD_URLS=""
	for m in $members; do
		eval "cp=\$_cp_$m pp=\$_pp_$m"
		_etcd_prepare "$m" "$cp" "$pp" "$cluster"
		_etcd_spawn "$m"
		eval "ETCD_PID_$m=$(etcd_pid "$m")"
		ETCD_URLS="$ETCD_URLS${ETCD_URLS:+,}http://127.0.0.1:$cp"
	done
	ETCD_URL=$(etcd_url c1)
	export ETCD_URLS ETCD_URL
	for m in $members; do _etcd_wait "$m" || return 1; done
}

# etcd_leader: the member whose ID is the leader each member reports
etcd_leader() {
	for m in c1 c2 c3; do
		s=$(curl -sf -m 2 "$(etcd_url "$m")/v3/maintenance/status" -d '{}' 2>/dev/null) || continue
		id=$(echo "$s" | sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p')
		lead=$(echo "$s" | sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p')
		[ -n "$id" ] && [ "$id" = "$lead" ] && { echo "$m"; return 0; }
	done
	return 1
}

etcd_compact() {
	u=$(etcd_url "${1:-e1}")
	rev=$(curl -sf "$u/v3/kv/range" -d '{"key":"AA=="}' |
	    sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')
	etcdctl --endpoints "$u" compact "$rev" >/dev/null
}
