#!/bin/sh
# web_template - a template's pending change and its rollout on the web
# stage, and its "template apply" action, against real decod (fetcher,
# renderer, publisher, web) on the local store.  A Manual site holds
# generation 1 of an inline DecofileTemplate while the template moves to
# 2: /api/v1/.../templates says pending 1 of 2, .../diff is `decoctl diff
# NAME -o json` byte for byte; in Debian's chromium (playwright-core,
# t/browser/template.js) the decofile page shows the template row pending
# and the changed block and key, a wrong token is refused, the right one
# applies it and the page then shows the site adopted at generation 2.
# With curl: the action is refused with no token (401), a wrong one
# (401), GET (405); a template-less decofile's templates are []; with the
# token the site takes generation 3 and publishes it.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"
. "$top_srcdir/t/lib/browser.sh"

command -v curl >/dev/null || skip_all "curl is not installed"
command -v jq >/dev/null || skip_all "jq not installed"

PORT=$(free_port)
printf 'sesame-%s\n' "$$" >"$T/token"
chmod 600 "$T/token"
TOKEN=$(cat "$T/token")
pipeline_setup "fetcher renderer publisher web" \
    "web_listen = 127.0.0.1:$PORT" "web_token_file = $T/token" \
    "web_static_dir = $top_srcdir/daemons/web/static"
BASE="http://127.0.0.1:$PORT"
API="$BASE/api/v1/decofiles/$NS"

tpl() { # PRIMARY
	cat >"$T/base.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: $NS}
spec:
  source: inline
  inline:
    value:
      Tema da Loja: {"label": "t", "colors": {"primary": "$1", "text": "black"}}
      Header: {"v": 1}
YAML
	ctl apply -f "$T/base.yaml" >/dev/null
}
cat >"$T/man.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: man, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "man"}}}
  templates: [base]
  updatePolicy: {templateChanges: Manual}
YAML
cat >"$T/plain.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: plain, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "plain"}}}
YAML
doc() {
	loc=$(ctl get decofile "$1" -o json | jq -r '.status.location // ""')
	[ -n "$loc" ] && cat "${loc#file://}"
}
primary_is() { [ "$(doc "$1" | jq -r '."Tema da Loja".colors.primary' 2>/dev/null)" = "$2" ]; }
code() { # METHOD URL [CURL-ARGS...]: the HTTP status, the body in $T/answer
	m=$1 u=$2; shift 2
	curl -s -o "$T/answer" -w '%{http_code}' -X "$m" "$@" "$u"
}
tpl_state() { # the site's row for base: "STATE GEN FETCHED"
	curl -s "$API/man/templates" | jq -r '.[] | select(.name=="base") |
	    "\(.state) \(.generation) \(.fetchedGeneration)"'
}
diff_has() { curl -s "$API/man/diff" | jq -e "$1" >/dev/null 2>&1; }

tpl red
ok $? "apply the DecofileTemplate base (generation 1)"
ctl apply -f "$T/man.yaml" >/dev/null && ctl apply -f "$T/plain.yaml" >/dev/null
ok $? "apply the Manual site man and the template-less plain"
pipeline_start
check "man renders generation 1" wait_for "$(scaled 20)" primary_is man red
check "templates: base adopted at generation 1" wait_for "$(scaled 20)" \
    sh -c "[ \"\$(curl -s '$API/man/templates' | jq -r '.[0].state')\" = adopted ]"
is "$(curl -s "$API/plain/templates")" "[]" "a decofile without templates: []"
is "$(curl -s "$API/man/diff" | jq -c '[.blocks, .templates]')" "[[],[]]" \
    "diff with nothing pending: no block, no template"

tpl blue
check "templates: pending, the site at 1, the newest 2" wait_for "$(scaled 20)" \
    sh -c "[ \"\$(curl -s '$API/man/templates' | jq -r '.[0] | \"\(.state) \(.generation) \(.fetchedGeneration) \(.policy)\"')\" = 'pending 1 2 Manual' ]"
check "diff: Tema da Loja's colors.primary changed" wait_for "$(scaled 20)" diff_has \
    '.blocks == [{"name": "Tema da Loja", "change": "changed", "keys": [{"path": ["colors", "primary"], "change": "changed"}]}]'
curl -s "$API/man/diff" | jq -S . >"$T/web-diff.json"
ctl diff man -o json | jq -S . >"$T/ctl-diff.json"
check "/diff is decoctl diff man -o json" cmp "$T/web-diff.json" "$T/ctl-diff.json"
ok "$(primary_is man red; echo $?)" "reading the preview wrote nothing: man still publishes red"

# --- the page, in a real browser ----------------------------------------------
if browser_setup; then
	BASE=$BASE NS=$NS TOKEN=$TOKEN SHOTS=${WEB_SHOTS:-$T} browser_run template.js
	check "after the page's apply man publishes generation 2" wait_for "$(scaled 20)" \
	    primary_is man blue
else
	echo "# no chromium or playwright-core: the browser part is skipped"
	code POST "$API/man/template-apply" -H "Authorization: Bearer $TOKEN" >/dev/null
	check "apply by curl instead: man publishes generation 2" wait_for "$(scaled 20)" \
	    primary_is man blue
fi
check "templates: adopted at 2" wait_for "$(scaled 20)" \
    sh -c "[ \"\$(curl -s '$API/man/templates' | jq -r '.[0] | \"\(.state) \(.generation)\"')\" = 'adopted 2' ]"

# --- the action over curl -----------------------------------------------------
tpl green
check "templates: pending 2 of 3" wait_for "$(scaled 20)" \
    sh -c "[ \"\$(curl -s '$API/man/templates' | jq -r '.[0] | \"\(.state) \(.generation) \(.fetchedGeneration)\"')\" = 'pending 2 3' ]"
is "$(code POST "$API/man/template-apply")" 401 "template-apply without a token: 401"
is "$(code POST "$API/man/template-apply" -H "Authorization: Bearer wrong-$TOKEN")" 401 \
    "... with a wrong token: 401"
is "$(code POST "$API/man/template-apply" -H "Authorization: Basic $TOKEN")" 401 \
    "... with the token but not as a bearer: 401"
is "$(code GET "$API/man/template-apply" -H "Authorization: Bearer $TOKEN")" 405 \
    "... GET: 405"
is "$(code POST "$API/nothere/template-apply" -H "Authorization: Bearer $TOKEN")" 404 \
    "... of a decofile that does not exist: 404"
ok "$(primary_is man blue; echo $?)" "the refused ones changed nothing: man still publishes blue"
is "$(ctl get decofile man -o json | jq -r '.metadata.annotations["deco.sites/apply-template-update"] // "none"')" \
    none "... and set no annotation"
is "$(code POST "$API/man/template-apply" -H "Authorization: Bearer $TOKEN")" 202 \
    "with the token: 202"
is "$(jq -r .result "$T/answer")" "template update requested" "... template update requested"
check "man takes generation 3 and publishes it" wait_for "$(scaled 20)" primary_is man green
check "templates: adopted at 3" wait_for "$(scaled 20)" \
    sh -c "[ \"\$(curl -s '$API/man/templates' | jq -r '.[0] | \"\(.state) \(.generation)\"')\" = 'adopted 3' ]"
check "the annotation is removed once taken" wait_for "$(scaled 20)" sh -c \
    "[ \"\$('$DECOCTL' -n $NS get decofile man -o json | jq -r '.metadata.annotations[\"deco.sites/apply-template-update\"] // \"none\"')\" = none ]"
check "the token is in no log" sh -c "! grep -rqF '$TOKEN' '$T/decod.log' '$T/state' 2>/dev/null"
done_testing
