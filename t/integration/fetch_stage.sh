#!/bin/sh
# fetch_stage - the fetcher alone on a local store: an inline Decofile
# gives one renderer item whose hash is the tree manifest in the spool; an
# identical re-apply gives nothing; a spec edit (new generation) with the
# same blocks gives a new item with the same tree; new blocks give a new
# tree; a dir source is polled and sees a changed file; a link out of the
# folder and an unknown source give Syncing=False FetchError; a
# deleted Decofile is dropped; a restart hands on nothing already handed.
. "$top_srcdir/t/lib/common.sh"

FETCHER=$(bin fetcher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$FETCHER" ] || bail "fetcher not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"

cat >"$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
rescan_interval = 100ms
poll_period = 1s
log_level = debug
# one worker: the marker below relies on fetches finishing in the order asked
fetch_concurrency = 1
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { db_read "$DB" "$1"; }
items() { sql "SELECT count(*) FROM items WHERE stage='renderer' AND name='$1'" 2>/dev/null; }
items_are() { [ "$(items "$1")" = "$2" ]; }
last() { sql "SELECT $2 FROM items WHERE stage='renderer' AND name='$1' ORDER BY id DESC LIMIT 1"; }
status_has() { "$TOOL" $C status sites-loja "$1" fetcher | grep -qF "$2"; }

inline() { # inline NAME BLOCKS_JSON [TARGET]
	tgt=""
	[ -n "${3:-}" ] && tgt=",\"target\":\"$3\""
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"inline","inline":{"value":%s}%s}}' \
	    "$1" "$2" "$tgt" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}
other() { # other NAME SOURCE SPEC_FIELDS_JSON
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"%s"%s}}' \
	    "$1" "$2" "$3" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}
# marker: apply a fresh inline Decofile and wait for its item; with one
# worker the queue is FIFO, so everything asked for before it has been handled
M=0
marker() {
	M=$((M + 1))
	inline "marker$M" '{"M":'$M'}' && wait_for 10 items_are "marker$M" 1
}
start() {
	"$FETCHER" $C >>"$T/fetcher.log" 2>&1 &
	FPID=$!
	track_pid $FPID
	wait_for 10 grep -q 'msg=ready' "$T/fetcher.log" || bail "fetcher did not start"
}
stop() { kill -TERM $FPID; wait $FPID 2>/dev/null; }

# --- inline --------------------------------------------------------------
check "apply inline Decofile" inline loja '{"Header":{"title":"Loja"},"Foot%20er":[1,2]}'
start
check "renderer item appears" wait_for 10 items_are loja 1
H=$(last loja hash)
SP="$T/state/spool/$(printf %.2s "$H")/$H"
check "item hash is a manifest in the spool" test -f "$SP"
check "manifest lists the inline keys as written" grep -qF '"key":"Foot%20er","path":"inline:Foot%20er"' "$SP"
is "$(last loja detail)" "source=inline generation=1" "detail names source and generation"
is "$(sql "SELECT source||' '||tree_hash FROM fetches WHERE name='loja'")" "inline $H" \
    "the fetch is recorded with its tree hash"
check "status fields" wait_for 5 status_has loja '"sourceType":"inline","observedGeneration":1'
check "Syncing=True" status_has loja '"type":"Syncing","status":"True"'

inline loja '{"Header":{"title":"Loja"},"Foot%20er":[1,2]}'
marker
is "$(items loja)" 1 "identical re-apply: no new item"

inline loja '{"Header":{"title":"Loja"},"Foot%20er":[1,2]}' file
check "spec edit: a new item" wait_for 10 items_are loja 2
is "$(last loja hash)" "$H" "same blocks, same tree hash"
is "$(last loja detail)" "source=inline generation=2" "the new generation is handed on"

inline loja '{"Header":{"title":"Loja 2"}}' file
check "new blocks: a new item" wait_for 10 items_are loja 3
H3=$(last loja hash)
[ "$H3" != "$H" ]; ok $? "new blocks, new tree hash"

# --- dir -------------------------------------------------------------------
mkdir -p "$T/blocks/pages" "$T/secret"
printf '{"a":1}' >"$T/blocks/Header.json"
printf '[1]' >"$T/blocks/pages/Home%20Page.json"
printf 'readme' >"$T/blocks/README.md"
check "apply dir Decofile" other site dir ",\"dir\":{\"path\":\"$T/blocks\"}"
check "dir: renderer item" wait_for 10 items_are site 1
HD=$(last site hash)
SD="$T/state/spool/$(printf %.2s "$HD")/$HD"
check "dir manifest: key form-decoded, path relative" grep -qF '"key":"Home Page","path":"pages/Home%20Page.json"' "$SD"
! grep -q README "$SD"; ok $? "README is not a block"
printf '{"a":2}' >"$T/blocks/Header.json"
check "dir: a changed file is seen on the next poll" wait_for 10 items_are site 2
printf '{"k":"v"}' >"$T/secret/Key.json"
ln -s "$T/secret/Key.json" "$T/blocks/Evil.json"
check "dir: a link out of the folder fails the fetch" wait_for 10 status_has site \
    '"status":"False","reason":"FetchError","message":"Evil.json: symbolic link points outside the source folder"'
is "$(items site)" 2 "and hands nothing on"
rm "$T/blocks/Evil.json"
check "dir: fixed, Syncing=True again" wait_for 10 status_has site '"type":"Syncing","status":"True"'

# --- unknown sources -----------------------------------------------------------
check "apply svn Decofile" other sv svn ',"svn":{"url":"svn://x"}'
check "svn: FetchError, unknown source" wait_for 10 status_has sv \
    '"reason":"FetchError","message":"unknown source '"'"'svn'"'"' (inline, git, dir, github, oci)"'
is "$(items sv)" 0 "svn: no item"

# --- delete -----------------------------------------------------------------
check "delete Decofile" "$TOOL" $C delete sites-loja loja
check "schedule dropped" wait_for 10 grep -q 'schedule dropped.*name=loja' "$T/fetcher.log"
is "$(items loja)" 3 "delete enqueues nothing"

# --- restart ------------------------------------------------------------------
BEFORE=$(sql "SELECT count(*) FROM items WHERE stage='renderer'")
stop
start
marker
is "$(sql "SELECT count(*) FROM items WHERE stage='renderer'")" $((BEFORE + 1)) \
    "after a restart only the new marker is handed on"
! grep -q 'level=error' "$T/fetcher.log"; ok $? "no errors in the log"
done_testing
