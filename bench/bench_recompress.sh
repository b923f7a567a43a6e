#!/bin/sh
# bench_recompress.sh - best size without the wait (doc/benchmarks.md):
# a 4.2 MB dir-source site (bench/gen, seed 1, 360 files) behind the real
# supervisor and stages, file target.  Per round: a block is edited,
# `decoctl sync`, and we time edit -> published (fast quality), then edit
# -> the quality-11 .bin swapped in (the publisher's recompress item done),
# and compare the stored .bin with `brotli -q 11 -w 24` of the same bytes.
# While the recompression runs, a second, small site is edited and its
# edit -> published is timed against the same figure taken idle.
#   sh bench/bench_recompress.sh BUILD_DIR [ROUNDS]     (or: make bench-recompress)
set -eu
build=$(cd "${1:?usage: bench_recompress.sh BUILD_DIR [ROUNDS]}" && pwd)
rounds=${2:-5}
top=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP PIPE	# so the EXIT trap runs (a reader such as head gone too)
command -v brotli >/dev/null || { echo "bench_recompress.sh: brotli is needed" >&2; exit 1; }

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$build/daemons/$s/$s" "$T/libexec/$s"
done
"$build/bench/gen" -s 1 -n 360 -b 4.2MB "$T/big" >/dev/null
printf '{"title":"round 0"}' > "$T/big/BenchEdit.json"
cp -r "$top/examples/sample-site/blocks" "$T/small"
printf '{"title":"round 0"}' > "$T/small/BenchEdit.json"

cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
poll_period = 1h
CONF
export DECOD_CONFIG="$T/decod.conf"
"$build/decod" 2>"$T/decod.log" &
PIDS="$PIDS $!"
i=0
until [ "$("$build/decoctl" stages 2>/dev/null | grep -c READY)" -eq 4 ]; do
	i=$((i+1)); [ $i -lt 400 ]; sleep 0.05
done
for s in big small; do
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"bench"},"spec":{"source":"dir","dir":{"path":"%s"}}}' \
	    "$s" "$T/$s" > "$T/$s.json"
	"$build/decoctl" apply -f "$T/$s.json" >/dev/null
	"$build/decoctl" -n bench wait "$s" --for ready --timeout 120s >/dev/null
done

DB=$T/state/journal.db
sql() { sqlite3 -readonly -cmd '.timeout 5000' "$DB" "$1"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
ts() { "$build/decoctl" -n bench get decofile "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["timestamp"])'; }
hash_of() { "$build/decoctl" -n bench get decofile "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["contentHash"])'; }
edit() { # edit SITE ROUND: edit, sync, wait published; prints the ms
	last=$(ts "$1")
	printf '{"title":"round %d"}' "$2" > "$T/$1/BenchEdit.json"
	t0=$(ms)
	"$build/decoctl" -n bench sync "$1" >/dev/null
	"$build/decoctl" -n bench wait "$1" --for "timestamp:$((last + 1))" --timeout 60s >/dev/null
	echo $(( $(ms) - t0 ))
}
swapped() { [ "$(sql "SELECT count(*) FROM items WHERE stage='publisher' AND kind='recompress' AND hash='$1' AND state='done' AND result='swapped'")" -ge 1 ]; }
med() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
max() { echo "$@" | tr ' ' '\n' | grep . | sort -n | tail -1; }

small_idle=""
r=1
while [ "$r" -le "$rounds" ]; do small_idle="$small_idle $(edit small $((100 + r)))"; r=$((r + 1)); done

pub="" swap="" ratio="" small_busy=""
r=1
while [ "$r" -le "$rounds" ]; do
	t0=$(ms)
	pub="$pub $(edit big "$r")"
	h=$(hash_of big)
	# the small site's edit while the big one's recompression runs
	small_busy="$small_busy $(edit small $((200 + r)))"
	i=0
	until swapped "$h"; do i=$((i + 1)); [ $i -lt 6000 ]; sleep 0.01; done
	swap="$swap $(( $(ms) - t0 ))"
	f=$T/state/published/bench/big/decofile.bin
	base64 -d < "$f" > "$T/stored.br"
	brotli -d -c "$T/stored.br" > "$T/doc.json"
	[ "$(sha256sum < "$T/doc.json" | cut -d' ' -f1)" = "$h" ] || { echo "round $r: the stored .bin is not the document" >&2; exit 1; }
	brotli -c -q 11 -w 24 "$T/doc.json" > "$T/ref.br"
	ratio="$ratio $(python3 -c 'import sys; print("%.4f" % (int(sys.argv[1]) / int(sys.argv[2])))' "$(stat -c %s "$T/stored.br")" "$(stat -c %s "$T/ref.br")")"
	r=$((r + 1))
done
fast=$(sql "SELECT size FROM renders WHERE name='big' AND quality IS NULL ORDER BY id DESC LIMIT 1")
slow=$(sql "SELECT size FROM renders WHERE name='big' AND quality = 11 ORDER BY id DESC LIMIT 1")
echo "# $(nproc) cores; load: $(uptime | sed 's/.*load average: //')"
echo "4.2 MB site ($(stat -c %s "$T/doc.json") bytes of JSON), $rounds rounds:"
echo "  edit -> published (fast quality) ms: $pub  (median $(med $pub), max $(max $pub))"
echo "  edit -> quality-11 .bin swapped  ms: $swap  (median $(med $swap), max $(max $swap))"
echo "  stored / brotli -q 11 -w 24 size:   $ratio"
echo "  .bin base64 bytes: fast $fast, recompressed $slow"
echo "  notifier items for the big site: $(sql "SELECT count(*) FROM items WHERE stage='notifier' AND name='big'") (1 + $rounds edits: none for a swap)"
echo "small site edit -> published ms, idle: $small_idle  (median $(med $small_idle), max $(max $small_idle))"
echo "                  during a recompression: $small_busy  (median $(med $small_busy), max $(max $small_busy))"
