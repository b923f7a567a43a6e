# t/lib/registry.sh - Debian's docker-registry on loopback for integration
# tests, with the test's own config files.  Source it after t/lib/common.sh.
#
#   reg_token_serve CREDS_FILE   the token stand-in (t/stand-in/token_server.py)
#                                with a fresh key pair; sets TOKEN_PORT
#   reg_serve NAME AUTH          a registry over $T/registry (shared storage);
#                                AUTH: token | htpasswd CREDS_FILE | none;
#                                sets REG_PORT; its log is $T/NAME.log
#   reg_requests NAME METHOD PATH_PREFIX  count of such requests in its access log

command -v docker-registry >/dev/null 2>&1 || skip_all "docker-registry is not installed"

reg_token_serve() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/token.key" \
	    -out "$T/token.crt" -days 2 -subj /CN=decod-test-token >/dev/null 2>&1 ||
		bail "cannot make the token key pair"
	python3 -c 'import cryptography' 2>/dev/null || skip_all "python3-cryptography is not installed"
	rm -f "$T/token.port"
	python3 "$top_srcdir/t/stand-in/token_server.py" --key "$T/token.key" --users "$1" \
	    --port-file "$T/token.port" >>"$T/token.err" 2>&1 &
	track_pid $!
	wait_for 10 test -s "$T/token.port" || bail "token stand-in did not start"
	TOKEN_PORT=$(cat "$T/token.port")
}

reg_serve() {
	REG_PORT=$(free_port)
	{
		printf 'version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n'
		printf 'storage:\n  filesystem:\n    rootdirectory: %s/registry\n' "$T"
		printf '  delete:\n    enabled: true\n'
		printf 'http:\n  addr: 127.0.0.1:%s\n  secret: decod-test-%s\n' "$REG_PORT" "$1"
		case $2 in
		token)
			printf 'auth:\n  token:\n    realm: http://127.0.0.1:%s/token\n' "$TOKEN_PORT"
			printf '    service: decod-test-registry\n    issuer: decod-test-issuer\n'
			printf '    rootcertbundle: %s/token.crt\n' "$T" ;;
		htpasswd)
			cut -d: -f2- "$3" | tr -d '\n' | htpasswd -niB "$(cut -d: -f1 "$3")" \
			    >"$T/htpasswd" 2>/dev/null || bail "htpasswd failed"
			printf 'auth:\n  htpasswd:\n    realm: decod-test-basic\n    path: %s/htpasswd\n' "$T" ;;
		esac
	} >"$T/$1.yml"
	docker-registry serve "$T/$1.yml" >>"$T/$1.log" 2>&1 &
	track_pid $!
	wait_for 10 port_open "$REG_PORT" || bail "docker-registry $1 did not listen on $REG_PORT"
}

reg_requests() {
	grep -c "\"$2 /v2/[^ ]*$3[^ ]* HTTP/1.1\" [0-9]* [0-9]* \"\" \"decod-fetcher" "$T/$1.log"
}
