#!/bin/sh
# template_diff - the preview of a pending change, through decod and its
# real stages on the local store.  A Manual site holds generation 1 of an
# inline template while it moves on: `decoctl diff NAME` lists exactly the
# block and the key that taking it would change (a block name with an
# accent and spaces), `-o json` says the same as an object, exit 1, and
# TemplateUpdateAvailable's second line sums it up; a later generation
# that adds and removes blocks says so too.  After `decoctl template
# apply`, and for an Auto site, diff prints nothing and exits 0.  A source
# fetched but not rendered yet (renderer stopped) is previewed too.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

command -v jq >/dev/null || skip_all "jq not installed"
command -v python3 >/dev/null || skip_all "python3 not installed"
pipeline_setup "fetcher renderer publisher"

tpl() { # PRIMARY [EXTRA-BLOCK-LINES]
	cat >"$T/base.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: $NS}
spec:
  source: inline
  inline:
    value:
      Tema da Loja: {"label": "t", "colors": {"primary": "$1", "text": "black"}}
${2:-      Header: {"v": 1\}}
YAML
	ctl apply -f "$T/base.yaml" >/dev/null
}
site() { # NAME POLICY-YAML [PAGE-JSON]
	cat >"$T/$1.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: $1, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: ${3:-{"site": "$1"\}}}}
  templates: [base]
$2
YAML
	ctl apply -f "$T/$1.yaml" >/dev/null
}
st() { ctl get decofile "$1" -o json | jq -c "$2"; }
doc() {
	loc=$(ctl get decofile "$1" -o json | jq -r '.status.location // ""')
	[ -n "$loc" ] && cat "${loc#file://}"
}
primary_is() { [ "$(doc "$1" | jq -r '."Tema da Loja".colors.primary' 2>/dev/null)" = "$2" ]; }
cond() { st "$1" "[.status.conditions[]? | select(.type==\"TemplateUpdateAvailable\")][0]"; }
cond_has() { cond "$1" | jq -r .message | grep -qF "$2"; }

tpl red
ok $? "apply the DecofileTemplate base (generation 1)"
site auto ""
site man "  updatePolicy: {templateChanges: Manual}"
pipeline_start
for s in auto man; do
	check "$s: first render takes generation 1" wait_for "$(scaled 20)" primary_is $s red
done
ctl diff man >"$T/d0.out"
is "$?" 0 "diff man with nothing pending: exit 0"
is "$(cat "$T/d0.out")" "" "... and prints nothing"

# --- generation 2 changes one key of one block --------------------------------
tpl blue
check "auto adopts generation 2" wait_for "$(scaled 20)" primary_is auto blue
check "man: TemplateUpdateAvailable names generation 1 → 2" wait_for "$(scaled 20)" \
    cond_has man "generation 1 → 2"
is "$(cond man | jq -r .message)" \
    "DecofileTemplate 'base' has pending changes (generation 1 → 2)
1 block changed (1 key), 0 added, 0 removed" \
    "the condition: the pending line as before, then the preview's summary"
ctl diff man >"$T/d1.out" 2>"$T/d1.err"
is "$?" 1 "diff man with a pending generation: exit 1"
is "$(cat "$T/d1.out")" \
    "decofile/man: the last render against the newest fetched source and template generations
  DecofileTemplate 'base': generation 1 → 2 (Manual)
~ block \"Tema da Loja\" changed
    ~ colors.primary
1 block changed (1 key), 0 added, 0 removed" \
    "diff man lists exactly the changed block and key"
is "$(cat "$T/d1.err")" "" "... with nothing on standard error"
ctl diff man -o json >"$T/d1.json"
is "$?" 1 "diff man -o json: exit 1 too"
python3 - "$T/d1.json" >"$T/py1.out" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["name"] == "man" and d["policy"] == "Manual", d
assert d["blocks"] == [{"name": "Tema da Loja", "change": "changed",
    "keys": [{"path": ["colors", "primary"], "change": "changed"}]}], d["blocks"]
t = d["templates"]
assert len(t) == 1 and t[0]["name"] == "base", t
assert t[0]["from"]["generation"] == 1 and t[0]["to"]["generation"] == 2, t
assert len(t[0]["from"]["hash"]) == 64 and t[0]["from"]["hash"] != t[0]["to"]["hash"], t
assert (d["changed"], d["keys"], d["added"], d["removed"]) == (1, 1, 0, 0), d
assert d["summary"] == "1 block changed (1 key), 0 added, 0 removed", d
assert len(d["rendered"]) == 64, d
print("ok")
PY
is "$(cat "$T/py1.out")" ok "-o json: the same as an object (python reads it)"
ok "$(primary_is man red; echo $?)" "diff wrote nothing: man still publishes generation 1"
ctl diff auto >"$T/da.out"
is "$?" 0 "diff of the Auto site: exit 0"
is "$(cat "$T/da.out")" "" "... and nothing printed"

# --- generation 3 adds a block and removes one ----------------------------------
tpl blue '      Promoção de Natal: {"on": true}'
check "man: pending 1 → 3" wait_for "$(scaled 20)" cond_has man "generation 1 → 3"
is "$(cond man | jq -r .message)" \
    "DecofileTemplate 'base' has pending changes (generation 1 → 3)
1 block changed (1 key), 1 added, 1 removed" \
    "the condition's summary counts the added and the removed block"
ctl diff man >"$T/d3.out"
is "$?" 1 "diff man: exit 1"
is "$(sed 1,2d "$T/d3.out")" \
    "- block \"Header\" removed
+ block \"Promoção de Natal\" added
~ block \"Tema da Loja\" changed
    ~ colors.primary
1 block changed (1 key), 1 added, 1 removed" \
    "diff man: the removed, the added and the changed block, in byte order"

# --- the owner applies: nothing left ---------------------------------------------
ctl template apply man >/dev/null
ok $? "decoctl template apply man"
check "man adopts generation 3" wait_for "$(scaled 20)" primary_is man blue
check "man: UpToDate" wait_for "$(scaled 10)" sh -c \
    "[ \"\$('$DECOCTL' -n $NS get decofile man -o json | jq -r '.status.conditions[] | select(.type==\"TemplateUpdateAvailable\") | .status')\" = False ]"
ctl diff man >"$T/d4.out"
is "$?" 0 "diff man after apply: exit 0"
is "$(cat "$T/d4.out")" "" "... and prints nothing"
ctl diff man -o json >"$T/d4.json"
is "$?" 0 "diff man -o json after apply: exit 0"
is "$(jq -c '[.blocks, .templates, .summary]' "$T/d4.json")" \
    '[[],[],"0 blocks changed (0 keys), 0 added, 0 removed"]' "... an empty preview"

# --- a source fetched but not rendered yet ---------------------------------------
ctl stop renderer >/dev/null
ok $? "stop the renderer"
DB="$T/state/journal.db"
FETCHES=$(db_read "$DB" "SELECT count(*) FROM fetches WHERE name='man'")
site man "  updatePolicy: {templateChanges: Manual}" '{"site": "man", "sale": 1}'
fetched() { [ "$(db_read "$DB" "SELECT count(*) FROM fetches WHERE name='man'")" -gt "$FETCHES" ]; }
check "the fetcher fetched man's edit" wait_for "$(scaled 20)" fetched
ctl diff man >"$T/d5.out"
is "$?" 1 "diff man with its own edit not rendered: exit 1"
is "$(cat "$T/d5.out")" \
    "decofile/man: the last render against the newest fetched source and template generations
~ block \"Page\" changed
    + sale
1 block changed (1 key), 0 added, 0 removed" \
    "... the edit's key, and no template line"
ctl start renderer >/dev/null
sale_seen() { [ "$(doc man | jq -r .Page.sale 2>/dev/null)" = 1 ]; }
check "the renderer, started again, publishes the edit" wait_for "$(scaled 20)" sale_seen
check "then diff man exits 0" wait_for "$(scaled 10)" "$DECOCTL" -n "$NS" diff man

# --- errors ----------------------------------------------------------------------
ctl diff nosuch >/dev/null 2>"$T/e1.err"
is "$?" 2 "diff of a decofile that does not exist: exit 2"
check "... saying so" grep -q 'not found' "$T/e1.err"
ctl diff man -o wide >/dev/null 2>&1
ok "$([ $? -gt 1 ]; echo $?)" "diff NAME -o wide: a usage error"
done_testing
