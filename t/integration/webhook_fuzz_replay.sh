#!/bin/sh
# webhook_fuzz_replay.sh - the webhook's fuzz harness (t/fuzz/fuzz_admit.c)
# built with the normal compiler, over its seeds and every input a fuzzing
# run once broke an invariant on (t/fuzz/regress/admit), so a fixed bug
# stays fixed.  Fuzz it for real with libFuzzer:
#   clang -fsanitize=fuzzer,address,undefined t/fuzz/fuzz_admit.c + the
#   objects of common/*/, proto/, daemons/webhook/webhook_{admit,mutate,index}.c
#   and t/unit/jsonpatch.c, then ./fuzz_admit CORPUS t/fuzz/seeds/admit
. "$top_srcdir/t/lib/common.sh"
prog=$top_builddir/t/fuzz/fuzz_admit_replay
[ -x "$prog" ] || bail "t/fuzz/fuzz_admit_replay not built"
dirs="$top_srcdir/t/fuzz/seeds/admit"
[ -d "$top_srcdir/t/fuzz/regress/admit" ] && dirs="$dirs $top_srcdir/t/fuzz/regress/admit"
# shellcheck disable=SC2086
"$prog" $dirs > "$T/out" 2>&1
rc=$?
ok $rc "admit: $(tail -1 "$T/out")"
[ $rc -eq 0 ] || sed 's/^/# /' "$T/out" | tail -20
done_testing
