#!/bin/sh
# fetch_inotify - a `dir` source is watched with inotify (issue 21): with
# the poll period at one hour, only the watch can explain an edit going
# live.  Under the real supervisor (fetcher, renderer, publisher; file
# target), block names with accents, spaces and percent-escapes: an edit
# in place, a new block, an editor's atomic save (write a temporary file,
# rename it over the block), a rename, a delete, a new subfolder with a
# block written into it at once, and the source folder removed and made
# again each reach the published document.  With dir_watch_limit = 0 the
# same edit waits for the poll (the control), and `decoctl sync` reads it.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/pipeline.sh"

pipeline_setup "fetcher renderer publisher"
B="$T/site/loja blocks"
mkdir -p "$B"
printf '{"title": "Loja São Paulo"}\n' >"$B/Cabeçalho.json"
printf '{"links": ["/ajuda"]}\n' >"$B/Rodapé%20da%20Loja.json"
OUT="$T/state/published/$NS/loja/decofile.json"

pipeline_start
apply_dir loja "$B"

# has KEY VALUE-FRAGMENT: the published document has the block with that text
has() {
	python3 - "$OUT" "$1" "$2" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1], encoding="utf-8"))
except (OSError, ValueError):
    sys.exit(1)
sys.exit(0 if sys.argv[2] in d and sys.argv[3] in json.dumps(d[sys.argv[2]], ensure_ascii=False) else 1)
PY
}
hasnt() { ! has "$1" "" ; }

wait_for "$(scaled 60)" has "Rodapé da Loja" "/ajuda"
ok $? "the first version is live, the escape in a block name decoded"

printf '{"title": "Loja São Paulo — Black Friday"}\n' >"$B/Cabeçalho.json"
wait_for "$(scaled 10)" has "Cabeçalho" "Black Friday"
ok $? "an edit in place is published without waiting for the poll (1 h)"

printf '{"até": "domingo"}\n' >"$B/Promoção Relâmpago.json"
wait_for "$(scaled 10)" has "Promoção Relâmpago" "domingo"
ok $? "a new block is published"

# an editor's save: a temporary file beside the block, renamed over it
printf '{"title": "Loja SP"}\n' >"$B/.Cabeçalho.json.swp"
mv "$B/.Cabeçalho.json.swp" "$B/Cabeçalho.json"
wait_for "$(scaled 10)" has "Cabeçalho" "Loja SP"
ok $? "an atomic save (write temporary, rename over) is published"

mv "$B/Promoção Relâmpago.json" "$B/Oferta do Dia.json"
wait_for "$(scaled 10)" sh -c "$(cat <<EOF
python3 -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
sys.exit(0 if "Oferta do Dia" in d and "Promoção Relâmpago" not in d else 1)' "$OUT"
EOF
)"
ok $? "a rename replaces the block's key"

rm "$B/Oferta do Dia.json"
wait_for "$(scaled 10)" hasnt "Oferta do Dia"
ok $? "a deleted block leaves the document"

# a new folder with a block written into it at once: the folder's watch
# comes after the read its creation caused, and the read after that sees it
mkdir "$B/páginas" && printf '{"path": "/"}\n' >"$B/páginas/Página+Inicial.json"
wait_for "$(scaled 10)" has "Página Inicial" '"/"'
ok $? "a block in a new subfolder is published"
printf '{"path": "/inicio"}\n' >"$B/páginas/Página+Inicial.json"
wait_for "$(scaled 10)" has "Página Inicial" "/inicio"
ok $? "an edit inside the new subfolder is seen (it is watched now)"

# the folder removed: the read fails and says so; made again, it is read
mv "$B" "$T/site/away"
wait_for "$(scaled 10)" sh -c "\"$DECOCTL\" -n '$NS' get decofile loja -o json | grep -q FetchError"
ok $? "the source folder removed: Syncing says FetchError"
mv "$T/site/away" "$B"
printf '{"title": "De volta"}\n' >"$B/Cabeçalho.json"
ctl sync loja >/dev/null 2>&1
wait_for "$(scaled 20)" has "Cabeçalho" "De volta"
ok $? "made again: read and published"

# --- the control: without watches, an edit waits for the poll ---------------
cp "$T/decod.log" "$T/decod-1.log"
for p in $TRACKED_PIDS; do kill -TERM "$p" 2>/dev/null; done
for p in $TRACKED_PIDS; do wait "$p" 2>/dev/null; done
TRACKED_PIDS=
printf 'dir_watch_limit = 0\n' >>"$T/decod.conf"
pipeline_start
B="$T/site/dois"
mkdir -p "$B"
printf '{"title": "Loja Dois"}\n' >"$B/Cabeçalho.json"
OUT="$T/state/published/$NS/dois/decofile.json"
apply_dir dois "$B"
wait_for "$(scaled 60)" has "Cabeçalho" "Loja Dois"
ok $? "decod again with dir_watch_limit = 0: a new dir Decofile is published"
printf '{"title": "Sem inotify"}\n' >"$B/Cabeçalho.json"
wait_for 3 has "Cabeçalho" "Sem inotify"
is "$?" 1 "without watches the edit is not read before the poll (3 s)"
ctl sync dois >/dev/null 2>&1
wait_for "$(scaled 20)" has "Cabeçalho" "Sem inotify"
ok $? "... and decoctl sync reads it"

done_testing
