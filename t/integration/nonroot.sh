#!/bin/sh
# nonroot.sh - the daemons need no root (issue 13): decod, its four stages,
# decoctl and a replica all run as nobody:nogroup (setpriv: no supplementary
# groups, no capabilities, no_new_privs) with state_dir, runtime_dir, the
# store and file_root in a folder nobody owns.  An inline Decofile is
# fetched, rendered, published to the file target and pushed to the replica;
# every process is nobody's and every file it made is nobody's; SIGTERM
# stops decod cleanly.  Only root can switch users, so anyone else gets one
# SKIP line.
. "$top_srcdir/t/lib/common.sh"

[ "$(id -u)" = 0 ] || skip_all "not root: cannot switch to nobody to prove the daemons need no root"
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) not installed"
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null ||
	skip_all "no user nobody or group nogroup"
command -v python3 >/dev/null || skip_all "python3 not installed"
# the build tree must be reachable by nobody (a clone under a 0700 folder,
# as mktemp -d makes, is not): say so rather than fail
setpriv --reuid=nobody --regid=nogroup --clear-groups \
    test -x "$top_builddir/decod" 2>/dev/null ||
    skip_all "user nobody cannot reach the build tree $top_builddir (a parent folder is private)"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
for p in "$DECOD" "$DECOCTL" "$SITE"; do [ -x "$p" ] || bail "$p not built"; done
for s in fetcher renderer publisher notifier; do
	[ -x "$top_builddir/daemons/$s/$s" ] || bail "$s not built"
done

# NB ARGS... runs ARGS as nobody:nogroup, as a sandboxed unit would; a
# background process is started as `HOME=$N $AS_NOBODY prog &` so that $!
# is the program itself (setpriv execs it), which cleanup can stop
AS_NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs"
NB() { HOME=$N $AS_NOBODY "$@"; }
N=$T/nr
chmod 0711 "$T"		# nobody passes through, sees nothing else of ours
mkdir -p "$N/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$N/libexec/$s"
done
cat > "$N/decod.conf" <<CONF
state_dir = $N/state
runtime_dir = $N/run
libexec_dir = $N/libexec
store = local:$N/store
file_root = $N/pub
rescan_interval = 300ms
notify_timeout = 2s
notify_attempts = 2
CONF
chown -R -h nobody:nogroup "$N"
chmod 0700 "$N"
is "$(NB id -un)" nobody "setpriv runs commands as nobody"
export DECOD_CONFIG="$N/decod.conf"
ctl() { NB "$DECOCTL" -n sites-nr "$@"; }
ready4() { [ "$(NB "$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }

HOME=$N $AS_NOBODY "$DECOD" 2> "$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for 15 ready4
ok $? "decod as nobody: four stages READY"
[ "$TAP_FAILED" -eq 0 ] || { sed 's/^/# /' "$T/decod.log" | tail -20; bail "decod did not start as nobody"; }

PIDS="$SUP $(NB "$DECOCTL" stages -o json | python3 -c '
import json, sys
print(" ".join(str(s["pid"]) for s in json.load(sys.stdin)["stages"]))')"
users=$(for p in $PIDS; do ps -o user= -p "$p"; done | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
is "$users" "nobody=5 " "the supervisor and its four stages run as nobody"
caps=$(for p in $PIDS; do awk '/^CapEff|^CapPrm/ {print $2}' "/proc/$p/status"; done | sort -u | tr '\n' ' ')
is "$caps" "0000000000000000 " "... with no effective or permitted capability"

DECO_RELEASE_RELOAD_TOKEN=tok-nr HOME=$N $AS_NOBODY "$SITE" --port 0 --register "local:$N/store" \
    --namespace sites-nr --deployment loja --id r1 --ttl 30 \
    > "$T/r1.out" 2> "$T/r1.err" &
track_pid $!
wait_for 10 grep -q '^listening on' "$T/r1.out" || bail "replica did not start as nobody"
PORT=$(awk '/^listening on/ {print $3}' "$T/r1.out")

printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-nr"},"spec":{"source":"inline","inline":{"value":{"Header":{"title":"nobody"}}}}}' |
    NB sh -c "cat > '$N/loja.json'"
ctl apply -f "$N/loja.json" > "$T/apply.out" 2>&1
ok $? "decoctl apply as nobody"
ctl wait loja --for ready --timeout 60s > "$T/wait.out" 2>&1
st=$?
ok $st "the Decofile becomes Ready"
[ $st -eq 0 ] || sed 's/^/# /' "$T/wait.out" "$T/decod.log" | tail -20
EXPECT='{"Header":{"title":"nobody"}}'
is "$(cat "$N/pub/sites-nr/loja/decofile.json" 2>/dev/null)" "$EXPECT" \
    "the file target published the document under file_root"
served=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/.decofile" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])' 2>/dev/null)
is "$served" "$(printf '%s' "$EXPECT" | sha256sum | cut -d' ' -f1)" \
    "the replica (as nobody) serves it: the notifier pushed it"

strays=$(find "$N" ! -user nobody -o ! -group nogroup | head -5 | tr '\n' ' ')
is "$strays" "" "every file decod made is nobody's"
check "no permission error in decod's log" sh -c "! grep -qi 'permission denied\|EACCES\|EPERM' '$T/decod.log'"

kill -TERM $SUP
i=0
while kill -0 $SUP 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $SUP 2>/dev/null; then
	ok 1 "SIGTERM: decod (as nobody) stops within 20 s"
else
	wait $SUP
	is "$?" 0 "SIGTERM: decod (as nobody) stops its stages and exits 0"
fi
done_testing
