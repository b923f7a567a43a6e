#!/bin/sh
# render_stage - the renderer alone: a Decofile with a template in a local
# store, their trees in the spool, a renderer item in the journal give a
# publisher item carrying the merged document's sha256 (template under own
# blocks); the same content again pushes nothing; a malformed block or a
# duplicate key gives Syncing=False naming the file and publishes nothing;
# an item without a tree uses the newest fetch; a low compress_threshold
# gives a decofile.bin that brotli -d turns back into the JSON.
. "$top_srcdir/t/lib/common.sh"

REN=$(bin renderer)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$REN" ] || bail "renderer not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"
command -v brotli >/dev/null || skip_all "brotli command not installed"

cat >"$T/conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
rescan_interval = 100ms
EOF
C="-c $T/conf"
DB="$T/state/journal.db"
NS=sites-loja
sql() { db_read "$DB" "$1"; }

start_ren() {
	"$REN" $C "$@" >>"$T/ren.log" 2>&1 &
	REN_PID=$!
	track_pid $REN_PID
	wait_for 10 sh -c "[ \$(grep -c 'msg=ready' '$T/ren.log') -ge ${READY_N:-1} ]" ||
	    bail "renderer did not start"
}
stop_ren() { kill -TERM $REN_PID; wait $REN_PID 2>/dev/null; }

# blob FILE: put a file into the spool, print its hash
blob() { "$TOOL" $C spool "$1"; }

# tree NAME COMMIT KEY=PATH=FILE...: a tree manifest (entries sorted by key,
# then path) in the spool; prints its hash
tree() {
	name=$1 commit=$2; shift 2
	printf '{"source":"dir","commit":"%s","entries":[' "$commit" >"$T/$name.tree"
	sep=
	for e in "$@"; do
		k=${e%%=*} rest=${e#*=}; p=${rest%%=*} f=${rest#*=}
		printf '%s{"key":"%s","path":"%s","blob":"%s"}' "$sep" "$k" "$p" "$(blob "$f")" >>"$T/$name.tree"
		sep=,
	done
	printf ']}' >>"$T/$name.tree"
	blob "$T/$name.tree"
}

# enqueue NAME TREE DETAIL: a renderer item, as the fetcher writes it
enqueue() {
	db_write "$DB" "INSERT INTO items (stage, kind, ns, name, hash, detail, created_ms) VALUES ('renderer', 'decofile', '$NS', '$1', '$2', '$3', CAST(strftime('%s','now') AS INTEGER) * 1000)"
}
item_state() { sql "SELECT state FROM items WHERE stage='renderer' AND name='$1' ORDER BY id DESC LIMIT 1"; }
pub_count() { sql "SELECT count(*) FROM items WHERE stage='publisher' AND name='$1'"; }
pub_last() { sql "SELECT $2 FROM items WHERE stage='publisher' AND name='$1' ORDER BY id DESC LIMIT 1"; }
status() { "$TOOL" $C status $NS "$1"; }
count_is() { [ "$(sql "SELECT count(*) FROM items WHERE $1")" = "$2" ]; }
reason_is() { status "$1" | grep -q "\"reason\":\"$2\""; }
syncing() { # syncing NAME: "status reason message" of the Syncing condition
	status "$1" | jq -r '[.conditions[] | select(.type=="Syncing")][0] | "\(.status) \(.reason) \(.message)"'
}
command -v jq >/dev/null || skip_all "jq command not installed"

resource() { # resource KIND NAME SPEC_JSON
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"%s","metadata":{"name":"%s","namespace":"%s"},"spec":%s}' \
	    "$1" "$2" "$NS" "$3" >"$T/res-$2.json"
	"$TOOL" $C apply "$T/res-$2.json" >/dev/null
}

# --- blocks ------------------------------------------------------------
mkdir -p "$T/b"
printf '{\n  "logo": "Loja & Cia <b>",\n  "links": [1.50, 2e3]\n}\n' >"$T/b/Header.json"
printf '{"text": "caf\303\251 \\u00e9"}' >"$T/b/Footer.json"
printf '{"v": "template"}' >"$T/b/tHeader.json"
printf '{"promo": true}' >"$T/b/tPromo.json"
printf '{\n  "a": 1,\n  "b": [1, 2\n}\n' >"$T/b/Bad.json"

check "apply Decofile with a template" resource Decofile loja '{"source":"dir","dir":{"path":"/x"},"templates":["base"]}'
check "apply DecofileTemplate" resource DecofileTemplate base '{"source":"dir","dir":{"path":"/t"}}'
start_ren
check "journal created" test -s "$DB"

# the template's generation 1, as the fetcher records it
TT=$(tree base t1 "Header=tpl/Header.json=$T/b/tHeader.json" "Promo=tpl/Promo.json=$T/b/tPromo.json")
db_write "$DB" "INSERT INTO template_trees (ns, name, generation, commit_id, tree_hash) VALUES ('$NS', 'base', 1, 't1', '$TT')"

# --- render, publish item ----------------------------------------------
T1=$(tree loja1 abc123 "Footer=blocks/Footer.json=$T/b/Footer.json" "Header=blocks/Header.json=$T/b/Header.json")
printf '{"Footer":{"text":"caf\303\251 \\u00e9"},"Header":{"logo":"Loja & Cia <b>","links":[1.50,2e3]},"Promo":{"promo":true}}' >"$T/want1.json"
H1=$(sha256sum <"$T/want1.json" | cut -d' ' -f1)
enqueue loja "$T1" "source=dir commit=abc123"
check "publisher item appears" wait_for 10 count_is "stage='publisher'" 1
is "$(pub_last loja hash)" "$H1" "publisher item carries the merged document's sha256"
is "$(pub_last loja detail)" "format=json commit=abc123" "detail: format and commit"
check "document in the spool, byte for byte" cmp -s "$T/want1.json" "$T/state/spool/$(echo $H1 | cut -c1-2)/$H1"
is "$(item_state loja)" done "renderer item done"
is "$(sql "SELECT content_hash || ' ' || format || ' ' || tree_hash FROM renders WHERE name='loja'")" "$H1 json $T1" "render recorded"
check "Syncing=True Rendered" wait_for 5 reason_is loja Rendered
check "resolvedTemplates recorded" wait_for 5 sh -c "'$TOOL' $C status $NS loja | jq -c .resolvedTemplates | grep -qx '\[{\"name\":\"base\",\"generation\":1,\"hash\":\"$TT\"}\]'"

# --- same content again: nothing pushed ---------------------------------
enqueue loja "$T1" "source=dir commit=abc123"
check "second item done" wait_for 10 count_is "stage='renderer' AND state='done'" 2
is "$(pub_count loja)" 1 "unchanged content pushes nothing"

# --- malformed block: Syncing=False naming file:line:column ---------------
T2=$(tree loja2 def456 "Bad=blocks/Bad.json=$T/b/Bad.json" "Header=blocks/Header.json=$T/b/Header.json")
enqueue loja "$T2" "source=dir commit=def456"
check "Syncing=False ValidationError" wait_for 10 reason_is loja ValidationError
S=$(syncing loja)
case $S in
"False ValidationError blocks/Bad.json:"[0-9]*:[0-9]*:*) ok 0 "message names file:line:column ($S)" ;;
*) ok 1 "message names file:line:column"; diag "got: $S" ;;
esac
is "$(item_state loja)" done "invalid decofile: item done (fail-safe, not retried)"
is "$(pub_count loja)" 1 "invalid decofile publishes nothing"
check "condition transition journaled" sh -c "sqlite3 -readonly -cmd '.timeout 5000' '$DB' \"SELECT reason FROM conditions WHERE name='loja' AND type='Syncing'\" | grep -q ValidationError"

# --- duplicate key in one layer names both files --------------------------
T3=$(tree loja3 ghi789 "Header=blocks/a/Header.json=$T/b/Header.json" "Header=blocks/b/Header.json=$T/b/Footer.json")
enqueue loja "$T3" "source=dir commit=ghi789"
check "duplicate key refused" wait_for 10 sh -c "'$TOOL' $C status $NS loja | grep -q 'duplicate key'"
S=$(syncing loja)
case $S in
*"blocks/a/Header.json and blocks/b/Header.json"*) ok 0 "names both files" ;;
*) ok 1 "names both files"; diag "got: $S" ;;
esac
is "$(pub_count loja)" 1 "duplicate publishes nothing"

# --- item without a tree: the newest fetch ---------------------------------
printf '{"logo":"new"}' >"$T/b/Header2.json"
T4=$(tree loja4 jkl012 "Header=blocks/Header.json=$T/b/Header2.json")
db_write "$DB" "INSERT INTO fetches (ns, name, source, commit_id, tree_hash) VALUES ('$NS', 'loja', 'dir', 'jkl012', '$T4')"
enqueue loja "" "source=dir"
printf '{"Header":{"logo":"new"},"Promo":{"promo":true}}' >"$T/want4.json"
H4=$(sha256sum <"$T/want4.json" | cut -d' ' -f1)
check "second publisher item" wait_for 10 count_is "stage='publisher'" 2
is "$(pub_last loja hash)" "$H4" "newest fetched tree rendered"
is "$(pub_last loja detail)" "format=json commit=jkl012" "commit from the tree manifest"
check "Syncing back to True" wait_for 5 reason_is loja Rendered

# --- compressed: decofile.bin is base64 of brotli ---------------------------
stop_ren
READY_N=2 start_ren --compress-threshold 10
check "apply a second Decofile" resource Decofile big '{"source":"dir","dir":{"path":"/y"}}'
T5=$(tree big1 mno345 "Footer=blocks/Footer.json=$T/b/Footer.json" "Header=blocks/Header.json=$T/b/Header.json")
enqueue big "$T5" "source=dir commit=mno345"
check "bin publisher item" wait_for 10 count_is "stage='publisher' AND name='big'" 1
D=$(pub_last big detail)
BH=$(echo "$D" | sed -n 's/.*bin=\([0-9a-f]*\).*/\1/p')
case $D in "format=bin bin=$BH commit=mno345") ok 0 "detail names format=bin and the bin blob" ;;
*) ok 1 "detail names format=bin and the bin blob"; diag "got: $D" ;; esac
printf '{"Footer":{"text":"caf\303\251 \\u00e9"},"Header":{"logo":"Loja & Cia <b>","links":[1.50,2e3]}}' >"$T/want5.json"
is "$(pub_last big hash)" "$(sha256sum <"$T/want5.json" | cut -d' ' -f1)" "content hash is of the JSON, not the bin"
base64 -d <"$T/state/spool/$(echo $BH | cut -c1-2)/$BH" >"$T/big.br" 2>/dev/null
brotli -d -c "$T/big.br" >"$T/big.json" 2>/dev/null
check "base64 -d | brotli -d gives the JSON back" cmp -s "$T/want5.json" "$T/big.json"
is "$(sql "SELECT format || ' ' || bin_hash FROM renders WHERE name='big' ORDER BY id LIMIT 1")" "bin $BH" "bin render recorded"

check "renderer stops on SIGTERM with status 0" stop_ren
done_testing
