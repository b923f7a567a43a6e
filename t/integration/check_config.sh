#!/bin/sh
# check_config - `decod --check-config` refuses durations and sizes that are
# not finite, negative or too large, from a flag, the environment or the
# file, and every refusal names the setting (and the line, for the file).
# A good value still passes.  What start-up would meet (a store URL no
# backend reads, a stage without a program, a missing libexec_dir) is refused
# by --check-config and by decod itself (exit 78) before any stage runs.
. "$top_srcdir/t/lib/common.sh"

DECOD=$(bin decod)
# the stage programs where decod looks for them (an installed libexec_dir)
mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do ln -s "$(bin "$s")" "$T/libexec/$s"; done
printf 'libexec_dir = %s\n' "$T/libexec" >"$T/empty.conf"

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

cp "$T/empty.conf" "$T/bad.conf"
printf 'journal_retention = infinity\n' >>"$T/bad.conf"
"$DECOD" --check-config -c "$T/bad.conf" >"$T/out" 2>&1
st=$?
check "journal_retention = infinity in the file is refused (exit $st)" test "$st" -ne 0
check "... naming the file, line and setting" grep -q "bad.conf:2: journal_retention" "$T/out"

# what start-up would meet, one stage death at a time: each refused by
# --check-config with its reason, and by decod itself before any stage runs
while IFS='|' read -r what conf want; do
	cp "$T/empty.conf" "$T/c.conf"
	printf '%b\n' "$conf" >>"$T/c.conf"
	"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
	st=$?
	check "$what: --check-config refuses it (exit $st)" test "$st" -eq 1
	check "... saying \"$want\"" grep -qF "$want" "$T/out"
	mkdir -p "$T/run" "$T/state"
	printf 'state_dir = %s\nruntime_dir = %s\n' "$T/state" "$T/run" >>"$T/c.conf"
	timeout 20 "$DECOD" -c "$T/c.conf" >"$T/start" 2>&1
	st=$?
	is "$st" 78 "$what: decod does not start (EX_CONFIG, not a restart loop)"
	check "... and says why" grep -qF "$want" "$T/start"
	check "... having started nothing" sh -c "! grep -q 'supervisor running' '$T/start'"
done <<'ROWS'
a store no backend reads|store = bogus:/x|store: unknown scheme in "bogus:/x"
a store with no folder|store = local:|names no folder
a stage with no program|stages = fetcher bogus|stages: bogus: no program
a stage named twice|stages = fetcher renderer fetcher|stages: fetcher is named twice
a stage name that is a path|stages = fetcher ../../bin/sh|is not a stage name
no stage at all|stages = ,|stages: names no stage
a missing libexec_dir|libexec_dir = /nonexistent/libexec|libexec_dir: /nonexistent/libexec: No such file or directory
ROWS
rm -f "$T/libexec/notifier"; printf '#!/bin/sh\n' >"$T/libexec/notifier"; chmod 0644 "$T/libexec/notifier"
"$DECOD" --check-config -c "$T/empty.conf" >"$T/out" 2>&1
check "a stage program that is not executable is refused" grep -qF "notifier is not an executable file" "$T/out"

done_testing
