#!/bin/sh
# fetch_oci - the fetcher against Debian's docker-registry on loopback, with
# artifacts the test pushes through the registry API (t/lib/oci.py: blob
# uploads, manifest PUT).  Bearer-token auth answered by a token stand-in
# (t/stand-in/token_server.py, the test's own key pair in the registry's
# rootcertbundle) and basic auth (htpasswd) on a second registry over the
# same storage.  The manifest digest is the commit: an unchanged tag costs a
# HEAD (with the bearer token kept from the last poll) and no GET; a re-pushed tag is picked up; OCI and Docker manifests,
# an OCI index (linux/amd64 picked), tar and tar+gzip layers (a later
# layer's file replaces an earlier one's); spec.oci.dir;
# a digest listed twice is fetched once and applied at each place; a
# manifest of 3,000 layers (one digest) is refused with no blob fetched;
# wrong and missing credentials, a blob whose bytes do not match its digest,
# hostile layers (../ entry, symlink, a name not UTF-8), and a registry not in
# oci_insecure_registries (no plain HTTP) give Syncing=False FetchError and
# hand nothing on; the password is in no log, journal or store.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/registry.sh"

FETCHER=$(bin fetcher)
TOOL="$top_builddir/t/stage/testtool"
OCI="$top_srcdir/t/lib/oci.py"
[ -x "$FETCHER" ] || bail "fetcher not built"
[ -x "$TOOL" ] || bail "t/stage/testtool not built"
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"
command -v htpasswd >/dev/null || skip_all "htpasswd (apache2-utils) not installed"

PW="oci-TOPSECRET-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
mkdir -p "$T/state/secrets" "$T/creds"
printf 'decod:%s\n' "$PW" >"$T/creds/push"
printf 'decod:%s\n' "$PW" >"$T/state/secrets/reg-creds"
printf 'decod:wrong\n' >"$T/state/secrets/reg-wrong"

reg_token_serve "$T/creds/push"
reg_serve tokreg token
TOKREG=127.0.0.1:$REG_PORT
reg_serve basicreg htpasswd "$T/creds/push"
BASICREG=127.0.0.1:$REG_PORT

# artifacts: a tar+gzip layer with blocks under ./blocks, a plain tar one
mkdir -p "$T/a1/blocks/sub" "$T/a1/other" "$T/a2/blocks"
printf '{"v":1}' >"$T/a1/blocks/Header.json"
printf '{"home":true}' >"$T/a1/blocks/sub/Home%20Page.json"
printf '{"other":true}' >"$T/a1/other/Other.json"
printf 'not a block' >"$T/a1/blocks/README.md"
tar -C "$T/a1" -czf "$T/a1.tgz" . || bail "tar"
printf '{"v":2}' >"$T/a2/blocks/Header.json"
tar -C "$T/a2" -cf "$T/a2.tar" . || bail "tar"
LTGZ=application/vnd.oci.image.layer.v1.tar+gzip
push() { python3 "$OCI" push "http://$TOKREG" "$@"; }
D1=$(push decofile/loja prod "$T/creds/push" oci "$T/a1.tgz:$LTGZ") || bail "push prod"
DDOCK=$(push decofile/loja docker "$T/creds/push" docker \
    "$T/a2.tar:application/vnd.docker.image.rootfs.diff.tar") || bail "push docker"
DARM=$(push decofile/loja arm "$T/creds/push" oci "$T/a1.tgz:$LTGZ") || bail "push arm"
DLAY=$(push decofile/loja layers "$T/creds/push" oci "$T/a1.tgz:$LTGZ" \
    "$T/a2.tar:application/vnd.oci.image.layer.v1.tar") || bail "push layers"
DIDX=$(python3 "$OCI" index "http://$TOKREG" decofile/loja multi "$T/creds/push" \
    "$DARM:linux/arm64" "$DDOCK:linux/amd64") || bail "push index"
python3 "$OCI" hostile-tar slip "$T/slip.tar" && python3 "$OCI" hostile-tar symlink "$T/link.tar" ||
    bail "hostile tars"
python3 "$OCI" hostile-tar latin1 "$T/latin1.tar" || bail "latin1 tar"
push decofile/evil slip "$T/creds/push" oci "$T/slip.tar:application/vnd.oci.image.layer.v1.tar" >/dev/null &&
push decofile/evil link "$T/creds/push" oci "$T/link.tar:application/vnd.oci.image.layer.v1.tar" >/dev/null &&
push decofile/evil latin1 "$T/creds/push" oci "$T/latin1.tar:application/vnd.oci.image.layer.v1.tar" >/dev/null ||
    bail "push hostile"
# issue 24: layers A, B, A (A fetched once, applied twice: its Header wins);
# one layer listed 3,000 times (a 3,000-GET fetch before the cap)
LA=$(sha256sum "$T/a1.tgz" | cut -d' ' -f1)
push decofile/dup aba "$T/creds/push" oci "$T/a1.tgz:$LTGZ" \
    "$T/a2.tar:application/vnd.oci.image.layer.v1.tar" "$T/a1.tgz:$LTGZ" >/dev/null || bail "push aba"
push decofile/many prod "$T/creds/push" oci "$T/a2.tar:application/vnd.oci.image.layer.v1.tar*3000" >/dev/null ||
    bail "push 3000 layers"
# a blob whose stored bytes no longer match its digest (same size)
mkdir -p "$T/a3/blocks" && printf '{"v":3}' >"$T/a3/blocks/Header.json"
tar -C "$T/a3" -cf "$T/a3.tar" . || bail "tar"
push decofile/bad prod "$T/creds/push" oci "$T/a3.tar:application/vnd.oci.image.layer.v1.tar" >/dev/null ||
    bail "push bad"
L3=$(sha256sum "$T/a3.tar" | cut -d' ' -f1)
BLOB="$T/registry/docker/registry/v2/blobs/sha256/$(printf %.2s "$L3")/$L3/data"
[ -f "$BLOB" ] || bail "blob file not where docker-registry keeps it"
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[600]^=1; open(p,"wb").write(b)' "$BLOB"

cat >"$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
rescan_interval = 100ms
fetch_timeout = 10s
log_level = debug
oci_insecure_registries = $TOKREG, $BASICREG
CONF
C="-c $T/conf"
DB="$T/state/journal.db"
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
items() { sql "SELECT count(*) FROM items WHERE stage='renderer' AND name='$1'" 2>/dev/null; }
items_are() { [ "$(items "$1")" = "$2" ]; }
last() { sql "SELECT $2 FROM items WHERE stage='renderer' AND name='$1' ORDER BY id DESC LIMIT 1"; }
status_has() { "$TOOL" $C status sites-loja "$1" fetcher | grep -qF "$2"; }
keys_of() {
	m="$T/state/spool/$(printf %.2s "$1")/$1"
	python3 -c 'import json,sys; print(" ".join(e["key"] for e in json.load(open(sys.argv[1]))["entries"]))' "$m"
}
blob_of() {
	m="$T/state/spool/$(printf %.2s "$1")/$1"
	b=$(python3 -c 'import json,sys; print([e["blob"] for e in json.load(open(sys.argv[1]))["entries"] if e["key"]==sys.argv[2]][0])' "$m" "$2")
	cat "$T/state/spool/$(printf %.2s "$b")/$b"
}
ocidf() { # ocidf NAME IMAGE DIR PERIOD [SECRET]
	sec=""
	[ -n "${5:-}" ] && sec=",\"secret\":\"$5\""
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"sites-loja"},"spec":{"source":"oci","oci":{"image":"%s","dir":"%s","period":"%s"%s}}}' \
	    "$1" "$2" "$3" "$4" "$sec" >"$T/df-$1.json"
	"$TOOL" $C apply "$T/df-$1.json"
}
polls() { grep -c "msg=\"poll done\" ns=sites-loja name=$1 " "$T/fetcher.log"; }
polls_at_least() { [ "$(polls "$1")" -ge "$2" ]; }

"$FETCHER" $C >>"$T/fetcher.log" 2>&1 &
FPID=$!
track_pid $FPID
wait_for 10 grep -q 'msg=ready' "$T/fetcher.log" || bail "fetcher did not start"

# --- bearer token, OCI manifest, tar+gzip layer ----------------------------------
check "apply: oci prod, dir blocks" ocidf site "$TOKREG/decofile/loja:prod" blocks 1s reg-creds
check "site: renderer item" wait_for 15 items_are site 1
is "$(last site detail)" "source=oci commit=$D1 generation=1" "site: the manifest digest is the commit"
is "$(keys_of "$(last site hash)")" "Header Home Page" "site: blocks under dir, flattened, decoded"
is "$(blob_of "$(last site hash)" Header)" '{"v":1}' "site: the block's bytes"
check "site: githubCommit = digest" wait_for 5 status_has site "\"sourceType\":\"oci\",\"githubCommit\":\"$D1\""
T0=$(curl -sf "http://127.0.0.1:$TOKEN_PORT/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
[ "${T0:-0}" -ge 1 ]; ok $? "a bearer token came from the token service ($T0)"

# --- unchanged tag: HEAD, no GET -----------------------------------------------------
tokens() { curl -sf "http://127.0.0.1:$TOKEN_PORT/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])'; }
check "site: a poll after the first fetch" wait_for 15 polls_at_least site 2
G=$(reg_requests tokreg GET manifests)
H=$(reg_requests tokreg HEAD manifests)
TK=$(tokens)
P=$(polls site)
check "site: polled again and again" wait_for 15 polls_at_least site $((P + 3))
P2=$(polls site)
is "$(reg_requests tokreg GET manifests)" "$G" "unchanged tag: no manifest GET"
[ "$(reg_requests tokreg HEAD manifests)" -ge $((H + 3)) ]; ok $? "unchanged tag: a HEAD per poll"
HN=$(grep -c '"HEAD /v2/decofile/loja/manifests/prod HTTP/1.1" 200 .*decod-fetcher' "$T/tokreg.log")
H401=$(grep -c '"HEAD /v2/decofile/loja/manifests/prod HTTP/1.1" 401 .*decod-fetcher' "$T/tokreg.log")
is "$(tokens)" "$TK" "unchanged tag: the bearer token is reused, no new one asked for"
diag "HEADs answered 200: $HN, 401: $H401 (the first fetch's challenge)"
is "$(items site)" 1 "unchanged tag: no new item"

# --- the tag moves ------------------------------------------------------------------------
D2=$(push decofile/loja prod "$T/creds/push" oci "$T/a2.tar:application/vnd.oci.image.layer.v1.tar")
check "re-pushed tag: a new item" wait_for 15 items_are site 2
is "$(last site detail)" "source=oci commit=$D2 generation=1" "re-pushed tag: the new digest"
is "$(blob_of "$(last site hash)" Header)" '{"v":2}' "re-pushed tag: plain tar layer read"

# --- Docker manifest, OCI index, pinned digest ----------------------------------------------
check "apply: docker manifest" ocidf dock "$TOKREG/decofile/loja:docker" / 1m reg-creds
check "docker: item" wait_for 15 items_are dock 1
is "$(last dock detail)" "source=oci commit=$DDOCK generation=1" "docker: its digest"
check "apply: index" ocidf multi "$TOKREG/decofile/loja:multi" blocks 1m reg-creds
check "index: item" wait_for 15 items_are multi 1
is "$(last multi detail)" "source=oci commit=$DIDX generation=1" "index: the index digest is the commit"
is "$(blob_of "$(last multi hash)" Header)" '{"v":2}' "index: the linux/amd64 manifest was read"
check "apply: two layers" ocidf lay "$TOKREG/decofile/loja:layers" blocks 1m reg-creds
check "layers: item" wait_for 15 items_are lay 1
is "$(keys_of "$(last lay hash)")" "Header Home Page" "layers: files of both layers"
is "$(blob_of "$(last lay hash)" Header)" '{"v":2}' "layers: the later layer's file wins"
check "apply: pinned digest" ocidf pin "$TOKREG/decofile/loja@$D1" blocks 1s reg-creds
check "pin: item" wait_for 15 items_are pin 1
is "$(last pin detail)" "source=oci commit=$D1 generation=1" "pin: that digest"

# --- basic auth ----------------------------------------------------------------------------------
check "apply: basic-auth registry" ocidf basic "$BASICREG/decofile/loja:prod" blocks 1m reg-creds
check "basic: item" wait_for 15 items_are basic 1
is "$(last basic detail)" "source=oci commit=$D2 generation=1" "basic: same storage, same digest"

# --- refusals ----------------------------------------------------------------------------------------
check "apply: wrong password" ocidf wrong "$TOKREG/decofile/loja:prod" blocks 1m reg-wrong
check "wrong password: the token service refused" wait_for 15 status_has wrong \
    '"status":"False","reason":"FetchError","message":"registry '"$TOKREG"': the token service at http://127.0.0.1:'"$TOKEN_PORT"'/token refused (401): check spec.oci.secret'
check "apply: no secret on basic" ocidf anon "$BASICREG/decofile/loja:prod" blocks 1m
check "no secret: asks for credentials" wait_for 15 status_has anon \
    '"status":"False","reason":"FetchError","message":"registry '"$BASICREG"' asks for credentials (Basic): set spec.oci.secret'
check "apply: corrupted blob" ocidf bad "$TOKREG/decofile/bad:prod" / 1m reg-creds
check "corrupted blob: digest mismatch refused" wait_for 15 status_has bad \
    "\"status\":\"False\",\"reason\":\"FetchError\",\"message\":\"registry $TOKREG: blob sha256:$L3: digest mismatch"
check "apply: ../ in a layer" ocidf slip "$TOKREG/decofile/evil:slip" / 1m reg-creds
check "../ in a layer: refused" wait_for 15 status_has slip \
    '"reason":"FetchError","message":"layer sha256:'
check "../ names the traversal" status_has slip 'has a \"..\" component (path traversal)'
check "apply: symlink in a layer" ocidf link "$TOKREG/decofile/evil:link" / 1m reg-creds
check "symlink in a layer: refused" wait_for 15 status_has link "is a symbolic link"
check "apply: a name not UTF-8 in a layer" ocidf latin1 "$TOKREG/decofile/evil:latin1" / 1m reg-creds
check "a name not UTF-8: refused, named, quoted" wait_for 15 status_has latin1 \
    "refused: entry 'blocks/Caf\\\\xe9.json' has a name that is not valid UTF-8"
check "apply: 3,000 layers" ocidf many "$TOKREG/decofile/many:prod" / 1m reg-creds
check "3,000 layers: refused" wait_for 15 status_has many \
    '"status":"False","reason":"FetchError","message":"registry '"$TOKREG"': manifest sha256:'
check "3,000 layers: the message says why" status_has many "lists 3000 layers, more than 128; refused"
is "$(reg_requests tokreg GET decofile/many/blobs)" 0 "3,000 layers: no blob was fetched"
check "apply: layers A, B, A" ocidf aba "$TOKREG/decofile/dup:aba" blocks 1m reg-creds
check "A, B, A: item" wait_for 15 items_are aba 1
is "$(keys_of "$(last aba hash)")" "Header Home Page" "A, B, A: files of both layers"
is "$(blob_of "$(last aba hash)" Header)" '{"v":1}' "A, B, A: A applied again, after B"
is "$(grep -c "\"GET /v2/decofile/dup/blobs/sha256:$LA HTTP/1.1\" 200 " "$T/tokreg.log")" 1 \
    "A, B, A: A's blob fetched once"
check "apply: registry not listed as insecure" ocidf tls "localhost:${TOKREG#127.0.0.1:}/decofile/loja:prod" / 1m reg-creds
check "not insecure: https only, no plain HTTP" wait_for 15 status_has tls \
    '"status":"False","reason":"FetchError","message":"registry localhost:'"${TOKREG#127.0.0.1:}"': HEAD https://localhost:'
is "$(items wrong)$(items anon)$(items bad)$(items slip)$(items link)$(items tls)$(items latin1)$(items many)" 00000000 \
    "refused artifacts hand nothing on"

check "fetcher still alive" kill -0 $FPID
ps -eo args >"$T/ps.txt"
! grep -rq "$PW" "$T/fetcher.log" "$DB" "$T/store" "$T/ps.txt"; ok $? "the password is in no log, journal, store or argv"
done_testing
