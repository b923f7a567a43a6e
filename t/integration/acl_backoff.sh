#!/bin/sh
# acl_backoff.sh - a node that refuses decod's admin password (its
# requirepass is another): the acl stage must not spin.  Three Tenants are
# applied and one deleted; until the stage has retried four times (about
# 13 s of 1 s doubling, jittered) it runs a few rounds, not thousands, says
# what failed once per tenant in the log and on each condition (with when
# it tries again), and counts the errors in /metrics; a new tenant still
# gets a round at once.  Then the node takes the admin password (CONFIG SET
# requirepass): the next retry brings every user back, without a restart,
# and the deleted tenant's user is not made.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/valkey.sh"
. "$top_srcdir/t/lib/acl.sh"

acl_require
command -v curl >/dev/null || skip_all "curl not installed"

vk_start_one
# decod's admin password is not the node's: every AUTH is refused
DECOD_PW="decod-$VK_ADMIN"
acl_conf "$DECOD_PW" "valkey_url = redis://127.0.0.1:$VK_P1" 2s
LOG="$T/acl.log"

tenant sites-padaria padaria padaria
tenant sites-loja-do-joao loja loja-do-joao
tenant sites-oficina oficina oficina
start_acl acl.log

refused() { # NS NAME: ProvisionFailed, and the message says why
	[ "$(cond "$1" "$2" reason)" = ProvisionFailed ] &&
	    cond "$1" "$2" message | grep -q 'authentication failed'
}
check "padaria: Provisioned=False, ProvisionFailed" wait_for "$(scaled 15)" refused sites-padaria padaria
check "loja-do-joao too" wait_for "$(scaled 5)" refused sites-loja-do-joao loja
check "oficina too" wait_for "$(scaled 5)" refused sites-oficina oficina
msg=$(cond sites-padaria padaria message)
diag "padaria: $msg"
case "$msg" in *"127.0.0.1:$VK_P1 (authentication failed: WRONGPASS"*) r=0 ;; *) r=1 ;; esac
ok $r "the condition names the node and what failed"
case "$msg" in *"retrying with backoff (1 s doubling to 30 s)"*) r=0 ;; *) r=1 ;; esac
ok $r "and when the stage tries again"

"$CTL" $C -n sites-oficina delete tenant oficina >/dev/null
deletion_tried() { grep -q 'msg="cannot delete ACL user; retrying with backoff" user=oficina' "$LOG"; }
check "the deletion is tried at once, and fails" wait_for "$(scaled 10)" deletion_tried

# the window ends when the stage has retried four times (1+2+4+8 s, jittered:
# about 13 s), whatever the machine's load: a spinning stage does thousands of
# rounds in between, a backing-off one a handful
retries() { grep -c 'msg="round done" trigger=retry' "$LOG"; }
four_retries() { [ "$(retries)" -ge 4 ]; }
check "four retries" wait_for "$(scaled 40)" four_retries
rounds=$(grep -c 'msg="round done"' "$LOG")
lines=$(wc -l < "$LOG")
diag "$rounds rounds, $lines log lines until the fourth retry"
check "at most a few dozen rounds ($rounds)" test "$rounds" -le 30
check "at most a few hundred log lines ($lines)" test "$lines" -le 300
is "$(grep -c 'msg="provisioning failed on some nodes" ns=sites-padaria' "$LOG")" 1 \
    "padaria's failure is logged once, not at every round"
is "$(grep -c 'msg="cannot delete ACL user; retrying with backoff" user=oficina' "$LOG")" 1 \
    "the failed deletion is logged once"
check "each failed round says when it tries again" grep -q 'result="failed somewhere" retry_in_ms=[0-9]' "$LOG"
check "upsert errors counted in /metrics" metric_ge 'deco_operator_valkey_acl_errors_total{operation="upsert"}' 1
check "delete errors counted in /metrics" metric_ge 'deco_operator_valkey_acl_errors_total{operation="delete"}' 1
before=$(grep -c 'msg="round done" trigger="tenant change"' "$LOG")

# a new tenant during the backoff gets its round at once (not at the retry)
tenant sites-cafe cafe cafe
check "a new tenant is tried while the stage backs off" wait_for "$(scaled 10)" refused sites-cafe cafe
changed() { [ "$(grep -c 'msg="round done" trigger="tenant change"' "$LOG")" -gt "$before" ]; }
check "... in a round of its own (trigger=\"tenant change\")" changed

# the node takes decod's password: the next retry provisions every tenant
printf %s "$DECOD_PW" | REDISCLI_AUTH="$VK_ADMIN" redis-cli --no-auth-warning \
    -h 127.0.0.1 -p "$VK_P1" -x config set requirepass >/dev/null
VK_ADMIN=$DECOD_PW
is "$(vk_admin "$VK_P1" ping)" PONG "the node now takes decod's admin password"
# the pause is at most 30 s (+20 %) now
check "padaria's user comes back without a restart" wait_for "$(scaled 45)" cond_is sites-padaria padaria True
check "loja-do-joao's too" wait_for "$(scaled 5)" cond_is sites-loja-do-joao loja True
check "cafe's too" wait_for "$(scaled 5)" cond_is sites-cafe cafe True
has_user() { [ -n "$(vk_admin "$VK_P1" acl getuser "$1" | tr -d '\r\n')" ]; }
check "ACL GETUSER padaria finds it" has_user padaria
check "ACL GETUSER loja-do-joao finds it" has_user loja-do-joao
check "ACL GETUSER cafe finds it" has_user cafe
check "the deleted tenant's user was not made" sh -c "[ -z \"\$(REDISCLI_AUTH='$DECOD_PW' redis-cli --no-auth-warning -h 127.0.0.1 -p $VK_P1 acl getuser oficina | tr -d '\r\n')\" ]"
PW=$(sed -n 's/^LOADER_CACHE_REDIS_PASSWORD=//p' "$T/state/acl/sites-padaria.env")
is "$(vk_as padaria "$PW" "$VK_P1" set padaria:pão 1)" OK "as padaria: its password works"
check "the same stage process did it (no restart)" alive "$APID"
is "$(grep -c 'msg=ready' "$LOG")" 1 "... started once"
check "the deleted tenant's credentials are removed" wait_for "$(scaled 5)" test ! -e "$T/state/acl/sites-oficina.env"
hits=$(grep -cF -- "$DECOD_PW" "$LOG")
is "$hits" 0 "the admin password is not in the log"

done_testing
