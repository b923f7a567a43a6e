#!/bin/sh
# template_rollout - a DecofileTemplate generation rolled out in waves with
# a canary, through decod and its four real stages on the local store.
# Five Auto sites list one template with spec.rollout {canary: 1, waves:
# 2, pause: 1s}: generation 2 goes to the canary (the site whose
# sha256("ns/name") is lowest), then wave 1, then wave 2, each wave
# enqueued only once the previous one confirmed and the pause passed
# (asserted on the journal's item times, not on wall-clock limits).  Then
# the canary's replica answers reloads with 500: generation 3 halts at the
# canary, RolloutHalted=True names it, the other sites keep generation 2;
# `decoctl template rollback` sends the canary back to 2; a restarted
# renderer keeps all of it; generation 4 (the replica fixed) moves on to
# every site; generation 5 with a 1h pause leaves waves 1 and 2 waiting.
# At the halt (canary failed, the others halted), after the rollback
# (reverted) and while waves wait, the web stage's GET .../templates row of
# each site is byte for byte the site's row of `decoctl template status`
# (one function makes both), and says the expected state.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"
. "$top_srcdir/t/lib/template.sh"

command -v jq >/dev/null || skip_all "jq not installed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
command -v curl >/dev/null || skip_all "curl is not installed"
PORT=$(free_port)
pipeline_setup "fetcher renderer publisher notifier web" "template_rollout_rate = 50" \
    "notify_timeout = 2s" "notify_attempts = 1" "web_listen = 127.0.0.1:$PORT"
WEB="http://127.0.0.1:$PORT/api/v1/decofiles/$NS"

ROLLOUT="{canary: 1, waves: 2, pause: 1s, maxFailed: 0}"
tpl() { # LABEL [ROLLOUT]
	tpl_yaml "$1" "${2:-$ROLLOUT}"
	ctl apply -f "$T/base.yaml" >/dev/null
}
SITES="s1 s2 s3 s4 s5"
tpl_sites_yaml
# web_states STATE: every site but the canary says STATE on the web
web_states() { for s in $SITES; do [ "$s" = "$CANARY" ] || [ "$(web_state "$s")" = "$1" ] || return 1; done; }

tpl g1
ok $? "apply the DecofileTemplate base with spec.rollout"
ctl apply -f "$T/sites.yaml" >/dev/null
ok $? "apply five Auto sites that list it"
pipeline_start
DB="$T/state/journal.db"
check "every site renders generation 1" wait_for "$(scaled 30)" all_label g1

# the canary: the site with the lowest sha256("ns/name") (doc/templates.md)
CANARY=$(tpl_canary)
diag "canary: $CANARY"

# the canary's replica confirms reloads
"$SITE" --port 0 --lenient --register "local:$T/store" --namespace "$NS" \
    --deployment "$CANARY" --id good --ttl 60 >"$T/good.out" 2>"$T/good.err" &
GOOD=$!
track_pid $GOOD
wait_for "$(scaled 10)" grep -q '^listening on' "$T/good.out" || bail "replica did not start"
GOOD_PORT=$(awk '/^listening on/ {print $3}' "$T/good.out" | sed 's/.*://')

# --- generation 2: canary, then wave 1, then wave 2 ---------------------------
tpl g2
check "generation 2 reaches every site" wait_for "$(scaled 60)" all_label g2
check "the rollout completes" wait_for "$(scaled 20)" ro_state done
RID=$(db_read "$DB" "SELECT MAX(id) FROM template_rollouts WHERE name='base'")
is "$(db_read "$DB" "SELECT site FROM template_rollout_sites WHERE rollout=$RID AND wave=0")" \
    "$CANARY" "wave 0 is the canary, chosen by hash"
is "$(db_read "$DB" "SELECT wave || ':' || count(*) FROM template_rollout_sites WHERE rollout=$RID GROUP BY wave ORDER BY wave" | tr '\n' ' ')" \
    "0:1 1:2 2:2 " "the other four split into two waves"
# each wave was enqueued only after the previous one's last site was, plus the pause
order_ok=$(db_read "$DB" "
WITH q AS (SELECT s.wave AS wave, i.created_ms AS t FROM items i
  JOIN template_rollout_sites s ON s.site = i.name AND s.rollout = $RID
  WHERE i.stage = 'renderer' AND i.kind = 'rollout' AND i.id > (SELECT MAX(id) FROM items
    WHERE kind = 'template' AND name = 'base')),
w AS (SELECT wave, MIN(t) AS first, MAX(t) AS last, count(*) AS n FROM q GROUP BY wave)
SELECT (SELECT count(*) FROM w) = 3 AND (SELECT sum(n) FROM w) = 5 AND
  (SELECT first FROM w WHERE wave = 1) >= (SELECT last FROM w WHERE wave = 0) + 1000 AND
  (SELECT first FROM w WHERE wave = 2) >= (SELECT last FROM w WHERE wave = 1) + 1000")
is "$order_ok" 1 "canary, then wave 1, then wave 2, each after the previous one and the 1s pause"
is "$(db_read "$DB" "SELECT count(*) FROM template_rollout_sites WHERE rollout=$RID AND state='confirmed'")" \
    5 "every site confirmed (its replicas, here none, answered)"
is "$(tstatus | jq -c '[.adopted, .pending, .failed]')" "[5,0,0]" "template status: 5 adopted"
is "$(db_read "$DB" "SELECT result FROM items WHERE stage='notifier' AND name='$CANARY' ORDER BY id DESC LIMIT 1")" \
    "confirmed=1 failed=0 gone=0 missing_token=0" "the canary's replica confirmed generation 2"
is "$(ctl get decofile "$CANARY" -o json | jq -r '.status.conditions[] | select(.type=="PodsNotified") | .status')" \
    True "the canary: PodsNotified=True"
is "$(curl -s --max-time 5 "http://127.0.0.1:$GOOD_PORT/.decofile" | jq -r .sha256)" \
    "$(ctl get decofile "$CANARY" -o json | jq -r .status.contentHash)" \
    "the canary's replica serves the generation 2 document"
check "RolloutHalted=False RolloutComplete on the template" wait_for "$(scaled 10)" \
    sh -c "'$DECOCTL' -n $NS get template base -o json | jq -r '.status.conditions[]? | select(.type==\"RolloutHalted\") | .reason' | grep -qx RolloutComplete"

# --- generation 3: the canary's replica refuses the reload --------------------
kill "$GOOD"	# it deregisters on SIGTERM
wait "$GOOD" 2>/dev/null
"$SITE" --port 0 --fail --lenient --register "local:$T/store" --namespace "$NS" \
    --deployment "$CANARY" --id bad --ttl 60 >"$T/bad.out" 2>"$T/bad.err" &
BAD=$!
track_pid $BAD
wait_for "$(scaled 10)" grep -q '^listening on' "$T/bad.out" || bail "replica did not start"
tpl g3
check "the rollout halts" wait_for "$(scaled 40)" ro_state halted
check "the canary took generation 3" label_is "$CANARY" g3
REASON=$(tstatus | jq -r .rollout.reason)
case "$REASON" in
*"wave 0 (canary)"*"$CANARY"*"refused the reload"*) ok 0 "the reason names the wave, the site and why" ;;
*) ok 1 "the reason names the wave, the site and why: $REASON" ;;
esac
check "RolloutHalted=True on the template" wait_for "$(scaled 10)" \
    sh -c "'$DECOCTL' -n $NS get template base -o json | jq -r '.status.conditions[]? | select(.type==\"RolloutHalted\") | .status' | grep -qx True"
case "$(tcond | jq -r .message)" in
*"$CANARY"*) ok 0 "the condition names the site" ;;
*) ok 1 "the condition names the site: $(tcond)" ;;
esac
is "$(tstatus | jq -r --arg c "$CANARY" '.sites[] | select(.name==$c) | .state')" failed \
    "template status: the canary failed"
RID3=$(db_read "$DB" "SELECT MAX(id) FROM template_rollouts WHERE name='base'")
is "$(db_read "$DB" "SELECT count(*) FROM items WHERE kind='rollout' AND name<>'$CANARY' AND id > (SELECT MAX(id) FROM items WHERE kind='template' AND name='base')")" \
    0 "no other site was enqueued"
others_g2() { for s in $SITES; do [ "$s" = "$CANARY" ] || label_is "$s" g2 || return 1; done; }
ok "$(others_g2; echo $?)" "the other sites keep generation 2"
is "$(web_state "$CANARY")" failed "web /templates: the canary failed"
is "$(curl -sf "$WEB/$CANARY/templates" | jq -r '.[0].reason')" \
    "$(tstatus | jq -r --arg c "$CANARY" '.sites[] | select(.name==$c) | .reason')" \
    "... with decoctl's reason"
ok "$(web_states halted; echo $?)" "web /templates: every other site halted"
is "$(tstatus | jq -r --arg c "$CANARY" '[.sites[] | select(.name!=$c) | .state] | unique | join(",")')" \
    halted "decoctl template status: every other site halted"
check "the web's row of each site is decoctl's, byte for byte" wait_for "$(scaled 10)" agree
[ -s "$T/web.rows" ] && diag "$(head -2 "$T/web.rows")"

# a restarted renderer keeps the halt
renderer_pid() { "$DECOCTL" stages -o json | jq -r '.stages[] | select(.name=="renderer") | .pid'; }
OLD=$(renderer_pid)
kill "$OLD"
renderer_back() { p=$(renderer_pid); [ -n "$p" ] && [ "$p" != "$OLD" ] && [ "$p" != null ] && _pipeline_ready; }
check "the renderer is back" wait_for "$(scaled 30)" renderer_back
ctl apply -f "$T/sites.yaml" >/dev/null	# no change: nothing is woken
ok "$(ro_state halted; echo $?)" "after a renderer restart the rollout is still halted"
ok "$(others_g2; echo $?)" "... and the other sites still on generation 2"

# --- rollback -------------------------------------------------------------------
ctl template rollback base >"$T/rb.out"
ok $? "decoctl template rollback base"
check "... says how many sites go back" grep -q "1 site going back" "$T/rb.out"
check "the canary is back on generation 2" wait_for "$(scaled 30)" label_is "$CANARY" g2
is "$(tstatus | jq -r .rollout.state)" rolledback "template status: rolled back"
check "web /templates: the canary reverted" wait_for "$(scaled 10)" \
    sh -c "[ \"\$(curl -sf '$WEB/$CANARY/templates' | jq -r '.[0].state')\" = reverted ]"
check "... and every site's row is decoctl's" wait_for "$(scaled 10)" agree
ok "$(others_g2; echo $?)" "the other sites never moved"
ctl template rollback base 2>"$T/rb2.err"
ok "$([ $? -ne 0 ]; echo $?)" "a second rollback is refused"
check "... saying why" grep -q "already rolledback" "$T/rb2.err"

# --- a new generation moves on --------------------------------------------------
kill "$BAD"	# it deregisters on SIGTERM
wait "$BAD" 2>/dev/null
tpl g4
check "generation 4 reaches every site" wait_for "$(scaled 60)" all_label g4
check "its rollout completes" wait_for "$(scaled 20)" ro_state done
is "$(db_read "$DB" "SELECT state FROM template_rollouts WHERE id=$RID3")" rolledback \
    "the journal keeps the rolled-back rollout"

# --- generation 5 with a 1h pause: the later waves wait --------------------------
tpl g5 "{canary: 1, waves: 2, pause: 1h, maxFailed: 0}"
check "the canary takes generation 5" wait_for "$(scaled 30)" label_is "$CANARY" g5
waiting_pause() { [ "$(db_read "$DB" "SELECT confirmed_ms > 0 FROM template_rollouts WHERE id=(SELECT MAX(id) FROM template_rollouts WHERE name='base')")" = 1 ]; }
check "the canary confirmed: the 1h pause runs" wait_for "$(scaled 20)" waiting_pause
ok "$(web_states waiting; echo $?)" "web /templates: waves 1 and 2 waiting"
is "$(web_state "$CANARY")" adopted "... the canary adopted"
is "$(tstatus | jq -r --arg c "$CANARY" '[.sites[] | select(.name!=$c) | .state] | unique | join(",")')" \
    waiting "decoctl template status: waves 1 and 2 waiting"
check "... every site's row is decoctl's, byte for byte" wait_for "$(scaled 10)" agree

# --- decoctl apply refuses a bad spec.rollout, naming the field ----------------
sed 's/canary: 1,/canary: "150%",/' "$T/base.yaml" >"$T/bad.yaml"
ctl apply -f "$T/bad.yaml" 2>"$T/bad-apply.err"
ok "$([ $? -ne 0 ]; echo $?)" "decoctl apply refuses canary: 150%"
check "... naming the field" grep -q 'template/base: spec.rollout.canary' "$T/bad-apply.err"

done_testing
