#!/bin/sh
# t/fuzz/replay.sh - every fuzz harness, built with the normal compiler
# (and the sanitizers in the sanitizer run), over its seeds and every
# regression input a fuzzing run once crashed on (t/fuzz/regress/<target>):
# a crash that was fixed stays fixed.
. "$top_srcdir/t/lib/common.sh"
TMPDIR=$T
export TMPDIR
for t in json render apply proto manifest store etcd site conf kube; do
	prog=$top_builddir/t/fuzz/fuzz_${t}_replay
	[ -x "$prog" ] || { ok 1 "$t: $prog not built"; continue; }
	"$prog" "$top_srcdir/t/fuzz/seeds/$t" "$top_srcdir/t/fuzz/regress/$t" > "$T/$t.out" 2>&1
	rc=$?
	ok $rc "$t: $(tail -1 "$T/$t.out")"
	[ $rc -eq 0 ] || sed 's/^/# /' "$T/$t.out" | tail -20
done
done_testing
