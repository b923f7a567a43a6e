#!/bin/sh
# web_page - the status page in a real browser: Debian's chromium, headless,
# driven by npm's playwright-core (t/browser/page.js), against real decod
# (fetcher, renderer, publisher, notifier, web; one reference replica of
# loja) with two dir sources, one broken by a
# block whose file name is markup.  The table has both, the failing one
# first with its message as text (nothing made of it, nothing run); loja's
# replicas confirmed as 1/1 with a bar; the state filter; a row changes after an edit without a reload; readable on a
# phone; the detail page's conditions; nothing fetched from elsewhere.
# Also chromium --dump-dom alone: the detail page's rendered DOM.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

. "$top_srcdir/t/lib/browser.sh"

browser_setup || skip_all "$BROWSER_WHY"

PORT=$(free_port)
pipeline_setup "fetcher renderer publisher notifier web" \
    "web_listen = 127.0.0.1:$PORT" "notify_timeout = 2s" \
    "web_static_dir = $top_srcdir/daemons/web/static"
BASE="http://127.0.0.1:$PORT"

mkdir -p "$T/loja" "$T/broken"
printf '{"title": "Loja"}\n' >"$T/loja/Header.json"
printf '{"ok": true}\n' >"$T/broken/Good.json"
printf '{"not json\n' >"$T/broken/<script>alert(1)<img src=x onerror=window.__xss=1>.json"

pipeline_start
replica_start r1
apply_dir loja "$T/loja"
apply_dir broken "$T/broken"
st() { ctl status "$1" -o json | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print(r["ready"], r["syncing"])'; }
check "loja is published" wait_for "$(scaled 30)" sh -c "[ \"\$(ctl() { \"$DECOCTL\" -n $NS \"\$@\"; }; ctl status loja -o json | grep -c '\"ready\": *\"True\"')\" = 1 ]"
check "broken is refused with the file's name" wait_for "$(scaled 30)" sh -c \
    "\"$DECOCTL\" -n $NS status broken -o json | grep -q 'script>alert'"

# the rendered DOM, by chromium alone: the detail page (one fetch, no
# stream, so the virtual time budget ends once its answer is in)
timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 \
    --dump-dom "$BASE/decofiles/$NS/broken" >"$T/dom.html" 2>"$T/chromium.err"
check "chromium --dump-dom: the detail page has the ValidationError" grep -q ValidationError "$T/dom.html"
check "... and the block name's markup as escaped text" grep -q '&lt;script&gt;alert(1)&lt;img' "$T/dom.html"
check "... and no element made of it" sh -c "! grep -q '<img src=x' '$T/dom.html'"

# the browser test proper
EDIT="printf '{\"title\": \"Loja 2\"}\n' >'$T/loja/Header.json' && '$DECOCTL' -n $NS sync loja >/dev/null"
BASE=$BASE NS=$NS EDIT_CMD=$EDIT SHOTS=${WEB_SHOTS:-$T} browser_run page.js
done_testing
