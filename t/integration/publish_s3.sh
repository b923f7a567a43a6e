#!/bin/sh
# publish_s3 - the publisher's s3 target against an S3 server that really
# checks signatures (t/stand-in/s3: npm's s3rver behind a SigV4 verifier
# built on npm's aws4, with a session token required): no bucket gives
# Ready=False saying so; a wrong secret is refused (SignatureDoesNotMatch on
# the condition); the right one (from a credentials file) uploads the merge
# byte for byte with Content-Type and Cache-Control; the same hash is not
# put twice; an object overwritten or deleted behind decod's back is put
# back and counted; a 500 gives Ready=False and is retried; a restart
# repairs what changed while down; deletion keeps the object unless s3_gc
# is on, and detach is respected.  Secrets appear in no log, journal row or
# store value.
. "$top_srcdir/t/lib/common.sh"

PUB=$(bin publisher)
TOOL="$top_builddir/t/stage/testtool"
[ -x "$PUB" ] || bail "publisher not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"
command -v curl >/dev/null || skip_all "curl command not installed"
{ command -v node && command -v npm; } >/dev/null 2>&1 ||
	skip_all "node and npm not installed (apt-get install nodejs npm, or run examples/install-deps.sh)"
SI="$top_srcdir/t/stand-in/s3"
NM=$("$SI/setup.sh" "$top_builddir/t/stand-in/s3" 2>"$T/setup.err") ||
	skip_all "S3 stand-in packages not installed: $(cat "$T/setup.err")"
NODE_PATH="$NM/node_modules"
export NODE_PATH

AK=AKIDDECODTEST
SK="decod-test-secret/K7MDENG+bPxRfiCY"
TOKEN="decod-session-token-AQoDYXdzEPT//x"
BUCKET=decod-test
REGION=eu-west-1
PORT=$(free_port)
EP="http://127.0.0.1:$PORT"
S3_STAND_IN_SECRET=$SK S3_STAND_IN_TOKEN=$TOKEN node "$SI/s3-stand-in.js" --port "$PORT" \
    --dir "$T/s3data" --bucket $BUCKET --region $REGION --access-key $AK \
    --ready "$T/s3.ready" >"$T/s3.log" 2>&1 &
S3PID=$!
track_pid $S3PID
# if the stand-in is gone at the end, its log says why
s3_dump() { kill -0 "$S3PID" 2>/dev/null || { echo "# the S3 stand-in exited:"; tail -20 "$T/s3.log" | sed 's/^/#   /'; }; }
at_cleanup s3_dump
wait_for 20 test -s "$T/s3.ready" || { sed 's/^/# /' "$T/s3.log"; bail "S3 stand-in did not start"; }

# s3req METHOD URL [FILE]: a request signed by aws4 (not by decod)
s3req() {
	S3_CLIENT_ACCESS_KEY=$AK S3_CLIENT_SECRET=$SK S3_CLIENT_TOKEN=$TOKEN \
	    S3_CLIENT_REGION=$REGION node "$SI/s3-client.js" "$@"
}
# s3is URL FILE: the object holds exactly FILE's bytes
s3is() { s3req GET "$1" 2>/dev/null | cmp -s - "$2"; }
s3absent() { ! s3req GET "$1" >/dev/null 2>&1; }
stats() { curl -s "$EP/__stand-in/stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
stats_ge() { [ "$(stats "$1")" -ge "$2" ]; }

# metrics_listen is the supervisor's port; the publisher, alone here,
# serves on the one three after it (metrics_addr's order), a free one
MP=$(free_port)
cat >"$T/conf" <<CONF
metrics_listen = 127.0.0.1:$((MP - 3))
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
file_root = $T/pub
rescan_interval = 100ms
retry_max = 2s
s3_region = $REGION
s3_public_host = cdn.example
s3_prefix = decofiles
s3_endpoint = $EP
s3_check_interval = 1s
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
KEY=decofiles/sites-loja/loja-dep/decofile.json
OBJ="$EP/$BUCKET/$KEY"
STATUS="$T/store/kv/decod.d/status.d/decofiles.d/sites-loja.d/loja.d/publisher.v"
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
sql_is() { [ "$(sql "$1")" = "$2" ]; }
sql_ge() { [ "$(sql "$1")" -ge "$2" ]; }

decofile() { # decofile NAME [ANNOTATIONS_JSON]
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja","annotations":%s},"spec":{"source":"inline","inline":{"value":{"A":1}},"deploymentId":"%s-dep","target":"s3"}}' \
	    "$1" "${2:-"{}"}" "$1" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}

# start_pub [VAR=VALUE...]: the publisher with only the AWS variables given
start_pub() {
	n=$(grep -c 'msg=ready' "$T/pub.log" 2>/dev/null || true)
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
	    -u AWS_SHARED_CREDENTIALS_FILE -u AWS_PROFILE -u AWS_ENDPOINT_URL \
	    -u DECOFILE_S3_BUCKET HOME="$T/home" "$@" "$PUB" $C >>"$T/pub.log" 2>&1 &
	PUB_PID=$!
	track_pid $PUB_PID
	wait_for 10 sh -c "[ \$(grep -c 'msg=ready' '$T/pub.log') -gt ${n:-0} ]" ||
	    bail "publisher did not start"
}
stop_pub() {
	kill -TERM $PUB_PID
	wait $PUB_PID 2>/dev/null
}
ready_is() { grep -q "\"type\":\"Ready\",\"status\":\"$1\",\"reason\":\"$2\"" "$STATUS"; }
item_state() { sql "SELECT state FROM items WHERE stage='publisher' AND name='$1' ORDER BY id DESC LIMIT 1"; }
item_is() { [ "$(item_state "$1")" = "$2" ]; }

printf '{"A":1,"B":"\303\274 </script>"}' >"$T/doc.json"
H=$("$TOOL" $C spool "$T/doc.json")
check "apply s3 Decofile" decofile loja

# --- no bucket --------------------------------------------------------------
start_pub
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=json commit=abc123" >/dev/null
check "no bucket: Ready=False S3NotConfigured" wait_for 5 ready_is False S3NotConfigured
check "the condition names DECOFILE_S3_BUCKET" grep -q 'DECOFILE_S3_BUCKET (s3_bucket) is not set' "$STATUS"
is "$(item_state loja)" pending "the item waits to be retried"
stop_pub
echo "s3_bucket = $BUCKET" >>"$T/conf"

# --- a wrong secret is refused ----------------------------------------------
start_pub AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=not-the-secret AWS_SESSION_TOKEN=$TOKEN
check "wrong secret: Ready=False S3UploadFailed" wait_for 10 ready_is False S3UploadFailed
check "the condition names SignatureDoesNotMatch and the status" \
    grep -q "PutObject s3://$BUCKET/$KEY failed: SignatureDoesNotMatch (HTTP 403)" "$STATUS"
check "the stand-in refused it" stats_ge refused 1
check "nothing stored" s3absent "$OBJ"
check "retried with backoff" wait_for 10 sql_ge "SELECT attempts FROM items WHERE stage='publisher' AND name='loja'" 2
stop_pub

# --- the right secret, from a credentials file --------------------------------
cat >"$T/creds" <<CREDS
[default]
aws_access_key_id = WRONGPROFILE
aws_secret_access_key = x
[deploy]
aws_access_key_id = $AK
aws_secret_access_key = $SK
aws_session_token = $TOKEN
CREDS
start_pub AWS_SHARED_CREDENTIALS_FILE="$T/creds" AWS_PROFILE=deploy
check "uploaded: Ready=True S3Uploaded" wait_for 10 ready_is True S3Uploaded
check "message says where" grep -q '"message":"Decofile delivered to https://cdn.example/decofiles/sites-loja/loja-dep/decofile.json"' "$STATUS"
s3req GET "$OBJ" >"$T/got.json" 2>"$T/got.hdr"
check "object read back equals the merge byte for byte" cmp -s "$T/doc.json" "$T/got.json"
check "Content-Type: application/json" grep -qi '^content-type: application/json$' "$T/got.hdr"
check "Cache-Control: no-cache" grep -qi '^cache-control: no-cache$' "$T/got.hdr"
check "status fields" grep -q "\"contentHash\":\"$H\",\"timestamp\":[0-9]*,\"lastUpdated\":\"[0-9TZ:-]*\",\"location\":\"s3://$BUCKET/$KEY\",\"s3URL\":\"https://cdn.example/$KEY\",\"format\":\"json\"" "$STATUS"
check "publisher item done" wait_for 5 item_is loja done
pub_bytes() { curl -s --max-time 5 "http://127.0.0.1:$MP/metrics" |
    sed -n 's/^decod_published_bytes_total{target="s3"} //p'; }
is "$(pub_bytes)" "$(wc -c <"$T/doc.json" | tr -d ' ')" \
    "decod_published_bytes_total{target=\"s3\"}: the document's bytes, once"
TS=$(sql "SELECT timestamp FROM publishes WHERE target='s3'")
is "$(sql "SELECT location||' '||content_hash FROM publishes WHERE target='s3'")" \
    "s3://$BUCKET/$KEY $H" "publish recorded"
is "$(sql "SELECT target||' '||location FROM inventory WHERE name='loja'")" \
    "s3 s3://$BUCKET/$KEY" "inventory row"
is "$(sql "SELECT hash||' '||detail FROM items WHERE stage='notifier'")" \
    "$H timestamp=$TS commit=abc123" "one notifier item with timestamp and commit"
check "Ready went False, then True (journal)" sh -c "sqlite3 '$DB' \"SELECT status||' '||reason FROM conditions WHERE type='Ready' ORDER BY id\" | tr '\n' , | grep -q 'False S3UploadFailed,True S3Uploaded'"

# --- same hash: no second PUT ---------------------------------------------------
PUTS=$(stats PUT)
"$TOOL" $C enqueue publisher sites-loja loja "$H" "format=json commit=abc123" >/dev/null
check "second item done" wait_for 5 sql_is "SELECT count(*) FROM items WHERE stage='publisher' AND state='done'" 2
is "$(stats PUT)" "$PUTS" "no second PUT for the same content hash"
is "$(sql "SELECT count(*) FROM publishes")" 1 "exactly one publish"
is "$(sql "SELECT count(*) FROM items WHERE stage='notifier'")" 1 "no second notifier item"
is "$(pub_bytes)" "$(wc -c <"$T/doc.json" | tr -d ' ')" "... and no more bytes counted"

# --- drift ------------------------------------------------------------------------
check "checked by HEAD on the timer" wait_for 5 stats_ge HEAD 1
printf '{"hand":"edit"}' >"$T/edit.json"
S3_CLIENT_CONTENT_TYPE=application/json s3req PUT "$OBJ" "$T/edit.json" >/dev/null 2>&1
check "overwritten object put back" wait_for 5 s3is "$OBJ" "$T/doc.json"
check "drift row" wait_for 2 sql_ge "SELECT count(*) FROM drift" 1
check "drift audited" sh -c "sqlite3 '$DB' \"SELECT action FROM audit WHERE object='decofile/sites-loja/loja'\" | grep -q drift-repaired"
check "Drifted=True Repaired" wait_for 2 grep -q '"type":"Drifted","status":"True","reason":"Repaired","message":"Put back the published version (object changed: ETag' "$STATUS"
s3req DELETE "$OBJ" >/dev/null 2>&1
check "deleted object put back" wait_for 5 s3is "$OBJ" "$T/doc.json"
check "second repair counted" wait_for 2 grep -q '2 repairs since start' "$STATUS"
is "$(sql "SELECT count(*) FROM publishes")" 1 "repairs are not publishes"
s3req GET "$OBJ" 2>"$T/got2.hdr" >/dev/null
check "put back with Content-Type and Cache-Control" sh -c "grep -qi '^cache-control: no-cache' '$T/got2.hdr' && grep -qi '^content-type: application/json' '$T/got2.hdr'"

# --- a 500 from S3: Ready=False, retried ------------------------------------------
curl -s -X POST "$EP/__stand-in/fault?status=500&count=2" >/dev/null
printf '{"A":2}' >"$T/doc2.json"
H2=$("$TOOL" $C spool "$T/doc2.json")
"$TOOL" $C enqueue publisher sites-loja loja "$H2" "format=json commit=def456" >/dev/null
check "500: Ready=False naming InternalError" wait_for 5 grep -q 'failed: InternalError (HTTP 500)' "$STATUS"
check "retried until it lands" wait_for 15 sh -c "grep -q '\"contentHash\":\"$H2\"' '$STATUS' && grep -q '\"type\":\"Ready\",\"status\":\"True\"' '$STATUS'"
check "new content in the bucket" s3is "$OBJ" "$T/doc2.json"
is "$(stats faults)" 2 "both faults were hit"

# --- restart: what changed while down is put back ---------------------------------
stop_pub
S3_CLIENT_CONTENT_TYPE=application/json s3req PUT "$OBJ" "$T/edit.json" >/dev/null 2>&1
start_pub AWS_SHARED_CREDENTIALS_FILE="$T/creds" AWS_PROFILE=deploy
check "edit made while down put back after start" wait_for 15 s3is "$OBJ" "$T/doc2.json"

# --- deletion: kept by default, gone with s3_gc, detach respected -----------------
"$TOOL" $C delete sites-loja loja
check "Decofile deleted: inventory row removed" wait_for 5 sql_is "SELECT count(*) FROM inventory WHERE name='loja'" 0
check "object kept (s3_gc off)" s3is "$OBJ" "$T/doc2.json"
check "audited as kept" sh -c "sqlite3 '$DB' \"SELECT detail FROM audit WHERE object='decofile/sites-loja/loja' AND action='detach'\" | grep -q 's3_gc off'"
stop_pub
echo "s3_gc = true" >>"$T/conf"
start_pub AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_SESSION_TOKEN=$TOKEN
check "apply gcme" decofile gcme
check "apply kept (detach)" decofile kept '{"deco.sites/deletion":"detach"}'
"$TOOL" $C enqueue publisher sites-loja gcme "$H" "format=json" >/dev/null
"$TOOL" $C enqueue publisher sites-loja kept "$H" "format=json" >/dev/null
check "both published" wait_for 10 sql_is "SELECT count(*) FROM inventory WHERE name IN ('gcme','kept')" 2
"$TOOL" $C delete sites-loja gcme
"$TOOL" $C delete sites-loja kept
check "s3_gc: object deleted with its Decofile" wait_for 5 s3absent "$EP/$BUCKET/decofiles/sites-loja/gcme-dep/decofile.json"
check "prune audited" wait_for 2 sh -c "sqlite3 '$DB' \"SELECT action FROM audit WHERE object='decofile/sites-loja/gcme'\" | grep -qx prune"
check "detach respected under s3_gc" wait_for 5 sh -c "sqlite3 '$DB' \"SELECT detail FROM audit WHERE object='decofile/sites-loja/kept' AND action='detach'\" | grep -q 'deco.sites/deletion: detach'"
check "detached object kept" s3is "$EP/$BUCKET/decofiles/sites-loja/kept-dep/decofile.json" "$T/doc.json"
stop_pub

# --- secrets stay out ------------------------------------------------------------------
sqlite3 "$DB" .dump >"$T/journal.sql"
for secret in "$SK" "$TOKEN" not-the-secret; do
	check "a secret (${#secret} chars) is in no log, journal row or store value" sh -c \
	    "! grep -rqF -- '$secret' '$T/pub.log' '$T/journal.sql' '$T/store'"
done
check "no unexpected errors logged" sh -c "! grep 'level=error' '$T/pub.log' | grep -v 'item failed for good'"
grep -E 'level=(warn|error)' "$T/pub.log" | sed 's/^/# /' | head -20
done_testing
