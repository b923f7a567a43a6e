# t/lib/pipeline.sh - decod with its real pipeline stages, for the tests
# that drive them through decoctl (after t/lib/common.sh).
#
#   pipeline_setup STAGES [LINE...]  check the programs; $T/libexec links the
#                               STAGES ("fetcher renderer publisher notifier"
#                               or fewer); $T/decod.conf for a local store,
#                               a 1 h poll and the LINEs; DECOD_CONFIG; sets
#                               DECOD, DECOCTL, SITE and NS (loja-sao-paulo)
#   ctl ARGS...                 decoctl -n $NS ARGS
#   pipeline_start              start decod, ok once every stage is READY
#   replica_start ID            a reference replica of deployment loja in
#                               $NS (reload token tok-ID), once it listens
#   apply_dir NAME DIR          ok: a Decofile NAME in $NS, source dir DIR
#   status_json FIELD           a field of `decoctl status loja -o json`

pipeline_setup() { # STAGES [LINE...]
	PIPELINE_STAGES=$1; shift
	DECOD=$(bin decod)
	DECOCTL=$(bin decoctl)
	SITE=$(bin decod-site)
	for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
	mkdir -p "$T/libexec"
	for s in $PIPELINE_STAGES; do
		[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
		ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
	done
	cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
stages = $PIPELINE_STAGES
rescan_interval = 300ms
poll_period = 1h
CONF
	for line in "$@"; do printf '%s\n' "$line" >>"$T/decod.conf"; done
	export DECOD_CONFIG="$T/decod.conf"
	NS="loja-sao-paulo"
}

ctl() { "$DECOCTL" -n "$NS" "$@"; }

_pipeline_ready() {
	[ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq "$(echo $PIPELINE_STAGES | wc -w)" ]
}

pipeline_start() {
	"$DECOD" 2>"$T/decod.log" &
	track_pid $!
	wait_for "$(scaled 20)" _pipeline_ready
	ok $? "decod: $(echo $PIPELINE_STAGES | wc -w) stages READY"
}

replica_start() { # ID
	DECO_RELEASE_RELOAD_TOKEN="tok-$1" "$SITE" --port 0 --register "local:$T/store" \
	    --namespace "$NS" --deployment loja --id "$1" --ttl 60 >"$T/$1.out" 2>"$T/$1.err" &
	track_pid $!
	wait_for "$(scaled 10)" grep -q '^listening on' "$T/$1.out" || bail "replica $1 did not start"
}

apply_dir() { # NAME DIR
	cat >"$T/$1.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: $1
  namespace: $NS
spec:
  source: dir
  dir:
    path: "$2"
YAML
	ctl apply -f "$T/$1.yaml" >/dev/null
	ok $? "apply the Decofile $1"
}

status_json() { # FIELD
	ctl status loja -o json | python3 -c '
import json, sys
print(json.load(sys.stdin)[0].get(sys.argv[1], ""))' "$1"
}
