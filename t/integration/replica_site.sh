#!/bin/sh
# replica_site.sh - decod-site, the reference replica: page, current
# decofile, push reload (token, bad bodies), poll reload (long-poll until
# the timestamp file is new enough), slow, failing and hanging replicas.
. "$top_srcdir/t/lib/common.sh"

SITE=$(bin decod-site)
[ -x "$SITE" ] || bail "decod-site not built"

mkdir -p "$T/dir"
printf '{"title":"Loja & co"}' > "$T/dir/Header.json"
printf '[1, 2]' > "$T/dir/Footer.json"
printf '100' > "$T/dir/timestamp.txt"

# start_site NAME ARGS...: start a replica on a free port, set $PORT
start_site() {
	name=$1; shift
	"$SITE" --port 0 "$@" > "$T/$name.out" 2> "$T/$name.err" &
	track_pid $!
	wait_for 10 grep -q '^listening on' "$T/$name.out" || bail "$name did not start"
	PORT=$(awk '/^listening on/ {print $3}' "$T/$name.out")
}

# code URL CURLARGS...: the HTTP status of one call
code() { u=$1; shift; curl -s -o "$T/body" -w '%{http_code}' --max-time 10 "$@" "$u"; }

DECO_RELEASE_RELOAD_TOKEN=s3cret start_site main --decofile-dir "$T/dir"
U=http://127.0.0.1:$PORT

is "$(code $U/)" 200 "GET / answers"
check "page shows the title" grep -q '<h1>Loja &amp; co</h1>' "$T/body"
check "page lists the block keys" grep -q '<li>Footer</li>' "$T/body"

is "$(code $U/.decofile)" 200 "GET /.decofile answers"
want='{"Footer":[1,2],"Header":{"title":"Loja & co"}}'
sha=$(printf '%s' "$want" | sha256sum | cut -d' ' -f1)
check "merged blocks, keys sorted, compact" grep -qF "\"decofile\":$want" "$T/body"
check "sha256 of the current document" grep -q "\"sha256\":\"$sha\"" "$T/body"

body='{"decofile": {"b" : [1, 2], "a":"x"}, "source":"operator","timestamp":"1731598481"}'
is "$(code $U/.decofile/reload -X POST -H 'Content-Type: application/json' -d "$body")" 401 \
    "push without a token: 401"
is "$(code $U/.decofile/reload -X POST -H 'Authorization: Token wrong' -d "$body")" 401 \
    "push with a wrong token: 401"
is "$(code $U/.decofile/reload -X POST -H 'Authorization: Token s3cret' -d '{"source":"operator"}')" 400 \
    "push without a decofile object: 400"
is "$(code $U/.decofile/reload -X POST -H 'Authorization: Token s3cret' -d '{"decofile":')" 400 \
    "push with broken JSON: 400"
is "$(code $U/.decofile/reload -X POST -H 'Authorization: Token s3cret' \
    -H 'Content-Type: application/json' -d "$body")" 200 "push with the token: 200"
check "push answers success" grep -q '"success":true' "$T/body"
code $U/.decofile >/dev/null
sha=$(printf '%s' '{"b":[1,2],"a":"x"}' | sha256sum | cut -d' ' -f1)
check "pushed document is served" grep -qF '"decofile":{"b":[1,2],"a":"x"}' "$T/body"
check "pushed document's sha256" grep -q "\"sha256\":\"$sha\"" "$T/body"
check "pushed timestamp kept" grep -q '"timestamp":"1731598481"' "$T/body"
check "the token never reaches the log" sh -c "! grep -q s3cret '$T/main.err'"

# poll style
is "$(code "$U/.decofile/reload?timestamp=100&tsFile=$T/dir/timestamp.txt" -H 'Authorization: Token s3cret')" 200 \
    "poll for a timestamp already reached: 200"
is "$(code "$U/.decofile/reload?timestamp=abc" -H 'Authorization: Token s3cret')" 400 \
    "poll with a bad timestamp: 400"
is "$(code "$U/.decofile/reload?timestamp=200" )" 401 "poll without the token: 401"
is "$(code "$U/.decofile/reload?timestamp=200" -H 'Authorization: Token s3cret')" 400 \
    "poll without tsFile: 400, as a poll-era runtime"
code "$U/.decofile/reload?timestamp=200&tsFile=$T/dir/timestamp.txt" -H 'Authorization: Token s3cret' > "$T/poll.code" &
pollpid=$!
track_pid $pollpid
sleep 0.3 # the poll is parked; it must not have been answered yet
check "poll waits while the timestamp is old" kill -0 $pollpid
printf '{"Only":{"title":"new"}}' > "$T/dir/decofile.json"
printf '200' > "$T/dir/timestamp.txt"
wait $pollpid
is "$(cat "$T/poll.code")" 200 "poll answered once the file reached the timestamp"
code $U/.decofile >/dev/null
check "the folder was reloaded" grep -qF '"decofile":{"Only":{"title":"new"}}' "$T/body"

# fail-closed: a replica started without a token refuses every reload
start_site notoken
is "$(code http://127.0.0.1:$PORT/.decofile/reload -X POST -H 'Content-Type: application/json' -d "$body")" 401 \
    "no token configured: 401 (fail-closed, as the runtime)"

# bad replicas for the notifier's tests
start_site fail --fail --lenient
is "$(code http://127.0.0.1:$PORT/.decofile/reload -X POST -d "$body")" 500 "--fail answers 500"
start_site slow --delay 700 --lenient
t0=$(date +%s%N)
is "$(code http://127.0.0.1:$PORT/.decofile/reload -X POST -d "$body")" 200 "--delay still answers"
t1=$(date +%s%N)
check "--delay answers slowly" [ $(( (t1 - t0) / 1000000 )) -ge 650 ]
is "$(code http://127.0.0.1:$PORT/)" 200 "a slow replica still serves pages"
start_site hang --hang --lenient
is "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -X POST -d "$body" \
    http://127.0.0.1:$PORT/.decofile/reload)" 000 "--hang never answers"
is "$(code http://127.0.0.1:$PORT/.decofile)" 200 "a hanging replica's server is not blocked"

"$SITE" --port nope > /dev/null 2> "$T/bad.err"
is $? 1 "a bad option fails"
check "with a clear message" grep -q 'not a port number' "$T/bad.err"
"$SITE" --port 0 --decofile-dir "$T/missing" > /dev/null 2> "$T/bad.err"
is $? 1 "a missing folder fails"

done_testing
