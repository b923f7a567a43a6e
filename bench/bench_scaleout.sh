#!/bin/sh
# bench_scaleout.sh - scale-out figures against a real etcd on loopback
# (`make bench-scaleout`, or sh bench/bench_scaleout.sh BUILDDIR):
#   1. watch latency: put a Decofile in etcd -> its renderer item in the
#      fetcher's journal (lock taken, inline fetch, journal commit); p50 of 200
#   2. start-up of an instance with 10,000 Decofiles in etcd: list + lock +
#      first reconcile (a renderer item for every one)
#   3. lock takeover after kill -9 of one of two instances (session_ttl 2 s
#      and the default 10 s): until the survivor holds every lock
# Instances run the fetcher stage only, so the figures are the fetcher's.
top_builddir=$(cd "${1:-.}" && pwd)
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
export top_srcdir top_builddir
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"
. "$top_srcdir/t/integration/scaleout_lib.sh"
PY="python3 $top_srcdir/bench/bench_scaleout.py"
so_setup
SO_STAGES=fetcher
N_LAT=${N_LAT:-200}
N_START=${N_START:-10000}
STEPS=${STEPS:-1 2 3}	# e.g. STEPS=2: the start-up alone
step() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

etcd_start >/dev/null || bail "etcd did not start"
echo "# machine: $(nproc) cores, $(uname -sr), etcd $(etcd --version | head -1 | awk '{print $3}')"

# 1. watch latency
if step 1; then
so_start a session_ttl=10s || bail "instance a"
echo "watch latency (put -> renderer item), $N_LAT new Decofiles (lock taken on the way): $($PY latency "$ETCD_URL" lat $N_LAT "$T/a/state/journal.db")"
echo "watch latency, an edit of each (lock already held): $($PY latency-edit "$ETCD_URL" lat $N_LAT "$T/a/state/journal.db")"
so_stop a
fi

# 2. start-up with N_START Decofiles
if step 2; then
etcdctl --endpoints "$ETCD_URL" del --prefix /decod/ >/dev/null
rm -rf "$T/a"
t0=$(so_ms)
$PY put-many "$ETCD_URL" big "$N_START"
echo "loaded $N_START Decofiles into etcd in $(( $(so_ms) - t0 )) ms"
t0=$(so_ms)
so_start a session_ttl=10s || bail "instance a (start-up)"
ready=$(( $(so_ms) - t0 ))
if [ -n "${PERF_OUT:-}" ]; then	# perf record -g of the fetcher during the start-up
	perf record -g -o "$PERF_OUT" -p "$(so_fetcher_pid a)" >/dev/null 2>&1 &
	PERF_PID=$!
fi
if [ -n "${STRACE_OUT:-}" ]; then	# strace -c -w of the fetcher during the start-up
	strace -f -c -w -o "$STRACE_OUT" -p "$(so_fetcher_pid a)" >/dev/null 2>&1 &
	PERF_PID=$!
fi
all_in() { [ "$($PY count "$T/a/state/journal.db")" -ge "$N_START" ]; }
wait_for 300 all_in || echo "# start-up: not all reconciled within 300 s ($($PY count "$T/a/state/journal.db"))"
echo "start-up with $N_START Decofiles: stages ready ${ready} ms, every Decofile locked and handed to the renderer $(( $(so_ms) - t0 )) ms"
if [ -n "${PERF_PID:-}" ]; then kill -INT "$PERF_PID"; wait "$PERF_PID"; fi
echo "locks: $($PY owners "$ETCD_URL" | tr '\n' ' ')"
so_stop a
fi

# 3. lock takeover
if step 3; then
for ttl in 2 10; do
	etcdctl --endpoints "$ETCD_URL" del --prefix /decod/ >/dev/null
	rm -rf "$T/a" "$T/b"
	so_start a session_ttl=${ttl}s || bail "instance a"
	so_start b session_ttl=${ttl}s || bail "instance b"
	# both registered first, so each takes its fair share (fetcher-only
	# instances never settle, so they would not hand work over later)
	$PY put-many "$ETCD_URL" tk 100
	FA="$SO_HOST:$(so_fetcher_pid a)"
	FB="$SO_HOST:$(so_fetcher_pid b)"
	split() { $PY owners "$ETCD_URL" | grep -q "^$FB " && [ "$($PY owners "$ETCD_URL" | awk '{s+=$2} END {print s}')" = 100 ]; }
	wait_for 60 split || echo "# b never got a share"
	held=$($PY owners "$ETCD_URL" | awk -v b="$FB" '$1==b {print $2}')
	so_kill9 b
	t0=$(so_ms)
	all_a() { [ "$($PY owners "$ETCD_URL" | tr '\n' ' ')" = "$FA 100 " ]; }
	wait_for $((ttl + 30)) all_a
	echo "lock takeover, session_ttl ${ttl}s: b held $held of 100; a holds all $(( $(so_ms) - t0 )) ms after kill -9 of b"
	so_stop a
done
fi
