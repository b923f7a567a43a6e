#!/bin/sh
# crd_decofile - deploy/'s Decofile CRD against every kind of object the Go
# Deco operator's CRD accepts (issue 24, defects 2 and 13), through a real
# API server with strict field validation: inline and github sources, each
# target (configmap, s3, tanstack-kv with tanstackKV), with and without the
# optional fields, accented block names and data.  kubectl apply
# --validate=strict (client-side and server-side) and python3-kubernetes
# (fieldValidation=Strict) store each as written, plus target configmap where
# it names none (the Go operator's default); decod's spec.github.period
# passes too.  The Go operator's CEL rules refuse, with their own message,
# tanstack-kv without tanstackKV (on create and on a patch) and tanstack-kv
# with source inline; the schema an empty or missing kvNamespaceId and a
# misspelt field.  decoctl apply --strict accepts the same files.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"

DECOCTL=$top_builddir/decoctl
[ -x "$DECOCTL" ] || bail "decoctl not built"
$KUBE_PY -c 'import yaml, kubernetes' 2>/dev/null || skip_all "python3-yaml or python3-kubernetes not installed"

kube_start
kube_apply_deploy || bail "deploy/ does not apply"
kubectl_admin create namespace sites-loja >/dev/null
kubectl_admin create namespace sites-py >/dev/null

# --- the objects: name, then the spec (YAML) --------------------------------
mkdir -p "$T/ok" "$T/bad"
obj() { # obj DIR NAME: a Decofile named NAME whose spec is on standard input
	{
		printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\n'
		printf 'metadata:\n  name: %s\n  namespace: sites-loja\nspec:\n' "$2"
		sed 's/^/  /'
	} >"$T/$1/$2.yaml"
}
obj ok inline-min <<'Y'
source: inline
inline:
  value:
    Página Institucional: {title: "Promoção de verão", body: "<p>Frete grátis & devolução</p>"}
    Campaign Timer - 01: {ends: "2026-12-31T23:59:59-03:00"}
Y
obj ok inline-full <<'Y'
source: inline
inline:
  value:
    Header: {logo: "/açaí.png", links: ["Início", "Promoções"]}
    日本語ページ: {title: "ようこそ"}
deploymentId: loja-acai
silent: true
target: configmap
Y
obj ok github-min <<'Y'
source: github
github: {org: deco-sites, repo: loja-sao-joao, commit: main, path: .deco/blocks}
Y
obj ok github-full <<'Y'
source: github
github:
  org: deco-sites
  repo: loja-sao-joao
  commit: 3f2a9c1e0b7d4a6f8e5c2b1a0d9e8f7a6b5c4d3e
  path: .deco/blocks/
  secret: github-token
deploymentId: loja-sao-joao
silent: false
target: configmap
Y
obj ok github-s3 <<'Y'
source: github
github: {org: deco-sites, repo: blog-culinaria, commit: main, path: .deco/blocks}
target: s3
Y
obj ok tanstack-min <<'Y'
source: github
github: {org: deco-sites, repo: loja-tanstack, commit: main, path: .deco/blocks/}
target: tanstack-kv
tanstackKV: {kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10}
Y
obj ok tanstack-full <<'Y'
source: github
github: {org: deco-sites, repo: loja-tanstack, commit: v1.2.0, path: .deco/blocks/, secret: github-token}
deploymentId: loja-tanstack
silent: true
target: tanstack-kv
tanstackKV:
  kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10
  siteOrigin: https://www.loja-tanstack.com.br
Y
# decod's own: a ref polled every period (doc/sources.md)
obj ok github-period <<'Y'
source: github
github: {org: deco-sites, repo: loja-sao-joao, commit: main, path: .deco/blocks, period: 2m}
Y

obj bad tanstack-no-kv <<'Y'
source: github
github: {org: deco-sites, repo: loja-tanstack, commit: main, path: .deco/blocks/}
target: tanstack-kv
Y
obj bad tanstack-inline <<'Y'
source: inline
inline: {value: {Header: {title: "Olá"}}}
target: tanstack-kv
tanstackKV: {kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10}
Y
obj bad tanstack-empty-id <<'Y'
source: github
github: {org: deco-sites, repo: loja-tanstack, commit: main, path: .deco/blocks/}
target: tanstack-kv
tanstackKV: {kvNamespaceId: "", siteOrigin: https://www.loja-tanstack.com.br}
Y
obj bad tanstack-no-id <<'Y'
source: github
github: {org: deco-sites, repo: loja-tanstack, commit: main, path: .deco/blocks/}
target: tanstack-kv
tanstackKV: {siteOrigin: https://www.loja-tanstack.com.br}
Y
obj bad typo <<'Y'
source: github
github: {org: deco-sites, repo: loja-tanstack, commit: main, path: .deco/blocks/}
target: tanstack-kv
tanstackKv: {kvNamespaceId: 0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10}
Y

# stored_as_written FILE JSON: the stored spec is the file's, plus target
# configmap when the file names none
stored_as_written() {
	$KUBE_PY - "$1" "$2" <<'PY'
import json, sys, yaml
want = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))["spec"]
want.setdefault("target", "configmap")
got = json.load(open(sys.argv[2], encoding="utf-8"))["spec"]
if got != want:
    print("# want " + json.dumps(want, ensure_ascii=False, sort_keys=True))
    print("# got  " + json.dumps(got, ensure_ascii=False, sort_keys=True))
    sys.exit(1)
PY
}

# --- kubectl apply --validate=strict: accepted, stored with the default -----
# client-side (what the issue ran) in sites-loja, server-side in sites-ssa
APPLY="kubectl_admin apply --validate=strict"
SSA="kubectl_admin apply --server-side --field-manager=go-operator-manifests --validate=strict"
kubectl_admin create namespace sites-ssa >/dev/null
in_ssa() { sed 's/^  namespace: sites-loja$/  namespace: sites-ssa/' "$1"; }
for f in "$T"/ok/*.yaml; do
	n=$(basename "$f" .yaml)
	dflt=$(grep -q '^  target:' "$f" || echo ', target configmap')
	$APPLY -f "$f" >"$T/out" 2>&1
	st=$?
	is "$st" 0 "kubectl apply --validate=strict accepts $n"
	[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/out"
	check "... without a warning" sh -c "! grep -qi warning '$T/out'"
	kubectl_admin -n sites-loja get decofile "$n" -o json >"$T/$n.json"
	check "... stored as written$dflt" stored_as_written "$f" "$T/$n.json"
	in_ssa "$f" | $SSA -f - >"$T/out" 2>&1
	st=$?
	is "$st" 0 "... and kubectl apply --server-side --validate=strict"
	[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/out"
	check "... without a warning" sh -c "! grep -qi warning '$T/out'"
	kubectl_admin -n sites-ssa get decofile "$n" -o json >"$T/$n.json"
	check "... stored as written$dflt" stored_as_written "$f" "$T/$n.json"
done
is "$(kubectl_admin -n sites-loja get decofile github-min -o jsonpath='{.spec.target}')" configmap \
    "a Decofile without target reads back target configmap (the API server's default)"
is "$(kubectl_admin -n sites-loja get decofile github-period -o jsonpath='{.spec.github.period}')" 2m \
    "spec.github.period is kept"
# a second apply of the same manifests changes nothing (the default is not a diff)
gen=$(kubectl_admin -n sites-loja get decofile github-min -o jsonpath='{.metadata.generation}')
$APPLY -f "$T/ok/github-min.yaml" >/dev/null 2>&1
in_ssa "$T/ok/github-min.yaml" | $SSA -f - >/dev/null 2>&1
is "$(kubectl_admin -n sites-loja get decofile github-min -o jsonpath='{.metadata.generation}') $(
    kubectl_admin -n sites-ssa get decofile github-min -o jsonpath='{.metadata.generation}')" \
    "$gen 1" "re-applying a manifest without target leaves the generation alone (both ways)"

# --- the CEL rules and the schema refuse, with the API server's message -----
refused() { # refused NAME WORDS DESC
	$APPLY -f "$T/bad/$1.yaml" >"$T/out" 2>&1
	st=$?
	if [ "$st" -ne 0 ] && grep -qF -- "$2" "$T/out"; then ok 0 "$3"
	else ok 1 "$3"; diag "rc=$st: $(cat "$T/out")"; fi
	check "... and $1 is not stored" sh -c \
	    "! kubectl --kubeconfig '$KUBE_DIR/admin.kubeconfig' -n sites-loja get decofile $1 >/dev/null 2>&1"
}
refused tanstack-no-kv "spec.tanstackKV is required when target is tanstack-kv" \
    "tanstack-kv without tanstackKV is refused (CEL rule, its message)"
refused tanstack-inline "source must be 'github' when target is tanstack-kv" \
    "tanstack-kv with source inline is refused (CEL rule, its message)"
refused tanstack-empty-id "spec.tanstackKV.kvNamespaceId: Invalid value" \
    "an empty kvNamespaceId is refused (minLength 1)"
refused tanstack-no-id "spec.tanstackKV.kvNamespaceId: Required value" \
    "tanstackKV without kvNamespaceId is refused"
refused typo 'strict decoding error: unknown field "spec.tanstackKv"' \
    "a misspelt tanstackKV is refused by strict field validation"
in_ssa "$T/bad/typo.yaml" | $SSA -f - >"$T/out" 2>&1
st=$?
if [ "$st" -ne 0 ] && grep -qF '.spec.tanstackKv: field not declared in schema' "$T/out"
then ok 0 "... and by server-side apply"
else ok 1 "... and by server-side apply"; diag "rc=$st: $(cat "$T/out")"; fi
# an update is held to the rules too: configmap to tanstack-kv without tanstackKV
kubectl_admin -n sites-loja patch decofile github-min --type merge \
    -p '{"spec":{"target":"tanstack-kv"}}' >"$T/out" 2>&1
st=$?
if [ "$st" -ne 0 ] && grep -qF "spec.tanstackKV is required when target is tanstack-kv" "$T/out"
then ok 0 "a patch to tanstack-kv without tanstackKV is refused"
else ok 1 "a patch to tanstack-kv without tanstackKV is refused"; diag "$(cat "$T/out")"; fi
is "$(kubectl_admin -n sites-loja get decofile github-min -o jsonpath='{.spec.target}')" configmap \
    "... and the stored target is still configmap"

# --- python3-kubernetes, fieldValidation=Strict -----------------------------
$KUBE_PY - "$KUBE_DIR/admin.kubeconfig" "$T" >"$T/py.out" 2>&1 <<'PY'
import glob, json, os, sys, yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
api = client.ApiClient()
path = "/apis/deco.sites/v1alpha1/namespaces/sites-py/decofiles"

def post(obj):
    obj["metadata"]["namespace"] = "sites-py"
    try:
        got = api.call_api(path, "POST", query_params=[("fieldValidation", "Strict")],
                           body=obj, response_type="object", auth_settings=["BearerToken"],
                           _return_http_data_only=True)
        return 201, got
    except ApiException as e:
        return e.status, json.loads(e.body).get("message", "")

for f in sorted(glob.glob(os.path.join(sys.argv[2], "ok", "*.yaml"))):
    obj = yaml.safe_load(open(f, encoding="utf-8"))
    want = dict(obj["spec"])
    want.setdefault("target", "configmap")
    code, got = post(obj)
    good = code == 201 and got["spec"] == want
    print("ok" if good else "FAIL", obj["metadata"]["name"], code if not good else "")
for f in sorted(glob.glob(os.path.join(sys.argv[2], "bad", "*.yaml"))):
    obj = yaml.safe_load(open(f, encoding="utf-8"))
    code, msg = post(obj)
    print("refused" if code in (400, 422) else "ACCEPTED", obj["metadata"]["name"], code,
          msg.replace("\n", " "))
PY
is "$?" 0 "python3-kubernetes posts every object"
sed 's/^/#   /' "$T/py.out"
is "$(grep -c '^ok ' "$T/py.out")" "$(ls "$T"/ok/*.yaml | wc -l)" \
    "python3-kubernetes, fieldValidation=Strict: each accepted object is created and stored with the default"
is "$(grep -c '^refused ' "$T/py.out")" "$(ls "$T"/bad/*.yaml | wc -l)" \
    "... and each refused one is refused"
check "... tanstack-kv without tanstackKV with the CEL rule's message" \
    grep -q '^refused tanstack-no-kv 422 .*spec.tanstackKV is required when target is tanstack-kv' "$T/py.out"
check "... a misspelt field as a strict decoding error" \
    grep -q '^refused typo 400 .*strict decoding error: unknown field "spec.tanstackKv"' "$T/py.out"

# --- decoctl apply --strict takes the same files ----------------------------
cat >"$T/decod.conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
CONF
export DECOD_CONFIG="$T/decod.conf"
for f in "$T"/ok/*.yaml; do
	n=$(basename "$f" .yaml)
	"$DECOCTL" apply --strict -f "$f" >"$T/out" 2>"$T/err"
	st=$?
	if [ "$st" -eq 0 ] && [ ! -s "$T/err" ]; then ok 0 "decoctl apply --strict accepts $n"
	else ok 1 "decoctl apply --strict accepts $n"; diag "rc=$st: $(cat "$T/err")"; fi
done
"$DECOCTL" -n sites-loja get decofile github-period -o json >"$T/dc.json" 2>"$T/err"
is "$(jq -r .spec.github.period "$T/dc.json")" 2m "... and keeps spec.github.period"
"$DECOCTL" -n sites-loja get decofile tanstack-full -o json >"$T/dc.json" 2>"$T/err"
is "$(jq -c .spec.tanstackKV "$T/dc.json")" \
    '{"kvNamespaceId":"0f2c8e4b9a7d4c1e8f6b3a2d5c7e9f10","siteOrigin":"https://www.loja-tanstack.com.br"}' \
    "... and spec.tanstackKV"
"$DECOCTL" apply --strict -f "$T/bad/typo.yaml" >"$T/out" 2>"$T/err"
st=$?
check "decoctl apply --strict refuses the misspelt tanstackKv, naming it" sh -c \
    "[ $st -ne 0 ] && grep -q 'unknown field \"spec.tanstackKv\" (--strict)' '$T/err'"

done_testing
