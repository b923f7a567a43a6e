#!/bin/sh
# acl_stage.sh - the acl stage against a real Valkey/Redis cluster (one
# master, two replicas, three sentinels; t/lib/valkey.sh): Tenants get a user
# on all three nodes that reaches only its own keys, on the master and on a
# replica; the reserved name "default" is refused and the admin keeps
# access; decoctl acl resync brings back a user deleted by hand (counted);
# kill -9 of the master: after +switch-master every tenant works on the new
# master; the old master, restarted empty, is re-provisioned; a removed
# tenant's user goes from every node; a restart reuses the passwords and
# the periodic resync heals; with no sentinel reachable the condition says
# why, rounds are retried and the stage stays up; the supervisor runs the
# stage when `stages` names it, here with one node from VALKEY_URL; no
# password in any log, the journal, the store or the stage's argv.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/valkey.sh"
. "$top_srcdir/t/lib/acl.sh"

acl_require
command -v sqlite3 >/dev/null || skip_all "sqlite3 command not installed"
command -v curl >/dev/null || skip_all "curl not installed"

# short, but not so short that a loaded machine makes Sentinel fail over twice
VK_DOWN_AFTER=${VK_DOWN_AFTER:-2000} vk_start
acl_conf "$VK_ADMIN" "valkey_sentinel_urls = localhost:$VK_S1, redis://127.0.0.1:$VK_S2 127.0.0.1:$VK_S3" 2s
DB="$T/state/journal.db"
sql() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }

pw_of() { sed -n 's/^LOADER_CACHE_REDIS_PASSWORD=//p' "$T/state/acl/$1.env"; }
has_user() { [ -n "$(vk_admin "$1" acl getuser "$2" | tr -d '\r\n')" ]; }
no_user() { [ -z "$(vk_admin "$1" acl getuser "$2" | tr -d '\r\n')" ]; }
on_all() { # FN USER: FN holds on every node that is up
	f=$1; u=$2
	for p in $VK_P1 $VK_P2 $VK_P3; do
		[ "$(vk_admin "$p" ping)" = PONG ] || continue
		$f "$p" "$u" || return 1
	done
}

start_acl acl.log
tenant sites-loja loja loja
tenant sites-shop shop shop
tenant sites-default root default

# --- provisioning -------------------------------------------------------
check "loja's condition goes Provisioned=True" wait_for 15 cond_is sites-loja loja True
check "shop's condition goes Provisioned=True" wait_for 15 cond_is sites-shop shop True
diag "loja: $(cond sites-loja loja message)"
is "$(cond sites-loja loja reason)" Provisioned "reason Provisioned"
LOJA_PW=$(pw_of sites-loja)
SHOP_PW=$(pw_of sites-shop)
is "$(printf %s "$LOJA_PW" | wc -c)" 44 "loja's password is 44 characters of URL-safe base64"
check "the password is URL-safe base64 with padding" sh -c "printf %s '$LOJA_PW' | grep -Eq '^[A-Za-z0-9_-]{43}=\$'"
is "$(stat -c %a "$T/state/acl/sites-loja.env")" 600 "env file mode 0600"
is "$(sed -n 's/^LOADER_CACHE_REDIS_USERNAME=//p' "$T/state/acl/sites-loja.env")" loja "env file names the user"
is "$(wc -l < "$T/state/acl/sites-loja.env")" 2 "env file has exactly two lines"
check "loja exists on all three nodes" on_all has_user loja
check "shop exists on all three nodes" on_all has_user shop
is "$(vk_admin "$VK_P2" acl getuser loja | tr -d '\r' | awk '/^keys$/ {getline; print}')" \
    "~loja:* ~lock:loja:*" "loja's key patterns on a replica are its own and its locks"

is "$(vk_as loja "$LOJA_PW" "$VK_P1" set loja:x hello)" OK "as loja: SET loja:x on the master works"
case "$(vk_as loja "$LOJA_PW" "$VK_P1" set shop:x 1)" in NOPERM*) r=0 ;; *) r=1 ;; esac
ok $r "as loja: SET shop:x on the master is NOPERM"
case "$(vk_as loja "$LOJA_PW" "$VK_P1" config get maxmemory)" in NOPERM*) r=0 ;; *) r=1 ;; esac
ok $r "as loja: CONFIG (neither +@read nor +@write) is NOPERM"
replica_has() { [ "$(vk_as loja "$LOJA_PW" "$VK_P2" get loja:x)" = hello ]; }
check "as loja: GET loja:x on a replica reads the value" wait_for 10 replica_has
case "$(vk_as loja "$LOJA_PW" "$VK_P3" get shop:x)" in NOPERM*) r=0 ;; *) r=1 ;; esac
ok $r "as loja: GET shop:x on a replica is NOPERM"
case "$(vk_as loja wrong-password "$VK_P1" ping)" in *WRONGPASS*|*invalid*) r=0 ;; *) r=1 ;; esac
ok $r "a wrong password is refused"

# --- reserved name --------------------------------------------------------
check "the reserved name \"default\" is refused" wait_for 10 cond_is sites-default root False
is "$(cond sites-default root reason)" ReservedName "reason ReservedName"
diag "default: $(cond sites-default root message)"
check "no credentials were made for it" test ! -e "$T/state/acl/sites-default.env"
is "$(vk_admin "$VK_P1" ping)" PONG "the admin keeps access"
tenant sites-copy copy loja
check "a second tenant for user loja is refused" wait_for 10 cond_is sites-copy copy False
is "$(cond sites-copy copy reason)" Conflict "reason Conflict"
diag "copy: $(cond sites-copy copy message)"
check "no credentials were made for it" test ! -e "$T/state/acl/sites-copy.env"
is "$(pw_of sites-loja)" "$LOJA_PW" "loja's password is untouched"
"$CTL" $C get tenants -A > "$T/get.out" 2>&1
check "decoctl get tenants shows loja Provisioned True" grep -Eq '^sites-loja +loja +loja +true +True ' "$T/get.out"
check "and the refused one False" grep -Eq '^sites-default +root +default +true +False ' "$T/get.out"

# --- journal and metrics ----------------------------------------------------
is "$(sql "SELECT count(*) FROM audit WHERE stage='acl' AND action='acl-provision'")" 6 \
    "the journal records each user's provisioning on each node (2 x 3)"
check "tenants_provisioned is 2" test "$(metric deco_operator_valkey_tenants_provisioned)" = 2
check "provisioned_total counts both" metric_ge deco_operator_valkey_acl_provisioned_total 2

# --- self-heal by decoctl acl resync ------------------------------------------
vk_admin "$VK_P3" acl deluser shop >/dev/null
check "shop deleted by hand on a replica" no_user "$VK_P3" shop
out=$("$CTL" $C -n sites-shop acl resync shop)
is "$out" "tenant/shop resync requested" "decoctl acl resync TENANT"
check "shop is re-created on that replica" wait_for 10 has_user "$VK_P3" shop
check "and counted as self-healed" wait_for 5 metric_ge deco_operator_valkey_acl_self_healed_total 1
is "$(sql "SELECT count(*) FROM audit WHERE stage='acl' AND action='acl-provision' AND detail LIKE '%self_heal=1%'")" 1 \
    "the journal records the re-creation as a self-heal"
check "decoctl acl resync of an unknown tenant fails" sh -c "! '$CTL' $C -n sites-shop acl resync nobody 2>/dev/null"
is "$("$CTL" $C acl resync)" "resync of every tenant requested" "decoctl acl resync (every tenant)"

# --- an error on one replica: recorded, the others still done -----------------
vk_admin "$VK_P3" config set requirepass not-the-admin-password >/dev/null
vk_admin "$VK_P2" acl deluser loja >/dev/null
"$CTL" $C -n sites-loja acl resync loja >/dev/null
check "a replica refusing the admin: Provisioned=False" wait_for 10 cond_is sites-loja loja False
msg=$(cond sites-loja loja message)
diag "loja: $msg"
case "$msg" in *"127.0.0.1:$VK_P3 (authentication failed"*"2 of 3 nodes"*) r=0 ;; *) r=1 ;; esac
ok $r "the message names the failed node and why"
is "$(cond sites-loja loja reason)" ProvisionFailed "reason ProvisionFailed"
check "the journal records the transition" test "$(sql "SELECT count(*) FROM conditions WHERE kind='tenants' AND ns='sites-loja' AND name='loja' AND type='Provisioned' AND status='False' AND reason='ProvisionFailed'")" -ge 1
check "the other nodes were still done (loja back on $VK_P2)" has_user "$VK_P2" loja
check "the upsert error is counted" metric_ge 'deco_operator_valkey_acl_errors_total{operation="upsert"}' 1
printf %s "$VK_ADMIN" | REDISCLI_AUTH=not-the-admin-password redis-cli --no-auth-warning \
    -p "$VK_P3" -x config set requirepass >/dev/null
check "once the node takes the admin again, the retry makes it True" wait_for 15 cond_is sites-loja loja True
wait_for 10 vk_sentinels_know || diag "sentinels have not seen node 3 back yet"

# --- failover -----------------------------------------------------------------
# take loja off both replicas by hand: only the failover round can put it
# on the new master now (the periodic resync is an hour away)
vk_admin "$VK_P2" acl deluser loja >/dev/null
vk_admin "$VK_P3" acl deluser loja >/dev/null
vk_kill 1
new_master() { m=$(vk_master_port) && [ "$m" != "$VK_P1" ]; }
check "Sentinel fails over after kill -9 of the master" wait_for 30 new_master
NEWM=$(vk_master_port)
diag "new master on port $NEWM"
check "the stage saw +switch-master" wait_for 10 metric_ge deco_operator_valkey_sentinel_failovers_total 1
loja_writes() { [ "$(vk_as loja "$LOJA_PW" "$NEWM" set loja:y 1)" = OK ]; }
shop_writes() { [ "$(vk_as shop "$SHOP_PW" "$NEWM" set shop:y 1)" = OK ]; }
check "loja works on the new master" wait_for 10 loja_writes
check "shop works on the new master" wait_for 10 shop_writes
check "the failover round ran" grep -q 'trigger=failover' "$T/acl.log"
is "$(metric deco_operator_valkey_sentinel_failovers_total)" 1 "one failover counted once, though three sentinels announce it"
case "$(vk_as loja "$LOJA_PW" "$NEWM" set shop:y 1)" in NOPERM*) r=0 ;; *) r=1 ;; esac
ok $r "and is still fenced off from shop's keys there"

# the old master comes back empty (no persistence): Sentinel makes it a
# replica, the stage hears of it and provisions that node
vk_node_start 1
check "the old master, restarted with no users, is re-provisioned" wait_for 30 has_user "$VK_P1" loja
check "shop too" wait_for 10 has_user "$VK_P1" shop
old_reads() { [ "$(vk_as shop "$SHOP_PW" "$VK_P1" get shop:y)" = 1 ]; }
check "as shop: reads on the old master (now a replica) work" wait_for 20 old_reads

# --- tenant removed -------------------------------------------------------------
"$CTL" $C -n sites-shop delete tenant shop >/dev/null
check "a removed tenant's user is gone from every node" wait_for 15 on_all no_user shop
check "its env file is removed" wait_for 5 test ! -e "$T/state/acl/sites-shop.env"
check "deleted_total counts it" wait_for 5 metric_ge deco_operator_valkey_acl_deleted_total 1
check "the journal records the deletion on each node" \
    test "$(sql "SELECT count(*) FROM audit WHERE stage='acl' AND action='acl-delete' AND object='user/shop'")" -ge 3
check "loja is untouched" on_all has_user loja
tenant sites-flip flip flip
check "tenant flip provisioned" wait_for 15 cond_is sites-flip flip True
printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: flip, namespace: sites-flip}\nspec: {valkeyAcl: false, site: flip}\n' > "$T/flip.yaml"
"$CTL" $C apply -f "$T/flip.yaml" >/dev/null
check "valkeyAcl: false takes its user off every node" wait_for 15 on_all no_user flip
check "and its env file" wait_for 5 test ! -e "$T/state/acl/sites-flip.env"
check "its condition says Disabled" wait_for 5 sh -c "[ \"\$(\"$CTL\" $C -n sites-flip get tenant flip -o json | grep -c '\"Disabled\"')\" = 1 ]"
SD="$T/store/kv/decod.d/status.d/tenants.d"
check "a deleted tenant's status goes with it (loja's stays)" \
    sh -c "ls '$SD/sites-loja.d' >/dev/null && ! ls '$SD/sites-shop.d/shop.d/'* >/dev/null 2>&1"

# --- two claims made in the same second: the one that has the user keeps it --------
# created_at has whole seconds.  sites-zz/twin and sites-aa/twin2 both ask for
# user twin and are created in the same second, turned off; twin is turned on
# and provisioned, then twin2: it must not take the user because its namespace
# sorts first (it did: a CI run handed loja's user to a tenant made a second
# later).  After the restart below, twin's saved credentials keep it its own.
twin() { # NS NAME VALKEYACL
	printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: %s, namespace: %s}\nspec: {valkeyAcl: %s, site: twin}\n' \
	    "$2" "$1" "$3" > "$T/twin-$2.yaml"
	"$CTL" $C apply -f "$T/twin-$2.yaml" >/dev/null
}
created() { "$CTL" $C -n "$1" get tenant "$2" -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["created_at"])'; }
same=1
for i in 1 2 3 4 5 6 7 8 9 10; do
	twin sites-zz twin false
	twin sites-aa twin2 false
	[ "$(created sites-zz twin)" = "$(created sites-aa twin2)" ] && { same=0; break; }
	"$CTL" $C -n sites-zz delete tenant twin >/dev/null
	"$CTL" $C -n sites-aa delete tenant twin2 >/dev/null
done
ok $same "two tenants for user twin created in the same second ($(created sites-zz twin))"
twin sites-zz twin true
check "the first one turned on is provisioned" wait_for 15 cond_is sites-zz twin True
twin sites-aa twin2 true
check "the other, of the same second, is refused" wait_for 10 cond_is sites-aa twin2 False
is "$(cond sites-aa twin2 reason)" Conflict "... with reason Conflict"
is "$(cond sites-zz twin status)" True "the holder keeps its user"

# --- restart: passwords reused; the periodic resync heals ----------------------------
kill -TERM "$APID"
wait_for 10 sh -c "! kill -0 $APID 2>/dev/null" || ok 1 "acl stage stopped"
cp "$T/state/acl/sites-loja.env" "$T/loja.env.before"
start_acl acl2.log --valkey-acl-resync-period 2s
check "after a restart loja's credentials are reused" wait_for 10 grep -q 'trigger=start' "$T/acl2.log"
check "the env file is unchanged" cmp -s "$T/loja.env.before" "$T/state/acl/sites-loja.env"
is "$(vk_as loja "$LOJA_PW" "$(vk_master_port)" set loja:z 1)" OK "loja's password still works"
check "after a restart the same-second holder keeps user twin" wait_for 10 cond_is sites-zz twin True
is "$(cond sites-aa twin2 reason)" Conflict "... and the other is still refused"
vk_admin "$VK_P2" acl deluser loja >/dev/null
check "the periodic resync re-creates a user deleted by hand" wait_for 10 has_user "$VK_P2" loja
check "and counts it" wait_for 5 metric_ge deco_operator_valkey_acl_self_healed_total 1

# --- no sentinel reachable ----------------------------------------------------------------
D1=$(vk_port); D2=$(vk_port)
cat > "$T/conf2" <<CONF
state_dir = $T/state2
runtime_dir = $T/run2
store = local:$T/store2
valkey_sentinel_urls = 127.0.0.1:$D1 127.0.0.1:$D2 sentinel.nonexistent.invalid:26379
valkey_admin_password_file = $T/admin.pw
valkey_timeout = 1s
CONF
printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: lost, namespace: sites-lost}\nspec: {site: lost}\n' > "$T/lost.yaml"
"$CTL" -c "$T/conf2" apply -f "$T/lost.yaml" >/dev/null
"$ACL" -c "$T/conf2" > "$T/acl-nosentinel.log" 2>&1 &
NPID=$!
track_pid $NPID
lost_false() { [ "$("$CTL" -c "$T/conf2" -n sites-lost get tenant lost -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([c["reason"] for c in d.get("status", {}).get("conditions", []) if c["type"] == "Provisioned"][0])' 2>/dev/null)" = SentinelUnreachable ]; }
check "with no sentinel reachable the condition says SentinelUnreachable" wait_for 15 lost_false
msg=$("$CTL" -c "$T/conf2" -n sites-lost get tenant lost -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([c["message"] for c in d["status"]["conditions"] if c["type"] == "Provisioned"][0])')
diag "message: $msg"
case "$msg" in *"127.0.0.1:$D1"*"127.0.0.1:$D2"*"sentinel.nonexistent.invalid:26379: "*) r=0 ;; *) r=1 ;; esac
ok $r "the message names every sentinel tried and why (a name that does not resolve too)"
retried() { [ "$(grep -c 'msg="round done" trigger=retry' "$T/acl-nosentinel.log")" -ge 2 ]; }
check "rounds are retried" wait_for 20 retried
is "$(grep -c 'msg="round failed' "$T/acl-nosentinel.log")" 1 "the failure is logged once, not at every retry"
check "the stage stays up" alive "$NPID"
check "the subscriptions say they cannot reach the sentinels" grep -q 'cannot subscribe to sentinel events' "$T/acl-nosentinel.log"

# --- under the supervisor, one node named by VALKEY_URL -----------------------------------
mkdir -p "$T/libexec"
ln -s "$ACL" "$T/libexec/acl"
cat > "$T/conf3" <<CONF
state_dir = $T/state3
runtime_dir = $T/run3
store = local:$T/store3
libexec_dir = $T/libexec
stages = acl
CONF
printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: solo, namespace: sites-solo}\nspec: {valkeyAcl: true}\n' > "$T/solo.yaml"
"$CTL" -c "$T/conf3" apply -f "$T/solo.yaml" >/dev/null
VALKEY_URL="redis://:$VK_ADMIN@localhost:$NEWM" "$(bin decod)" -c "$T/conf3" > "$T/decod.log" 2>&1 &
track_pid $!
stage_ready() { "$CTL" -c "$T/conf3" stages 2>/dev/null | grep -q '^acl .*READY'; }
check "the supervisor runs the acl stage when stages names it" wait_for 20 stage_ready
# (the admin password comes in VALKEY_URL here: the grep below checks it is not logged)
check "VALKEY_URL: the user (namespace without sites-) is made on that node" wait_for 15 has_user "$NEWM" solo
SOLO_PW=$(sed -n 's/^LOADER_CACHE_REDIS_PASSWORD=//p' "$T/state3/acl/sites-solo.env")
is "$(vk_as solo "$SOLO_PW" "$NEWM" ping)" PONG "as solo: its password works there"
case "$(vk_as solo "$SOLO_PW" "$NEWM" get loja:x)" in NOPERM*) r=0 ;; *) r=1 ;; esac
ok $r "as solo: loja's keys are NOPERM"

# --- no password anywhere ---------------------------------------------------------------
sql .dump > "$T/journal.dump" 2>/dev/null
sqlite3 "$T/state2/journal.db" .dump > "$T/journal2.dump" 2>/dev/null
sqlite3 "$T/state3/journal.db" .dump > "$T/journal3.dump" 2>/dev/null
hits=0
for pw in "$LOJA_PW" "$SHOP_PW" "$SOLO_PW" "$VK_ADMIN"; do
	n=$(grep -rlF -- "$pw" "$T"/acl*.log "$T/decod.log" "$T"/vk/*.log "$T/journal.dump" "$T/journal2.dump" "$T/journal3.dump" \
	    "$T/store" "$T/store2" "$T/store3" 2>/dev/null | wc -l)
	hits=$((hits + n))
	tr '\0' ' ' < "/proc/$APID/cmdline" | grep -qF -- "$pw" && hits=$((hits + 1))
done
is "$hits" 0 "no password in any log, the journal, the store or the stage's argv"
is "$(grep -c . "$T/journal.dump" | awk '{print ($1 > 10)}')" 1 "(the journal dump is not empty)"

done_testing
