#!/bin/sh
# template_policy - DecofileTemplate generations under each site's update
# policy, through decod and its real stages on the local store.  Three
# sites list one inline template: auto (no policy), man (Manual) and win
# (Window "0 2 * * SUN", 1h, read against DECOD_TEST_CLOCK, a file the
# test moves to just before the window opens).  A template edit reaches auto at
# once; man keeps its generation, says so on TemplateUpdateAvailable with
# the exact line and the preview's summary on the next, and takes it on `decoctl template apply` (and later on
# the annotation, which decod removes); win waits for its window, which
# the condition names, and takes it when the window opens.  man stays
# pinned to generation 2 through two more edits, its published document
# still rendered from generation 2; a broken generation publishes nothing
# anywhere; a bad policy is refused naming the field; `decoctl template
# status` reports each site's state; a decofile without the template is
# not woken by its edits; spool housekeeping collects an unused
# generation's tree and keeps the pinned one.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

command -v jq >/dev/null || skip_all "jq not installed"
pipeline_setup "fetcher renderer publisher" "housekeeping_interval = 1s"

# the test clock is a file: an instant, running on in real time from when
# the file was written.  The window is an hour away until the test moves
# the clock to a few seconds before it opens.
OPEN_AT=$(date -u -d '2026-12-06T02:00:00Z' +%s)
clock_to() { # SECONDS-BEFORE-THE-WINDOW-OPENS
	date -u -d "@$((OPEN_AT - $1))" +%Y-%m-%dT%H:%M:%SZ >"$T/clock.tmp" &&
	    mv "$T/clock.tmp" "$T/clock"
}
clock_to 3600
export DECOD_TEST_CLOCK="$T/clock"

tpl() { # GEN-LABEL HEADER-JSON [EXTRA-BLOCK-LINE]
	cat >"$T/base.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: $NS}
spec:
  source: inline
  inline:
    value:
      Header: $2
      Theme: {"label": "$1"}
${3:-}
YAML
	ctl apply -f "$T/base.yaml" >/dev/null
}
site() { # NAME POLICY-YAML
	cat >"$T/$1.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: $1, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "$1"}}}
  templates: [base]
$2
YAML
	ctl apply -f "$T/$1.yaml" >/dev/null
}
st() { ctl get decofile "$1" -o json | jq -c "$2"; }
# the published document of NAME (its file target)
doc() {
	loc=$(ctl get decofile "$1" -o json | jq -r '.status.location // ""')
	[ -n "$loc" ] && cat "${loc#file://}"
}
label_is() { [ "$(doc "$1" | jq -r .Theme.label 2>/dev/null)" = "$2" ]; }
cond() { st "$1" "[.status.conditions[]? | select(.type==\"TemplateUpdateAvailable\")][0]"; }
cond_status() { [ "$(cond "$1" | jq -r .status)" = "$2" ]; }
resolved_gen() { [ "$(st "$1" '.status.resolvedTemplates[0].generation')" = "$2" ]; }

tpl g1 '{"v": 1}'
ok $? "apply the DecofileTemplate base (generation 1)"
site auto ""
site man "  updatePolicy: {templateChanges: Manual}"
site win "  updatePolicy: {templateChanges: Window, window: \"0 2 * * SUN\", duration: 1h}"
# plain lists no template: a template edit must not wake it
cat >"$T/plain.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: plain, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "plain"}}}
YAML
ctl apply -f "$T/plain.yaml" >/dev/null
pipeline_start
DB="$T/state/journal.db"
ren_items() { db_read "$DB" "SELECT count(*) FROM items WHERE stage='renderer' AND name='$1'"; }

for s in auto man win; do
	check "$s: first render takes generation 1" wait_for "$(scaled 20)" label_is $s g1
done
is "$(st man '.status.resolvedTemplates | map([.name, .generation, (.hash | length)])')" \
    '[["base",1,64]]' "resolvedTemplates: name, generation and the tree's hash"
check "a site that took the newest says UpToDate" wait_for "$(scaled 10)" cond_status man False

# --- generation 2: auto takes it, man and win wait ------------------------
plain_done() { [ "$(db_read "$DB" "SELECT count(*) FROM items WHERE stage='renderer' AND name='plain' AND state='done'")" -ge 1 ]; }
check "plain rendered" wait_for "$(scaled 20)" plain_done
PLAIN=$(ren_items plain)
AUTO=$(ren_items auto)
tpl g2 '{"v": 2}'
check "auto adopts generation 2 at once" wait_for "$(scaled 20)" label_is auto g2
is "$(ren_items plain)" "$PLAIN" "the edit woke no decofile that does not use the template"
is "$(ren_items auto)" "$((AUTO + 1))" "... and each that does once"
check "man: TemplateUpdateAvailable=True" wait_for "$(scaled 20)" cond_status man True
is "$(cond man | jq -r .message)" \
    "DecofileTemplate 'base' has pending changes (generation 1 → 2)
2 blocks changed (2 keys), 0 added, 0 removed" \
    "man: the pending line, exactly, then the preview (Header.v and Theme.label)"
is "$(cond man | jq -r .reason)" PendingChanges "man: reason PendingChanges"
ok "$(label_is man g1; echo $?)" "man still publishes generation 1"
check "win: TemplateUpdateAvailable=True" wait_for "$(scaled 20)" cond_status win True
is "$(cond win | jq -r .message)" \
    "DecofileTemplate 'base' has pending changes (generation 1 → 2)
2 blocks changed (2 keys), 0 added, 0 removed
Window \"0 2 * * SUN\" (UTC) opens next at 2026-12-06T02:00:00Z" \
    "win: the pending line, the preview and the next opening"
ok "$(label_is win g1; echo $?)" "win still publishes generation 1"
ctl template status base -o json >"$T/ts1.json"
is "$(jq -c '[.generation, .fetchedGeneration, .adopted, .pending]' "$T/ts1.json")" "[2,2,1,2]" \
    "template status: generation 2 fetched, 1 site adopted, 2 pending"
is "$(jq -c '[.sites[] | [.name, .policy, .generation, .state, (.nextWindow // "")]]' "$T/ts1.json")" \
    '[["auto","Auto",2,"adopted",""],["man","Manual",1,"pending",""],["win","Window",1,"pending","2026-12-06T02:00:00Z"]]' \
    "template status: each site's policy, generation, state and next window"
ctl template status base >"$T/ts1.txt"
check "template status: a table" grep -Eq '^man +Manual +1 +pending' "$T/ts1.txt"

# --- the window opens: win takes generation 2 by itself, even after the ---
# --- renderer (which holds the window's timer) restarted -----------------
clock_to "$(scaled 10)"
ctl restart renderer >/dev/null
ok $? "restart the renderer while win waits for its window, due in $(scaled 10) s"
check "the renderer re-armed win's window" wait_for "$(scaled 20)" \
    grep -q 'update windows re-armed.*decofiles=1' "$T/decod.log"
if ! wait_for "$(scaled 40)" label_is win g2; then
	ok 1 "win adopts when its window opens"
	# what the renderer did with win, to find a rare failure seen once in CI
	diag "clock file: $(cat "$T/clock") (mtime $(stat -c %Y "$T/clock"), now $(date +%s))"
	grep -E 'name=win|window' "$T/decod.log" | tail -20 | sed 's/^/# /'
else
	ok 0 "win adopts when its window opens"
fi
check "win: UpToDate after" wait_for "$(scaled 10)" cond_status win False

# --- man: decoctl template apply -------------------------------------------
ctl template apply man >"$T/apply.out"
ok $? "decoctl template apply man"
check "man adopts generation 2" wait_for "$(scaled 20)" label_is man g2
check "man: UpToDate" wait_for "$(scaled 10)" cond_status man False
check "decod removed the annotation" wait_for "$(scaled 10)" sh -c \
    "[ \"\$('$DECOCTL' -n $NS get decofile man -o json | jq -r '.metadata.annotations[\"deco.sites/apply-template-update\"] // \"gone\"')\" = gone ]"
H2=$(st man '.status.resolvedTemplates[0].hash' | tr -d '"')

# --- two more edits: man stays on generation 2 ------------------------------
tpl g3 '{"v": 3}'
check "auto adopts generation 3" wait_for "$(scaled 20)" label_is auto g3
tpl g4 '{"v": 4}'
check "auto adopts generation 4" wait_for "$(scaled 20)" label_is auto g4
check "man: pending 2 → 4" wait_for "$(scaled 20)" sh -c \
    "'$DECOCTL' -n $NS get decofile man -o json | grep -q 'generation 2 → 4'"
# man's own edit renders it again, still on generation 2's tree
cat >"$T/man.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: man, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "man", "edit": 2}}}
  templates: [base]
  updatePolicy: {templateChanges: Manual}
YAML
ctl apply -f "$T/man.yaml" >/dev/null
edit_seen() { [ "$(doc man | jq -r .Page.edit 2>/dev/null)" = 2 ]; }
check "man's own edit is live" wait_for "$(scaled 20)" edit_seen
ok "$(label_is man g2; echo $?)" "... rendered on the pinned generation 2 after two more edits"
is "$(st man '.status.resolvedTemplates[0].hash' | tr -d '"')" "$H2" "... the same tree hash"
is "$(db_read "$DB" "SELECT count(*) FROM template_trees WHERE name='base'")" 4 \
    "the journal keeps all four generations' trees"
ok "$([ -s "$T/state/spool/$(echo "$H2" | cut -c1-2)/$H2" ]; echo $?)" \
    "generation 2's tree is in the spool"
is "$(db_read "$DB" "SELECT tree_hash FROM template_uses WHERE name='man'")" "$H2" \
    "template_uses names generation 2's tree for man"
# spool housekeeping (every second here): make every blob older than its
# one-hour grace, then after a run generation 2's tree (man's) is kept and
# generation 3's (used by nobody now) is collected
H3=$(db_read "$DB" "SELECT tree_hash FROM template_trees WHERE name='base' AND generation=3")
spool() { echo "$T/state/spool/$(echo "$1" | cut -c1-2)/$1"; }
ok "$([ -s "$(spool "$H3")" ]; echo $?)" "generation 3's tree is in the spool before"
HK=$(grep -c 'housekeeping done' "$T/decod.log")
find "$T/state/spool" -type f -exec touch -d '2 hours ago' {} +
hk_ran() { [ "$(grep -c 'housekeeping done' "$T/decod.log")" -ge $((HK + 2)) ]; }
check "housekeeping ran" wait_for "$(scaled 20)" hk_ran
ok "$([ ! -e "$(spool "$H3")" ]; echo $?)" "housekeeping collected generation 3's tree (unused)"
ok "$([ -s "$(spool "$H2")" ]; echo $?)" "... and kept generation 2's, which man still renders"
sed -i 's/"edit": 2/"edit": 3/' "$T/man.yaml"
ctl apply -f "$T/man.yaml" >/dev/null
edit3_seen() { [ "$(doc man | jq -r .Page.edit 2>/dev/null)" = 3 ]; }
check "man's next own edit, after housekeeping, is live" wait_for "$(scaled 20)" edit3_seen
ok "$(label_is man g2; echo $?)" "... still rendered on generation 2's kept tree"

# --- the annotation (as kubectl users set it) --------------------------------
python3 - "$T/man.yaml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read().replace("metadata: {name: man,", "metadata: {annotations: {deco.sites/apply-template-update: \"true\"}, name: man,")
open(p, "w").write(s)
PY
ctl apply -f "$T/man.yaml" >/dev/null
ok $? "annotate man deco.sites/apply-template-update=true"
check "man adopts generation 4 on the annotation" wait_for "$(scaled 20)" label_is man g4
check "... and decod removed the annotation" wait_for "$(scaled 10)" sh -c \
    "[ \"\$('$DECOCTL' -n $NS get decofile man -o json | jq -r '.metadata.annotations[\"deco.sites/apply-template-update\"] // \"gone\"')\" = gone ]"

# --- a broken generation publishes nothing anywhere ----------------------------
PUB=$(db_read "$DB" "SELECT count(*) FROM publishes")
# Header and Header.json are one block name: a duplicate the renderer refuses
tpl g5 '{"v": 5}' '      Header.json: {"v": 6}'
check "auto refuses generation 5 (duplicate block)" wait_for "$(scaled 20)" sh -c \
    "'$DECOCTL' -n $NS get decofile auto -o json | jq -r '.status.conditions[] | select(.type==\"Syncing\") | .reason' | grep -qx ValidationError"
ctl template apply man >/dev/null
check "man, asked to apply it, refuses it too" wait_for "$(scaled 20)" sh -c \
    "'$DECOCTL' -n $NS get decofile man -o json | jq -r '.status.conditions[] | select(.type==\"Syncing\") | .reason' | grep -qx ValidationError"
is "$(db_read "$DB" "SELECT count(*) FROM publishes")" "$PUB" "nothing was published"
ok "$(label_is auto g4 && label_is man g4 && label_is win g4; echo $?)" \
    "every site keeps its last good version live (win took 3 and 4 in its open window)"

# --- a bad policy names the field ----------------------------------------------
site bad "  updatePolicy: {templateChanges: Window, window: \"0 25 * * *\"}" 2>"$T/bad.err"
ok "$([ $? -ne 0 ]; echo $?)" "decoctl apply refuses a bad policy"
check "... naming the field" grep -q 'decofile/bad: spec.updatePolicy.window: hour field' "$T/bad.err"
site bad2 "  updatePolicy: {templateChanges: Sometimes}" 2>"$T/bad2.err"
check "... and an unknown mode" grep -q 'spec.updatePolicy.templateChanges: "Sometimes" is not Auto, Manual or Window' "$T/bad2.err"

done_testing
