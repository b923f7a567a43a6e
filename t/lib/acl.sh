# t/lib/acl.sh - helpers for the acl stage's tests, after t/lib/common.sh.
# They use $CTL (decoctl), $C ("-c CONF"), $MPORT (the stage's metrics_port)
# and $T; start_acl sets APID.
#
#   acl_require                  ACL and CTL built, redis/valkey installed
#   acl_conf PW NODES TIMEOUT    write the stage's config ($C, $MPORT)
#   start_acl LOG [FLAGS...]     start the stage on $C, wait for msg=ready
#   tenant NS NAME SITE          apply a Tenant (valkeyAcl true) for SITE
#   cond NS NAME FIELD           the Provisioned condition's status, reason
#                                or message
#   cond_is NS NAME STATUS       the condition's status is STATUS
#   metric NAME[{labels}]        its value on the metrics port
#   metric_ge NAME[{labels}] N   it is at least N

# acl_require: $ACL (the stage) and $CTL (decoctl) built, Valkey installed
acl_require() {
	ACL=$(bin acl)
	CTL=$(bin decoctl)
	[ -x "$ACL" ] || bail "acl not built"
	[ -x "$CTL" ] || bail "decoctl not built"
	vk_require
}

# acl_conf PASSWORD NODES TIMEOUT: the stage's config in $T/conf ($C): the
# admin password file (0600) holding PASSWORD, NODES a line naming the nodes
# (valkey_url = ... or valkey_sentinel_urls = ...), valkey_timeout TIMEOUT,
# metrics on a free port ($MPORT)
acl_conf() {
	printf '%s\n' "$1" > "$T/admin.pw"
	chmod 600 "$T/admin.pw"
	MPORT=$(vk_port)
	cat > "$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
$2
valkey_admin_password_file = $T/admin.pw
valkey_timeout = $3
valkey_acl_resync_period = 1h
metrics_port = $MPORT
CONF
	C="-c $T/conf"
}

start_acl() { # LOG [FLAGS...]
	acl_log=$1; shift
	"$ACL" $C "$@" > "$T/$acl_log" 2>&1 &
	APID=$!
	track_pid $APID
	wait_for "$(scaled 10)" grep -q 'msg=ready' "$T/$acl_log" || bail "acl stage did not start"
}

tenant() { # NS NAME SITE
	printf 'apiVersion: deco.sites/v1alpha1\nkind: Tenant\nmetadata: {name: %s, namespace: %s}\nspec: {valkeyAcl: true, site: %s}\n' \
	    "$2" "$1" "$3" > "$T/tenant-$2.yaml"
	"$CTL" $C apply -f "$T/tenant-$2.yaml" >/dev/null
}

cond() { # NS NAME FIELD
	"$CTL" $C -n "$1" get tenant "$2" -o json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
for c in d.get("status", {}).get("conditions", []):
    if c["type"] == "Provisioned":
        print(c[sys.argv[1]])' "$3"
}

cond_is() { [ "$(cond "$1" "$2" status)" = "$3" ]; }

metric() { # NAME[{labels}]
	curl -s --max-time 5 "http://127.0.0.1:$MPORT/metrics" |
	    awk -v n="$1" '$1 == n {print $2}'
}

metric_ge() { v=$(metric "$1"); [ -n "$v" ] && awk -v v="$v" -v n="$2" 'BEGIN {exit !(v >= n)}'; }
