#!/bin/sh
# summary.sh - count TAP results of the last `make check` in a build folder
# and print the closing line "N passed, N failed" (", N skipped" if any).
# Exit status: 0 when nothing failed.
dir=${1:-.}
find "$dir" -name '*.trs' -newer "$dir/config.status" 2>/dev/null | \
	xargs -r cat | awk '
	/^:test-result: PASS/ || /^:test-result: XFAIL/ { p++ }
	/^:test-result: FAIL/ || /^:test-result: XPASS/ || /^:test-result: ERROR/ { f++ }
	/^:test-result: SKIP/ { s++ }
	END {
		if (s > 0) printf "%d passed, %d failed, %d skipped\n", p, f, s
		else printf "%d passed, %d failed\n", p, f
		exit (f > 0 || p == 0) ? 1 : 0
	}'
