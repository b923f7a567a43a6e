#!/bin/sh
# cli_rollback - steering one decofile through the real decoctl against
# decod and its real stages (dir source): suspend stops a change from
# publishing and resume publishes it; rollback publishes an earlier version
# again (the target file holds the old content) and holds it across a
# sync while the source has the new content, until resume brings the new
# one back; history --versions lists what can be rolled back to; unknown
# names and hashes exit 1, bad options 2; each action is a journal row
# with who and why.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

pipeline_setup "fetcher renderer publisher" "history_keep = 5"
published() { # published: the published document of loja
	loc=$(status_json location)
	cat "${loc#file://}" 2>/dev/null
}
holds() { published | grep -q "$1"; }
status_sync() { ctl get df loja -o json | jq .status.lastHandledSyncAt; }
audit() { db_read "$T/state/journal.db" \
    "SELECT stage||' '||action||' '||detail FROM audit WHERE object='decofile/$NS/loja' ORDER BY id"; }

BLOCKS="$T/site/ções e páginas"
mkdir -p "$BLOCKS"
printf '{"title": "Loja São Paulo v1"}\n' >"$BLOCKS/Header.json"
printf '{"path": "/", "sections": [1, 2]}\n' >"$BLOCKS/Página%20Inicial.json"

pipeline_start

apply_dir loja "$BLOCKS"
wait_for "$(scaled 30)" holds "São Paulo v1"
ok $? "v1 is published"
V1=$(status_json contentHash)

# v2 through a sync
printf '{"title": "Loja São Paulo v2"}\n' >"$BLOCKS/Header.json"
ctl sync loja >/dev/null
wait_for "$(scaled 30)" holds "São Paulo v2"
ok $? "v2 is published"
V2=$(status_json contentHash)
check "v2 has its own hash" test "$V1" != "$V2"

# --- suspend / resume -------------------------------------------------------
ctl suspend loja --reason "freeze for Black Friday" >"$T/s.out" 2>&1
ok $? "suspend"
is "$(ctl get df loja -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"].get("suspend"))')" \
    True "spec.suspend is set"
is "$(status_json suspended)" True "status -o json: suspended"
ctl status >"$T/st.txt"
sed 's/^/# /' "$T/st.txt"
check "status shows SUSPENDED True" sh -c "head -1 '$T/st.txt' | grep -q SUSPENDED && grep -q 'dir .* True ' '$T/st.txt'"
wait_for "$(scaled 20)" sh -c "\"$DECOCTL\" -n $NS status loja -o json | grep -q 'Suspended: No fetch and no publish until resumed'"
ok $? "status MESSAGE: Suspended"
printf '{"title": "Loja São Paulo v3"}\n' >"$BLOCKS/Header.json"
ctl sync loja >/dev/null
ctl wait loja --for synced --timeout "$(scaled 30)s" >"$T/w.out" 2>&1
is "$?" 1 "wait --for synced on a suspended decofile fails at once (exit 1)"
check "... saying it is suspended" grep -q Suspended "$T/w.out"
check "a suspended decofile keeps v2 after a sync" holds "São Paulo v2"
ctl resume loja --reason "sale is over" >/dev/null
ok $? "resume"
wait_for "$(scaled 30)" holds "São Paulo v3"
ok $? "resume: the change made while suspended is published"
V3=$(status_json contentHash)

# --- the versions, and rollback ------------------------------------------------
ctl history loja --versions >"$T/v.txt"
ok $? "history --versions"
sed 's/^/# /' "$T/v.txt"
check "v3 is live" grep -q "^0 .*$(echo "$V3" | cut -c1-12) .*live" "$T/v.txt"
check "v2 can be rolled back to" grep -q "$(echo "$V2" | cut -c1-12) .*rollback-able" "$T/v.txt"
check "v1 can be rolled back to" grep -q "$(echo "$V1" | cut -c1-12) .*rollback-able" "$T/v.txt"

ctl rollback loja --steps 1 >"$T/rb1.out" 2>&1
ok $? "rollback --steps 1 (one back from the live v3)"
sed 's/^/# /' "$T/rb1.out"
wait_for "$(scaled 30)" holds "São Paulo v2"
ok $? "rollback --steps 1: the target holds v2"
is "$(status_json contentHash)" "$V2" "status: the content hash is v2's"
ctl rollback loja --to "$(echo "$V1" | cut -c1-10)" --reason "v3 broke checkout" >"$T/rb.out" 2>&1
ok $? "rollback --to a hash prefix"
sed 's/^/# /' "$T/rb.out"
wait_for "$(scaled 30)" holds "São Paulo v1"
ok $? "rollback: the target holds v1 again"
is "$(status_json contentHash)" "$V1" "status: the content hash is v1's"
is "$(status_json suspended)" True "rollback holds the decofile (suspended)"
check "the rollback annotation was consumed" sh -c \
    "! \"$DECOCTL\" -n $NS get df loja -o json | grep -q rollback-to"
# the source still has v3: a sync must not undo the rollback
SYNCED=$(status_sync)
ctl sync loja >/dev/null
wait_for "$(scaled 20)" sh -c "[ \"\$(\"$DECOCTL\" -n $NS get df loja -o json | jq .status.lastHandledSyncAt)\" != '$SYNCED' ]"
ok $? "the fetcher answered the sync (without fetching)"
check "held across a sync: still v1 while the source has v3" holds "São Paulo v1"
ctl resume loja >/dev/null
ok $? "resume after rollbacks"
wait_for "$(scaled 30)" holds "São Paulo v3"
ok $? "resume: the newest (v3) is back"
is "$(status_json suspended)" False "not suspended any more"

# --- a change handed on before the suspend is not published ----------------------
renders_pending() { # renders_pending N: N renderer items wait in the journal
	[ "$(db_read "$T/state/journal.db" \
	    "SELECT count(*) FROM items WHERE stage='renderer' AND state='pending'")" = "$1" ]
}
"$DECOCTL" stop renderer >/dev/null
ok $? "stop the renderer"
printf '{"title": "Loja São Paulo v4"}\n' >"$BLOCKS/Header.json"
ctl sync loja >/dev/null
wait_for "$(scaled 20)" renders_pending 1
ok $? "v4 is fetched and waits for the renderer"
ctl suspend loja >/dev/null
ok $? "suspend while v4 waits"
"$DECOCTL" start renderer >/dev/null
wait_for "$(scaled 20)" renders_pending 0
ok $? "the renderer took the waiting item"
check "... and did not publish it (still v3)" holds "São Paulo v3"
ctl resume loja >/dev/null
wait_for "$(scaled 30)" holds "São Paulo v4"
ok $? "resume: v4 is published"
LIVE=$(status_json contentHash)

# --- a resume while the fetcher is down -------------------------------------------
ctl rollback loja --steps 1 >/dev/null
ok $? "rollback once more"
wait_for "$(scaled 30)" sh -c "! cat \"\$(\"$DECOCTL\" -n $NS status loja -o json | jq -r '.[0].location' | sed 's|^file://||')\" | grep -q 'Paulo v4'"
ok $? "... v4 is no longer live"
"$DECOCTL" stop fetcher >/dev/null
ok $? "stop the fetcher"
ctl resume loja --reason "resumed while the fetcher was down" >/dev/null
ok $? "resume while the fetcher is down"
"$DECOCTL" start fetcher >/dev/null
wait_for "$(scaled 30)" holds "São Paulo v4"
ok $? "the fetcher, back, publishes the newest (v4) again"

# --- errors -------------------------------------------------------------------
ctl rollback nada >"$T/e1.out" 2>&1
is "$?" 1 "rollback of an unknown decofile exits 1"
check "... NotFound" grep -q 'decofiles "nada" not found' "$T/e1.out"
ctl rollback loja --to abcdef0 >"$T/e2.out" 2>&1
is "$?" 1 "rollback to an unknown hash exits 1"
check "... naming it" grep -q "no version abcdef0" "$T/e2.out"
ctl rollback loja --to "$LIVE" >"$T/e3.out" 2>&1
is "$?" 1 "rollback to the live version exits 1"
ctl rollback loja --steps 9 >"$T/e4.out" 2>&1
is "$?" 1 "rollback further back than the versions kept exits 1"
ctl rollback loja --to xyz >/dev/null 2>&1
is "$?" 2 "rollback --to not a hash: usage error"
ctl rollback loja --to "$V1" --steps 1 >/dev/null 2>&1
is "$?" 2 "rollback --to and --steps: usage error"
ctl suspend nada >/dev/null 2>&1
is "$?" 1 "suspend of an unknown decofile exits 1"
ctl resume nada >/dev/null 2>&1
is "$?" 1 "resume of an unknown decofile exits 1"

# --- the journal: who and why -------------------------------------------------
audit >"$T/audit.txt"
sed 's/^/# /' "$T/audit.txt"
ME=$(id -un)
check "suspend journaled with who and why" \
    grep -q "^decoctl suspend by=$ME(uid $(id -u)) reason=freeze for Black Friday" "$T/audit.txt"
check "resume journaled with why" grep -q "^decoctl resume by=$ME.* reason=sale is over" "$T/audit.txt"
check "rollback journaled with who, why and the version" \
    grep -q "^decoctl rollback by=$ME.* reason=v3 broke checkout to=$V1" "$T/audit.txt"
check "the fetcher journaled the rollback it made" grep -q "^fetcher rollback to=$V1" "$T/audit.txt"
check "the fetcher journaled the resume" grep -q "^fetcher resume republish=" "$T/audit.txt"
ctl journal --decofile loja >"$T/j.txt"
check "decoctl journal shows the rollback" grep -q "rollback" "$T/j.txt"

done_testing
