#!/bin/sh
# housekeeping.sh - the renderer's housekeeping removes spool blobs nothing
# refers to (older than an hour) and keeps what the journal still needs,
# including every blob a kept tree manifest names.
. "$top_srcdir/t/lib/common.sh"

R=$top_builddir/daemons/renderer/renderer
[ -x "$R" ] || bail "renderer not built"
S=$T/state
mkdir -p "$S/spool" "$T/run"
put_blob() { # put_blob CONTENT -> prints its hash; file aged two hours
	h=$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)
	mkdir -p "$S/spool/$(echo "$h" | cut -c1-2)"
	printf '%s' "$1" > "$S/spool/$(echo "$h" | cut -c1-2)/$h"
	touch -d '2 hours ago' "$S/spool/$(echo "$h" | cut -c1-2)/$h"
	echo "$h"
}
blob=$(put_blob '{"title":"kept through the manifest"}')
manifest=$(put_blob "{\"entries\":[{\"key\":\"Header\",\"path\":\"Header.json\",\"blob\":\"$blob\"}]}")
orphan=$(put_blob '{"title":"nobody needs me"}')
young_h=$(printf 'young' | sha256sum | cut -d' ' -f1)
mkdir -p "$S/spool/$(echo "$young_h" | cut -c1-2)"
printf 'young' > "$S/spool/$(echo "$young_h" | cut -c1-2)/$young_h"
# make the journal and record the fetch that refers to the manifest
"$R" --state-dir "$S" --runtime-dir "$T/run" --store "local:$T/store" --help >/dev/null
cat > "$T/decod.conf" <<CONF
state_dir = $S
runtime_dir = $T/run
store = local:$T/store
housekeeping_interval = 300ms
CONF
"$R" -c "$T/decod.conf" 2>"$T/r.log" &
RP=$!
track_pid $RP
wait_for 10 grep -q 'msg=ready' "$T/r.log"
ok $? "renderer started"
kill $RP; wait $RP 2>/dev/null
db_write "$S/journal.db" "INSERT INTO fetches (ns, name, source, commit_id, tree_hash) VALUES ('ns', 'a', 'dir', '', '$manifest')"
"$R" -c "$T/decod.conf" 2>"$T/r2.log" &
RP=$!
track_pid $RP
wait_for 10 grep -q 'housekeeping done' "$T/r2.log"
ok $? "housekeeping ran"
grep -q 'spool_removed=1' "$T/r2.log"
ok $? "exactly one blob removed"
[ ! -e "$S/spool/$(echo "$orphan" | cut -c1-2)/$orphan" ]
ok $? "the unreferenced old blob is gone"
[ -e "$S/spool/$(echo "$manifest" | cut -c1-2)/$manifest" ]
ok $? "the manifest the journal refers to is kept"
[ -e "$S/spool/$(echo "$blob" | cut -c1-2)/$blob" ]
ok $? "the blob the manifest names is kept"
[ -e "$S/spool/$(echo "$young_h" | cut -c1-2)/$young_h" ]
ok $? "a blob younger than an hour is kept"
done_testing
