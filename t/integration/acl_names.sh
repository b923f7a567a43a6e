#!/bin/sh
# acl_names.sh - a Tenant's spec.site is judged whole, never cut short: a
# site "a\u0000b" (a NUL inside) and a 10,000-character site are refused
# with InvalidName and a message naming the problem; no user is made for
# either (not "a", not the first 63 characters), no credentials are kept,
# and a later tenant of site "a" gets its user (no Conflict).  The hostile
# documents are written into the store as a client other than decoctl
# would (testtool rawput): decoctl is not the only writer.  decoctl apply
# itself refuses a string holding \u0000 (JSON or YAML) with where it is,
# instead of storing "a" (yajl's tree ends a string at its NUL).
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/valkey.sh"
. "$top_srcdir/t/lib/acl.sh"

acl_require
TT="$top_builddir/t/stage/testtool"
[ -x "$TT" ] || bail "testtool not built"

vk_start_one
acl_conf "$VK_ADMIN" "valkey_url = redis://127.0.0.1:$VK_P1" 2s
LONG=$(head -c 10000 /dev/zero | tr '\0' 'a')

rawtenant() { # NS NAME SITE-JSON (the site as a JSON string literal)
	printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Tenant","metadata":{"name":"%s","namespace":"%s","created_at":"2026-12-01T10:00:00Z"},"spec":{"valkeyAcl":true,"site":%s}}' \
	    "$2" "$1" "$3" > "$T/raw-$2.json"
	"$TT" $C rawput tenants "$1" "$2" "$T/raw-$2.json"
}
rawtenant sites-padaria-nul padaria '"a\u0000b"'
rawtenant sites-loja-longa loja "\"$LONG\""
start_acl acl.log

check "site \"a\\u0000b\": Provisioned=False" wait_for "$(scaled 15)" cond_is sites-padaria-nul padaria False
is "$(cond sites-padaria-nul padaria reason)" InvalidName "... reason InvalidName"
msg=$(cond sites-padaria-nul padaria message)
diag "a\\u0000b: $msg"
case "$msg" in *"NUL byte"*) r=0 ;; *) r=1 ;; esac
ok $r "the message names the NUL"
check "the 10,000-character site: Provisioned=False" wait_for "$(scaled 10)" cond_is sites-loja-longa loja False
is "$(cond sites-loja-longa loja reason)" InvalidName "... reason InvalidName"
msg=$(cond sites-loja-longa loja message)
diag "long: $msg"
case "$msg" in *"1 to 63 characters (got 10000)"*) r=0 ;; *) r=1 ;; esac
ok $r "the message names the length"

# the same long site through decoctl
tenant sites-loja-longa-2 loja2 "$LONG"
check "... and through decoctl apply: Provisioned=False" wait_for "$(scaled 10)" cond_is sites-loja-longa-2 loja2 False
is "$(cond sites-loja-longa-2 loja2 reason)" InvalidName "... reason InvalidName"

# a later tenant of site "a" is not blocked by the refused "a\u0000b"
tenant sites-a a a
check "a later tenant of site \"a\" is provisioned" wait_for "$(scaled 15)" cond_is sites-a a True
is "$(cond sites-a a reason)" Provisioned "... not Conflict"
users=$(vk_admin "$VK_P1" acl users | tr -d '\r' | sort | tr '\n' ' ')
is "$users" "a default " "the node has user a (for sites-a) and no user cut from either refused site"
check "no credentials for the NUL site" test ! -e "$T/state/acl/sites-padaria-nul.env"
check "no credentials for the long sites" test ! -e "$T/state/acl/sites-loja-longa.env" -a ! -e "$T/state/acl/sites-loja-longa-2.env"
is "$(sed -n 's/^LOADER_CACHE_REDIS_USERNAME=//p' "$T/state/acl/sites-a.env")" a "sites-a's credentials name user a"
check "the stage is still up" alive "$APID"

# decoctl apply: refused, never stored cut short
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Tenant","metadata":{"name":"cut","namespace":"sites-cut"},\n "spec":{"site":"a\\u0000b"}}\n' > "$T/cut.json"
printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: cut, namespace: sites-cut}\nspec: {site: "a\\0b"}\n' > "$T/cut.yaml"
for f in cut.json cut.yaml; do
	"$CTL" $C apply -f "$T/$f" > "$T/$f.out" 2>&1
	ok $((! $?)) "decoctl apply of $f (site a, NUL, b) fails"
	diag "$(cat "$T/$f.out")"
	check "... saying where and why" grep -q "$f:[1-9].*u0000 (a NUL byte): refused" "$T/$f.out"
done
check "nothing was stored" sh -c "! '$CTL' $C -n sites-cut get tenant cut >/dev/null 2>&1"
printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: barra, namespace: sites-barra}\nspec: {site: "a\\\\u0000b"}\n' > "$T/barra.yaml"
"$CTL" $C apply -f "$T/barra.yaml" >/dev/null 2>&1
ok $? "a site holding a backslash then u0000 (no NUL) is stored as written"
check "... and refused by the stage for its characters, not cut" wait_for "$(scaled 10)" cond_is sites-barra barra False
case "$(cond sites-barra barra message)" in *'a\u0000b'*"may hold only"*) r=0 ;; *) r=1 ;; esac
ok $r "the message shows the name whole"

done_testing
