# t/lib/valkey.sh - a real Valkey/Redis cluster for tests: one master, two
# replicas and three sentinels on 127.0.0.1, free ports, in $T/vk.  Every
# node has the admin password (requirepass + masterauth; sentinel auth-pass),
# each sentinel's config is seeded with known-replica, known-sentinel and a
# fixed myid so discovery takes no time, and down-after-milliseconds is
# short.  Source after t/lib/common.sh.  Passwords reach redis-cli through
# REDISCLI_AUTH, never argv.
#
#   vk_require                  skip the test unless redis-server/-sentinel exist
#   vk_start                    start all six; sets VK_ADMIN, VK_P1..3 (nodes),
#                               VK_S1..3 (sentinels), VK_SENTINELS (list)
#   vk_start_one                one node alone (no replica, no sentinel):
#                               VK_ADMIN, VK_P1
#   vk_node_start N             (re)start node N (1 is the first master)
#   vk_sentinel_start N         (re)start sentinel N on VK_SN, watching VK_P1
#                               and, as known replicas, VK_REPLICA_PORTS
#                               (default: VK_P2 VK_P3), knowing the sentinels
#                               VK_SENTINEL_IDS (default: 1 2 3)
#   vk_kill N                   kill -9 node N
#   vk_admin PORT CMD...        run a command as the admin
#   vk_as USER PASS PORT CMD... run a command as a tenant
#   vk_master_port              the port Sentinel names as master now

vk_require() {
	command -v redis-server >/dev/null || skip_all "redis-server not installed (apt-get install redis-server)"
	command -v redis-sentinel >/dev/null || skip_all "redis-sentinel not installed (apt-get install redis-sentinel)"
	command -v redis-cli >/dev/null || skip_all "redis-cli not installed (apt-get install redis-tools)"
}

vk_admin() { # PORT CMD...
	p=$1; shift
	REDISCLI_AUTH="$VK_ADMIN" redis-cli --no-auth-warning -h 127.0.0.1 -p "$p" "$@" 2>&1
}

vk_as() { # USER PASS PORT CMD...
	u=$1; pw=$2; p=$3; shift 3
	REDISCLI_AUTH="$pw" redis-cli --no-auth-warning --user "$u" -h 127.0.0.1 -p "$p" "$@" 2>&1
}

vk_sentinel() { # PORT CMD...
	p=$1; shift
	redis-cli -h 127.0.0.1 -p "$p" "$@" 2>&1
}

vk_node_start() { # N [replicaof-port]
	n=$1
	eval "p=\$VK_P$n"
	mkdir -p "$T/vk/n$n"
	{
		echo "port $p"
		echo "bind 127.0.0.1"
		echo "dir $T/vk/n$n"
		echo "daemonize no"
		echo "save \"\""
		echo "appendonly no"
		echo "logfile $T/vk/n$n.log"
		echo "requirepass $VK_ADMIN"
		echo "masterauth $VK_ADMIN"
		[ -n "${2:-}" ] && echo "replicaof 127.0.0.1 $2"
	} > "$T/vk/n$n.conf"
	chmod 600 "$T/vk/n$n.conf"
	redis-server "$T/vk/n$n.conf" >/dev/null 2>&1 &
	eval "VK_PID$n=$!"
	track_pid $!
	wait_for 10 sh -c "[ \"\$(REDISCLI_AUTH='$VK_ADMIN' redis-cli --no-auth-warning -p $p ping 2>/dev/null)\" = PONG ]" ||
		bail "valkey node $n (port $p) did not start"
}

vk_kill() { # N
	eval "pid=\$VK_PID$1"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

vk_sentinel_start() { # N
	n=$1
	eval "p=\$VK_S$n"
	mkdir -p "$T/vk/s$n"
	{
		echo "port $p"
		echo "bind 127.0.0.1"
		echo "dir $T/vk/s$n"
		echo "daemonize no"
		echo "logfile $T/vk/s$n.log"
		echo "sentinel myid $(printf '%040d' "$n")"
		echo "sentinel monitor mymaster 127.0.0.1 $VK_P1 2"
		echo "sentinel auth-pass mymaster $VK_ADMIN"
		echo "sentinel down-after-milliseconds mymaster ${VK_DOWN_AFTER:-1000}"
		echo "sentinel failover-timeout mymaster 10000"
		echo "sentinel parallel-syncs mymaster 2"
		for rp in ${VK_REPLICA_PORTS:-$VK_P2 $VK_P3}; do
			echo "sentinel known-replica mymaster 127.0.0.1 $rp"
		done
		for k in ${VK_SENTINEL_IDS:-1 2 3}; do
			[ "$k" = "$n" ] && continue
			eval "sp=\$VK_S$k"
			echo "sentinel known-sentinel mymaster 127.0.0.1 $sp $(printf '%040d' "$k")"
		done
	} > "$T/vk/s$n.conf"
	chmod 600 "$T/vk/s$n.conf"
	redis-sentinel "$T/vk/s$n.conf" >/dev/null 2>&1 &
	eval "VK_SPID$n=$!"
	track_pid $!
	wait_for 10 sh -c "[ \"\$(redis-cli -p $p ping 2>/dev/null)\" = PONG ]" ||
		bail "sentinel $n (port $p) did not start"
}

vk_master_port() {
	for k in 1 2 3; do
		eval "sp=\$VK_S$k"
		a=$(redis-cli -p "$sp" sentinel get-master-addr-by-name mymaster 2>/dev/null | sed -n 2p)
		[ -n "$a" ] && { echo "$a"; return 0; }
	done
	return 1
}

# vk_replicas_up PORT: the master at PORT sees two replicas online
vk_replicas_up() {
	[ "$(vk_admin "$1" info replication | tr -d '\r' | grep -c '^slave[0-9]*:.*state=online')" -ge 2 ]
}

# vk_sentinels_know: every sentinel knows 2 replicas and 2 other sentinels
vk_sentinels_know() {
	for k in 1 2 3; do
		eval "sp=\$VK_S$k"
		[ "$(redis-cli -p "$sp" sentinel master mymaster 2>/dev/null | tr -d '\r' |
		    awk 'p {print; p=0} /^num-slaves$/ {p=1}')" = 2 ] || return 1
		[ "$(redis-cli -p "$sp" sentinel master mymaster 2>/dev/null | tr -d '\r' |
		    awk 'p {print; p=0} /^num-other-sentinels$/ {p=1}')" = 2 ] || return 1
	done
}

# vk_port: a free port not handed out before in this test
VK_USED=""
vk_port() {
	while :; do
		p=$(free_port)
		case " $VK_USED " in *" $p "*) continue ;; esac
		VK_USED="$VK_USED $p"
		echo "$p"
		return 0
	done
}

vk_new_admin() {
	VK_ADMIN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | cut -c1-24)
	mkdir -p "$T/vk"
}

vk_start_one() {
	vk_new_admin
	VK_P1=$(vk_port)
	VK_USED="$VK_USED $VK_P1"
	vk_node_start 1
}

vk_start() {
	vk_new_admin
	for v in VK_P1 VK_P2 VK_P3 VK_S1 VK_S2 VK_S3; do
		p=$(vk_port)
		VK_USED="$VK_USED $p"
		eval "$v=$p"
	done
	vk_node_start 1
	vk_node_start 2 "$VK_P1"
	vk_node_start 3 "$VK_P1"
	wait_for 20 vk_replicas_up "$VK_P1" || bail "replicas did not sync with the master"
	vk_sentinel_start 1
	vk_sentinel_start 2
	vk_sentinel_start 3
	wait_for 20 vk_sentinels_know || bail "sentinels did not see the cluster"
	VK_SENTINELS="127.0.0.1:$VK_S1,127.0.0.1:$VK_S2,127.0.0.1:$VK_S3"
}
