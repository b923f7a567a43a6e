#!/bin/sh
# check_config - `decod --check-config` refuses durations and sizes that are
# not finite, negative or too large, from a flag, the environment or the
# file, and every refusal names the setting (and the line, for the file).
# A good value still passes.
. "$top_srcdir/t/lib/common.sh"

DECOD=$(bin decod)
: >"$T/empty.conf"

"$DECOD" --check-config -c "$T/empty.conf" --journal-retention 72h >"$T/out" 2>&1
is "$?" 0 "--journal-retention 72h passes"

# setting value: one row per case, flag form
while read -r name value; do
	flag=--$(echo "$name" | tr _ -)
	"$DECOD" --check-config -c "$T/empty.conf" "$flag" "$value" >"$T/out" 2>&1
	st=$?
	check "$flag $value is refused (exit $st)" test "$st" -ne 0
	check "... naming $name" grep -q "$name" "$T/out"
done <<'ROWS'
journal_retention nan
journal_retention inf
journal_retention -1h
journal_retention 1e400
journal_retention 99999999999999999999h
housekeeping_interval NaN
rescan_interval -inf
compress_threshold nan
max_tree_size inf
max_tree_size -5MB
max_tree_size 1e30
ROWS

env DECOD_JOURNAL_RETENTION=nan "$DECOD" --check-config -c "$T/empty.conf" >"$T/out" 2>&1
st=$?
check "DECOD_JOURNAL_RETENTION=nan is refused (exit $st)" test "$st" -ne 0
check "... naming the variable" grep -q "DECOD_JOURNAL_RETENTION" "$T/out"

printf 'log_level = info\njournal_retention = infinity\n' >"$T/bad.conf"
"$DECOD" --check-config -c "$T/bad.conf" >"$T/out" 2>&1
st=$?
check "journal_retention = infinity in the file is refused (exit $st)" test "$st" -ne 0
check "... naming the file, line and setting" grep -q "bad.conf:2: journal_retention" "$T/out"

done_testing
