# t/integration/scaleout_lib.sh - helpers for the scale-out tests and the
# scale-out benchmark (sourced after t/lib/common.sh and t/lib/etcd.sh):
# several decod instances on one machine, each with its own state_dir and
# runtime_dir, sharing one etcd and one file_root; stage programs come from
# the build tree through a libexec folder of symlinks.
#   so_setup              libexec folder, $DECOD, $CTL, $JQ checks
#   so_start NAME [K=V..] start instance NAME (extra conf lines K = V)
#   so_kill9 NAME         kill -9 its supervisor and every stage at once
#                         (its process group, and each stage pid)
#   so_stop NAME          SIGTERM and wait
#   so_ctl NAME ARGS...   decoctl against NAME's config
#   so_db NAME SQL        query NAME's journal
#   so_fetcher_pid NAME   pid of NAME's fetcher (its lock identity is host:pid)
#   so_ms                 now in ms
so_ms() { echo $(( $(date +%s%N) / 1000000 )); }

so_setup() {
	DECOD=$top_builddir/decod
	CTL=$(bin decoctl)
	[ -x "$DECOD" ] || bail "decod not built"
	[ -x "$CTL" ] || bail "decoctl not built"
	command -v jq >/dev/null || skip_all "jq not installed"
	command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
	SO_STAGES="fetcher renderer publisher"
	[ -x "$top_builddir/daemons/notifier/notifier" ] && SO_STAGES="$SO_STAGES notifier"
	mkdir -p "$T/libexec" "$T/published"
	for s in $SO_STAGES; do
		[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
		ln -sf "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
	done
	SO_HOST=$(hostname)
}

so_start() {
	n=$1; shift
	mkdir -p "$T/$n/state" "$T/$n/run"
	cat >"$T/$n/conf" <<CONF
state_dir = $T/$n/state
runtime_dir = $T/$n/run
libexec_dir = $T/libexec
stages = $SO_STAGES
store = etcd:$ETCD_URL
file_root = $T/published
session_ttl = ${SO_TTL:-2s}
rescan_interval = 200ms
drift_check_interval = 1s
poll_period = 2s
CONF
	for kv in "$@"; do echo "$kv" | sed 's/=/ = /' >>"$T/$n/conf"; done
	# its own process group, so a kill -9 can take every stage at once
	setsid "$DECOD" -c "$T/$n/conf" >>"$T/$n.log" 2>&1 &
	eval "SO_PID_$n=$!"
	track_pid $!
	wait_for 30 so_all_ready "$n" || { diag "instance $n not ready:"; tail -20 "$T/$n.log" | sed 's/^/#   /'; return 1; }
}

so_pid() { eval "echo \$SO_PID_$1"; }
so_ctl() { n=$1; shift; "$CTL" -c "$T/$n/conf" "$@"; }
so_db() { db_read "$T/$1/state/journal.db" "$2"; }
so_stages() { so_ctl "$1" stages -o json 2>/dev/null; }
so_all_ready() {
	want=$(echo $SO_STAGES | wc -w)
	[ "$(so_stages "$1" | jq '[.stages[] | select(.state=="READY")] | length' 2>/dev/null)" = "$want" ]
}
so_fetcher_pid() { so_stages "$1" | jq -r '.stages[] | select(.name=="fetcher") | .pid'; }

so_kill9() {
	p=$(so_pid "$1")
	SO_KILLED=$(so_stages "$1" | jq -r '.stages[].pid' | tr '\n' ' ')
	kill -KILL -"$p"
	for k in $SO_KILLED; do kill -KILL "$k" 2>/dev/null; done
	wait "$p" 2>/dev/null
	return 0
}
# so_all_dead: every process of the last so_kill9 is gone
so_all_dead() { for k in $SO_KILLED; do alive "$k" && return 1; done; return 0; }

so_stop() {
	p=$(so_pid "$1")
	kill -TERM "$p" 2>/dev/null
	wait_for 20 sh -c "! kill -0 $p 2>/dev/null"
	wait "$p" 2>/dev/null
	return 0
}

# so_decofiles N PREFIX NS [SALT]: apply N inline Decofiles PREFIX-0..N-1 (via instance a)
so_decofiles() {
	f=$T/dfs-$2.yaml
	: >"$f"
	i=0
	while [ "$i" -lt "$1" ]; do
		cat >>"$f" <<Y
---
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: $2-$i, namespace: $3}
spec:
  source: inline
  inline: {value: {Header: {n: $i, salt: "${4:-x}"}, Footer: {text: "site $i"}}}
Y
		i=$((i + 1))
	done
	so_ctl a apply -f "$f" >/dev/null
}

# so_status NAME NS: decoctl status as JSON
so_status() { so_ctl "$1" status -n "$2" -o json; }
# so_ready_count NAME NS: decofiles with Ready=True
so_ready_count() { so_status "$1" "$2" | jq '[.[] | select(.ready=="True")] | length'; }
