#!/bin/sh
# runbook - doc/runbook.md cannot drift from the code: every condition
# reason set anywhere in daemons/ and common/ (found by
# t/lib/condition_scan.py: literals passed as a `reason` parameter, condition
# initializers, assignments to a reason) is a row of common/condition.h's
# table, every row of that table is still set somewhere, and the runbook has
# exactly the table's rows (type, reason, status, stage, meaning word for
# word).  The scan is shown to find a reason added by a call, an initializer
# and an assignment, and the comparison to catch a runbook row gone.
. "$top_srcdir/t/lib/common.sh"

SCAN="python3 $top_srcdir/t/lib/condition_scan.py"
HDR=$top_srcdir/common/resource/condition.h
RB=$top_srcdir/doc/runbook.md
# missing A B: the lines of file A that file B lacks
missing() { sort -u "$1" >"$1.s"; sort -u "$2" >"$2.s"; comm -23 "$1.s" "$2.s"; }

$SCAN found "$top_srcdir/daemons" "$top_srcdir/common" >"$T/found.sites" 2>"$T/scan.err"
is "$?" 0 "the scan runs"
cut -f1 "$T/found.sites" | sort -u >"$T/found"
$SCAN table "$HDR" >"$T/table.rows"
cut -d'|' -f2 "$T/table.rows" | sort -u >"$T/table"
$SCAN runbook "$RB" >"$T/runbook.rows"

# the scan really finds them: a floor under each count
nsites=$(wc -l <"$T/found.sites" | tr -d ' ')
nfound=$(wc -l <"$T/found" | tr -d ' ')
nrows=$(wc -l <"$T/table.rows" | tr -d ' ')
check "the scan finds at least 100 places that set a reason ($nsites)" test "$nsites" -ge 100
check "... at least 28 distinct reasons ($nfound)" test "$nfound" -ge 28
check "the table has at least 29 rows ($nrows)" test "$nrows" -ge 29
for r in FetchError ValidationError ConfigMapCreated S3NotConfigured SentinelUnreachable \
    MissingReloadToken InvalidName NotificationInProgress; do
	check "... $r among them" grep -qx "$r" "$T/found"
done

missing "$T/found" "$T/table" >"$T/untabled"
is "$(tr '\n' ' ' <"$T/untabled")" "" "every reason the code sets is in common/condition.h"
[ -s "$T/untabled" ] && grep -F -f "$T/untabled" "$T/found.sites" | sed 's/^/#   /'
missing "$T/table" "$T/found" >"$T/stale"
is "$(tr '\n' ' ' <"$T/stale")" "" "every reason in common/condition.h is still set somewhere"
missing "$T/table.rows" "$T/runbook.rows" >"$T/undocumented"
is "$(wc -l <"$T/undocumented" | tr -d ' ')" 0 "every row of the table has its runbook entry, meaning word for word"
[ -s "$T/undocumented" ] && sed 's/^/#   want in doc\/runbook.md: | /; s/|/ | /g' "$T/undocumented"
missing "$T/runbook.rows" "$T/table.rows" >"$T/unknown"
is "$(wc -l <"$T/unknown" | tr -d ' ')" 0 "the runbook lists nothing the table lacks"
[ -s "$T/unknown" ] && sed 's/^/#   /' "$T/unknown"

# the scan sees a new reason however it is set, and the check then fails
mkdir -p "$T/more/publisher"
cat >"$T/more/publisher/publish_quota.c" <<'EOF'
/* a stage's new failure, set three ways */
static void
quota(struct fetch_result *res, const char **reason, const char *msg)
{
	struct status_cond c = { "Ready", "False", "QuotaExceeded", msg };

	*reason = "ShardLost";
	fetch_result_error(res, "UpstreamVanished",
	    "remote %s: gone (\"https://example.com/loja?x=1\")", msg);
	acl_report(a, t, "False", strstr(msg, "Sentinel") ? "SentinelGone" : "NodesGone", msg);
}
EOF
$SCAN found "$top_srcdir/daemons" "$top_srcdir/common" "$T/more" | cut -f1 | sort -u >"$T/found2"
missing "$T/found2" "$T/table" >"$T/untabled2"
is "$(tr '\n' ' ' <"$T/untabled2")" "NodesGone QuotaExceeded SentinelGone ShardLost UpstreamVanished " \
    "a reason added by a call, a ternary, an initializer or an assignment is caught"
grep -v '| ValidationError |' "$RB" >"$T/runbook-less.md"
$SCAN runbook "$T/runbook-less.md" >"$T/rows-less"
missing "$T/table.rows" "$T/rows-less" | cut -d'|' -f2 >"$T/gone"
is "$(cat "$T/gone")" "ValidationError" "a runbook entry removed is caught"

# the status writer checks each reason against the same table as it writes
TOOL="$top_builddir/t/stage/testtool"
if [ -x "$TOOL" ]; then
	printf 'state_dir = %s\nstore = local:%s\n' "$T/state" "$T/store" >"$T/conf"
	"$TOOL" -c "$T/conf" condition sites-loja 'loja principal' publisher Ready False \
	    ConfigMapFailed "the API server timed out" >"$T/known.log" 2>&1
	is "$?" 0 "a known reason is written"
	check "... without a complaint" sh -c "! grep -q 'missing from common/condition.h' '$T/known.log'"
	"$TOOL" -c "$T/conf" condition sites-loja 'loja principal' publisher Ready False \
	    QuotaExceeded "over quota" >"$T/unknown.log" 2>&1
	is "$?" 0 "a reason the table lacks is written all the same"
	check "... and logged as a bug, naming it" grep -q \
	    'condition reason missing from common/condition.h and doc/runbook.md (a bug).*reason=QuotaExceeded' \
	    "$T/unknown.log"
else
	ok 0 "# SKIP t/stage/testtool not built"
fi

done_testing
