#!/bin/sh
# etcd_tls - the etcd backend over https with a CA file and a client
# certificate (etcd started with --client-cert-auth); without the client
# certificate, or with the wrong CA, it fails with a clear error.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/etcd.sh"
command -v openssl >/dev/null 2>&1 || skip_all "openssl not installed"

drv="$top_builddir/t/unit/store_etcd_test"
cd "$T" || bail "no $T"
mkcert() { # mkcert NAME SUBJECT [SAN]
	openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null &&
	if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\n' "$3" >"$1.ext"; else : >"$1.ext"; fi &&
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
	    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -subj "/CN=decod test CA" -days 2 \
    -out ca.pem 2>/dev/null || bail "openssl CA"
openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -subj "/CN=other CA" -days 2 \
    -out other.pem 2>/dev/null || bail "openssl other CA"
mkcert server "/CN=127.0.0.1" "IP:127.0.0.1" || bail "openssl server cert"
mkcert client "/CN=decod" || bail "openssl client cert"

cp=$(free_port)
pp=$(free_port)
_etcd_prepare e1 "$cp" "$pp" "e1=http://127.0.0.1:$pp"
sed -i "s#http://127.0.0.1:$cp#https://127.0.0.1:$cp#g" "$T/etcd-e1.args"
echo "--cert-file $T/server.pem --key-file $T/server.key --trusted-ca-file $T/ca.pem --client-cert-auth" \
    >>"$T/etcd-e1.args"
echo "https://127.0.0.1:$cp" >"$T/etcd-e1.url"
_etcd_spawn e1
U="https://127.0.0.1:$cp"
healthy() { curl -sf --cacert ca.pem --cert client.pem --key client.key "$U/health" | grep -q true; }
check "etcd with TLS is up" wait_for 30 healthy

export DECOD_ETCD_TIMEOUT=2s DECOD_ETCD_CACERT="$T/ca.pem"
DECOD_ETCD_CERT="$T/client.pem" DECOD_ETCD_KEY="$T/client.key" "$drv" puts "etcd:$U" /tls/ 1 20
is "$?" 0 "puts over mTLS"
got=$(curl -sf --cacert ca.pem --cert client.pem --key client.key "$U/v3/kv/range" \
    -d '{"key":"L3Rscy8=","range_end":"L3RsczA=","count_only":true}' | sed -n 's/.*"count":"\([0-9]*\)".*/\1/p')
is "$got" 20 "the keys are in etcd"
DECOD_ETCD_CERT="$T/client.pem" DECOD_ETCD_KEY="$T/client.key" "$drv" take "etcd:$U" /tls/lock 2000 >take.out
is "$?" 0 "lock over mTLS"

out=$("$drv" puts "etcd:$U" /tls/ 1 1 2>&1)
is "$?" 2 "without a client certificate: refused"
diag "$out"
out=$(DECOD_ETCD_CACERT="$T/other.pem" DECOD_ETCD_CERT="$T/client.pem" DECOD_ETCD_KEY="$T/client.key" \
    "$drv" puts "etcd:$U" /tls/ 1 1 2>&1)
is "$?" 2 "wrong CA: refused"
case "$out" in *"$U"*) r=0 ;; *) r=1 ;; esac
ok $r "the error names the endpoint: $out"
out=$(DECOD_ETCD_CERT="$T/client.pem" "$drv" puts "etcd:$U" /tls/ 1 1 2>&1)
case "$out" in *"etcd_cert and etcd_key"*) r=0 ;; *) r=1 ;; esac
ok $r "a certificate without its key is a setting error: $out"
done_testing
