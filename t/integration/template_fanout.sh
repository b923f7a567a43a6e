#!/bin/sh
# template_fanout - one template edit used by 200 decofiles does not flood
# the renderer: the rollout (no spec.rollout: every Auto site in one
# group) enqueues them at template_rollout_rate per second, as items of
# kind "rollout" that the renderer claims after a site's own work, at most
# 16 waiting at a time.  An unrelated site edited in the middle of the
# fan-out is rendered ahead of the template work queued before it.  The
# assertions are on the journal (item times, counts, render order), not
# on wall-clock thresholds.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

command -v jq >/dev/null || skip_all "jq not installed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
RATE=40
N=200
pipeline_setup "fetcher renderer publisher" "template_rollout_rate = $RATE"

tpl() { # LABEL
	cat >"$T/base.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: DecofileTemplate
metadata: {name: base, namespace: $NS}
spec:
  source: inline
  inline: {value: {Theme: {"label": "$1"}}}
YAML
	ctl apply -f "$T/base.yaml" >/dev/null
}
other() { # LABEL
	cat >"$T/other.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata: {name: other, namespace: $NS}
spec:
  source: inline
  inline: {value: {Page: {"label": "$1"}}}
YAML
	ctl apply -f "$T/other.yaml" >/dev/null
}
i=1
while [ $i -le $N ]; do
	printf -- '---\napiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: s%03d, namespace: %s}\nspec:\n  source: inline\n  inline: {value: {Page: {"n": %d}}}\n  templates: [base]\n' \
	    $i "$NS" $i >>"$T/sites.yaml"
	i=$((i + 1))
done

tpl g1
ctl apply -f "$T/sites.yaml" >/dev/null
ok $? "apply $N decofiles that list the template"
other o1
pipeline_start
DB="$T/state/journal.db"
sql() { db_read "$DB" "$1"; }
on_gen() { [ "$(sql "SELECT count(*) FROM template_uses u JOIN template_trees t ON t.ns=u.ns AND t.name=u.template AND t.tree_hash=u.tree_hash WHERE u.template='base' AND t.generation=$1")" -eq "$2" ]; }
check "every decofile renders generation 1" wait_for "$(scaled 120)" on_gen 1 $N
other_rendered() { [ "$(sql "SELECT count(*) FROM items WHERE stage='renderer' AND name='other' AND state='done'")" -ge "$1" ]; }
check "other rendered" wait_for "$(scaled 20)" other_rendered 1

tpl g2
queued_some() { [ "$(sql "SELECT count(*) FROM items WHERE kind='rollout'")" -ge 40 ]; }
check "the fan-out is under way" wait_for "$(scaled 30)" queued_some
other o2
check "other's own edit is rendered" wait_for "$(scaled 30)" other_rendered 2
check "every decofile adopts generation 2" wait_for "$(scaled 120)" on_gen 2 $N

# the rate: one rollout item per decofile, never more than RATE in any second
# (plus one tick's worth: the driver adds a fifth of the rate every 200 ms)
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT name) FROM items WHERE kind='rollout'")" \
    "$N $N" "one rollout item per decofile"
MAXW=$(sql "SELECT MAX(c) FROM (SELECT (SELECT count(*) FROM items b WHERE b.kind='rollout' AND b.created_ms >= a.created_ms AND b.created_ms < a.created_ms + 1000) AS c FROM items a WHERE a.kind='rollout')")
ok "$([ "$MAXW" -le $((RATE + RATE / 5 + 1)) ]; echo $?)" \
    "at most $((RATE + RATE / 5 + 1)) enqueued in any second (got $MAXW)"
SPAN=$(sql "SELECT MAX(created_ms) - MIN(created_ms) FROM items WHERE kind='rollout'")
ok "$([ "$SPAN" -ge $(( (N - RATE / 5 - 1) * 1000 / RATE )) ]; echo $?)" \
    "$N decofiles took at least $(( (N - RATE / 5 - 1) * 1000 / RATE )) ms to enqueue (took $SPAN)"

# other's edit: the template renders done after its item was created and
# before its own render are at most the 16 that may wait plus one batch in hand
OTHER_ITEM=$(sql "SELECT MAX(id) FROM items WHERE stage='renderer' AND name='other'")
OTHER_REN=$(sql "SELECT MAX(id) FROM renders WHERE name='other'")
AHEAD=$(sql "SELECT count(*) FROM renders WHERE name LIKE 's%' AND id < $OTHER_REN AND at >= (SELECT created_at FROM items WHERE id=$OTHER_ITEM)")
PENDING_THEN=$(sql "SELECT count(*) FROM items WHERE kind='rollout' AND id < $OTHER_ITEM")
diag "rollout items before other's edit: $PENDING_THEN; template renders between it and other's render: $AHEAD"
ok "$([ "$AHEAD" -le 16 ]; echo $?)" "other's edit waited behind at most 16 template renders (got $AHEAD)"
is "$(sql "SELECT count(*) FROM items WHERE stage='renderer' AND name='other'")" 2 \
    "other: one item per own edit, none from the template"
is "$(ctl template status base -o json | jq -c '[.adopted, .failed]')" "[$N,0]" \
    "template status: all adopted"

done_testing
