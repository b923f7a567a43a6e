#!/bin/sh
# fetch_fuzz_replay.sh - the fetcher's archive fuzz harness
# (t/fuzz/fuzz_archive.c) built with the normal compiler, over its seeds (a
# good zip, tar and tar+gzip, zip-slip, symlink; issue 24: names flagged
# UTF-8 and in PAX records, Latin-1 names in a zip and a tar, a zip flagged
# UTF-8 that is not, a bomb entry behind incompressible ones) and every input a fuzzing
# run once broke an invariant on (t/fuzz/regress/archive), so a fixed bug
# stays fixed.  Fuzz it for real: make fuzz, then t/fuzz/run.sh (or
# t/fuzz/bin/fuzz_archive CORPUS t/fuzz/seeds/archive).
. "$top_srcdir/t/lib/common.sh"
prog=$top_builddir/t/fuzz/fuzz_archive_replay
[ -x "$prog" ] || bail "t/fuzz/fuzz_archive_replay not built"
dirs="$top_srcdir/t/fuzz/seeds/archive"
[ -d "$top_srcdir/t/fuzz/regress/archive" ] && dirs="$dirs $top_srcdir/t/fuzz/regress/archive"
# shellcheck disable=SC2086
"$prog" $dirs > "$T/out" 2>&1
rc=$?
ok $rc "archive: $(tail -1 "$T/out")"
[ $rc -eq 0 ] || sed 's/^/# /' "$T/out" | tail -20
done_testing
