#!/bin/sh
# acl_kube.sh - the acl stage's Kubernetes tenant source against a real API
# server + controller-manager (t/lib/kube.sh) and a real master, two
# replicas and three sentinels (t/lib/valkey.sh), the stage running as
# deploy/'s ServiceAccount (a TokenRequest token, bound by deploy/rbac.yaml):
# an annotated namespace gets the Secret valkey-acl and the finalizer, and
# its user works on every node with that password; a namespace without the
# annotation gets nothing; `default` annotated is refused, the annotation
# removed, the admin keeps access; a Secret deleted by hand is written again
# with working credentials; a valkey-acl-sync change resyncs, and so does
# `decoctl acl resync <namespace>` with the stage's config; a restart
# keeps the password; a namespace that drops the annotation loses its user,
# Secret and finalizer; a deleted namespace: user gone from every node,
# finalizer released, the namespace really gone; no password in the log.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"
. "$top_srcdir/t/lib/valkey.sh"

ACL=$(bin acl)
CTL=$(bin decoctl)
[ -x "$ACL" ] || bail "acl not built"
[ -x "$CTL" ] || bail "decoctl not built"
vk_require

kube_start
kube_start_cm
VK_DOWN_AFTER=${VK_DOWN_AFTER:-2000} vk_start
printf '%s\n' "$VK_ADMIN" > "$T/admin.pw"
chmod 600 "$T/admin.pw"

kubectl_admin create namespace decod-system >/dev/null
kubectl_admin apply --server-side --field-manager=decod-deploy -f "$top_srcdir/deploy/rbac.yaml" \
    >"$T/rbac.out" 2>&1 || { sed 's/^/# /' "$T/rbac.out"; bail "deploy/rbac.yaml"; }
kube_sa_kubeconfig decod-system decod "$T/sa.kubeconfig" || bail "no token for decod-system/decod"

cat > "$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
kubeconfig = $T/sa.kubeconfig
valkey_sentinel_urls = $VK_SENTINELS
valkey_admin_password_file = $T/admin.pw
valkey_timeout = 2s
valkey_acl_resync_period = 1h
metrics_port = $(vk_port)
kube_timeout = 10s
CONF

kubectl_admin create namespace sites-alpha >/dev/null
kubectl_admin annotate namespace sites-alpha deco.sites/valkey-acl=true >/dev/null
kubectl_admin create namespace sites-plain >/dev/null
kubectl_admin annotate namespace default deco.sites/valkey-acl=true >/dev/null

KUBECONFIG="$T/sa.kubeconfig" "$ACL" -c "$T/conf" > "$T/acl.log" 2>&1 &
APID=$!
track_pid $APID
wait_for 10 grep -q 'msg=ready' "$T/acl.log" || { tail -20 "$T/acl.log" | sed 's/^/# /'; bail "acl stage did not start"; }
check "the stage takes its tenants from Kubernetes" grep -q 'source=kubernetes' "$T/acl.log"

sec() { # NS KEY: a key of the Secret valkey-acl, decoded
	kubectl_admin -n "$1" get secret valkey-acl -o "jsonpath={.data.$2}" 2>/dev/null | base64 -d 2>/dev/null
}
has_user() { [ -n "$(vk_admin "$1" acl getuser "$2" | tr -d '\r\n')" ]; }
no_user() { [ -z "$(vk_admin "$1" acl getuser "$2" | tr -d '\r\n')" ]; }
on_all() { # FN USER
	for p in $VK_P1 $VK_P2 $VK_P3; do
		$1 "$p" "$2" || return 1
	done
}
works_all() { # USER PASS: the user writes its keys on the master and reads on every node
	m=$(vk_master_port)
	[ "$(vk_as "$1" "$2" "$m" set "$1:k" v)" = OK ] || return 1
	for p in $VK_P1 $VK_P2 $VK_P3; do
		[ "$(vk_as "$1" "$2" "$p" ping)" = PONG ] || return 1
	done
}
fin_of() { kubectl_admin get namespace "$1" -o jsonpath='{.metadata.finalizers}' 2>/dev/null; }

# --- an annotated namespace
wait_for 30 sh -c "kubectl --kubeconfig '$KUBECONFIG' -n sites-alpha get secret valkey-acl >/dev/null 2>&1"
is "$(sec sites-alpha LOADER_CACHE_REDIS_USERNAME)" alpha "the Secret names the user (namespace without sites-)"
PW=$(sec sites-alpha LOADER_CACHE_REDIS_PASSWORD)
is "$(printf %s "$PW" | wc -c | tr -d ' ')" 44 "... and holds a 44-character password"
is "$(kubectl_admin -n sites-alpha get secret valkey-acl -o jsonpath='{.type}')" Opaque "... of type Opaque"
check "the namespace holds the finalizer" sh -c "kubectl --kubeconfig '$KUBECONFIG' get namespace sites-alpha -o jsonpath='{.metadata.finalizers}' | grep -q deco.sites/valkey-acl"
check "the user exists on every node" wait_for 20 on_all has_user alpha
check "the user works on every node with the Secret's password" wait_for 10 works_all alpha "$PW"
is "$(vk_as alpha "$PW" "$(vk_master_port)" set other:k v 2>&1 | grep -c NOPERM)" 1 "... and reaches only its own keys"

# --- a namespace without the annotation
check "no Secret in a namespace without the annotation" sh -c "! kubectl --kubeconfig '$KUBECONFIG' -n sites-plain get secret valkey-acl >/dev/null 2>&1"
is "$(fin_of sites-plain)" "" "... and no finalizer"
check "... and no user" on_all no_user plain

# --- reserved: default
check "default annotated: the annotation is removed" wait_for 20 sh -c \
    "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' get namespace default -o jsonpath='{.metadata.annotations.deco\.sites/valkey-acl}')\" ]"
check "... no Secret in default" sh -c "! kubectl --kubeconfig '$KUBECONFIG' -n default get secret valkey-acl >/dev/null 2>&1"
check "... the refusal is logged" grep -q 'reason=ReservedName' "$T/acl.log"
is "$(vk_admin "$(vk_master_port)" ping)" PONG "... and the admin keeps access"

# --- the Secret deleted by hand
kubectl_admin -n sites-alpha delete secret valkey-acl >/dev/null
check "a Secret deleted by hand is made again" wait_for 20 sh -c "kubectl --kubeconfig '$KUBECONFIG' -n sites-alpha get secret valkey-acl >/dev/null 2>&1"
PW2=$(sec sites-alpha LOADER_CACHE_REDIS_PASSWORD)
check "... with working credentials" wait_for 10 works_all alpha "$PW2"

# --- the sync annotation
kubectl_admin annotate --overwrite namespace sites-alpha deco.sites/valkey-acl-sync=1 >/dev/null
vk_admin "$VK_P2" acl deluser alpha >/dev/null
kubectl_admin annotate --overwrite namespace sites-alpha deco.sites/valkey-acl-sync=2 >/dev/null
check "a change of deco.sites/valkey-acl-sync resyncs the tenant" wait_for 20 has_user "$VK_P2" alpha

# --- decoctl acl resync NAMESPACE (the trigger in the store, as the stage's config names it)
vk_admin "$VK_P3" acl deluser alpha >/dev/null	# redis-cli as admin, password in REDISCLI_AUTH
check "alpha deleted by hand on one node" no_user "$VK_P3" alpha
out=$("$CTL" -c "$T/conf" acl resync sites-alpha 2>&1)
is "$out" "namespace/sites-alpha resync requested" "decoctl acl resync NAMESPACE against a cluster"
check "... brings the user back on that node" wait_for 20 has_user "$VK_P3" alpha
check "... logged as a resync of the namespace's tenant" grep -q 'resync requested.*ns=sites-alpha name=sites-alpha' "$T/acl.log"
is "$("$CTL" -c "$T/conf" acl resync 2>&1)" "resync of every tenant requested" "decoctl acl resync (every namespace)"

# --- a restart reuses the Secret's password
kill $APID; wait $APID 2>/dev/null
KUBECONFIG="$T/sa.kubeconfig" "$ACL" -c "$T/conf" >> "$T/acl.log" 2>&1 &
APID=$!
track_pid $APID
wait_for 10 sh -c "[ \$(grep -c 'msg=ready' '$T/acl.log') -ge 2 ]" || bail "acl stage did not restart"
vk_admin "$VK_P3" acl deluser alpha >/dev/null
kubectl_admin annotate --overwrite namespace sites-alpha deco.sites/valkey-acl-sync=3 >/dev/null
check "after a restart the user is back on every node" wait_for 20 on_all has_user alpha
is "$(sec sites-alpha LOADER_CACHE_REDIS_PASSWORD)" "$PW2" "... the Secret's password kept"
check "... and working" wait_for 10 works_all alpha "$PW2"

# --- the annotation removed
kubectl_admin create namespace sites-beta >/dev/null
kubectl_admin annotate namespace sites-beta deco.sites/valkey-acl=true >/dev/null
check "a second namespace is provisioned" wait_for 30 on_all has_user beta
PWB=$(sec sites-beta LOADER_CACHE_REDIS_PASSWORD)
kubectl_admin annotate namespace sites-beta deco.sites/valkey-acl- >/dev/null
check "annotation removed: the user is gone from every node" wait_for 30 on_all no_user beta
check "... its Secret deleted" wait_for 20 sh -c "! kubectl --kubeconfig '$KUBECONFIG' -n sites-beta get secret valkey-acl >/dev/null 2>&1"
check "... and the finalizer released" wait_for 20 sh -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' get namespace sites-beta -o jsonpath='{.metadata.finalizers}')\" ]"

# --- the namespace deleted
kubectl_admin delete namespace sites-alpha --wait=false >/dev/null
check "a deleted namespace: the user is gone from every node" wait_for 30 on_all no_user alpha
check "... the finalizer released and the namespace gone" wait_for 60 sh -c \
    "! kubectl --kubeconfig '$KUBECONFIG' get namespace sites-alpha >/dev/null 2>&1"

check "the stage is still up" kill -0 $APID
for p in "$PW" "$PW2" "$PWB"; do
	check "no password in the log" sh -c "! grep -qF -- '$p' '$T/acl.log'"
done
done_testing
