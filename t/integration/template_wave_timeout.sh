#!/bin/sh
# template_wave_timeout - spec.rollout.waveTimeout, through decod with a
# pipeline that has no notifier (fetcher, renderer, publisher, web): no
# publish ever gets a verdict.  Three Auto sites list a template with
# {canary: 1, waves: 1, waveTimeout: 2s}: generation 2 reaches the canary,
# which renders and publishes it and then waits; 2s after its render it
# fails with "no notifier verdict within 2s", the wave fails by maxFailed 0
# and the rollout halts: RolloutHalted=True WaveFailed names the site and
# that reason, the other sites keep generation 1, and decoctl template
# status and the web's GET .../templates say failed (with the reason) and
# halted, byte for byte alike, and in chromium (t/browser/rollout.js, when
# there) the decofile page highlights both rows as failing.  The halt came no sooner than the timeout
# after the render (journal times).  Generation 3 with waveTimeout 0s
# supersedes it and, past the same 2s, still waits.  decoctl apply refuses
# a bad waveTimeout naming the field.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"
. "$top_srcdir/t/lib/template.sh"
. "$top_srcdir/t/lib/browser.sh"

command -v jq >/dev/null || skip_all "jq not installed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
command -v curl >/dev/null || skip_all "curl is not installed"
PORT=$(free_port)
pipeline_setup "fetcher renderer publisher web" "template_rollout_rate = 50" \
    "web_listen = 127.0.0.1:$PORT" "web_static_dir = $top_srcdir/daemons/web/static"
WEB="http://127.0.0.1:$PORT/api/v1/decofiles/$NS"
TIMEOUT_S=$(scaled 2)

tpl() { # LABEL [WAVETIMEOUT]
	tpl_yaml "$1" "{canary: 1, waves: 1, maxFailed: 0, waveTimeout: \"${2:-${TIMEOUT_S}s}\"}"
	ctl apply -f "$T/base.yaml"
}
SITES="t1 t2 t3"
tpl_sites_yaml

# --- decoctl apply refuses a bad waveTimeout, naming the field ----------------
tpl g0 soon >/dev/null 2>"$T/bad1.err"
ok "$([ $? -ne 0 ]; echo $?)" "decoctl apply refuses waveTimeout: soon"
check "... naming the field" grep -q 'template/base: spec.rollout.waveTimeout' "$T/bad1.err"
tpl g0 200h >/dev/null 2>"$T/bad2.err"
ok "$([ $? -ne 0 ]; echo $?)" "... and 200h (over 168h)"
check "... naming the field" grep -q 'spec.rollout.waveTimeout: "200h" is not a duration' "$T/bad2.err"
ok "$(ctl get template base >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" "nothing was stored"

tpl g1 >/dev/null
ok $? "apply the DecofileTemplate base with waveTimeout ${TIMEOUT_S}s"
ctl apply -f "$T/sites.yaml" >/dev/null
ok $? "apply three Auto sites that list it"
pipeline_start
DB="$T/state/journal.db"
check "every site renders generation 1" wait_for "$(scaled 30)" all_label g1
CANARY=$(tpl_canary)
diag "canary: $CANARY"

# --- generation 2: the canary renders, publishes, and no verdict ever comes ----
tpl g2 >/dev/null
check "the canary renders and publishes generation 2" wait_for "$(scaled 30)" label_is "$CANARY" g2
check "the rollout halts" wait_for "$(scaled 30)" ro_state halted
RID=$(db_read "$DB" "SELECT MAX(id) FROM template_rollouts WHERE name='base'")
is "$(db_read "$DB" "SELECT wave_timeout_ms FROM template_rollouts WHERE id=$RID")" \
    "$((TIMEOUT_S * 1000))" "the journal keeps the rollout's wave timeout"
is "$(db_read "$DB" "SELECT count(*) FROM items WHERE stage='notifier' AND state IN ('done','failed')")" \
    0 "no notifier verdict exists (no notifier)"
WHY="no notifier verdict within ${TIMEOUT_S}s"
is "$(db_read "$DB" "SELECT state || ': ' || reason FROM template_rollout_sites WHERE rollout=$RID AND site='$CANARY'")" \
    "failed: $WHY" "the canary failed: $WHY"
# the halt came no sooner than the timeout after the render (journal clocks)
waited=$(db_read "$DB" "SELECT CAST((julianday(r.updated_at) - 2440587.5) * 86400000 AS INTEGER) - s.rendered_ms
  FROM template_rollouts r JOIN template_rollout_sites s ON s.rollout = r.id
  WHERE r.id = $RID AND s.site = '$CANARY'")
diag "halted ${waited} ms after the canary's render"
check "... the halt came at least ${TIMEOUT_S}s after its render" test "$waited" -ge $((TIMEOUT_S * 1000))
REASON=$(tstatus | jq -r .rollout.reason)
case "$REASON" in
*"wave 0 (canary)"*"$CANARY"*"$WHY") ok 0 "the rollout's reason names the wave, the site and why" ;;
*) ok 1 "the rollout's reason names the wave, the site and why: $REASON" ;;
esac
check "RolloutHalted=True WaveFailed on the template" wait_for "$(scaled 10)" \
    sh -c "'$DECOCTL' -n $NS get template base -o json | jq -r '.status.conditions[]? | select(.type==\"RolloutHalted\") | \"\(.status) \(.reason)\"' | grep -qx 'True WaveFailed'"
case "$(tcond | jq -r .message)" in
*"$CANARY"*"$WHY"*) ok 0 "the condition names the site and the reason" ;;
*) ok 1 "the condition names the site and the reason: $(tcond)" ;;
esac
others_g1() { for s in $SITES; do [ "$s" = "$CANARY" ] || label_is "$s" g1 || return 1; done; }
ok "$(others_g1; echo $?)" "the other sites keep generation 1"
is "$(db_read "$DB" "SELECT count(*) FROM items WHERE kind='rollout' AND name<>'$CANARY' AND id > (SELECT MAX(id) FROM items WHERE kind='template' AND name='base')")" \
    0 "no other site was enqueued"

# --- decoctl and the web say the same ------------------------------------------
is "$(tstatus | jq -r --arg c "$CANARY" '.sites[] | select(.name==$c) | "\(.state): \(.reason)"')" \
    "failed: $WHY" "decoctl template status: the canary failed, with the reason"
is "$(tstatus | jq -c '[.adopted, .pending, .failed, .other]')" "[0,0,1,2]" \
    "decoctl template status: 1 failed, 2 other"
is "$(web_state "$CANARY")" failed "web /templates: the canary failed"
is "$(curl -sf "$WEB/$CANARY/templates" | jq -r '.[0].reason')" "$WHY" "... with the reason"
for s in $SITES; do
	[ "$s" = "$CANARY" ] && continue
	is "$(web_state "$s")" halted "web /templates: $s halted"
done
check "the web's row of each site is decoctl's, byte for byte" wait_for "$(scaled 10)" agree
# the decofile page, in a real browser: the rows highlighted as failing
if browser_setup; then
	HALTED=$(for s in $SITES; do [ "$s" = "$CANARY" ] || { echo "$s"; break; }; done)
	BASE="http://127.0.0.1:$PORT" NS=$NS FAILED=$CANARY HALTED=$HALTED WHY=$WHY \
	    SHOTS=${WEB_SHOTS:-$T} browser_run rollout.js
else
	echo "# $BROWSER_WHY: the browser part is skipped"
fi

# --- a new generation with waveTimeout 0s: no limit -----------------------------
tpl g3 0s >/dev/null
ok $? "generation 3 with waveTimeout 0s"
check "the canary takes generation 3" wait_for "$(scaled 30)" label_is "$CANARY" g3
RID3=$(db_read "$DB" "SELECT MAX(id) FROM template_rollouts WHERE name='base'")
is "$(db_read "$DB" "SELECT wave_timeout_ms || ' ' || state FROM template_rollouts WHERE id=$RID3")" \
    "0 running" "its rollout has no wave timeout and runs"
is "$(db_read "$DB" "SELECT state FROM template_rollouts WHERE id=$RID")" superseded \
    "the halted rollout is superseded"
# past the 2s that halted generation 2, by the journal's clock: still waiting
past() { [ "$(db_read "$DB" "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - rendered_ms >= $(( (TIMEOUT_S + 1) * 1000 )) FROM template_rollout_sites WHERE rollout=$RID3 AND site='$CANARY' AND rendered_ms > 0")" = 1 ]; }
check "$((TIMEOUT_S + 1))s pass after the canary's render" wait_for "$(scaled 30)" past
is "$(db_read "$DB" "SELECT r.state || ' ' || s.state FROM template_rollouts r JOIN template_rollout_sites s ON s.rollout = r.id WHERE r.id=$RID3 AND s.site='$CANARY'")" \
    "running rendered" "waveTimeout 0s: the canary still waits for its verdict, no halt"
is "$(web_state "$CANARY")" adopted "web /templates: the canary adopted generation 3"
done_testing
