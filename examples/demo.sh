#!/bin/sh
# demo.sh - the embedded default, end to end: install what is missing, build,
# start decod (local store, file target) with a sample decofile folder and
# three reference replicas, change a block, and show the rollout reach all
# three.  Then it keeps running so you can try a change by hand; Ctrl-C (or
# kill -TERM) stops everything it started.  DECOD_BUILD names a build folder;
# DEMO_NO_BUILD=1 uses it as it is (the test runs the demo that way).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${DECOD_BUILD:-$top/_build}

# bold headings on a terminal only (and not under NO_COLOR): a log file gets
# no escape sequences
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi

if [ -z "${DEMO_NO_BUILD:-}" ]; then
	say "installing what is missing (Debian packages)"
	"$top/examples/install-deps.sh"
	say "building"
	[ -x "$top/configure" ] || (cd "$top" && ./bootstrap >/dev/null 2>&1)
	mkdir -p "$build"
	cd "$build"
	[ -f Makefile ] || "$top/configure" -q
	make -j2 -s >/dev/null
fi

D=$(mktemp -d "${TMPDIR:-/tmp}/decod-demo.XXXXXX")
PIDS=""
SLEEPER=""
cleanup() {
	for p in $PIDS $SLEEPER; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

mkdir -p "$D/libexec" "$D/site"
for s in fetcher renderer publisher notifier; do
	ln -s "$build/daemons/$s/$s" "$D/libexec/$s"
done
cp -r "$top/examples/sample-site/blocks" "$D/site/blocks"
cat > "$D/decod.conf" <<CONF
# the embedded default: local store, file target, everything under $D
state_dir = $D/state
runtime_dir = $D/run
libexec_dir = $D/libexec
store = local:$D/store
poll_period = 2s
CONF
export DECOD_CONFIG="$D/decod.conf"
DECOCTL="$build/decoctl"

say "starting decod"
"$build/decod" 2>"$D/decod.log" &
PIDS="$PIDS $!"
i=0
until [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -ge 4 ]; do
	i=$((i + 1)); [ $i -lt 200 ] || { echo "decod did not start; see $D/decod.log"; exit 1; }
	sleep 0.05
done
"$DECOCTL" stages

say "starting three reference replicas of site 'loja'"
for r in 1 2 3; do
	mkdir -p "$D/replica$r"
	"$build/examples/site/decod-site" --port 0 --lenient --decofile-dir "$D/replica$r" \
	    --register "local:$D/store" --namespace demo --deployment loja --id "replica$r" \
	    >"$D/replica$r.log" 2>&1 &
	PIDS="$PIDS $!"
done
for r in 1 2 3; do
	i=0
	until grep -q 'listening on' "$D/replica$r.log" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 200 ] || { echo "replica $r did not start"; exit 1; }
		sleep 0.05
	done
	sed -n 's/.*listening on \([0-9]*\).*/  replica'"$r"': http:\/\/127.0.0.1:\1/p' "$D/replica$r.log" | head -1
done

say "applying the Decofile (source: the folder $D/site/blocks)"
cat > "$D/loja.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja
  namespace: demo
spec:
  source: dir
  dir:
    path: $D/site/blocks
  target: file
YAML
cat "$D/loja.yaml"
"$DECOCTL" apply -f "$D/loja.yaml"
"$DECOCTL" -n demo wait loja --for ready --timeout 60s
"$DECOCTL" -n demo status

say "changing a block: Header.json gets a new title"
since=$(date +%s)
sed -i 's/"Loja — welcome"/"Loja — Black Friday is here"/' "$D/site/blocks/Header.json"
"$DECOCTL" -n demo sync loja
"$DECOCTL" -n demo wait loja --for "timestamp:$since" --timeout 60s
"$DECOCTL" -n demo describe loja

say "what each replica serves now"
served=0
for r in 1 2 3; do
	port=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$D/replica$r.log" | head -1)
	title=$(curl -s "http://127.0.0.1:$port/.decofile" | grep -o '"title":"[^"]*"' | head -1)
	echo "  replica$r: $title"
	case "$title" in *"Black Friday is here"*) served=$((served + 1)) ;; esac
done
if [ "$served" -eq 3 ]; then
	echo "  all 3 replicas confirmed the new version"
else
	echo "  only $served of 3 replicas serve the new version; see $D/decod.log"
	exit 1
fi
cat <<MSG

decod keeps running.  Try a change by hand:
  \$EDITOR $D/site/blocks/Footer.json
  DECOD_CONFIG=$D/decod.conf $DECOCTL -n demo sync loja
  DECOD_CONFIG=$D/decod.conf $DECOCTL -n demo wait loja --for synced --timeout 60s
  DECOD_CONFIG=$D/decod.conf $DECOCTL -n demo status
The published file: $D/state/published/demo/loja/decofile.json
Logs: $D/decod.log.  Press Ctrl-C to stop everything.
MSG
# wait, not a foreground sleep: the shell runs the TERM trap only once its
# foreground command ends, so `kill PID` would have waited up to an hour
while :; do
	sleep 3600 &
	SLEEPER=$!
	wait "$SLEEPER"
done
