#!/bin/sh
# store_contract_local - the store contract suite on local: stores in two
# ways the unit run does not cover: with the watch forced to its polling
# fallback, and as two processes sharing one store folder at once.
. "$top_srcdir/t/lib/common.sh"

contract="$top_builddir/t/unit/store_contract"
[ -x "$contract" ] || bail "build t/unit/store_contract first"

# run_contract LOG: run the suite, 0 if it passed every test it planned
run_contract() {
	"$contract" >"$1" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || grep -q '^not ok' "$1" || ! grep -q '^1\.\.[1-9]' "$1"; then
		sed 's/^/#   /' "$1" | grep -E '^#   (not ok|#)' | head -40
		return 1
	fi
	return 0
}

DECOD_STORE_LOCAL_POLL=1 TMPDIR=$T run_contract "$T/poll.log"
ok $? "contract passes with the watch polling"
is "$(find "$T" -maxdepth 1 -name 'decod-contract.*' | wc -l)" 0 "the polling run removed its folder"

# one run alone gives the number of mutations a run makes
DECOD_TEST_STORE="local:$T/alone" run_contract "$T/alone.log"
ok $? "contract passes on a named folder"
one=$(sed 's/^0*//' "$T/alone/rev")

mkdir "$T/shared"
DECOD_TEST_STORE="local:$T/shared" run_contract "$T/a.log" & a=$!
track_pid $a
DECOD_TEST_STORE="local:$T/shared" run_contract "$T/b.log" & b=$!
track_pid $b
wait $a; ra=$?
wait $b; rb=$?
ok $ra "first of two concurrent runs on one store passes"
ok $rb "second of two concurrent runs on one store passes"
is "$(find "$T/shared/kv" -name '*.v' | wc -l)" 0 "both cleaned up after themselves"
is "$(sed 's/^0*//' "$T/shared/rev")" "$((one * 2))" \
    "no revision lost between two processes ($one per run)"

done_testing
