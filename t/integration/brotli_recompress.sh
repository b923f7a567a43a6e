#!/bin/sh
# brotli_recompress.sh - best size without the wait, end to end under the
# real supervisor (file target): a large dir-source Decofile is published
# at the fast brotli quality and confirmed by two replicas; the renderer
# then recompresses it at quality 11 in the background and the publisher
# swaps decofile.bin in place: smaller, decodes to the identical bytes,
# within 1% of `brotli -q 11`, the same contentHash and timestamp.txt, no
# notifier item and no reload on any replica.  A newer edit cancels the
# pending recompression of the older one (which is never recorded nor
# swapped); a kill -9 of the renderer before its pass resumes it at start.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
SITE=$top_builddir/examples/site/decod-site
GEN=$top_builddir/bench/gen
for p in "$DECOD" "$DECOCTL" "$SITE" "$GEN"; do [ -x "$p" ] || bail "$p not built"; done
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
command -v brotli >/dev/null || skip_all "brotli command not installed"

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
conf() { # conf DELAY
	cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
compress_threshold = 10KB
brotli_recompress_delay = $1
CONF
}
conf 0s
export DECOD_CONFIG="$T/decod.conf"
DB=$T/state/journal.db
sql() { db_read "$DB" "$1"; }
ctl() { "$DECOCTL" -n sites-loja "$@"; }
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
field() { ctl get decofile loja -o json | python3 -c '
import json, sys
print(json.load(sys.stdin).get("status", {}).get(sys.argv[1], ""))' "$1"; }
reloads() { # the replicas' reload counts, summed
	n=0
	for p in $PORTS; do
		r=$(curl -s --max-time 5 "http://127.0.0.1:$p/.decofile" |
		    python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])')
		n=$((n + r))
	done
	echo $n
}
PUBDIR=$T/state/published/sites-loja/loja
binsize() { base64 -d <"$PUBDIR/decofile.bin" | wc -c; }
decoded() { base64 -d <"$PUBDIR/decofile.bin" | brotli -d -c; }
swapped() { # swapped HASH: the publisher swapped the .bin of that content
	[ "$(sql "SELECT count(*) FROM items WHERE stage='publisher' AND kind='recompress'
	    AND hash='$1' AND state='done' AND result='swapped'")" -ge 1 ]
}

"$GEN" -s 1 -n 40 -b 400KB "$T/blocks" >/dev/null || bail "gen failed"
"$DECOD" 2>"$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for 10 ready4 || bail "decod did not start"

PORTS=""
for r in r1 r2; do
	"$SITE" --port 0 --lenient --register "local:$T/store" --namespace sites-loja \
	    --deployment loja --id $r --ttl 60 >"$T/$r.out" 2>"$T/$r.err" &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/$r.out" || bail "replica $r did not start"
	PORTS="$PORTS $(awk '/^listening on/ {print $3}' "$T/$r.out")"
done

printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-loja"},"spec":{"source":"dir","dir":{"path":"%s"}}}' \
    "$T/blocks" >"$T/loja.json"
ctl apply -f "$T/loja.json" >/dev/null
ok $? "apply the Decofile"
ctl wait loja --for ready --timeout 60s >"$T/wait.out" 2>&1
rc=$?
ok $rc "published and confirmed"
if [ $rc != 0 ]; then	# what each stage did, and what the wait saw
	sed 's/^/# wait: /' "$T/wait.out"
	"$DECOCTL" stages 2>&1 | sed 's/^/# /'
	ctl get decofile loja -o json 2>&1 | sed 's/^/# /'
	grep -v 'msg=doorbell' "$T/decod.log" | tail -60 | sed 's/^/# /'
fi
H=$(field contentHash)

# --- the background pass swaps the .bin: smaller, same bytes, no reload ----------
check "the recompressed .bin is swapped in" wait_for 60 swapped "$H"
TS=$(cat "$PUBDIR/timestamp.txt")
FAST=$(sql "SELECT size FROM renders WHERE name='loja' AND content_hash='$H' AND quality IS NULL")
NOTIF=$(sql "SELECT count(*) FROM items WHERE stage='notifier' AND name='loja'")
RELOADS=$(reloads)
diag "fast .bin $FAST base64 bytes; recompressed $(stat -c %s "$PUBDIR/decofile.bin")"
[ "$(stat -c %s "$PUBDIR/decofile.bin")" -lt "$FAST" ]
ok $? "the stored .bin is smaller than the fast one"
decoded >"$T/got.json"
is "$(sha256sum <"$T/got.json" | cut -d' ' -f1)" "$H" "it decompresses to the identical document"
brotli -c -q 11 -w 24 "$T/got.json" >"$T/ref.br"
python3 -c 'import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print("# ratio to brotli -q 11: %.4f" % (a/b)); sys.exit(0 if a <= 1.01*b else 1)' \
    "$(binsize)" "$(stat -c %s "$T/ref.br")"
ok $? "within 1.01x of brotli -q 11"
is "$(sql "SELECT quality FROM renders WHERE name='loja' ORDER BY id DESC LIMIT 1")" 11 \
    "the journal records quality 11 for the stored .bin"
is "$(field contentHash)" "$H" "contentHash unchanged"
is "$(field timestamp)" "$TS" "timestamp unchanged"
is "$(sql "SELECT count(*) FROM publishes WHERE name='loja'")" 1 "no new publish"
is "$NOTIF" 1 "one notifier item in all (the publish's)"
is "$RELOADS" 2 "each replica reloaded once, for the publish only"
# the drift watch knows the new bytes: nothing is put back
check "no drift repair of the swapped file" sh -c "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' $DB \"SELECT count(*) FROM drift WHERE name='loja'\")\" = 0 ]"

# --- a newer edit cancels the pending recompression ------------------------------
settings() { # settings N DELAY_MS: the renderer logged its N-th change to DELAY_MS
	[ "$(grep -c "background recompression settings.*delay_ms=$2" "$T/decod.log")" -ge "$1" ]
}
conf 1h
kill -HUP $SUP
wait_for 20 settings 1 3600000 || bail "the renderer did not take the new delay"
edit() { # edit N: change a block, wait for the new content to be confirmed
	f=$(find "$T/blocks" -name '*.json' | sort | head -1)
	python3 - "$f" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d = {"edit": int(sys.argv[2]), "was": d}
json.dump(d, open(sys.argv[1] + ".tmp", "w"))
PY
	mv "$f.tmp" "$f"
	ctl sync loja >/dev/null
	wait_for 60 sh -c "[ \"\$(\"$DECOCTL\" -n sites-loja get decofile loja -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"status\"].get(\"contentHash\",\"\"))')\" != '$2' ]"
}
# HUP reached the renderer when its delay is the new one: the next render waits
edit 1 "$H" || bail "edit 1 not rendered"
H1=$(field contentHash)
edit 2 "$H1" || bail "edit 2 not rendered"
H2=$(field contentHash)
check "edit 2 cancels edit 1's pending recompression" wait_for 10 grep -q \
    "recompression cancelled: a newer render.*hash=$H1" "$T/decod.log"
conf 0s
kill -HUP $SUP
wait_for 20 settings 2 0 || bail "the renderer did not take the delay back"
check "edit 2's recompression runs once the delay is lifted" wait_for 60 swapped "$H2"
is "$(sql "SELECT count(*) FROM renders WHERE content_hash='$H1' AND quality IS NOT NULL")" 0 \
    "edit 1 was never recompressed"
is "$(sql "SELECT count(*) FROM items WHERE stage='publisher' AND kind='recompress' AND hash='$H1'")" 0 \
    "... nor handed to the publisher"
decoded >"$T/got2.json"
is "$(sha256sum <"$T/got2.json" | cut -d' ' -f1)" "$H2" "the swapped .bin decodes to edit 2's document"

# --- crash: kill -9 of the renderer before its pass; the restart resumes it -------
conf 1h
kill -HUP $SUP
wait_for 20 settings 2 3600000 || bail "the renderer did not take the new delay"
RPID=$("$DECOCTL" stages -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["stages"]:
    if s["name"] == "renderer": print(s["pid"])')
edit 3 "$H2" || bail "edit 3 not rendered"
H3=$(field contentHash)
base64 -d <"$PUBDIR/decofile.bin" | brotli -t
ok $? "the fast .bin is valid while the pass is pending"
conf 0s
kill -9 "$RPID"
check "the restarted renderer resumes the pass" wait_for 60 swapped "$H3"
check "... said so" grep -q "recompression resumed.*hash=$H3" "$T/decod.log"
decoded | sha256sum | cut -d' ' -f1 >"$T/h3"
is "$(cat "$T/h3")" "$H3" "the swapped .bin decodes to edit 3's document"
is "$(sql "SELECT count(*) FROM items WHERE stage='notifier' AND name='loja'")" 4 \
    "one notifier item per content hash, none for a swap"

kill -TERM $SUP
wait_for 10 sh -c "! kill -0 $SUP 2>/dev/null"
ok $? "decod stops"
done_testing
