#!/bin/sh
# hostile_apply.sh - what decoctl apply refuses, and the journal's privacy
# (issue 13): duplicate JSON keys (defect 7), names Kubernetes refuses and
# names whose derived keys would not fit (6, 10), YAML alias bombs and
# resources over 1 MiB (4), unknown spec fields warned, refused with
# --strict (9); the journal and its -wal/-shm created 0600 even in a 0755
# folder under umask 022 (8); a permission problem reported as one (10).
# A long (244-character) Decofile name is processed end to end.
. "$top_srcdir/t/lib/common.sh"

DECOD=$top_builddir/decod
DECOCTL=$top_builddir/decoctl
for p in "$DECOD" "$DECOCTL"; do [ -x "$p" ] || bail "$p not built"; done
command -v python3 >/dev/null || skip_all "python3 not installed"

mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do
	ln -s "$top_builddir/daemons/$s/$s" "$T/libexec/$s"
done
cat > "$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $T/libexec
store = local:$T/store
rescan_interval = 300ms
poll_period = 500ms
CONF
export DECOD_CONFIG="$T/decod.conf"
ctl() { "$DECOCTL" -n sites-h "$@"; }
# refused FILE WORDS DESC: apply fails (no crash), stderr has WORDS, nothing stored
refused() {
	ctl apply -f "$1" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q -- "$2" "$T/err"; then ok 0 "$3"
	else ok 1 "$3"; diag "rc=$rc: $(cat "$T/err")"; fi
}
doc() { # doc NAME NS SPEC-JSON
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"%s","namespace":"%s"},"spec":%s}' "$1" "$2" "$3"
}
long() { python3 -c 'import sys; print(sys.argv[1] * int(sys.argv[2]), end="")' "$1" "$2"; }

# defect 8: the state folder made 0755 beforehand, a umask of 022
umask 022
mkdir -m 755 -p "$T/state"
"$DECOD" 2>"$T/decod.log" &
track_pid $!
ready4() { [ "$("$DECOCTL" stages 2>/dev/null | grep -c READY)" -eq 4 ]; }
wait_for 10 ready4 || bail "decod did not start"

# defect 7: a key twice in applied JSON
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"dup"},\n "spec":{"source":"inline","inline":{"value":{}},"source":"git"}}\n' > "$T/dup.json"
refused "$T/dup.json" 'duplicate key "source"' "duplicate keys in applied JSON are refused"
check "naming line and column" grep -q 'dup.json:2:50' "$T/err"
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: dup}\nspec:\n  source: inline\n  source: git\n' > "$T/dup.yaml"
refused "$T/dup.yaml" 'duplicate key' "duplicate keys in YAML are refused too"
check "nothing stored for dup" sh -c "! '$DECOCTL' -n sites-h get decofile dup >/dev/null 2>&1"

# defect 6 and 10: names and namespaces as Kubernetes checks them
doc "$(long a 251)" sites-h '{"source":"inline","inline":{"value":{}}}' > "$T/n251.json"
refused "$T/n251.json" 'at most 244' "a 251-character Decofile name is refused at apply"
doc "$(long a 254)" sites-h '{}' > "$T/n254.json"
refused "$T/n254.json" 'not a valid name' "a 254-character name is refused"
doc "a..b" sites-h '{}' > "$T/dots.json"
refused "$T/dots.json" 'not a valid name' "a name with '..' is refused"
doc "a.-b" sites-h '{}' > "$T/dotdash.json"
refused "$T/dotdash.json" 'not a valid name' "a name with '.-' is refused"
doc "Loja" sites-h '{}' > "$T/upper.json"
refused "$T/upper.json" 'not a valid name' "an upper-case name is refused"
doc "loja" "sites.loja" '{}' > "$T/nsdot.json"
ctl() { "$DECOCTL" "$@"; }
refused "$T/nsdot.json" 'not a valid namespace' "a dotted namespace is refused (Kubernetes namespaces are labels)"
doc "loja" "$(long n 64)" '{}' > "$T/ns64.json"
refused "$T/ns64.json" 'not a valid namespace' "a 64-character namespace is refused"
ctl() { "$DECOCTL" -n sites-h "$@"; }
doc "$(long b 70)" sites-h '{"source":"inline","inline":{"value":{}}}' > "$T/n70.json"
refused "$T/n70.json" 'set spec.deploymentId' "a 70-character name with no deploymentId is refused (not a label value)"
doc "a.b" sites-h '{"source":"inline","inline":{"value":{}},"deploymentId":"a..b-"}' > "$T/dep.json"
refused "$T/dep.json" 'not a valid deploymentId' "an invalid deploymentId is refused"
LONG=$(long c 244)
doc "$LONG" sites-h '{"source":"inline","inline":{"value":{"Header":{"t":1}}},"deploymentId":"long"}' > "$T/n244.json"
ctl apply -f "$T/n244.json" >/dev/null 2>"$T/err"
ok $? "a 244-character name with a deploymentId is accepted"
published() { [ -f "$T/state/published/sites-h/$LONG/decofile.json" ]; }
wait_for 30 published
ok $? "and processed end to end (published)"
check "no stage complains about job locks" sh -c "! grep -q 'cannot take' '$T/decod.log'"
doc "a.b-c" sites-h '{"source":"inline","inline":{"value":{}}}' > "$T/dotted.json"
ctl apply -f "$T/dotted.json" >/dev/null 2>&1
ok $? "a dotted DNS-1123 name is accepted"

# defect 4: 7 levels of 9 aliases (a 'billion laughs' of ~500 bytes)
python3 - "$T/bomb.yaml" <<'PY'
import sys
lines = ['apiVersion: deco.sites/v1alpha1', 'kind: Decofile', 'metadata: {name: bomb}',
         'spec:', '  source: inline', '  inline:', '    value:', '      a0: &a0 "lol"']
for i in range(1, 8):
    lines.append('      a%d: &a%d [%s]' % (i, i, ','.join(['*a%d' % (i - 1)] * 9)))
open(sys.argv[1], 'w').write('\n'.join(lines) + '\n')
PY
/usr/bin/time -f '%M' -o "$T/rss" "$DECOCTL" -n sites-h apply -f "$T/bomb.yaml" >"$T/out" 2>"$T/err"
rc=$?
check "an alias bomb is refused" [ $rc -ne 0 ] && [ $rc -lt 128 ]
check "with a clear error" grep -Eq 'larger than 1 MiB once aliases are expanded|aliases in one document' "$T/err"
rss=$(tail -1 "$T/rss")
check "decoctl stays small ($rss KiB max RSS, bound 65536)" [ "$rss" -lt 65536 ]
python3 -c 'import sys; sys.stdout.write("{\"apiVersion\":\"deco.sites/v1alpha1\",\"kind\":\"Decofile\",\"metadata\":{\"name\":\"big\"},\"spec\":{\"source\":\"inline\",\"inline\":{\"value\":{\"x\":\"" + "y" * (1 << 20) + "\"}}}}")' > "$T/big.json"
refused "$T/big.json" 'over the limit of 1048576' "a resource over 1 MiB is refused"

# defect 9: unknown spec fields
doc typo sites-h '{"source":"inline","inline":{"value":{}},"targett":"s3","notify":{"stile":"poll"}}' > "$T/typo.json"
ctl apply -f "$T/typo.json" >"$T/out" 2>"$T/err"
ok $? "unknown fields: applied"
check "with a warning naming each" grep -q 'Warning: .*unknown fields "spec.targett", "spec.notify.stile"' "$T/err"
doc typo2 sites-h '{"source":"inline","inline":{"value":{"anything":{"goes":1}}},"target":"file"}' > "$T/fine.json"
ctl apply -f "$T/fine.json" >"$T/out" 2>"$T/err"
check "block names inside inline.value are not fields" sh -c "! grep -q Warning '$T/err'"
doc strict sites-h '{"source":"inline","inline":{"value":{}},"targett":"s3"}' > "$T/strict.json"
ctl apply --strict -f "$T/strict.json" >"$T/out" 2>"$T/err"
rc=$?
check "--strict refuses them" [ $rc -ne 0 ]
check "naming the field" grep -q 'unknown field "spec.targett" (--strict)' "$T/err"
check "nothing stored under --strict" sh -c "! '$DECOCTL' -n sites-h get decofile strict >/dev/null 2>&1"

# defect 2: credentials in a git URL are refused, pointing at secret:
doc cred sites-h '{"source":"git","git":{"url":"https://user:Pw-s3cr3t-42@127.0.0.1:1/x.git"}}' > "$T/cred.json"
refused "$T/cred.json" 'spec.git.secret' "a git URL with user:password@ is refused, pointing at secret:"
check "the error does not repeat the password" sh -c "! grep -q Pw-s3cr3t-42 '$T/err'"
doc cred sites-h '{"source":"git","git":{"url":"https://ghp_Tok3nXYZ@127.0.0.1:1/x.git"}}' > "$T/tok.json"
refused "$T/tok.json" 'carries credentials' "a git URL with a token@ is refused"
doc sshok sites-h '{"source":"git","git":{"url":"ssh://git@127.0.0.1:1/x.git"}}' > "$T/ssh.json"
ctl apply -f "$T/ssh.json" >/dev/null 2>&1
ok $? "ssh://git@ (a user name, no secret) is accepted"
ctl delete decofile sshok >/dev/null 2>&1
# one stored before this check (written around decoctl): redacted, never run
v=$(find "$T/store" -name 'typo.v' | grep -v status | head -1)
printf '%s' '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"old","namespace":"sites-h","generation":1},"spec":{"source":"git","git":{"url":"https://user:Pw-s3cr3t-42@127.0.0.1:1/x.git"}}}' > "$(dirname "$v")/old.v"
fetch_refused() { ctl get decofile old -o json 2>/dev/null | grep -q 'carries credentials'; }
: > "$T/ps.txt"
i=0
while [ $i -lt 40 ] && ! fetch_refused; do ps -eo args >> "$T/ps.txt"; sleep 0.05; i=$((i + 1)); done
fetch_refused
ok $? "the fetcher refuses a stored URL with credentials (FetchError)"
ps -eo args >> "$T/ps.txt"
check "no ps listing shows the password" sh -c "! grep -q Pw-s3cr3t-42 '$T/ps.txt'"
ctl get decofile old -o yaml > "$T/get.yaml" 2>&1
ctl get decofile old -o json > "$T/get.json" 2>&1
check "get -o yaml redacts it" grep -q 'https://\*\*\*@127.0.0.1:1/x.git' "$T/get.yaml"
check "get -o yaml/json never show the password" sh -c "! grep -q Pw-s3cr3t-42 '$T/get.yaml' '$T/get.json'"
check "nor the logs" sh -c "! grep -q Pw-s3cr3t-42 '$T/decod.log'"
rm -f "$(dirname "$v")/old.v"

# defect 8: the journal, its -wal and -shm are 0600
wait_for 10 test -e "$T/state/journal.db-wal"
for f in journal.db journal.db-wal journal.db-shm; do
	if [ -e "$T/state/$f" ]; then
		is "$(stat -c %a "$T/state/$f")" 600 "$f is 0600"
	else
		ok 1 "$f exists"
	fi
done

# defect 10: a permission problem is reported as one, not as "no journal"
# (as root, decoctl runs as nobody: the journal is private to root)
as_user=""
[ "$(id -u)" -eq 0 ] && as_user="setpriv --reuid=nobody --regid=nogroup --clear-groups"
chmod 711 "$T"
$as_user "$DECOCTL" -c "$T/decod.conf" journal >"$T/out" 2>"$T/err" || true
[ "$(id -u)" -ne 0 ] && chmod 000 "$T/state/journal.db"
$as_user "$DECOCTL" -c "$T/decod.conf" journal >"$T/out" 2>"$T/err"
rc=$?
chmod 600 "$T/state/journal.db"
check "decoctl journal fails on a journal it may not read" [ $rc -ne 0 ]
check "saying Permission denied" grep -q 'Permission denied' "$T/err"
check "not 'no journal at'" sh -c "! grep -q 'no journal at' '$T/err'"

done_testing
