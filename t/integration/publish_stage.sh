#!/bin/sh
# publish_stage - the publisher alone: a Decofile in a local store, a
# rendered document in the spool and a publisher item in the journal give
# decofile.json + timestamp.txt under file_root and a notifier item; a
# changed or deleted file is put back (drift); deleting the Decofile removes
# its folder unless it is annotated deco.sites/deletion: detach; a bin
# document replaces the json one; an unsupported target parks the item;
# a restart repairs what changed while it was down and prunes what was
# deleted.
. "$top_srcdir/t/lib/common.sh"

PUB=$(bin publisher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$PUB" ] || bail "publisher not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"

cat >"$T/conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
file_root = $T/pub
rescan_interval = 100ms
drift_check_interval = 1s
EOF
C="-c $T/conf"
DB="$T/state/journal.db"
D="$T/pub/sites-loja/loja"
sql() { db_read "$DB" "$1"; }
DECOCTL=$(bin decoctl)
audited() { # audited OBJECT ACTION: decoctl journal lists that audit row
	"$DECOCTL" $C journal -o json 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if any(r["object"] == sys.argv[1] and r["action"] == sys.argv[2]
                  for r in json.load(sys.stdin)) else 1)' "$1" "$2"
}

decofile() { # decofile NAME [ANNOTATIONS_JSON] [TARGET]
	ann=${2:-'{}'}
	tgt=""
	[ -n "${3:-}" ] && tgt=",\"target\":\"$3\""
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja","annotations":%s},"spec":{"source":"inline","inline":{"value":{"A":1}}%s}}' \
	    "$1" "$ann" "$tgt" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}

start_pub() {
	"$PUB" $C >>"$T/pub.log" 2>&1 &
	PUB_PID=$!
	track_pid $PUB_PID
	wait_for 10 grep -q 'msg=ready' "$T/pub.log" || bail "publisher did not start"
}
stop_pub() {
	kill -TERM $PUB_PID
	wait $PUB_PID 2>/dev/null
}

# --- publish -----------------------------------------------------------
printf '{"A":1,"B":"ü"}' >"$T/doc.json"
check "apply Decofile" decofile loja
H=$("$TOOL" $C spool "$T/doc.json")
is "$H" "$(sha256sum <"$T/doc.json" | cut -d' ' -f1)" "document in the spool by its sha256"
start_pub
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=json commit=abc123" >/dev/null
check "decofile.json appears" wait_for 10 test -s "$D/timestamp.txt"
check "same bytes as rendered" cmp -s "$T/doc.json" "$D/decofile.json"
TS=$(cat "$D/timestamp.txt")
case $TS in *[!0-9]*|'') ok 1 "timestamp.txt is unix seconds ($TS)" ;;
	*) ok 0 "timestamp.txt is unix seconds" ;; esac
is "$(wc -c <"$D/timestamp.txt" | tr -d ' ')" "${#TS}" "timestamp.txt has no newline"
check "publisher item done" wait_for 5 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT state FROM items WHERE stage='publisher'\")\" = done ]"
is "$(sql "SELECT kind||' '||hash||' '||detail FROM items WHERE stage='notifier'")" \
    "decofile $H timestamp=$TS commit=abc123" "one notifier item with timestamp and commit"
is "$(sql "SELECT location||' '||content_hash||' '||timestamp FROM publishes")" \
    "file://$D/decofile.json $H $TS" "publish recorded"
is "$(sql "SELECT count(*) FROM inventory WHERE location='file://$D/decofile.json'")" 1 \
    "inventory row"
STATUS="$T/store/kv/decod.d/status.d/decofiles.d/sites-loja.d/loja.d/publisher.v"
check "status Ready=True Published" wait_for 5 grep -q '"type":"Ready","status":"True","reason":"Published"' "$STATUS"
check "status fields" grep -q "\"contentHash\":\"$H\",\"timestamp\":$TS,\"lastUpdated\":\"[0-9TZ:-]*\",\"location\":\"file://$D/decofile.json\",\"format\":\"json\"" "$STATUS"

# --- the same hash again publishes nothing ---------------------------------
INO=$(stat -c %i "$D/decofile.json")
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=json commit=abc123" >/dev/null
check "second item done" wait_for 5 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT count(*) FROM items WHERE stage='publisher' AND state='done'\")\" = 2 ]"
is "$(sql "SELECT count(*) FROM publishes")" 1 "exactly one publish per content hash"
is "$(sql "SELECT count(*) FROM items WHERE stage='notifier'")" 1 "no second notifier item"
is "$(stat -c %i "$D/decofile.json")" "$INO" "file not rewritten"

# --- drift ---------------------------------------------------------------
printf 'hand edit' >"$D/decofile.json"
check "edited file put back within 1 s" wait_for 1 cmp -s "$T/doc.json" "$D/decofile.json"
check "drift row" wait_for 2 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' 'SELECT count(*) FROM drift')\" -ge 1 ]"
check "drift audited" wait_for 2 audited decofile/sites-loja/loja drift-repaired
check "Drifted=True Repaired" wait_for 2 grep -q '"type":"Drifted","status":"True","reason":"Repaired"' "$STATUS"
rm -f "$D/decofile.json"
check "deleted file put back within 1 s" wait_for 1 cmp -s "$T/doc.json" "$D/decofile.json"
echo 1 >"$D/timestamp.txt"
check "timestamp put back" wait_for 1 sh -c "[ \"\$(cat '$D/timestamp.txt')\" = $TS ]"
rm -rf "$T/pub/sites-loja" 2>/dev/null	# races with the repair, on purpose
check "removed folder put back" wait_for 2 cmp -s "$T/doc.json" "$D/decofile.json"
is "$(sql "SELECT count(*) FROM publishes")" 1 "repairs are not publishes"

# --- format switch: bin replaces json ---------------------------------------
printf 'G1sAAB4=' >"$T/doc.bin"
B=$("$TOOL" $C spool "$T/doc.bin")
printf '{"A":2}' >"$T/doc2.json"
H2=$("$TOOL" $C spool "$T/doc2.json")
"$TOOL" $C enqueue publisher sites-loja loja "$H2" "format=bin bin=$B commit=def456" >/dev/null
check "decofile.bin published" wait_for 5 cmp -s "$T/doc.bin" "$D/decofile.bin"
check "decofile.json removed" wait_for 2 test ! -e "$D/decofile.json"
check "timestamp moved on" wait_for 2 sh -c "[ \"\$(cat '$D/timestamp.txt')\" -gt $TS ]"
is "$(sql "SELECT location FROM inventory WHERE ns='sites-loja' AND name='loja'")" \
    "file://$D/decofile.bin" "inventory follows the format"
printf 'x' >"$D/decofile.bin"
check "bin drift put back" wait_for 1 cmp -s "$T/doc.bin" "$D/decofile.bin"

# --- unsupported target parks the item ------------------------------------
check "apply Decofile with an unknown target" decofile other '{}' nfs
"$TOOL" $C enqueue publisher sites-loja other "$H" "format=json" >/dev/null
check "item parked" wait_for 5 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT state FROM items WHERE name='other'\")\" = failed ]"
check "Ready=False UnsupportedTarget" wait_for 2 grep -q '"reason":"UnsupportedTarget"' \
    "$T/store/kv/decod.d/status.d/decofiles.d/sites-loja.d/other.d/publisher.v"
check "nothing published for it" test ! -e "$T/pub/sites-loja/other"

# --- delete ----------------------------------------------------------------
"$TOOL" $C delete sites-loja loja
check "folder removed when the Decofile is deleted" wait_for 5 test ! -e "$D"
# the files go first, then the record of them: wait for the row, do not race it
check "inventory row removed" wait_for 2 sh -c \
    "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT count(*) FROM inventory WHERE name='loja'\")\" = 0 ]"

# --- detach ----------------------------------------------------------------
check "apply detached Decofile" decofile kept '{"deco.sites/deletion":"detach"}'
"$TOOL" $C enqueue publisher sites-loja kept "$H" "format=json" >/dev/null
check "kept published" wait_for 5 test -s "$T/pub/sites-loja/kept/timestamp.txt"
is "$(sql "SELECT deletion FROM inventory WHERE name='kept'")" detach \
	"the inventory records its deletion policy (schema 2)"
"$TOOL" $C delete sites-loja kept
check "detach audited" wait_for 5 audited decofile/sites-loja/kept detach
check "detached folder stays" cmp -s "$T/doc.json" "$T/pub/sites-loja/kept/decofile.json"
printf 'edited after detach' >"$T/pub/sites-loja/kept/decofile.json"
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=json" >/dev/null	# a sync point
check "later item handled" wait_for 5 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT state FROM items WHERE name='loja' ORDER BY id DESC LIMIT 1\")\" = done ]"
is "$(cat "$T/pub/sites-loja/kept/decofile.json")" "edited after detach" "detached files are no longer managed"

# --- restart: repair and prune what changed while down -----------------------
check "apply again" decofile loja
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=json" >/dev/null
check "republished after re-create" wait_for 5 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT count(*) FROM inventory WHERE name='loja'\")\" = 1 ]"
check "apply another" decofile gone
"$TOOL" $C enqueue publisher sites-loja gone "$H" "format=json" >/dev/null
check "gone published" wait_for 5 test -s "$T/pub/sites-loja/gone/timestamp.txt"
stop_pub
printf 'edited while down' >"$D/decofile.json"
"$TOOL" $C delete sites-loja gone
start_pub
check "edit made while down repaired at start" wait_for 5 cmp -s "$T/doc.json" "$D/decofile.json"
check "Decofile deleted while down pruned at start" wait_for 5 test ! -e "$T/pub/sites-loja/gone"
check "detached folder still there" test -e "$T/pub/sites-loja/kept/decofile.json"

# --- killed between writing the file and the commit: the redo rewrites nothing
stop_pub
printf '{"A":3}' >"$T/doc3.json"
H3=$("$TOOL" $C spool "$T/doc3.json")
OLD_TS=$(cat "$D/timestamp.txt")
cp "$T/doc3.json" "$D/decofile.json.new" && mv "$D/decofile.json.new" "$D/decofile.json"
printf '%s' $((OLD_TS + 5)) >"$D/timestamp.txt"
INO=$(stat -c %i "$D/decofile.json")
"$TOOL" $C enqueue publisher sites-loja loja "$H3" "format=json commit=redo" >/dev/null
start_pub
check "redo recorded the publish" wait_for 5 sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT timestamp FROM publishes WHERE content_hash='$H3'\")\" = $((OLD_TS + 5)) ]"
is "$(stat -c %i "$D/decofile.json")" "$INO" "redo did not rewrite the document"
is "$(cat "$D/timestamp.txt")" "$((OLD_TS + 5))" "redo kept the timestamp already published"
is "$(sql "SELECT detail FROM items WHERE stage='notifier' AND hash='$H3'")" \
    "timestamp=$((OLD_TS + 5)) commit=redo" "redo still pushed the notifier item"
is "$(sql "SELECT count(*) FROM drift WHERE at > (SELECT at FROM audit WHERE action='start' ORDER BY id DESC LIMIT 1)")" 0 \
    "the newer document was not taken for drift"

check "no other errors logged" sh -c "! grep -E 'level=error' '$T/pub.log' | grep -v 'is not supported by this publisher'"
grep -E 'level=(warn|error)' "$T/pub.log" | sed 's/^/# /' | head -20
done_testing
