#!/bin/sh
# readme.sh - what the README and doc/ tell a new user is true: every path
# they name exists (t/lib/doc_paths.py), and every command block of the
# README's example and of its "Running it" section runs, as written, from the
# top of the tree against a running decod (the embedded default: local
# store, file target), except a block marked "<!-- readme.sh: not run (...) -->"
# that needs what a test does not have (a cluster, systemd as PID 1).
. "$top_srcdir/t/lib/common.sh"

DECOD=$(bin decod)
DECOCTL=$(bin decoctl)
for p in "$DECOD" "$DECOCTL"; do [ -x "$p" ] || bail "$p not built"; done

python3 "$top_srcdir/t/lib/doc_paths.py" "$top_srcdir" "$top_builddir" >"$T/paths" 2>&1
ok $? "every path README.md and doc/ name exists ($(tail -1 "$T/paths"))"
grep -v ' paths, ' "$T/paths" | sed 's/^/# /'

# the command blocks: README's sh blocks in the example ("What decod is") and
# in "Running it", each into a file of its own, or a line saying why not run
python3 - "$top_srcdir/README.md" "$T/blocks" <<'PY' || bail "cannot read the README's blocks"
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
os.makedirs(sys.argv[2])
section, skip, n = "", None, 0
lines = text.split("\n")
i = 0
while i < len(lines):
    l = lines[i]
    if l.startswith("## "):
        section = l[3:].strip()
    m = re.match(r"<!-- readme.sh: not run \((.+)\) -->", l)
    if m:
        skip = m.group(1)
    if l.strip() == "```sh" and section in ("What decod is", "Running it"):
        j = i + 1
        while lines[j].strip() != "```":
            j += 1
        n += 1
        base = os.path.join(sys.argv[2], "%02d" % n)
        open(base + (".skip" if skip else ".sh"), "w", encoding="utf-8").write(
            (skip + "\n" if skip else "") + "\n".join(lines[i + 1:j]) + "\n")
        skip = None  # a marker holds for the next block only
        i = j
    i += 1
PY
nrun=$(ls "$T/blocks" | grep -c '\.sh$')
ok $([ "$nrun" -ge 2 ]; echo $?) "the README's example and Running it have blocks to run ($nrun)"
grep -q 'decoctl apply -f examples/decofile.yaml' "$T/blocks"/*.sh
ok $? "... the first example (decoctl apply -f examples/decofile.yaml) among them"

# decod on the embedded default, with decod and decoctl on PATH
mkdir -p "$T/libexec" "$T/bin"
for s in fetcher renderer publisher notifier; do
	ln -s "$(bin "$s")" "$T/libexec/$s"
done
ln -s "$DECOD" "$T/bin/decod"
ln -s "$DECOCTL" "$T/bin/decoctl"
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
CONF
export DECOD_CONFIG="$T/decod.conf"
# an installed system's stage programs, for a block that checks a config
DECOD_LIBEXEC_DIR=$T/libexec
export DECOD_LIBEXEC_DIR
"$DECOD" 2>"$T/decod.log" &
SUP=$!
track_pid $SUP
wait_for "$(scaled 20)" sh -c "[ \$(\"$DECOCTL\" stages 2>/dev/null | grep -c READY) -eq 4 ]"
ok $? "decod: four stages READY"

for f in "$T/blocks"/*; do
	case "$f" in
	*.skip) diag "not run ($(head -1 "$f")): $(sed 1d "$f" | tr '\n' ' ')" ;;
	*.sh)
		(cd "$top_srcdir" && PATH="$T/bin:$PATH" sh -e "$f") >"$f.out" 2>&1
		rc=$?
		ok $rc "README block runs: $(tr '\n' ';' <"$f" | sed 's/;$//')"
		[ $rc -eq 0 ] || sed 's/^/# /' "$f.out" | tail -20
		;;
	esac
done
# the example's own claim: the decofile it applied is live and Ready
"$DECOCTL" get decofile loja -o json >"$T/loja.json" 2>&1
python3 -c 'import json,sys
s=json.load(open(sys.argv[1])).get("status",{})
sys.exit(0 if any(c["type"]=="Ready" and c["status"]=="True" for c in s.get("conditions",[])) else 1)' "$T/loja.json"
ok $? "the example's decofile is Ready"
check "... and published (the file target)" test -s "$T/state/published/default/loja/decofile.json"

kill -TERM $SUP
wait_for 10 sh -c "! kill -0 $SUP 2>/dev/null"
ok $? "decod stops"
done_testing
