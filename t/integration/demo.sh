#!/bin/sh
# demo.sh - examples/demo.sh as a new user runs it, on this build: it rolls
# a change out to its three replicas, says so, keeps running; its output to
# a file holds no ANSI escape; kill -TERM of the script (not only Ctrl-C)
# stops everything it started and removes its folder.
. "$top_srcdir/t/lib/common.sh"

for p in decod decoctl; do [ -x "$(bin $p)" ] || bail "$p not built"; done
command -v curl >/dev/null || skip_all "curl not installed"

TMPDIR=$T DECOD_BUILD=$top_builddir DEMO_NO_BUILD=1 sh "$top_srcdir/examples/demo.sh" \
    >"$T/demo.out" 2>&1 </dev/null &
DEMO=$!
track_pid $DEMO
wait_for "$(scaled 90)" grep -q 'decod keeps running' "$T/demo.out"
ok $? "the demo rolls its change out and keeps running"
sed 's/^/# /' "$T/demo.out" | grep -i 'replica.*title\|confirmed' | head -4
check "all three replicas confirmed the new version" grep -q 'all 3 replicas confirmed the new version' "$T/demo.out"
check "no ANSI escape in its output to a file" sh -c "! grep -q \"$(printf '\033')\" '$T/demo.out'"
DIR=$(ls -d "$T"/decod-demo.* 2>/dev/null | head -1)
check "its folder is under TMPDIR" test -d "$DIR"
# the processes it started: decod (and through it the stages) and the replicas
KIDS=$(ps -o pid= --ppid $DEMO | tr -d ' ' | tr '\n' ' ')
ALL=$KIDS
for k in $KIDS; do ALL="$ALL $(ps -o pid= --ppid "$k" | tr -d ' ' | tr '\n' ' ')"; done
n=$(echo $ALL | wc -w)
check "it runs decod, its stages and the replicas ($n processes)" test "$n" -ge 8
kill -TERM $DEMO
wait_for "$(scaled 15)" sh -c "! kill -0 $DEMO 2>/dev/null"
ok $? "kill -TERM stops the demo"
gone() { for p in $ALL; do alive "$p" && return 1; done; return 0; }
wait_for "$(scaled 15)" gone
ok $? "... and everything it started"
check "... and removes its folder" test ! -e "$DIR"
done_testing
