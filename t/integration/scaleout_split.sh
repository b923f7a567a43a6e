#!/bin/sh
# scaleout_split.sh - two decod instances on one etcd split the decofiles:
# each decofile is owned (job lock) by exactly one instance, both own some,
# `decoctl status` shows the OWNER, every decofile is published exactly once
# for its content hash over both journals, and a clean stop hands the
# stopped instance's decofiles to the other at once.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"
. "$top_srcdir/t/integration/scaleout_lib.sh"
so_setup
NS=shop
N=10

etcd_start || bail "etcd did not start"
so_start a || bail "instance a"
so_start b || bail "instance b"
FA="$SO_HOST:$(so_fetcher_pid a)"
FB="$SO_HOST:$(so_fetcher_pid b)"
diag "fetcher identities: a=$FA b=$FB"

so_decofiles $N df $NS
all_ready() { [ "$(so_ready_count a $NS)" = "$N" ]; }
wait_for 60 all_ready
ok $? "all $N decofiles Ready=True"

owners() { so_status a $NS | jq -r '.[].owner'; }
count_owner() { owners | grep -cx "$1"; }
# the split evens out within a few sweeps (session_ttl/3 each)
split_even() { [ "$(count_owner "$FA")" -ge 1 ] && [ "$(count_owner "$FB")" -ge 1 ] &&
	[ $(( $(count_owner "$FA") + $(count_owner "$FB") )) -eq $N ]; }
wait_for 20 split_even
ok $? "every decofile owned by a or b, both own some (a=$(count_owner "$FA") b=$(count_owner "$FB"))"
is "$(owners | grep -c .)" "$N" "each decofile has exactly one owner"
so_ctl b status -n $NS >"$T/status.txt"
check "decoctl status prints an OWNER column" grep -q 'OWNER' "$T/status.txt"
check "with the holders' identities" sh -c "grep -q '$FA' '$T/status.txt' && grep -q '$FB' '$T/status.txt'"

# each instance worked only what it owns: its journal has renderer items for them
fa=$(so_db a "SELECT count(DISTINCT name) FROM items WHERE stage='publisher'")
fb=$(so_db b "SELECT count(DISTINCT name) FROM items WHERE stage='publisher'")
diag "publisher items: a=$fa b=$fb"
check "both instances published some" [ "$fa" -ge 1 ] && [ "$fb" -ge 1 ]

# every content hash published once over both journals
pubs() { { so_db a "SELECT content_hash FROM publishes"; so_db b "SELECT content_hash FROM publishes"; }; }
is "$(pubs | sort | uniq -d | wc -l)" 0 "no content hash published twice over both journals"
is "$(pubs | sort -u | wc -l)" "$N" "$N distinct content hashes published"
is "$(ls "$T/published/$NS" | wc -l)" "$N" "$N published folders in the shared file_root"

# an edit is worked by the owner only
so_decofiles $N df $NS y
wait_for 60 sh -c "[ \$(sqlite3 -readonly -cmd '.timeout 5000' $T/a/state/journal.db 'SELECT count(*) FROM publishes' ) -ge 1 ] &&
	[ \$( { sqlite3 -readonly -cmd '.timeout 5000' $T/a/state/journal.db 'SELECT content_hash FROM publishes'; sqlite3 -readonly -cmd '.timeout 5000' $T/b/state/journal.db 'SELECT content_hash FROM publishes'; } | sort -u | wc -l) -eq $((2 * N)) ]"
ok $? "after an edit of all $N, $((2 * N)) distinct hashes published"
is "$(pubs | sort | uniq -d | wc -l)" 0 "still none twice"

# a clean stop releases b's locks at once; a takes them over
before=$(count_owner "$FB")
so_stop b
t0=$(so_ms)
wait_for 10 sh -c "[ \$(\"$CTL\" -c $T/a/conf status -n $NS -o json | jq -r '.[].owner' | grep -cx '$FA') -eq $N ]"
ok $? "a owns all $N within $(( $(so_ms) - t0 )) ms of b's clean stop (b had $before)"
is "$(pubs | sort | uniq -d | wc -l)" 0 "no content hash published twice after the hand-over"
check "no drift repairs fought over the shared target" sh -c "[ \$(sqlite3 -readonly -cmd '.timeout 5000' $T/a/state/journal.db 'SELECT count(*) FROM drift') -eq 0 ]"

done_testing
