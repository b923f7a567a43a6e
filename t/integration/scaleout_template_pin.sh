#!/bin/sh
# scaleout_template_pin.sh - a site pinned by its owner's update policy
# survives a takeover by another instance on the same etcd.  Instance a
# renders man (Manual), win (a Window that is closed) and auto at template
# generation 1; the template moves to 2: auto takes it, man and win keep 1.
# a stops and b takes every site over; b's journal has no template_uses row
# and its spool has no generation-1 tree.  b must not publish generation 2
# for man or win: nothing rendered, the published document as it was, and
# Syncing=False / TemplateUpdateAvailable=True reason PinnedTreeMissing with
# the exact message (win's ends with its window).  A Manual site never
# rendered anywhere takes the newest.  `decoctl template apply man` then
# moves man to 2 on b.  Then the spool-hit path: the template moves to 3,
# b loses its journal (stop, remove journal.db, start): man's pin (2) is
# read from the status and its tree is in b's spool, so b renders it with
# generation 2, records the use in its new journal and says 2 → 3 pending.
# Last, the site goes back to a, whose journal still pins generation 1: the
# status's newer pin (2) wins, and an edit of man's own blocks publishes on 2.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"
. "$top_srcdir/t/integration/scaleout_lib.sh"
so_setup
NS=shop

etcd_start || bail "etcd did not start"
so_start a || bail "instance a"

tpl() { # GEN-LABEL
	cat >"$T/base.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: $NS}
spec:
  source: inline
  inline: {value: {Theme: {"label": "$1"}}}
YAML
	so_ctl "$2" apply -f "$T/base.yaml" >/dev/null
}
site() { # INSTANCE NAME POLICY-YAML
	cat >"$T/$2.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: $2, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"site": "$2"}}}
  templates: [base]
$3
YAML
	so_ctl "$1" apply -f "$T/$2.yaml" >/dev/null
}
# every read goes to the store (etcd), so any instance's config will do
get() { so_ctl "$CUR" -n $NS get decofile "$1" -o json; }
st() { get "$1" | jq -r "$2"; }
doc() {
	loc=$(st "$1" '.status.location // ""')
	[ -n "$loc" ] && cat "${loc#file://}"
}
label_is() { [ "$(doc "$1" | jq -r .Theme.label 2>/dev/null)" = "$2" ]; }
cond() { st "$1" "[.status.conditions[]? | select(.type==\"$2\")][0] | .$3"; }
reason_is() { [ "$(cond "$1" TemplateUpdateAvailable reason)" = "$2" ]; }
used() { so_db "$1" "SELECT generation FROM template_uses WHERE ns='$NS' AND name='$2'"; }
# hand_over FROM TO N: stop FROM, start TO, wait until TO owns all N sites
owns_all() { [ "$(so_status "$1" $NS | jq -r '.[].owner' | grep -cx "$2")" -eq "$3" ]; }
hand_over() {
	so_stop "$1"
	so_start "$2" || bail "instance $2"
	CUR=$2
	check "$2 owns the $3 sites" wait_for "$(scaled 30)" owns_all "$2" \
	    "$SO_HOST:$(so_fetcher_pid "$2")" "$3"
}

CUR=a
tpl g1 a
ok $? "apply the DecofileTemplate base (generation 1) through a"
site a man "  updatePolicy: {templateChanges: Manual}"
site a win "  updatePolicy: {templateChanges: Window, window: \"0 0 1 1 *\", duration: 1m}"
site a auto ""
for s in man win auto; do
	check "a renders $s at generation 1" wait_for "$(scaled 30)" label_is $s g1
done
H1=$(st man '.status.resolvedTemplates[0].hash')
is "${#H1}" 64 "man's status names the tree it used"

tpl g2 a
check "auto takes generation 2 on a" wait_for "$(scaled 30)" label_is auto g2
check "man: PendingChanges on a" wait_for "$(scaled 30)" reason_is man PendingChanges
check "win: WaitingForWindow on a" wait_for "$(scaled 30)" reason_is win WaitingForWindow
check "man still publishes generation 1" label_is man g1
check "win still publishes generation 1" label_is win g1
MANDOC=$(doc man | sha256sum)
WINDOC=$(doc win | sha256sum)

# --- a stops (its session is revoked: every lock free at once); b takes over
hand_over a b 3
site b late "  updatePolicy: {templateChanges: Manual}"

check "man on b: TemplateUpdateAvailable reason PinnedTreeMissing" \
    wait_for "$(scaled 30)" reason_is man PinnedTreeMissing
is "$(cond man TemplateUpdateAvailable status)/$(cond man Syncing status)/$(cond man Syncing reason)" \
    "True/False/PinnedTreeMissing" "man: TemplateUpdateAvailable=True, Syncing=False PinnedTreeMissing"
SHORT=$(echo "$H1" | cut -c1-12)
is "$(cond man TemplateUpdateAvailable message)" \
    "DecofileTemplate 'base' generation 1 (hash $SHORT) is pinned by the Manual policy but its tree is not in this instance's spool; apply the template update (decoctl template apply man) to take generation 2" \
    "man: the message names the pin, why it is held and how to move on"
is "$(cond man Syncing message)" "$(cond man TemplateUpdateAvailable message)" "... the same on Syncing"
check "win on b: PinnedTreeMissing" wait_for "$(scaled 30)" reason_is win PinnedTreeMissing
cond win TemplateUpdateAvailable message >"$T/win.msg"
is "$(head -1 "$T/win.msg")" \
    "DecofileTemplate 'base' generation 1 (hash $SHORT) is pinned by the Window policy but its tree is not in this instance's spool; apply the template update (decoctl template apply win) to take generation 2" \
    "win: the same line for its Window policy"
check "win: the last line is its next window" \
    grep -Eq '^Window "0 0 1 1 \*" \(UTC\) opens next at [0-9]{4}-01-01T00:00:00Z$' "$T/win.msg"
# the hold is decided; nothing of it may have reached a target
is "$(doc man | sha256sum)" "$MANDOC" "man's published document is a's, byte for byte (generation 1)"
is "$(doc win | sha256sum)" "$WINDOC" "win's published document is a's, byte for byte"
is "$(so_db b "SELECT count(*) FROM renders WHERE name IN ('man','win')")" 0 "b rendered neither man nor win"
is "$(so_db b "SELECT count(*) FROM publishes WHERE name IN ('man','win')")" 0 "... and published neither"
is "$(st man '.status.resolvedTemplates | map([.name, .generation]) | tostring')" '[["base",1]]' \
    "man's status still pins generation 1"
check "late (Manual, never rendered anywhere) takes the newest on b" \
    wait_for "$(scaled 30)" label_is late g2
check "auto (Auto) renders on b at generation 2" wait_for "$(scaled 30)" sh -c \
    "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' $T/b/state/journal.db \"SELECT generation FROM template_uses WHERE name='auto'\")\" = 2 ]"
check "auto still publishes generation 2" label_is auto g2

# a renderer restart on b decides the held sites again (and re-arms win's window)
so_ctl b restart renderer >/dev/null
ok $? "restart b's renderer"
check "b's renderer re-armed the held sites" wait_for "$(scaled 30)" \
    grep -q 'update windows re-armed.*decofiles=2' "$T/b.log"
check "man still held after the restart" reason_is man PinnedTreeMissing
is "$(so_db b "SELECT count(*) FROM publishes WHERE name IN ('man','win')")" 0 "... still nothing published"

# --- the owner moves on: decoctl template apply ------------------------------
so_ctl b -n $NS template apply man >/dev/null
ok $? "decoctl template apply man"
check "man takes generation 2 on b" wait_for "$(scaled 30)" label_is man g2
check "man: UpToDate" wait_for "$(scaled 30)" reason_is man UpToDate
is "$(cond man Syncing status)/$(cond man Syncing reason)" "True/Rendered" "man: Syncing=True Rendered"
is "$(used b man)" 2 "b's journal records man's use of generation 2"
check "decod removed the apply annotation" wait_for "$(scaled 30)" sh -c \
    "[ \"\$('$CTL' -c $T/b/conf -n $NS get decofile man -o json | jq -r '.metadata.annotations[\"deco.sites/apply-template-update\"] // \"gone\"')\" = gone ]"
H2=$(st man '.status.resolvedTemplates[0].hash')
check "win stays held (its window is closed, no apply)" reason_is win PinnedTreeMissing

# --- the spool-hit path: b loses its journal, keeps its spool ----------------
tpl g3 b
check "auto takes generation 3" wait_for "$(scaled 30)" label_is auto g3
check "man: PendingChanges 2 → 3" wait_for "$(scaled 30)" sh -c \
    "'$CTL' -c $T/b/conf -n $NS get decofile man -o json | grep -q 'generation 2 → 3'"
so_stop b
rm -f "$T/b/state/journal.db" "$T/b/state/journal.db-wal" "$T/b/state/journal.db-shm"
so_start b || bail "instance b again"
check "b (new journal) renders man again" wait_for "$(scaled 30)" sh -c \
    "[ \"\$(sqlite3 -readonly -cmd '.timeout 5000' $T/b/state/journal.db \"SELECT count(*) FROM template_uses WHERE name='man'\")\" = 1 ]"
is "$(so_db b "SELECT generation || ' ' || tree_hash FROM template_uses WHERE name='man'")" "2 $H2" \
    "... with the pinned generation 2 (its tree from b's spool), recorded in the new journal"
check "man still publishes generation 2" label_is man g2
check "man: PendingChanges" wait_for "$(scaled 30)" reason_is man PendingChanges
is "$(cond man TemplateUpdateAvailable message | head -1)" \
    "DecofileTemplate 'base' has pending changes (generation 2 → 3)" "man: 2 → 3 pending"
is "$(st man '.status.resolvedTemplates | map([.name, .generation]) | tostring')" '[["base",2]]' \
    "man's status pins generation 2"

# --- the site goes back to a: its journal still says generation 1 ------------
# (a's row is older than the apply b made; the status's newer pin wins, and
# a fetched generation 2 itself, so it renders it)
is "$(used a man)" 1 "a's journal still has man on generation 1"
hand_over b a 4
sed -i 's/"site": "man"/"site": "man-edited"/' "$T/man.yaml"
so_ctl a apply -f "$T/man.yaml" >/dev/null
ok $? "the owner edits man's own blocks"
edited() { [ "$(doc man | jq -r .Page.site 2>/dev/null)" = man-edited ]; }
check "a publishes the edit" wait_for "$(scaled 30)" edited
check "... on generation 2, not a's stale generation 1" label_is man g2
is "$(used a man)" 2 "a's journal now records generation 2"
check "man: 2 → 3 still pending" wait_for "$(scaled 30)" sh -c \
    "'$CTL' -c $T/a/conf -n $NS get decofile man -o json | grep -q 'generation 2 → 3'"

done_testing
