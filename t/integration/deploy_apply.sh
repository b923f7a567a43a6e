#!/bin/sh
# deploy_apply - deploy/ as CI applies it, to a real API server: what
# `kubectl kustomize deploy/` renders, less cert-manager's kinds (Issuer,
# Certificate: their CRDs do not exist here, and nothing else may be left
# out), goes in with server-side apply and strict field validation, so an
# unknown field, a non-structural CRD schema, a bad RBAC rule or a bad
# probe fails here.  The CRDs become Established (structural, names
# accepted); a second apply changes nothing.  Then, as the ServiceAccount
# deploy/ creates (a TokenRequest token), `kubectl auth can-i` lists each
# verb the stages use and what the account must not be able to do.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

PY=python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import yaml' 2>/dev/null && PY=/usr/bin/python3
$PY -c 'import yaml' 2>/dev/null || skip_all "python3-yaml not installed"

kube_start

# --- render, drop cert-manager's kinds only ----------------------------------
kubectl kustomize "$top_srcdir/deploy" >"$T/rendered.yaml" 2>"$T/kustomize.err"
st=$?
is "$st" 0 "kubectl kustomize deploy/ renders"
[ "$st" -eq 0 ] || { sed 's/^/# /' "$T/kustomize.err"; bail "kustomize failed"; }
$PY - "$T/rendered.yaml" "$T/apply.yaml" >"$T/filter.out" 2>&1 <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
keep, left = [], []
for d in docs:
    if d["apiVersion"].startswith("cert-manager.io/") and d["kind"] in ("Issuer", "Certificate"):
        left.append(d["kind"])
    else:
        keep.append(d)
with open(sys.argv[2], "w") as out:
    yaml.safe_dump_all(keep, out, sort_keys=False)
print(" ".join(sorted(left)))
print(len(keep))
PY
is "$?" 0 "the rendered objects parse"
is "$(sed -n 1p "$T/filter.out")" "Certificate Issuer" "only cert-manager's Issuer and Certificate are left out"
nkeep=$(sed -n 2p "$T/filter.out")
diag "$nkeep objects to apply"

# --- server-side apply, strict validation -----------------------------------
APPLY="kubectl_admin apply --server-side --field-manager=decod-deploy --validate=strict -f $T/apply.yaml"
$APPLY >"$T/apply.out" 2>&1
st=$?
is "$st" 0 "server-side apply with --validate=strict accepts every object"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/apply.out" | tail -20
check "... and warns about nothing" sh -c "! grep -qi warning '$T/apply.out'"
for crd in decofiles.deco.sites decofiletemplates.deco.sites; do
	check "CRD $crd is Established" \
	    kubectl_admin wait --for=condition=Established --timeout=30s "crd/$crd"
	check "CRD $crd: names accepted" \
	    kubectl_admin wait --for=condition=NamesAccepted --timeout=30s "crd/$crd"
	ns=$(kubectl_admin get "crd/$crd" \
	    -o jsonpath='{.status.conditions[?(@.type=="NonStructuralSchema")].status}')
	is "$ns" "" "CRD $crd has a structural schema"
done
quiet() { "$@" >/dev/null 2>&1; }
for obj in namespace/decod-system serviceaccount/decod configmap/decod-config \
    deployment/decod service/decod-webhook role/decod-leader rolebinding/decod-leader; do
	check "$obj exists" quiet kubectl_admin -n decod-system get "$obj"
done
for obj in clusterrole/decod clusterrole/decod-site-writer clusterrolebinding/decod \
    clusterrolebinding/decod-site-writer mutatingwebhookconfiguration/decod \
    validatingwebhookconfiguration/decod; do
	check "$obj exists" quiet kubectl_admin get "$obj"
done
# what the API server stored: every container with its three probes
kubectl_admin -n decod-system get deployment decod -o json >"$T/dep.json"
$PY - "$T/dep.json" >"$T/pod.out" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pod = d["spec"]["template"]["spec"]
for c in pod["containers"]:
    for p in ("livenessProbe", "readinessProbe"):
        assert p in c, c["name"] + " has no " + p
    sc = c.get("securityContext", {})
    assert sc.get("readOnlyRootFilesystem") is True, c["name"] + ": root filesystem writable"
    assert sc.get("runAsNonRoot") is True, c["name"] + ": may run as root"
    print(c["name"])
PY
is "$?" 0 "the stored Deployment: every container has liveness and readiness, non-root, read-only root"
is "$(sort "$T/pod.out" | tr '\n' ' ')" "fetcher notifier publisher renderer webhook " "... for each stage's container"

$APPLY >"$T/apply2.out" 2>&1
is "$?" 0 "a second apply succeeds"
check "... and changes nothing" sh -c "! grep -v -e ' serverside-applied\$' '$T/apply2.out' | grep -q ."
rv1=$(kubectl_admin -n decod-system get deployment decod -o jsonpath='{.metadata.generation}')
is "$rv1" 1 "... the Deployment's generation is still 1"

# --- the persistent-state component: journal and store on a claim ---------
# as an operator turns it on: their own kustomization, outside deploy/
mkdir -p "$T/persistent"
rel=$($PY -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
    "$top_srcdir/deploy" "$T/persistent")
printf 'resources: [%s]\ncomponents: [%s/components/persistent-state]\n' "$rel" "$rel" \
    >"$T/persistent/kustomization.yaml"
kubectl kustomize "$T/persistent" >"$T/persistent.yaml" 2>"$T/persistent.err"
st=$?
is "$st" 0 "kubectl kustomize renders deploy/ with components/persistent-state"
[ "$st" -eq 0 ] || sed 's/^/# /' "$T/persistent.err"
$PY - "$T/rendered.yaml" "$T/persistent.yaml" "$T/persistent-apply.yaml" >"$T/pvc.out" 2>&1 <<'PY'
import copy, sys, yaml
def load(p):
    return [d for d in yaml.safe_load_all(open(p)) if d]
def key(d):
    return (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
base = {key(d): d for d in load(sys.argv[1])}
pvc = {key(d): d for d in load(sys.argv[2])}
def state(objs):
    dep = objs[("Deployment", "decod-system", "decod")]["spec"]["template"]["spec"]
    return [v for v in dep["volumes"] if v["name"] == "state"][0], dep
bvol, _ = state(base)
assert "emptyDir" in bvol and "persistentVolumeClaim" not in bvol, "base: " + str(bvol)
vol, dep = state(pvc)
assert vol == {"name": "state", "persistentVolumeClaim": {"claimName": "decod-state"}}, vol
claim = pvc[("PersistentVolumeClaim", "decod-system", "decod-state")]
assert claim["spec"]["accessModes"] == ["ReadWriteOnce"], claim
for c in dep["containers"]:
    assert {"name": "state", "mountPath": "/var/lib/decod"} in c["volumeMounts"], c["name"]
# nothing else differs from the base
extra = set(pvc) - set(base)
assert extra == {("PersistentVolumeClaim", "decod-system", "decod-state")}, extra
for k, d in base.items():
    if k == ("Deployment", "decod-system", "decod"):
        d = copy.deepcopy(d)
        for v in d["spec"]["template"]["spec"]["volumes"]:
            if v["name"] == "state":
                v.clear(); v.update(vol)
        for x in (d, pvc[k]):   # a patch may reorder the volumes
            x["spec"]["template"]["spec"]["volumes"].sort(key=lambda v: v["name"])
    assert pvc[k] == d, "differs from the base: " + str(k)
keep = [d for d in pvc.values() if not (d["apiVersion"].startswith("cert-manager.io/")
        and d["kind"] in ("Issuer", "Certificate"))]
with open(sys.argv[3], "w") as out:
    yaml.safe_dump_all(keep, out, sort_keys=False)
PY
st=$?
is "$st" 0 "... the state volume is claim decod-state (base: emptyDir), mounted by every container, nothing else changed"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/pvc.out" | tail -5
kubectl_admin apply --server-side --dry-run=server --field-manager=decod-deploy \
    --validate=strict -f "$T/persistent-apply.yaml" >"$T/pvc-apply.out" 2>&1
st=$?
is "$st" 0 "... and the API server accepts it (server-side dry run, strict validation)"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/pvc-apply.out" | tail -10
check "... the claim among what it would apply" grep -q '^persistentvolumeclaim/decod-state serverside-applied (server dry run)' "$T/pvc-apply.out"
bvol=$(kubectl_admin -n decod-system get deployment decod \
    -o jsonpath='{.spec.template.spec.volumes[?(@.name=="state")]}')
case $bvol in *emptyDir*) st=0 ;; *) st=1 ;; esac
ok $st "... the applied base's Deployment still has its emptyDir state ($bvol)"

# --- the web component: the web stage's container and its Service ----------
mkdir -p "$T/web"
printf 'resources: [%s]\ncomponents: [%s/components/web]\n' "$rel" "$rel" \
    >"$T/web/kustomization.yaml"
# (at the depth of $T/persistent: the same relative path)
kubectl kustomize "$T/web" >"$T/web.yaml" 2>"$T/web.err"
st=$?
is "$st" 0 "kubectl kustomize renders deploy/ with components/web"
[ "$st" -eq 0 ] || sed 's/^/# /' "$T/web.err"
$PY - "$T/rendered.yaml" "$T/web.yaml" "$T/web-apply.yaml" >"$T/webc.out" 2>&1 <<'PY'
import sys, yaml
def load(p):
    return [d for d in yaml.safe_load_all(open(p)) if d]
def key(d):
    return (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
base = {key(d): d for d in load(sys.argv[1])}
web = {key(d): d for d in load(sys.argv[2])}
pod = web[("Deployment", "decod-system", "decod")]["spec"]["template"]["spec"]
bpod = base[("Deployment", "decod-system", "decod")]["spec"]["template"]["spec"]
c = [x for x in pod["containers"] if x["name"] == "web"][0]
assert "web" not in [x["name"] for x in bpod["containers"]], "web is in the base"
assert c["command"][0] == "/usr/libexec/decod/web", c["command"]
cmd = " ".join(c["command"])
assert "--web-listen 0.0.0.0:8080" in cmd and "--web-token-file /etc/decod-web/token" in cmd, cmd
assert c["ports"] == [{"name": "web", "containerPort": 8080, "protocol": "TCP"}], c["ports"]
for p in ("startupProbe", "readinessProbe", "livenessProbe"):
    assert c[p]["httpGet"] == {"path": "/healthz", "port": "web"}, (p, c[p])
sec = [v for v in pod["volumes"] if v["name"] == "web-secrets"][0]
assert sec["secret"]["secretName"] == "decod-web" and sec["secret"]["defaultMode"] == 0o400, sec
mounts = {m["name"]: m for m in c["volumeMounts"]}
assert mounts["web-secrets"] == {"name": "web-secrets", "mountPath": "/etc/decod-web",
                                 "readOnly": True}, mounts
assert mounts["state"]["mountPath"] == "/var/lib/decod" and mounts["config"]["readOnly"]
assert c["securityContext"]["readOnlyRootFilesystem"] and not c["securityContext"]["allowPrivilegeEscalation"]
svc = web[("Service", "decod-system", "decod-web")]
assert svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}], svc
assert svc["spec"]["selector"].items() <= web[("Deployment", "decod-system", "decod")]["spec"]["template"]["metadata"]["labels"].items()
# only the container, its volume and the Service differ from the base
assert set(web) - set(base) == {("Service", "decod-system", "decod-web")}, set(web) - set(base)
for k, d in base.items():
    if k != ("Deployment", "decod-system", "decod"):
        assert web[k] == d, "differs from the base: " + str(k)
keep = [d for d in web.values() if not (d["apiVersion"].startswith("cert-manager.io/")
        and d["kind"] in ("Issuer", "Certificate"))]
with open(sys.argv[3], "w") as out:
    yaml.safe_dump_all(keep, out, sort_keys=False)
PY
st=$?
is "$st" 0 "... the web container (its command, port 8080, httpGet /healthz probes, Secret decod-web mounted read-only 0400) and Service decod-web (80 -> web), nothing else changed"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/webc.out" | tail -5
kubectl_admin apply --server-side --dry-run=server --field-manager=decod-deploy \
    --validate=strict -f "$T/web-apply.yaml" >"$T/web-apply.out" 2>&1
st=$?
is "$st" 0 "... and the API server accepts it (server-side dry run, strict validation)"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/web-apply.out" | tail -10
check "... Service decod-web among what it would apply" grep -q '^service/decod-web serverside-applied (server dry run)' "$T/web-apply.out"

# a Decofile the Go operator's CRD accepts validates strictly
kubectl_admin create namespace sites-loja >/dev/null
cat >"$T/df.yaml" <<'EOF'
apiVersion: deco.sites/v1alpha1
kind: Decofile
metadata:
  name: loja
  namespace: sites-loja
spec:
  source: github
  github: {org: deco-sites, repo: loja, commit: main, path: .deco/blocks/}
  target: tanstack-kv
  tanstackKV: {kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10, siteOrigin: "https://www.loja.com.br"}
  endpoints:
    - http://10.0.0.1:8000
    - {url: "http://10.0.0.2:8000", style: poll, tsFile: /app/decofile/timestamp.txt}
EOF
kubectl_admin apply --server-side --field-manager=decod-deploy --validate=strict -f "$T/df.yaml" \
    >"$T/df.out" 2>&1
is "$?" 0 "a Decofile with every form the operator accepts passes strict validation"
sed 's/^/#   /' "$T/df.out" | grep -iv 'serverside-applied' | head -5

# --- as the ServiceAccount deploy/ creates -----------------------------------
kube_sa_kubeconfig decod-system decod "$T/sa.kubeconfig" ||
    bail "no TokenRequest token for decod-system/decod"
can() { kubectl --kubeconfig "$T/sa.kubeconfig" auth can-i "$@" 2>/dev/null; }
check "the token is the account's, not the admin's" sh -c \
    "kubectl --kubeconfig '$T/sa.kubeconfig' auth whoami -o jsonpath='{.status.userInfo.username}' 2>/dev/null |
     grep -qx system:serviceaccount:decod-system:decod"

set -f		# the rows below hold '*'
# must: each verb a stage uses (namespace: a site's, except the Lease)
S=sites-loja
while read -r args why; do
	[ -n "$args" ] || continue
	# shellcheck disable=SC2086
	is "$(can $(echo "$args" | tr , ' '))" yes "may $args ($why)"
done <<EOF
get,decofiles.deco.sites,-n,$S fetcher: mirror the CRs
list,decofiles.deco.sites,-A fetcher: list every namespace
watch,decofiles.deco.sites,-A fetcher: watch every namespace
list,decofiletemplates.deco.sites,-A fetcher: templates
watch,decofiletemplates.deco.sites,-A fetcher: templates
patch,decofiles.deco.sites,--subresource=status,-n,$S front door: the merged status by SSA (manager decod)
patch,decofiletemplates.deco.sites,--subresource=status,-n,$S front door: template status
patch,decofiletemplates.deco.sites,-n,$S front door: adopt a CR (the old managers' managedFields removed)
update,decofiles.deco.sites,--subresource=finalizers,-n,$S publisher: blockOwnerDeletion
patch,decofiles.deco.sites,-n,$S fetcher: consume deco.sites/rollback-to, hold with spec.suspend
create,configmaps,-n,$S publisher: decofile-NAME
patch,configmaps,-n,$S publisher: SSA and drift repair
get,configmaps,-n,$S publisher: adopt
list,configmaps,-A publisher: drift watch
watch,configmaps,-A publisher: drift watch
delete,configmaps,-n,$S publisher: a removed Decofile with detach off
list,pods,-A notifier: replicas by label
watch,pods,-A notifier: replicas by label
get,leases.coordination.k8s.io/decod-leader,-n,decod-system leader election: read
update,leases.coordination.k8s.io/decod-leader,-n,decod-system leader election: renew, take over
create,leases.coordination.k8s.io,-n,decod-system leader election: first holder
list,namespaces acl: namespaces annotated for Valkey
watch,namespaces acl: namespaces annotated for Valkey
get,namespaces/$S acl: namespaces annotated for Valkey
patch,namespaces/$S acl: its finalizer, a refused annotation removed
create,secrets,-n,$S acl: valkey-acl
get,secrets/valkey-acl,-n,$S acl: valkey-acl
patch,secrets/valkey-acl,-n,$S acl: valkey-acl (server-side apply)
delete,secrets/valkey-acl,-n,$S acl: a namespace that drops the annotation
list,secrets/valkey-acl,-A acl: informer with fieldSelector=metadata.name=valkey-acl
watch,secrets/valkey-acl,-A acl: informer with fieldSelector=metadata.name=valkey-acl
create,events.events.k8s.io,-n,$S front door: an Event on a CR's condition change
patch,events.events.k8s.io,-n,$S front door: an Event's series when it repeats
EOF

# must not
while read -r args why; do
	[ -n "$args" ] || continue
	# shellcheck disable=SC2086
	is "$(can $(echo "$args" | tr , ' '))" no "may not $args ($why)"
done <<EOF
*,* cluster-admin-like
*,*,-n,$S admin of a site namespace
get,secrets,-n,$S any Secret but valkey-acl
list,secrets,-A Secrets of every namespace
watch,secrets,-A Secrets of every namespace
get,secrets/decod-webhook-tls,-n,decod-system its own TLS key is the kubelet's business
get,secrets/other,-n,kube-system another namespace's Secret
update,secrets/valkey-acl,-n,$S the acl stage only patches (server-side apply)
update,decofiles.deco.sites,--subresource=status,-n,$S the front door only applies (patch)
delete,secrets/other,-n,$S other Secrets
create,pods/exec,-n,$S exec into sites
create,pods,-n,$S run pods
delete,pods,-n,$S kill replicas
get,pods/log,-n,$S read site logs
delete,namespaces delete namespaces
create,namespaces make namespaces
update,namespaces change namespaces
create,decofiles.deco.sites,-n,$S the CRs' spec is the user's
update,decofiles.deco.sites,-n,$S the CRs' spec is the user's
delete,decofiles.deco.sites,-n,$S the CRs' spec is the user's
get,leases.coordination.k8s.io/kube-scheduler,-n,kube-system other components' Leases
update,leases.coordination.k8s.io/other,-n,decod-system Leases other than decod-leader
create,leases.coordination.k8s.io,-n,$S Leases outside decod-system
patch,mutatingwebhookconfigurations/decod rewrite its own webhook
escalate,clusterroles grant itself more
bind,clusterroles grant itself more
create,serviceaccounts/token,-n,decod-system mint tokens
update,deployments.apps,-n,decod-system change its own Deployment
get,nodes nodes
create,events,-n,$S Events only through events.k8s.io
get,events.events.k8s.io,-n,$S the front door never reads Events
list,events.events.k8s.io,-A the front door never reads Events
update,events.events.k8s.io,-n,$S Events: create and patch only
delete,events.events.k8s.io,-n,$S Events: create and patch only
EOF
set +f

done_testing
