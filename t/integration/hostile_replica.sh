#!/bin/sh
# hostile_replica.sh - the reference replica under abuse (issue 13, defect
# 5): unauthenticated 63 MiB bodies are refused from the headers without
# being read (memory stays flat), an oversized body is a 413 at once, 1,050
# idle connections under `ulimit -n 1024` neither crash it nor keep it
# unreachable past the idle timeout, and a parked poll is not "idle".
. "$top_srcdir/t/lib/common.sh"

SITE=$(bin decod-site)
[ -x "$SITE" ] || bail "decod-site not built"
command -v python3 >/dev/null || skip_all "python3 not installed"

mkdir -p "$T/dir"
printf '{"title":"x"}' > "$T/dir/Header.json"
printf '100' > "$T/dir/timestamp.txt"
( ulimit -n 1024 && DECO_RELEASE_RELOAD_TOKEN=s3cret exec "$SITE" --port 0 \
    --decofile-dir "$T/dir" --idle-timeout 2 --max-body 8MiB ) > "$T/site.out" 2> "$T/site.err" &
SITEPID=$!
track_pid $SITEPID
wait_for 10 grep -q '^listening on' "$T/site.out" || bail "site did not start"
PORT=$(awk '/^listening on/ {print $3}' "$T/site.out")
U=http://127.0.0.1:$PORT
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$SITEPID/status"; }
code() { u=$1; shift; curl -s -o "$T/body" -w '%{http_code}' --max-time 20 "$@" "$u"; }

is "$(code $U/)" 200 "the site answers"
before=$(hwm)
head -c $((63 << 20)) /dev/zero | tr '\0' 'a' > "$T/big"
for i in 1 2 3; do
	curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 -X POST \
	    -H 'Authorization: Token wrong' --data-binary "@$T/big" "$U/.decofile/reload" > "$T/c$i" &
	track_pid $!
done
wait_for 30 sh -c "[ -s '$T/c1' ] && [ -s '$T/c2' ] && [ -s '$T/c3' ]"
is "$(cat "$T/c1" "$T/c2" "$T/c3" | sort -u)" 401 "three unauthenticated 63 MiB bodies: 401 each"
after=$(hwm)
check "memory stays flat (peak RSS $before -> $after KiB, bound +8 MiB)" [ $((after - before)) -lt 8192 ]
is "$(code $U/.decofile/reload -X POST -H 'Authorization: Token s3cret' --data-binary "@$T/big")" 413 \
    "an authenticated body over --max-body: 413 from Content-Length"
after=$(hwm)
check "without reading it (peak RSS $after KiB)" [ $((after - before)) -lt 8192 ]
curl -s -o /dev/null --max-time 20 -X POST -H 'Authorization: Token s3cret' \
    -H 'Transfer-Encoding: chunked' --data-binary "@$T/big" "$U/.decofile/reload"
check "a chunked body over the cap is cut off, and the site lives" alive $SITEPID
after=$(hwm)
check "having kept at most the cap (peak RSS $after KiB)" [ $((after - before)) -lt 20480 ]
rm -f "$T/big"

# 1,050 idle connections against a 1,024 open-file limit
python3 - "$PORT" "$T/held" <<'PY' &
import socket, sys, time
socks = []
for i in range(1050):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
        socks.append(s)
    except OSError:
        pass
open(sys.argv[2], "w").write("%d\n" % len(socks))
time.sleep(15)
PY
HOLDER=$!
track_pid $HOLDER
wait_for 20 test -s "$T/held"
diag "held $(cat "$T/held") connections"
check "the site survives 1,050 idle connections" alive $SITEPID
answers() { [ "$(code $U/)" = 200 ]; }
wait_for 10 answers
ok $? "and answers again once idle ones time out (--idle-timeout 2), while they are still held"
kill $HOLDER 2>/dev/null

# a parked poll outlives the idle timeout
code "$U/.decofile/reload?timestamp=200&tsFile=$T/dir/timestamp.txt" -H 'Authorization: Token s3cret' \
    > "$T/poll.code" &
POLL=$!
track_pid $POLL
sleep 3 # longer than --idle-timeout: the poll must still be waiting
check "a poll parked past the idle timeout still waits" kill -0 $POLL
printf '200' > "$T/dir/timestamp.txt"
wait $POLL
is "$(cat "$T/poll.code")" 200 "and is answered when the timestamp comes"
check "no token in the log" sh -c "! grep -q s3cret '$T/site.err'"
done_testing
