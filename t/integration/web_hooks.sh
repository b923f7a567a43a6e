#!/bin/sh
# web_hooks - the web stage under the real decod with a git source served
# by `git daemon` and a poll period of an hour, so only a push receiver can
# explain a fetch: a signed GitHub push makes the new commit live; unsigned,
# wrong signature, oversized, malformed and another branch's pushes sync
# nothing; a repeated delivery is acknowledged and ignored; GitLab's token
# and Gitea's signature; the body is never logged; /api/v1 gives the JSON
# of decoctl status/describe; /api/v1/events streams a snapshot, then the
# changed row; the sync action needs the bearer token; the page is served.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/git.sh"
. "$top_srcdir/t/lib/pipeline.sh"

command -v curl >/dev/null || skip_all "curl is not installed"
command -v openssl >/dev/null || skip_all "openssl is not installed"

PORT=$(free_port)
printf 'gh-secret-42\n' >"$T/github.secret"	# the editor's newline is not the secret
printf 'gl-token-42' >"$T/gitlab.secret"
printf 'gt-secret-42' >"$T/gitea.secret"
printf 'web-token-42\n' >"$T/web.token"
pipeline_setup "fetcher renderer publisher web" \
    "web_listen = 127.0.0.1:$PORT" \
    "web_github_secret_file = $T/github.secret" \
    "web_gitlab_secret_file = $T/gitlab.secret" \
    "web_gitea_secret_file = $T/gitea.secret" \
    "web_token_file = $T/web.token" \
    "web_max_body = 16KiB" \
    "web_static_dir = $top_srcdir/daemons/web/static"
BASE="http://127.0.0.1:$PORT"

# a repository with two commits to come
W="$T/work"
git_work "$W"
git_commit "$W" .deco/blocks/Header.json '{"v":1}'
C1=$(git -C "$W" rev-parse HEAD)
git_bare "$W" site
git_serve
URL="$GIT_BASE/site.git"

pipeline_start
cat >"$T/loja.json" <<JSON
{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile",
 "metadata":{"name":"loja","namespace":"$NS"},
 "spec":{"source":"git","git":{"url":"$URL","ref":"main","dir":".deco/blocks","period":"1h"}}}
JSON
ctl apply -f "$T/loja.json" >/dev/null
ok $? "apply a git Decofile polled once an hour"
commit_is() { [ "$(status_json commit)" = "$1" ] && [ "$(status_json ready)" = True ]; }
check "the first commit is live" wait_for "$(scaled 60)" commit_is "$C1"

# post PATH BODYFILE HEADER...: the HTTP code; the answer in $T/answer
post() {
	p=$1; f=$2; shift 2
	set -- -H "Content-Type: application/json" "$@"
	curl -s -o "$T/answer" -w '%{http_code}' -X POST --data-binary "@$f" "$@" "$BASE$p"
}
hmac() { openssl dgst -sha256 -hmac "$1" "$2" | sed 's/^.*= //'; }
gh() { # gh BODYFILE DELIVERY [EVENT] [SIGNATURE]: a GitHub delivery
	sig=${4:-sha256=$(hmac gh-secret-42 "$1")}
	post /hooks/github "$1" -H "X-GitHub-Event: ${3:-push}" -H "X-GitHub-Delivery: $2" \
	    -H "X-Hub-Signature-256: $sig"
}
push_body() { # push_body FILE BRANCH: a GitHub push of the repository, as it spells it
	cat >"$1" <<JSON
{"ref":"refs/heads/$2","after":"$(git -C "$W" rev-parse HEAD)","pusher":{"name":"BODYMARKER-pusher"},
 "repository":{"full_name":"x/site","clone_url":"git://127.0.0.1:$GIT_PORT/site",
  "html_url":"http://127.0.0.1/site/","default_branch":"main"}}
JSON
}
handled_syncs() { ctl get df loja -o json | grep -c lastHandledSyncAt; }

# a second commit, pushed to the git host, which the hour-long poll will not see
git_commit "$W" .deco/blocks/Header.json '{"v":2}'
C2=$(git -C "$W" rev-parse HEAD)
git_push "$W" site
push_body "$T/push-main.json" main
push_body "$T/push-other.json" staging

# --- deliveries that must sync nothing ---------------------------------------
is "$(post /hooks/github "$T/push-main.json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: d-unsigned")" 401 "unsigned: 401"
is "$(gh "$T/push-main.json" d-wrong push "sha256=$(hmac not-the-secret "$T/push-main.json")")" \
    401 "wrong signature: 401"
is "$(gh "$T/push-main.json" d-trunc push "sha256=$(hmac gh-secret-42 "$T/push-main.json" | cut -c1-40)")" \
    401 "truncated signature: 401"
python3 -c 'import sys; open(sys.argv[1], "w").write("{\"ref\":\"" + "x" * 20000 + "\"}")' "$T/big.json"
is "$(gh "$T/big.json" d-big)" 413 "a body over web_max_body: 413"
printf '{"ref": ' >"$T/bad.json"
is "$(gh "$T/bad.json" d-bad)" 400 "a signed body that is not JSON: 400"
printf '{"zen":"Keep it simple"}' >"$T/ping.json"
is "$(gh "$T/ping.json" d-ping ping)" 202 "ping: 202"
check "... answered pong" grep -q '"pong"' "$T/answer"
printf '{"action":"opened"}' >"$T/issue.json"
is "$(gh "$T/issue.json" d-issue issues)" 202 "another event: 202"
check "... ignored" grep -q '"ignored"' "$T/answer"
is "$(gh "$T/push-other.json" d-other)" 202 "a push of another branch: 202"
check "... syncing nothing" grep -q '"synced":\[\]' "$T/answer"
is "$(handled_syncs)" 0 "no sync was requested by any of them"
is "$(status_json commit)" "$C1" "the first commit is still live"
check "refusals are logged" grep -q 'bad or missing signature' "$T/decod.log"
check "the body is never logged" sh -c "! grep -q BODYMARKER '$T/decod.log'"

# --- live updates: a stream open before the push ------------------------------
curl -s -N "$BASE/api/v1/events" >"$T/events" 2>/dev/null &
EVPID=$!
track_pid $EVPID
check "events: a snapshot first" wait_for 10 grep -q '^event: snapshot' "$T/events"
check "events: the snapshot names loja" grep -q '"name":"loja"' "$T/events"

# --- the signed push ---------------------------------------------------------
T0=$(date +%s%N)
is "$(gh "$T/push-main.json" d-main)" 202 "a signed push of main: 202"
check "... names the Decofile it synced" grep -q "\"synced\":\[{\"namespace\":\"$NS\",\"name\":\"loja\"}\]" "$T/answer"
check "the pushed commit is live without waiting for the poll" wait_for "$(scaled 30)" commit_is "$C2"
diag "push to commit live: $(( ($(date +%s%N) - T0) / 1000000 )) ms"
check "events: a row with the new commit, without a reload" \
    wait_for 10 grep -q "\"commit\":\"$C2\"" "$T/events"
is "$(gh "$T/push-main.json" d-main)" 202 "the same delivery again: 202"
check "... acknowledged and ignored" grep -q '"repeated delivery"' "$T/answer"
check "... and logged as seen" grep -q 'seen before' "$T/decod.log"

# --- GitLab and Gitea ---------------------------------------------------------
cat >"$T/gl.json" <<JSON
{"object_kind":"push","ref":"refs/heads/main",
 "project":{"git_http_url":"http://127.0.0.1/site.git","git_ssh_url":"git@127.0.0.1:site.git","default_branch":"main"}}
JSON
is "$(post /hooks/gitlab "$T/gl.json" -H "X-Gitlab-Event: Push Hook" -H "X-Gitlab-Token: wrong" \
    -H "X-Gitlab-Event-UUID: gl-1")" 401 "gitlab: a wrong token: 401"
is "$(post /hooks/gitlab "$T/gl.json" -H "X-Gitlab-Event: Push Hook" -H "X-Gitlab-Token: gl-token-42" \
    -H "X-Gitlab-Event-UUID: gl-2")" 202 "gitlab: the token: 202"
check "... syncs loja" grep -q '"name":"loja"' "$T/answer"
is "$(post /hooks/gitea "$T/push-main.json" -H "X-Gitea-Event: push" -H "X-Gitea-Delivery: gt-1" \
    -H "X-Gitea-Signature: $(hmac gt-secret-42 "$T/push-main.json" | tr a-f A-F | tr A-F a-f)")" \
    202 "gitea: the signature: 202"
check "... syncs loja" grep -q '"name":"loja"' "$T/answer"
is "$(post /hooks/gitea "$T/push-main.json" -H "X-Gitea-Event: push" -H "X-Gitea-Delivery: gt-2" \
    -H "X-Gitea-Signature: sha256=$(hmac gt-secret-42 "$T/push-main.json")")" \
    401 "gitea: GitHub's prefixed form is not Gitea's: 401"

# --- the API: decoctl's JSON -------------------------------------------------
same_json() { # same_json URL FILE: the API's answer is FILE's JSON
	curl -s "$BASE$1" >"$T/api.json" &&
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a != b)' \
	    "$T/api.json" "$2"
}
# the syncs above may still be settling: compare until both read the same state
status_same() { ctl status -o json >"$T/status.json" && same_json /api/v1/status "$T/status.json"; }
check "/api/v1/status is decoctl status -o json" wait_for 10 status_same
describe_same() {
	ctl describe loja -o json >"$T/describe.json" &&
	same_json "/api/v1/decofiles/$NS/loja" "$T/describe.json"
}
check "/api/v1/decofiles/NS/loja is decoctl describe -o json" wait_for 10 describe_same
check "... which is a describe (decofile, replicas, inventory, events)" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(sorted(d) != ["decofile", "events", "inventory", "replicas"] or
    d["decofile"]["status"]["githubCommit"] != sys.argv[2])' "$T/api.json" "$C2"
check "/api/v1/status names the pushed commit" python3 -c '
import json, sys
sys.exit(json.load(open(sys.argv[1]))[0]["commit"] != sys.argv[2])' "$T/status.json" "$C2"
is "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/decofiles/$NS/nothere")" 404 \
    "an unknown decofile: 404"

# --- the action needs the token ---------------------------------------------
printf '' >"$T/empty"
is "$(post "/api/v1/decofiles/$NS/loja/sync" "$T/empty")" 401 "sync without a token: 401"
is "$(post "/api/v1/decofiles/$NS/loja/sync" "$T/empty" -H "Authorization: Bearer nope")" 401 \
    "sync with a wrong token: 401"
is "$(post "/api/v1/decofiles/$NS/loja/sync" "$T/empty" -H "Authorization: Bearer web-token-42")" \
    202 "sync with the token: 202"

# --- the stage matches pushes against its rows in memory: they follow edits --
sed 's|"ref":"main"|"ref":"refs/heads/staging"|' "$T/loja.json" >"$T/loja-staging.json"
ctl apply -f "$T/loja-staging.json" >/dev/null
ok $? "loja now follows staging"
main_syncs_nothing() { # a new delivery each time: a repeated one is ignored
	gh "$T/push-main.json" "d-main-$(date +%s%N)" >/dev/null &&
	    grep -q '"synced":\[\]' "$T/answer"
}
check "a push of main no longer syncs loja" wait_for "$(scaled 10)" main_syncs_nothing
is "$(gh "$T/push-other.json" d-staging-1)" 202 "a push of staging: 202"
check "... syncs loja" grep -q '"name":"loja"' "$T/answer"
sed 's/"name":"loja"/"name":"loja-dois"/' "$T/loja-staging.json" >"$T/loja2.json"
ctl apply -f "$T/loja2.json" >/dev/null
ok $? "a second Decofile on the same repository and branch"
both_synced() {
	gh "$T/push-other.json" "d-staging-$(date +%s%N)" >/dev/null &&
	    grep -q '"name":"loja-dois"' "$T/answer" && grep -q '"name":"loja"' "$T/answer"
}
check "a push of staging syncs both" wait_for "$(scaled 10)" both_synced

# --- the page ----------------------------------------------------------------
curl -s "$BASE/" >"$T/index.html"
check "the page is served" grep -q '<table id="decofiles">' "$T/index.html"
is "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/static/../../etc/passwd")" 404 \
    "no other file is served"
check "the page fetches nothing from elsewhere" sh -c \
    "! grep -Eq '(src|href)=\"(https?:)?//' '$top_srcdir'/daemons/web/static/*.html"

# --- HTTPS: the stage alone with a certificate pair ---------------------------
if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$T/web.key" -out "$T/web.crt" >/dev/null 2>&1; then
	TPORT=$(free_port)
	cat >"$T/tls.conf" <<CONF
state_dir = $T/tls-state
runtime_dir = $T/tls-run
store = local:$T/store
web_listen = 127.0.0.1:$TPORT
web_cert_file = $T/web.crt
web_key_file = $T/web.key
web_static_dir = $top_srcdir/daemons/web/static
CONF
	"$(bin web)" -c "$T/tls.conf" >"$T/web-tls.log" 2>&1 &
	track_pid $!
	check "HTTPS: the stage alone starts" wait_for 10 grep -q 'msg=ready' "$T/web-tls.log"
	is "$(curl -s --cacert "$T/web.crt" "https://127.0.0.1:$TPORT/healthz")" ok \
	    "HTTPS: answered with the configured certificate"
	check "HTTPS: /api/v1/status over TLS" sh -c \
	    "curl -sf --cacert '$T/web.crt' https://127.0.0.1:$TPORT/api/v1/status | grep -q '\"name\":\"loja\"'"
	check "HTTPS: plain HTTP is not answered" sh -c \
	    "! curl -sf -m 5 http://127.0.0.1:$TPORT/healthz"
	printf 'web_cert_file = %s\nstate_dir = %s\nruntime_dir = %s\n' "$T/web.crt" \
	    "$T/half-state" "$T/half-run" >"$T/half.conf"
	sed '/web_cert_file\|web_key_file\|state_dir\|runtime_dir/d' "$T/tls.conf" >>"$T/half.conf"
	"$(bin web)" -c "$T/half.conf" >"$T/web-half.log" 2>&1
	ok $(( $? == 0 )) "a certificate without its key: the stage refuses to start"
	check "... and says why" grep -q 'go together' "$T/web-half.log"
fi

kill "$EVPID" 2>/dev/null
done_testing
