#!/bin/sh
# webhook_etcd.sh - two webhook instances on one real etcd answer alike:
# a Service injected through one is recorded in etcd, and the other refuses
# to delete its Decofile; a Decofile added to etcd reaches both through the
# watch; the Service's deletion seen by one frees the Decofile on both; and
# with etcd stopped, admissions are still answered from memory at once.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"
. "$top_srcdir/t/integration/webhook_lib.sh"
webhook_prereqs

etcd_start || bail "etcd did not start"
make_ca "$T" && make_cert "$T" tls || bail "openssl could not make the test certificates"
conf() { # conf N: instance N's config (its own state and runtime folders)
	cat > "$T/conf$1" <<CONF
state_dir = $T/state$1
runtime_dir = $T/run$1
store = etcd:$ETCD_URL
etcd_timeout = 2s
webhook_listen = 127.0.0.1:0
webhook_cert_file = $T/tls.crt
webhook_key_file = $T/tls.key
default_target = configmap
CONF
}
conf 1
conf 2
printf '{"apiVersion":"deco.sites/v1alpha1","kind":"Decofile","metadata":{"name":"loja","namespace":"sites-x"},"spec":{"source":"inline","inline":{"value":{"A":1}}}}' \
    > "$T/df.json"
"$TOOL" -c "$T/conf1" apply "$T/df.json" >/dev/null || bail "cannot put the Decofile in etcd"
start_webhook "$T/conf1" "$T/w1.log"; P1=$WH_PORT; PID1=$WH_PID
start_webhook "$T/conf2" "$T/w2.log"; P2=$WH_PORT

post() { # post PORT PATH FILE OUT
	curl -s --cacert "$T/ca.crt" -o "$4" -w '%{http_code}' -H 'Content-Type: application/json' \
	    --max-time 5 --data-binary "@$3" "https://127.0.0.1:$1$2"
}
MUT=/mutate-serving-knative-dev-v1-service
VAL=/validate-deco-sites-v1alpha1-decofile
TRK=/validate-serving-knative-dev-v1-service
printf '{"metadata":{"name":"web","namespace":"sites-x","annotations":{"deco.sites/decofile-inject":"true"},"labels":{"app.deco/deploymentId":"%s"}},"spec":{"template":{"spec":{"containers":[{"name":"app"}]}}}}' \
    loja > "$T/web.json"
wh review CREATE "$T/web.json" - > "$T/web.review"
printf '{"metadata":{"name":"loja","namespace":"sites-x"}}' > "$T/dfobj.json"
wh review DELETE - "$T/dfobj.json" deco.sites/v1alpha1/Decofile > "$T/del.review"

post "$P1" "$MUT" "$T/web.review" "$T/r1" >/dev/null
check "instance 1 injects the Service" grep -q '"patch"' "$T/r1"
refused_on() { # refused_on PORT: the Decofile delete is refused there
	post "$1" "$VAL" "$T/del.review" "$T/d$1" >/dev/null &&
	    [ "$(wh field "$T/d$1" response.allowed)" = false ]
}
check "instance 2 refuses to delete its Decofile (the record came through etcd)" \
    wait_for 10 refused_on "$P2"
check "the record is in etcd" sh -c "etcdctl --endpoints '$ETCD_URL' get --prefix /decod/injected/ | grep -q '\"decofile\":\"loja\"'"

# a Decofile put in etcd now reaches both
sed 's/"loja"/"blog"/' "$T/df.json" > "$T/df2.json"
"$TOOL" -c "$T/conf1" apply "$T/df2.json" >/dev/null
sed 's/"app.deco\/deploymentId":"loja"/"app.deco\/deploymentId":"blog"/; s/"name":"web"/"name":"news"/' \
    "$T/web.json" > "$T/news.json"
wh review CREATE "$T/news.json" - > "$T/news.review"
injects_on() { post "$1" "$MUT" "$T/news.review" "$T/n$1" >/dev/null && grep -q '"patch"' "$T/n$1"; }
check "a new Decofile in etcd reaches instance 1" wait_for 10 injects_on "$P1"
check "... and instance 2" wait_for 10 injects_on "$P2"

# the Service's deletion, seen by instance 2, frees the Decofile on instance 1
wh review DELETE - "$T/web.json" > "$T/webdel.review"
post "$P2" "$TRK" "$T/webdel.review" "$T/wd" >/dev/null
allowed_on() {
	post "$1" "$VAL" "$T/del.review" "$T/a$1" >/dev/null &&
	    [ "$(wh field "$T/a$1" response.allowed)" = true ]
}
check "a Service deleted through instance 2 frees its Decofile on instance 1" \
    wait_for 10 allowed_on "$P1"

# etcd gone: answers still come from memory, at once
etcd_stop
t0=$(date +%s%N)
post "$P1" "$MUT" "$T/web.review" "$T/r3" >/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "with etcd stopped, instance 1 still injects" grep -q '"patch"' "$T/r3"
check "... answering in under a second (${ms} ms; etcd_timeout is 2 s)" test "$ms" -lt 1000
check "... and queues the record for when etcd is back" \
    wait_for 10 sh -c "curl -s --cacert '$T/ca.crt' https://127.0.0.1:$P1/metrics | grep -q '^decod_webhook_record_writes_pending 1$'"
etcd_restart || bail "etcd did not come back"
check "once etcd is back the record is written" \
    wait_for 20 sh -c "curl -s --cacert '$T/ca.crt' https://127.0.0.1:$P1/metrics | grep -q '^decod_webhook_record_writes_pending 0$'"
check "instance 2 sees it again" wait_for 20 refused_on "$P2"
kill -0 "$PID1"
is "$?" 0 "instance 1 lived through the etcd outage"
done_testing
