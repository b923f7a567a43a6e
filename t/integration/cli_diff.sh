#!/bin/sh
# cli_diff - `decoctl diff -f FILE` and `decoctl apply -f FILE --dry-run`
# through the real CLI against decod and its real stages (dir and inline
# sources, block names with accents, spaces and percent-escapes): a diff
# of an unchanged file prints nothing and exits 0; a changed dir source
# shows each added, removed and changed block (with a diff of the changed
# block's JSON) and exits 1; a spec change is a unified diff of the YAML;
# a bad file or a block that is not JSON is an error naming it, exit >1.
# A dry run prints created/configured/unchanged and writes nothing (the
# store's files and the journal's row counts are the same after it); the
# real apply that follows does write.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

command -v diff >/dev/null || skip_all "diff(1) not installed"
# dir sources polled, not watched: the edits below wait for `decoctl sync`, so
# the diff has a pending change to show (fetch_inotify.sh tests the watch)
pipeline_setup "fetcher renderer publisher notifier" "notify_timeout = 2s" "notify_attempts = 2" \
    "dir_watch_limit = 0"
# the store's keys with their content; left out: the heartbeats decod and
# the replica write on their own (instances, endpoints) and the revision
# counter every write of theirs bumps
store_listing() {
	(cd "$T/store" && find . -type f ! -path '*/instances.d/*' \
	    ! -path '*/endpoints.d/*' ! -name rev | LC_ALL=C sort | xargs -d '\n' sha256sum)
}
# every table of the journal with its row count, read-only
journal_rows() {
	python3 - "$T/state/journal.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=5)
tables = [r[0] for r in db.execute(
    "select name from sqlite_master where type = 'table' order by name")]
print(" ".join("%s=%d" % (t, db.execute('select count(*) from "%s"' % t).fetchone()[0])
               for t in tables))
PY
}
# renders N: the journal holds at least N renders of loja
renders() {
	[ "$(db_read "$T/state/journal.db" \
	    "SELECT count(*) FROM renders WHERE ns = '$NS' AND name = 'loja'")" -ge "$1" ]
}

BLOCKS="$T/site/loja blocks"
mkdir -p "$BLOCKS/páginas"
printf '{"title": "Loja São Paulo", "menu": ["Início", "Ofertas"]}\n' \
    >"$BLOCKS/Cabeçalho.json"
printf '{"links": ["/ajuda", "/trocas"]}\n' >"$BLOCKS/Rodapé%20da%20Loja.json"
printf '{"path": "/", "sections": [1, 2]}\n' >"$BLOCKS/páginas/Página+Inicial.json"
printf '{"até": "domingo", "desconto": 30}\n' >"$BLOCKS/Promoção Relâmpago.json"

pipeline_start
replica_start r1

apply_dir loja "$BLOCKS"
ctl wait loja --for ready --timeout "$(scaled 60)s" >"$T/w0.out" 2>&1
ok $? "wait --for ready: the first version is live"

# --- unchanged: nothing to say ----------------------------------------------
ctl diff -f "$T/loja.yaml" >"$T/d0.out" 2>"$T/d0.err"
is "$?" 0 "diff of the applied, unchanged file exits 0"
is "$(cat "$T/d0.out")" "" "... and prints nothing"
is "$(cat "$T/d0.err")" "" "... not even a warning"

# --- a changed dir source: one block added, one removed, one changed ---------
printf '{"title": "Loja São Paulo", "menu": ["Início", "Ofertas", "Lançamentos"]}\n' \
    >"$BLOCKS/Cabeçalho.json"
rm "$BLOCKS/Promoção Relâmpago.json"
printf '{"nota": 4.8}\n' >"$BLOCKS/Avaliações%20dos%20Clientes.json"
S0=$(store_listing)
J0=$(journal_rows)
ctl diff -f "$T/loja.yaml" >"$T/d1.out" 2>"$T/d1.err"
is "$?" 1 "diff against the changed dir source exits 1"
sed "s/^/# /" "$T/d1.out" "$T/d1.err"
check "the added block, named as decoded" \
    grep -qF '+ block "Avaliações dos Clientes" added' "$T/d1.out"
check "the removed block" grep -qF -- '- block "Promoção Relâmpago" removed' "$T/d1.out"
check "the changed block" grep -qF '~ block "Cabeçalho" changed' "$T/d1.out"
check "the unchanged blocks are not listed" \
    sh -c "! grep -q 'Rodapé da Loja\|Página Inicial' '$T/d1.out'"
check "a diff of the changed block's JSON, labelled" \
    grep -qF -- '+++ decofile/loja block "Cabeçalho" (merged)' "$T/d1.out"
check "... with the new line" grep -q '^+ *"Lançamentos"' "$T/d1.out"
check "the spec did not change: no diff of the Decofile itself" \
    sh -c "! grep -qF 'decofile/loja (merged)' '$T/d1.out'"
is "$(store_listing)" "$S0" "diff wrote nothing to the store"
is "$(journal_rows)" "$J0" "diff wrote nothing to the journal"

# the change goes live; the diff then compares with the new render
ctl sync loja >/dev/null
wait_for "$(scaled 30)" renders 2
ok $? "the changed source is rendered after a sync"
ctl diff -f "$T/loja.yaml" >"$T/d2.out" 2>&1
is "$?" 0 "diff after the change went live exits 0 again"
is "$(cat "$T/d2.out")" "" "... and prints nothing"

# --- a spec change: a unified diff of the YAML --------------------------------
sed 's/^spec:$/  labels: {equipe: vitrine}\nspec:\n  silent: true/' "$T/loja.yaml" \
    >"$T/loja-v2.yaml"
ctl diff -f "$T/loja-v2.yaml" >"$T/d3.out" 2>&1
is "$?" 1 "diff of a changed spec exits 1"
sed "s/^/# /" "$T/d3.out"
check "labelled live and merged" sh -c "grep -qF -- '--- decofile/loja (live)' '$T/d3.out' &&
    grep -qF -- '+++ decofile/loja (merged)' '$T/d3.out'"
check "the added spec field" grep -q '^+ *silent: true' "$T/d3.out"
check "the added label" grep -q '^+ *equipe: vitrine' "$T/d3.out"
check "no rendered change (same blocks)" sh -c "! grep -q 'rendered document' '$T/d3.out'"

# --- an inline Decofile not applied yet: everything is added ------------------
cat >"$T/vitrine.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: vitrine
spec:
  source: inline
  inline:
    value:
      "Destaques da Semana": {"itens": ["café", "pão de queijo"]}
      "Rodapé": {"texto": "Obrigado!"}
YAML
ctl diff -f "$T/vitrine.yaml" >"$T/d4.out" 2>&1
is "$?" 1 "diff of a new inline Decofile exits 1"
sed "s/^/# /" "$T/d4.out"
check "the whole resource is added" grep -q '^+ *name: vitrine' "$T/d4.out"
check "its blocks are added" sh -c "grep -qF '+ block \"Destaques da Semana\" added' \
    '$T/d4.out' && grep -qF '+ block \"Rodapé\" added' '$T/d4.out'"

# --- errors: exit >1 with a clear message --------------------------------------
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata:\n  name: [loja\n' \
    >"$T/bad.yaml"
ctl diff -f "$T/bad.yaml" >"$T/e1.out" 2>"$T/e1.err"
rc=$?
ok "$([ "$rc" -gt 1 ] && echo 0 || echo 1)" "a malformed file: exit >1 (got $rc)"
check "... naming the file and line" grep -q "bad.yaml:[0-9]" "$T/e1.err"
ctl diff -f "$T/nowhere.yaml" >/dev/null 2>"$T/e2.err"
rc=$?
ok "$([ "$rc" -gt 1 ] && echo 0 || echo 1)" "a missing file: exit >1 (got $rc)"
check "... naming it" grep -q "cannot read .*nowhere.yaml" "$T/e2.err"
printf '{"links": [\n  "/ajuda" "/trocas"]}\n' >"$BLOCKS/Rodapé%20da%20Loja.json"
ctl diff -f "$T/loja.yaml" >"$T/e3.out" 2>"$T/e3.err"
rc=$?
ok "$([ "$rc" -gt 1 ] && echo 0 || echo 1)" "a block that is not JSON: exit >1 (got $rc)"
sed "s/^/# /" "$T/e3.err"
check "... naming the block file, line and column" \
    grep -q "would not render.*Rodapé%20da%20Loja.json:2:[0-9]" "$T/e3.err"
printf '{"links": ["/ajuda", "/trocas"]}\n' >"$BLOCKS/Rodapé%20da%20Loja.json"
ctl diff >/dev/null 2>"$T/e4.err"
is "$?" 2 "diff without -f: usage error"

# --- apply --dry-run writes nothing ------------------------------------------
S0=$(store_listing)
J0=$(journal_rows)
ctl apply -f "$T/vitrine.yaml" --dry-run=server >"$T/a1.out" 2>&1
is "$?" 0 "apply --dry-run=server of a new Decofile"
is "$(cat "$T/a1.out")" "decofile/vitrine created (server dry run)" "... says created"
ctl apply -f "$T/loja-v2.yaml" --dry-run >"$T/a2.out" 2>&1
is "$?" 0 "apply --dry-run (server) of a changed one"
is "$(cat "$T/a2.out")" "decofile/loja configured (server dry run)" "... says configured"
ctl apply -f "$T/loja.yaml" --dry-run >"$T/a3.out" 2>&1
is "$(cat "$T/a3.out")" "decofile/loja unchanged (server dry run)" \
    "apply --dry-run of the unchanged one says unchanged"
ctl apply -f "$T/vitrine.yaml" --dry-run=client >"$T/a4.out" 2>&1
is "$?" 0 "apply --dry-run=client validates only"
check "... and says so" grep -q "decofile/vitrine valid (dry run: client" "$T/a4.out"
ctl apply -f "$T/vitrine.yaml" --dry-run=bogus >/dev/null 2>"$T/a5.err"
is "$?" 2 "apply --dry-run=bogus: usage error"
check "... naming the choices" grep -q "server, client or none" "$T/a5.err"
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata:\n  name: Loja_SP\n' \
    >"$T/badname.yaml"
ctl apply -f "$T/badname.yaml" --dry-run >/dev/null 2>"$T/a6.err"
is "$?" 1 "apply --dry-run of an invalid name fails as apply does"
check "... with apply's message" grep -q "is not a valid name" "$T/a6.err"
is "$(store_listing)" "$S0" "after the dry runs the store is unchanged"
is "$(journal_rows)" "$J0" "after the dry runs the journal is unchanged"
ctl get decofile vitrine >/dev/null 2>&1
is "$?" 1 "the dry-run Decofile does not exist"
ctl get decofile loja -o json | grep -q equipe
is "$?" 1 "the dry-run label change was not stored"

# the real apply writes
ctl apply -f "$T/vitrine.yaml" >"$T/a7.out" 2>&1
is "$(cat "$T/a7.out")" "decofile/vitrine created" "the real apply creates it"
S1=$(store_listing)
ok "$([ "$S1" != "$S0" ] && echo 0 || echo 1)" "... and the store holds it"
vitrine_fetched() {
	[ "$(db_read "$T/state/journal.db" \
	    "SELECT count(*) FROM fetches WHERE ns = '$NS' AND name = 'vitrine'")" -ge 1 ]
}
wait_for "$(scaled 30)" vitrine_fetched
ok $? "... and decod fetches it (a journal row)"
ok "$([ "$(journal_rows)" != "$J0" ] && echo 0 || echo 1)" "the journal grew"
ctl diff -f "$T/vitrine.yaml" >/dev/null 2>&1
rc=$?
wait_for "$(scaled 30)" sh -c "'$DECOCTL' -n '$NS' diff -f '$T/vitrine.yaml'"
ok $? "once rendered, diff of the applied inline file exits 0 (first try: $rc)"

# --- a template never fetched: nothing rendered to compare, a warning says so --
cat >"$T/natal.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: natal
spec:
  source: inline
  templates: [base-de-natal]
  inline:
    value:
      "Rodapé": {"texto": "Feliz Natal!"}
YAML
ctl diff -f "$T/natal.yaml" >"$T/t1.out" 2>"$T/t1.err"
is "$?" 1 "a Decofile whose template was never fetched: the resource diff, exit 1"
check "... and a warning names the template" \
    grep -q "DecofileTemplate 'base-de-natal' has not been fetched yet" "$T/t1.err"
check "... no block list (the renderer would wait for the template)" \
    sh -c "! grep -q 'rendered document' '$T/t1.out'"

# --- standard input, help, --dry-run=none -------------------------------------
ctl diff -f - <"$T/loja.yaml" >"$T/s1.out" 2>&1
is "$?" 0 "diff -f - reads standard input"
"$DECOCTL" diff --help >"$T/h.out" 2>&1
check "diff --help gives the exit codes" grep -q "Exit 0 no differences, 1 differences" \
    "$T/h.out"
ctl apply -f "$T/loja.yaml" --dry-run=none >"$T/n1.out" 2>&1
is "$(cat "$T/n1.out")" "decofile/loja unchanged" "apply --dry-run=none is a plain apply"

# --- a record stored before apply refused credentials: diff masks them -------
# (dropped into the local store by hand, as such a record was once stored)
TOKEN="ghpTok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"legado","namespace":"%s","generation":1},"spec":{"source":"git","git":{"url":"https://deploy:%s@git.invalid/loja.git","ref":"main"}}}' \
    "$NS" "$TOKEN" >"$T/legado.v"
mv "$T/legado.v" "$T/store/kv/decod.d/decofiles.d/$NS.d/legado.v"
check "the stored record holds the token (positive control)" \
    grep -q "$TOKEN" "$T/store/kv/decod.d/decofiles.d/$NS.d/legado.v"
cat >"$T/legado.yaml" <<YAML
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: legado
spec:
  source: git
  git: {url: "https://git.invalid/loja.git", ref: main, secret: git-creds}
YAML
ctl diff -f "$T/legado.yaml" >"$T/c1.out" 2>&1
is "$?" 1 "diff against a stored record with credentials in its URL"
sed "s/^/# /" "$T/c1.out"
check "... shows the old URL masked" grep -qF -- '-    url: https://***@git.invalid/loja.git' \
    "$T/c1.out"
check "... and never the token" sh -c "! grep -q '$TOKEN' '$T/c1.out'"

done_testing
