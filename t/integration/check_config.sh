#!/bin/sh
# check_config - `decod --check-config` refuses durations and sizes that are
# not finite, negative or too large, from a flag, the environment or the
# file, and every refusal names the setting (and the line, for the file).
# A good value still passes.  What start-up would meet (a store URL no
# backend reads, a stage without a program, a missing libexec_dir) is refused
# by --check-config and by decod itself (exit 78) before any stage runs; so
# is a file a setting in use names that cannot be read (kubeconfig, TLS and
# token files) and a port a setting listens on that is taken, each naming
# the setting.
. "$top_srcdir/t/lib/common.sh"

DECOD=$(bin decod)
# the stage programs where decod looks for them (an installed libexec_dir)
mkdir -p "$T/libexec"
for s in fetcher renderer publisher notifier; do ln -s "$(bin "$s")" "$T/libexec/$s"; done
printf 'libexec_dir = %s\n' "$T/libexec" >"$T/empty.conf"

"$DECOD" --check-config -c "$T/empty.conf" --journal-retention 72h >"$T/out" 2>&1
is "$?" 0 "--journal-retention 72h passes"

# setting value: one row per case, flag form
while read -r name value; do
	flag=--$(echo "$name" | tr _ -)
	"$DECOD" --check-config -c "$T/empty.conf" "$flag" "$value" >"$T/out" 2>&1
	st=$?
	check "$flag $value is refused (exit $st)" test "$st" -ne 0
	check "... naming $name" grep -q "$name" "$T/out"
done <<'ROWS'
journal_retention nan
journal_retention inf
journal_retention -1h
journal_retention 1e400
journal_retention 99999999999999999999h
housekeeping_interval NaN
rescan_interval -inf
compress_threshold nan
max_tree_size inf
max_tree_size -5MB
max_tree_size 1e30
ROWS

env DECOD_JOURNAL_RETENTION=nan "$DECOD" --check-config -c "$T/empty.conf" >"$T/out" 2>&1
st=$?
check "DECOD_JOURNAL_RETENTION=nan is refused (exit $st)" test "$st" -ne 0
check "... naming the variable" grep -q "DECOD_JOURNAL_RETENTION" "$T/out"

cp "$T/empty.conf" "$T/bad.conf"
printf 'journal_retention = infinity\n' >>"$T/bad.conf"
"$DECOD" --check-config -c "$T/bad.conf" >"$T/out" 2>&1
st=$?
check "journal_retention = infinity in the file is refused (exit $st)" test "$st" -ne 0
check "... naming the file, line and setting" grep -q "bad.conf:2: journal_retention" "$T/out"

# a port something else listens on (any address: metrics_port binds all)
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)' "$T/busy.port" &
track_pid $!
wait_for "$(scaled 10)" test -s "$T/busy.port" || bail "no listener for the taken port"
BUSY=$(cat "$T/busy.port")
mkdir -p "$T/tls dir"
printf 'not a key\n' >"$T/tls dir/étiqueta key.pem"

# what start-up would meet, one stage death at a time: each refused by
# --check-config with its reason, and by decod itself before any stage runs
while IFS='|' read -r what conf want; do
	cp "$T/empty.conf" "$T/c.conf"
	printf '%b\n' "$conf" >>"$T/c.conf"
	"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
	st=$?
	check "$what: --check-config refuses it (exit $st)" test "$st" -eq 1
	check "... saying \"$want\"" grep -qF "$want" "$T/out"
	mkdir -p "$T/run" "$T/state"
	printf 'state_dir = %s\nruntime_dir = %s\n' "$T/state" "$T/run" >>"$T/c.conf"
	timeout 20 "$DECOD" -c "$T/c.conf" >"$T/start" 2>&1
	st=$?
	is "$st" 78 "$what: decod does not start (EX_CONFIG, not a restart loop)"
	check "... and says why" grep -qF "$want" "$T/start"
	check "... having started nothing" sh -c "! grep -q 'supervisor running' '$T/start'"
done <<ROWS
a store no backend reads|store = bogus:/x|store: unknown scheme in "bogus:/x"
a store with no folder|store = local:|names no folder
a stage with no program|stages = fetcher bogus|stages: bogus: no program
a stage named twice|stages = fetcher renderer fetcher|stages: fetcher is named twice
a stage name that is a path|stages = fetcher ../../bin/sh|is not a stage name
no stage at all|stages = ,|stages: names no stage
a missing libexec_dir|libexec_dir = /nonexistent/libexec|libexec_dir: /nonexistent/libexec: No such file or directory
a kubeconfig that is not there|kubeconfig = $T/no such dir/kube config|kubeconfig: $T/no such dir/kube config: No such file or directory
a token file that is a folder|github_token_file = $T/tls dir|github_token_file: $T/tls dir is a folder, not a file
an etcd client certificate not there|etcd_cert = $T/tls dir/cliente%20cert.pem|etcd_cert: $T/tls dir/cliente%20cert.pem: No such file or directory
a reload token not there|reload_token_file = $T/reload-token|reload_token_file: $T/reload-token: No such file or directory
a stage address taken|addr_fetcher = tcp://127.0.0.1:$BUSY|addr_fetcher: cannot listen on tcp://127.0.0.1:$BUSY: Address already in use
a metrics port taken|metrics_port = $BUSY|metrics_port: cannot listen on $BUSY: Address already in use
a stage address that is no address|addr_renderer = tcp://nohost.invalid:x|addr_renderer: "tcp://nohost.invalid:x" is not HOST:PORT
ROWS
# what no configured stage reads is not checked; readable files and free ports pass
ln -s "$(bin webhook)" "$T/libexec/webhook"
cp "$T/empty.conf" "$T/c.conf"
printf 'webhook_cert_file = %s\nwebhook_listen = 127.0.0.1:%s\n' "$T/none.crt" "$BUSY" >>"$T/c.conf"
"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
is "$?" 0 "the webhook's cert file and port are not checked when no webhook stage runs"
printf 'stages = fetcher webhook\nwebhook_key_file = %s\n' "$T/tls dir/étiqueta key.pem" >>"$T/c.conf"
"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
check "... and are when one does: the cert file" grep -qF "webhook_cert_file: $T/none.crt: No such file or directory" "$T/out"
check "... the port" grep -qF "webhook_listen: cannot listen on 127.0.0.1:$BUSY: Address already in use" "$T/out"
check "... but not the readable key file" sh -c "! grep -q webhook_key_file '$T/out'"
cp "$T/empty.conf" "$T/c.conf"
printf 'kubeconfig = %s\nreload_token_file = %s\naddr_fetcher = tcp://127.0.0.1:%s\n' \
    "$T/tls dir/étiqueta key.pem" "$T/tls dir/étiqueta key.pem" "$(free_port)" >>"$T/c.conf"
"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
st=$?
is "$st" 0 "a readable kubeconfig and token file and a free stage port pass"
[ "$st" -eq 0 ] || sed 's/^/# /' "$T/out"
# a taken port while this runtime_dir has a live stage is that stage's own:
# --check-config run beside the running units (their ExecStartPre) passes
mkdir -p "$T/live"
cp "$T/empty.conf" "$T/c.conf"
printf 'runtime_dir = %s\naddr_fetcher = tcp://127.0.0.1:%s\n' "$T/live" "$BUSY" >>"$T/c.conf"
touch "$T/live/fetcher.alive"
"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
is "$?" 0 "a taken stage port with a live stage in runtime_dir is not an error"
check "... but is said" grep -qF "addr_fetcher: tcp://127.0.0.1:$BUSY is in use, by this decod's own running stages presumably" "$T/out"
touch -d '1 hour ago' "$T/live/fetcher.alive"
"$DECOD" --check-config -c "$T/c.conf" >"$T/out" 2>&1
is "$?" 1 "... and is an error once that stage's heartbeat is stale"

rm -f "$T/libexec/notifier"; printf '#!/bin/sh\n' >"$T/libexec/notifier"; chmod 0644 "$T/libexec/notifier"
"$DECOD" --check-config -c "$T/empty.conf" >"$T/out" 2>&1
check "a stage program that is not executable is refused" grep -qF "notifier is not an executable file" "$T/out"

done_testing
