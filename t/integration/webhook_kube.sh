#!/bin/sh
# webhook_kube.sh - the webhook behind a real API server (t/lib/kube.sh):
# deploy/webhook's configurations, pointed at the stage on 127.0.0.1 with
# a caBundle, and a minimal Knative Service CRD (t/knative-service-crd.yaml).
# With kubectl: an annotated Service is created injected; the same manifest
# applied again server-side (what a GitOps sync sends: the containers list
# replaced whole) keeps its token and does not move metadata.generation; a
# Service without the annotation is untouched; one without the label is
# refused with the webhook's message; a Decofile that a Service uses cannot
# be deleted; a hand edit of a ConfigMap labelled managed-by decod is
# refused while decod's ServiceAccount may edit it.  Then the stage is stopped: Knative Service changes are
# refused (failurePolicy Fail) and Decofile deletes go through (Ignore), as
# doc/webhook.md says.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/kube.sh"
. "$top_srcdir/t/integration/webhook_lib.sh"
webhook_prereqs
$PY -c 'import yaml' 2>/dev/null || skip_all "python3-yaml not installed"

make_ca "$T" && make_cert "$T" tls || bail "openssl could not make the test certificates"
cat > "$T/conf" <<CONF
state_dir = $T/state
runtime_dir = $T/run
store = local:$T/store
webhook_listen = 127.0.0.1:0
webhook_cert_file = $T/tls.crt
webhook_key_file = $T/tls.key
default_target = configmap
CONF
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-x"},"spec":{"source":"inline","inline":{"value":{"A":1}},"target":"configmap"}}' \
    > "$T/df.json"
"$TOOL" -c "$T/conf" apply "$T/df.json" >/dev/null || bail "cannot put the Decofile in decod's store"
start_webhook "$T/conf" "$T/webhook.log"

kube_start
k() { kubectl_admin "$@"; }
quiet() { "$@" >/dev/null 2>&1; }
k apply -f "$top_srcdir/t/knative-service-crd.yaml" >/dev/null &&
    k apply -f "$top_srcdir/deploy/crd-decofile.yaml" >/dev/null || bail "cannot create the CRDs"
wait_for 30 k get ksvc -A || bail "the Knative Service CRD is not served"
wait_for 30 k get decofiles -A || bail "the Decofile CRD is not served"
k create namespace sites-x >/dev/null

# deploy/webhook's configurations with clientConfig pointed at the stage
$PY - "$top_srcdir/deploy/webhook" "$WH_PORT" "$T/ca.crt" > "$T/webhooks.yaml" <<'PY'
import base64, sys, yaml
d, port, ca = sys.argv[1], sys.argv[2], sys.argv[3]
bundle = base64.b64encode(open(ca, "rb").read()).decode()
out = []
for f in ("mutating.yaml", "validating.yaml"):
    for doc in yaml.safe_load_all(open(d + "/" + f)):
        doc["metadata"].pop("annotations", None)
        for w in doc["webhooks"]:
            path = w["clientConfig"]["service"]["path"]
            w["clientConfig"] = {"url": "https://127.0.0.1:%s%s" % (port, path),
                                 "caBundle": bundle}
        out.append(doc)
print(yaml.safe_dump_all(out))
PY
k apply -f "$T/webhooks.yaml" >/dev/null || bail "cannot apply the webhook configurations"

svc() { # svc NAME ANNOTATION-LINE LABEL-LINE: a Knative Service manifest
	cat <<Y
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: $1
  namespace: sites-x
  annotations: {$2}
  labels: {$3}
spec:
  template:
    spec:
      containers:
        - name: app
          image: localhost/site:1
Y
}
svc web '"deco.sites/decofile-inject": "true"' '"app.deco/deploymentId": loja' > "$T/web.yaml"
# the API server picks up new webhook configurations within a moment:
# wait until a server-side dry run comes back injected
injected_dry() {
	k apply --dry-run=server -o json -f "$T/web.yaml" 2>/dev/null | grep -q DECO_RELEASE
}
wait_for 30 injected_dry || bail "the API server does not call the webhook"
check "a dry run is not recorded as a Service in use" \
    test ! -e "$T/store/kv/decod.d/injected.d/sites-x.d/web.v"

k apply --server-side --field-manager=gitops -f "$T/web.yaml" >/dev/null 2>"$T/apply.err"
is "$?" 0 "the annotated Service is created"
k get ksvc -n sites-x web -o json > "$T/web1.json"
is "$(wh env "$T/web1.json" DECO_RELEASE)" "file:///app/decofile/decofile.bin" "it is injected: DECO_RELEASE"
is "$(wh field "$T/web1.json" spec.template.spec.volumes.0.configMap.name)" decofile-loja \
    "it is injected: the ConfigMap volume"
is "$(wh field "$T/web1.json" spec.template.metadata.labels)" '{"app.deco/deploymentId":"loja"}' \
    "it is injected: the template label"
TOKEN=$(wh env "$T/web1.json" DECO_RELEASE_RELOAD_TOKEN)
check "it is injected: a reload token" test ${#TOKEN} -eq 64
GEN=$(wh field "$T/web1.json" metadata.generation)

k apply --server-side --field-manager=gitops -f "$T/web.yaml" >/dev/null 2>>"$T/apply.err"
is "$?" 0 "the same manifest applied again (server-side: containers replaced whole)"
k get ksvc -n sites-x web -o json > "$T/web2.json"
is "$(wh field "$T/web2.json" metadata.generation)" "$GEN" "metadata.generation does not move"
is "$(wh env "$T/web2.json" DECO_RELEASE_RELOAD_TOKEN)" "$TOKEN" "the reload token is the same"
k apply -f "$T/web.yaml" >/dev/null 2>>"$T/apply.err"
k get ksvc -n sites-x web -o json > "$T/web3.json"
is "$(wh field "$T/web3.json" metadata.generation)" "$GEN" \
    "a client-side kubectl apply does not move it either"

svc plain '' '"app.deco/deploymentId": loja' > "$T/plain.yaml"
k apply -f "$T/plain.yaml" >/dev/null
k get ksvc -n sites-x plain -o json > "$T/plain.json"
is "$(wh container "$T/plain.json" env)" null "a Service without the annotation is untouched"

svc nolabel '"deco.sites/decofile-inject": "true"' '' > "$T/nolabel.yaml"
k apply -f "$T/nolabel.yaml" > "$T/nolabel.out" 2>&1
check "a Service without the label is refused" sh -c "! kubectl -n sites-x get ksvc nolabel >/dev/null 2>&1"
check "... with the webhook's message naming the label" \
    grep -q 'denied the request: .*no label app.deco/deploymentId' "$T/nolabel.out"

# the Decofile in the cluster, and its deletion while web uses it
printf 'apiVersion: deco.sites/v1alpha1\nkind: Decofile\nmetadata: {name: loja, namespace: sites-x}\nspec: {source: inline, inline: {value: {A: 1}}}\n' \
    > "$T/df.yaml"
k apply -f "$T/df.yaml" >/dev/null || bail "cannot create the Decofile"
k delete decofile -n sites-x loja > "$T/del.out" 2>&1
check "deleting a Decofile a Service uses is refused" quiet k get decofile -n sites-x loja
check "... naming the Service" grep -q 'in use by 1 Knative Service it was injected into: web' "$T/del.out"

# drift prevention: a ConfigMap decod manages, edited by hand and by decod
k create namespace decod-system >/dev/null
k -n decod-system create serviceaccount decod >/dev/null
k -n sites-x create role cm-writer --verb=get,update,patch --resource=configmaps >/dev/null
k -n sites-x create rolebinding decod-cm --role=cm-writer \
    --serviceaccount=decod-system:decod >/dev/null
kube_sa_kubeconfig decod-system decod "$T/decod.kubeconfig" || bail "no token for decod's account"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: decofile-loja\n  namespace: sites-x\n  labels: {app.kubernetes.io/managed-by: decod}\ndata: {timestamp.txt: "1"}\n' \
    > "$T/cm.yaml"
k apply -f "$T/cm.yaml" >/dev/null
k -n sites-x patch configmap decofile-loja -p '{"data":{"timestamp.txt":"2"}}' > "$T/drift.out" 2>&1
check "a hand edit of a ConfigMap decod manages is refused" \
    grep -q 'denied the request: ConfigMap sites-x/decofile-loja is managed by decod' "$T/drift.out"
is "$(k -n sites-x get configmap decofile-loja -o jsonpath='{.data.timestamp\.txt}')" 1 \
    "... and the ConfigMap is unchanged"
kubectl --kubeconfig "$T/decod.kubeconfig" -n sites-x patch configmap decofile-loja \
    -p '{"data":{"timestamp.txt":"3"}}' > "$T/drift2.out" 2>&1
is "$?" 0 "decod's own ServiceAccount may change it"
k -n sites-x patch configmap decofile-loja -p '{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}}}' \
    > "$T/drift3.out" 2>&1
check "removing the label by hand is an edit, refused too" grep -q 'managed by decod' "$T/drift3.out"

# the stage stops: the policies of doc/webhook.md
stop_webhook
svc web2 '"deco.sites/decofile-inject": "true"' '"app.deco/deploymentId": loja' > "$T/web2.yaml"
k apply -f "$T/web2.yaml" > "$T/down.out" 2>&1
check "webhook down: a Knative Service is not created un-injected (failurePolicy Fail)" \
    sh -c "! kubectl -n sites-x get ksvc web2 >/dev/null 2>&1"
check "... the error says the webhook could not be called" grep -q 'failed calling webhook' "$T/down.out"
k delete decofile -n sites-x loja > "$T/del2.out" 2>&1
is "$?" 0 "webhook down: a Decofile delete goes through (failurePolicy Ignore)"
done_testing
