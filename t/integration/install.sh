#!/bin/sh
# install - `make install DESTDIR=...` from the build folder puts every
# file where decod(8) says: decod in sbin, decoctl in bin, the stages in
# libexec/decod, man pages, systemd units whose paths name the installed
# programs, and a sample config that lists every setting of `decod --help`
# and passes --check-config with every line uncommented.  A second install
# keeps an edited decod.conf; uninstall removes the rest.  Also: the man
# pages render without warnings and every deploy/ YAML file parses.
. "$top_srcdir/t/lib/common.sh"

STAGES="fetcher renderer publisher notifier webhook acl web"
R="$T/root"
# the sub-make must not join the jobserver of a `make check` around us
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" "$@"; }

mk -s print-install-dirs >"$T/dirs" 2>"$T/dirs.err" ||
	bail "make print-install-dirs failed: $(cat "$T/dirs.err")"
. "$T/dirs"
diag "prefix $prefix, units in $systemdsystemunitdir"

# --- make install ----------------------------------------------------------
mk install DESTDIR="$R" >"$T/install.log" 2>&1
st=$?
is "$st" 0 "make install DESTDIR=... exits 0"
[ "$st" -eq 0 ] || { sed 's/^/# /' "$T/install.log" | tail -20; bail "install failed"; }

check "sbin/decod is installed and executable" test -x "$R$sbindir/decod"
check "bin/decoctl is installed and executable" test -x "$R$bindir/decoctl"
check "decod is not in bin" test ! -e "$R$bindir/decod"
for s in $STAGES; do
	if [ -x "$top_builddir/daemons/$s/$s" ]; then
		check "libexec/decod/$s is installed" test -x "$R$libexecdir/decod/$s"
	else
		ok 0 "libexec/decod/$s # SKIP $s is not built yet"
	fi
done
extra=""
for f in "$R$libexecdir"/decod/*; do
	n=$(basename "$f")
	case " $STAGES " in *" $n "*) ;; *) extra="$extra $n" ;; esac
done
is "$extra" "" "libexec/decod holds only stage programs (no test tools)"
check "man page decod(8)" test -f "$R$mandir/man8/decod.8"
check "man page decod.conf(5)" test -f "$R$mandir/man5/decod.conf.5"
check "man page decoctl(1)" test -f "$R$mandir/man1/decoctl.1"
for f in index.html detail.html style.css app.js detail.js; do
	check "the web page's $f is installed" test -f "$R$pkgdatadir/web/$f"
done
UNITS="decod.service decod-stages.target"
for s in $STAGES; do UNITS="$UNITS decod-$s.service"; done
for u in $UNITS; do
	check "unit $u installed" test -f "$R$systemdsystemunitdir/$u"
done
check "sysusers.d/decod.conf installed" grep -q '^u decod ' "$R$sysusersdir/decod.conf"
check "tmpfiles.d/decod.conf makes state_dir" \
	grep -q "^d $localstatedir/lib/decod " "$R$tmpfilesdir/decod.conf"
check "tmpfiles.d/decod.conf makes runtime_dir" \
	grep -q "^d $runstatedir/decod " "$R$tmpfilesdir/decod.conf"
check "decod.conf.sample installed" test -f "$R$decodconfdir/decod.conf.sample"
check "decod.conf made from the sample on first install" \
	cmp -s "$R$decodconfdir/decod.conf.sample" "$R$decodconfdir/decod.conf"

# --- the units name the installed programs and config -----------------------
UD="$R$systemdsystemunitdir"
for u in $UNITS; do
	case $u in *.target) continue ;; esac
	bad=""
	n=0
	for line in $(grep -E '^Exec(Start|StartPre)=' "$UD/$u" | sed 's/^[A-Za-z]*=//; s/ /|/g'); do
		prog=${line%%|*}
		n=$((n + 1))
		if [ ! -x "$R$prog" ]; then
			# a stage not built yet is the only acceptable miss
			case $prog in
			"$libexecdir"/decod/*)
				[ -x "$top_builddir/daemons/$(basename "$prog")/$(basename "$prog")" ] &&
					bad="$bad $prog" ;;
			*) bad="$bad $prog" ;;
			esac
		fi
		case $line in *"|-c|$sysconfdir/decod/decod.conf"*) ;; *) bad="$bad no-config:$prog" ;; esac
	done
	[ $n -ge 2 ] || bad="$bad too-few-exec-lines"
	is "$bad" "" "$u: Exec lines run installed programs with -c $sysconfdir/decod/decod.conf"
done
check "decod.service is Type=notify" grep -qx 'Type=notify' "$UD/decod.service"
check "decod.service has a watchdog" grep -qx 'WatchdogSec=30' "$UD/decod.service"
check "decod.service reloads with SIGHUP" grep -q '^ExecReload=.*kill -HUP \$MAINPID' "$UD/decod.service"
# /bin/kill is procps's, absent on a minimal Debian: the shell's builtin
check "... by the shell's builtin kill, not /bin/kill (procps)" \
    sh -c "! grep '^ExecReload=' '$UD'/decod*.service | grep -q '/bin/kill'"
for u in decod.service decod-renderer.service; do
	for k in User=decod NoNewPrivileges=yes ProtectSystem=strict CapabilityBoundingSet= \
	    "ReadWritePaths=$localstatedir/lib/decod $runstatedir/decod"; do
		check "$u: $k" grep -qx "$k" "$UD/$u"
	done
done
check "a stage unit is part of decod-stages.target" \
	grep -qx 'PartOf=decod-stages.target' "$UD/decod-publisher.service"
check "no @placeholder@ left in installed units" \
	sh -c "! grep -n '@[a-z]*@' '$UD'/decod*.service '$R$sysusersdir/decod.conf' '$R$tmpfilesdir/decod.conf'"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify resolves ExecStart= on this host: point the units into $R
	mkdir -p "$T/units"
	for u in $UNITS; do
		sed -e "s|=$sbindir/|=$R$sbindir/|g" -e "s|=$libexecdir/|=$R$libexecdir/|g" \
			"$UD/$u" >"$T/units/$u"
	done
	(cd "$T/units" && systemd-analyze verify --man=no ./decod.service \
		./decod-renderer.service ./decod-stages.target) >"$T/verify" 2>&1
	if [ -x "$top_builddir/daemons/notifier/notifier" ]; then
		(cd "$T/units" && systemd-analyze verify --man=no ./decod-notifier.service) \
			>>"$T/verify" 2>&1
	fi
	check "systemd-analyze verify finds nothing wrong in the units" test ! -s "$T/verify"
	sed 's/^/# /' "$T/verify" | head -10
	# the score doc/operations.md records: a loosened unit fails here
	for u in decod.service decod-renderer.service; do
		systemd-analyze security --offline=yes "$T/units/$u" >"$T/security" 2>&1
		score=$(sed -n 's/.*[Oo]verall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T/security")
		if [ -z "$score" ]; then
			ok 0 "$u: exposure score # SKIP systemd-analyze security --offline=yes gave none"
		else
			check "$u: systemd-analyze security exposure $score <= 1.1" \
			    awk -v s="$score" 'BEGIN { exit !(s <= 1.1) }'
		fi
	done
else
	ok 0 "systemd-analyze verify # SKIP systemd-analyze not installed"
fi

# --- the sample config cannot drift from the settings table -----------------
DECOD="$R$sbindir/decod"
SAMPLE="$R$decodconfdir/decod.conf.sample"
"$DECOD" --help | sed -n '/^Settings/,$ s/^  --\([a-z][a-z0-9-]*\) .*/\1/p' | tr - _ | sort >"$T/help.names"
sed -n 's/^#\([a-z][a-z0-9_]*\) = .*/\1/p' "$SAMPLE" | sort -u >"$T/sample.names"
nhelp=$(wc -l <"$T/help.names")
check "decod --help lists settings (got $nhelp)" test "$nhelp" -ge 40
missing=$(comm -23 "$T/help.names" "$T/sample.names" | tr '\n' ' ')
is "$missing" "" "the sample lists every setting of decod --help"
stale=$(comm -13 "$T/help.names" "$T/sample.names" | tr '\n' ' ')
is "$stale" "" "the sample lists no setting decod does not know"
# the stage programs are checked where the install put them (under DESTDIR)
DECOD_LIBEXEC_DIR=$R$libexecdir/decod
export DECOD_LIBEXEC_DIR
"$DECOD" --check-config -c "$SAMPLE" >"$T/cc" 2>&1
st=$?
is "$st" 0 "decod --check-config passes on the sample as installed"
[ "$st" -eq 0 ] || sed 's/^/# /' "$T/cc"
sed 's/^#\([a-z][a-z0-9_]* = \)/\1/' "$SAMPLE" >"$T/all.conf"
nset=$(grep -c '^[a-z][a-z0-9_]* = ' "$T/all.conf")
is "$nset" "$(wc -l <"$T/sample.names" | tr -d ' ')" "uncommented sample sets each setting once"
# every line uncommented names files under /etc/decod that this machine
# lacks: those, and only those, are refused (each line naming its setting),
# besides the metrics addresses of stages the sample's `stages` does not run
"$DECOD" --check-config -c "$T/all.conf" >"$T/cc" 2>&1
st=$?
grep -v -e '^[a-z0-9_]*: /etc/decod[^:]*: No such file or directory$' \
    -e '^[a-z0-9_]*: cannot listen on [^ ]*: Address already in use$' \
    -e '^metrics_listen_[a-z]*: only the [a-z]* stage serves it and stages does not name [a-z]*$' \
    -e "^$T/all.conf: [0-9]* errors*$" "$T/cc" >"$T/cc.other"
is "$st:$(cat "$T/cc.other")" "1:" "--check-config on the sample with every line uncommented refuses only its absent files"
[ -s "$T/cc.other" ] && sed 's/^/# /' "$T/cc"
check "... kubeconfig among them, named" grep -q '^kubeconfig: /etc/decod/kubeconfig: No such file or directory$' "$T/cc"
{ cat "$T/all.conf"; echo "brotli_quality = 99"; } >"$T/bad.conf"
"$DECOD" --check-config -c "$T/bad.conf" >"$T/cc" 2>&1
st=$?
check "--check-config refuses a bad value (exit $st)" test "$st" -ne 0
check "... naming the file and line" grep -q "bad.conf:$(wc -l <"$T/bad.conf" | tr -d ' '):" "$T/cc"
for s in $STAGES; do
	[ -x "$R$libexecdir/decod/$s" ] || continue
	"$R$libexecdir/decod/$s" --help >"$T/stage.help" 2>&1
	check "installed $s runs (--help)" grep -q -- '--state-dir' "$T/stage.help"
done

# --- the installed decod runs the installed stages and speaks sd_notify -----
# What decod.service's Type=notify and WatchdogSec rely on, checked with a
# stand-in for systemd's notify socket (a datagram socket we read).
PYB=python3
[ -x /usr/bin/python3 ] && PYB=/usr/bin/python3
NS="$T/notify.sock"
$PYB - "$NS" "$T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode() + "\n")
PY
track_pid $!
wait_for 10 test -S "$NS" || bail "notify stand-in did not start"
cat >"$T/run.conf" <<EOF
state_dir = $T/state
runtime_dir = $T/run
libexec_dir = $R$libexecdir/decod
store = local:$T/store
# the acl stage starts (and reports ready) with its Valkey unreachable
valkey_url = redis://127.0.0.1:9
# the web stage on any free port
web_listen = 127.0.0.1:0
EOF
# the webhook serves HTTPS only: give it a self-signed pair and any free port
if command -v openssl >/dev/null 2>&1 &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=127.0.0.1 -keyout "$T/wh.key" -out "$T/wh.crt" >/dev/null 2>&1; then
	printf 'webhook_listen = 127.0.0.1:0\nwebhook_cert_file = %s\nwebhook_key_file = %s\n' \
	    "$T/wh.crt" "$T/wh.key" >>"$T/run.conf"
	wh_ok=1
else
	wh_ok=0
fi
st_list=""
for s in $STAGES; do
	[ "$s" = webhook ] && [ "$wh_ok" = 0 ] && continue
	[ -x "$R$libexecdir/decod/$s" ] && st_list="$st_list $s"
done
NOTIFY_SOCKET="$NS" WATCHDOG_USEC=1000000 "$DECOD" -c "$T/run.conf" --stages "$st_list" \
	>"$T/decod.log" 2>&1 &
DPID=$!
track_pid $DPID
check "installed decod sends READY=1 once its$st_list are ready" \
	wait_for 60 grep -qx READY=1 "$T/notify.log"
check "... and WATCHDOG=1 when WATCHDOG_USEC is set" wait_for 10 grep -qx WATCHDOG=1 "$T/notify.log"
check "decod's log says every stage is ready" grep -q 'all stages ready' "$T/decod.log"
kill -HUP $DPID
check "SIGHUP: RELOADING=1" wait_for 10 grep -qx RELOADING=1 "$T/notify.log"
check "... then READY=1 again" wait_for 10 sh -c "[ \$(grep -cx READY=1 '$T/notify.log') -ge 2 ]"
kill -TERM $DPID
i=0
while alive $DPID && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if alive $DPID; then
	ok 1 "SIGTERM: decod stops within 30 s"
	kill -KILL $DPID
else
	wait $DPID
	is "$?" 0 "SIGTERM: decod stops its stages and exits 0"
fi
check "... after STOPPING=1" grep -qx STOPPING=1 "$T/notify.log"
grep -i 'fatal' "$T/decod.log" | head -5 | sed 's/^/# /'

# --- man pages ----------------------------------------------------------------
for m in "$R$mandir/man8/decod.8" "$R$mandir/man5/decod.conf.5"; do
	if command -v groff >/dev/null 2>&1; then
		groff -ww -man -Tutf8 "$m" >"$T/man.out" 2>"$T/man.err"
		check "$(basename "$m") renders without groff warnings" test ! -s "$T/man.err"
		sed 's/^/# /' "$T/man.err" | head -5
		check "$(basename "$m") renders to text" grep -q decod "$T/man.out"
	else
		ok 0 "$(basename "$m") renders # SKIP groff not installed (apt-get install groff-base)"
	fi
	if command -v mandoc >/dev/null 2>&1; then
		mandoc -Tlint -Wwarning "$m" >"$T/lint" 2>&1
		check "$(basename "$m") passes mandoc -Tlint" test ! -s "$T/lint"
	fi
done
missing=""
for n in $(cat "$T/help.names"); do
	grep -q "^\\.B $n\$" "$R$mandir/man5/decod.conf.5" || missing="$missing $n"
done
is "$missing" "" "decod.conf(5) documents every setting of decod --help"

# --- deploy/: every YAML document parses and has the expected shape ----------
# Debian's python3 (with python3-yaml) first: a pyenv shim costs a second a call
PY=python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import yaml' 2>/dev/null && PY=/usr/bin/python3
if $PY -c 'import yaml' 2>/dev/null; then
	$PY - "$top_srcdir/deploy" "$T/pod.conf" >"$T/deploy.out" 2>&1 <<'PY'
import glob, os, sys, yaml
d = sys.argv[1]
files = sorted(glob.glob(os.path.join(d, "**", "*.yaml"), recursive=True))
docs = []
for f in files:
    with open(f) as fh:
        for doc in yaml.safe_load_all(fh):
            if doc is None:
                continue
            assert isinstance(doc, dict), f + ": not a mapping"
            if os.path.basename(f) != "kustomization.yaml":
                for k in ("apiVersion", "kind", "metadata"):
                    assert k in doc, "%s: %s without %s" % (f, doc.get("kind"), k)
                assert doc["metadata"].get("name"), f + ": no metadata.name"
            docs.append((os.path.basename(f), doc))
print("files", len(files), "documents", len(docs))
kinds = {}
for f, doc in docs:
    kinds.setdefault(doc.get("kind"), []).append(doc)
crds = {c["spec"]["names"]["kind"]: c for c in kinds.get("CustomResourceDefinition", [])}
for k in ("Decofile", "DecofileTemplate"):
    c = crds[k]
    assert c["spec"]["group"] == "deco.sites", k
    v = c["spec"]["versions"][0]
    assert v["name"] == "v1alpha1" and v["served"] and v["storage"], k
    assert "status" in v["subresources"], k + ": no status subresource"
    cols = [p["name"] for p in v.get("additionalPrinterColumns", [])]
    want = ["Source", "Commit", "Suspended", "Ready", "PodsNotified", "Age"] if k == "Decofile" else \
        ["Source", "Commit", "Ready", "Age"]
    assert cols == want, k + ": columns " + str(cols)
    props = v["schema"]["openAPIV3Schema"]["properties"]
    assert "spec" in props and "status" in props, k
print("crds ok")
dep = [x for f, x in docs if f == "deployment.yaml" and x["kind"] == "Deployment"][0]
cs = dep["spec"]["template"]["spec"]["containers"]
names = [c["name"] for c in cs]
assert names[:4] == ["fetcher", "renderer", "publisher", "notifier"], names
for c in cs[:4]:
    assert c["command"][0] == "/usr/libexec/decod/" + c["name"], c["command"]
    assert "-c" in c["command"], c["name"]
    # the stages' pipes listen on 127.0.0.1 and the kubelet dials the pod
    # IP: their probes run the stage's own --health in the container
    for p in ("startupProbe", "readinessProbe", "livenessProbe"):
        pr = c.get(p)
        assert pr, c["name"] + ": no " + p
        cmd = pr.get("exec", {}).get("command", [])
        assert cmd[:1] == ["/usr/libexec/decod/" + c["name"]] and \
            any(a.startswith("--health") for a in cmd), c["name"] + ": " + p + " " + str(pr)
    assert c["securityContext"]["runAsNonRoot"], c["name"]
    assert c["securityContext"]["readOnlyRootFilesystem"], c["name"]
    assert not c["securityContext"].get("allowPrivilegeEscalation", True), c["name"]
for c in cs[4:]:
    assert c.get("readinessProbe") and c.get("livenessProbe"), c["name"] + ": probes"
print("deployment ok")
paths = set()
for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
    for w in kinds[k][0]["webhooks"]:
        paths.add(w["clientConfig"]["service"]["path"])
assert paths == {"/mutate-serving-knative-dev-v1-service",
                 "/validate-deco-sites-v1alpha1-decofile",
                 "/validate-serving-knative-dev-v1-service",
                 "/validate-decod-managed"}, paths
for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
    for w in kinds[k][0]["webhooks"]:
        assert w["sideEffects"] == "None" and w["admissionReviewVersions"] == ["v1"], w["name"]
        assert w["failurePolicy"] in ("Fail", "Ignore") and w["timeoutSeconds"] <= 10, w["name"]
print("webhooks ok")
for k in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
          "Service", "ConfigMap", "Issuer", "Certificate"):
    assert k in kinds, "no " + k
rules = [r for cr in kinds["ClusterRole"] for r in cr["rules"]]
for r in rules:
    assert "*" not in r["verbs"] and "*" not in r["resources"], "wildcard rule " + str(r)
print("kinds ok")
cm = [x for f, x in docs if f == "configmap.yaml" and x["kind"] == "ConfigMap"][0]
with open(sys.argv[2], "w") as out:
    out.write(cm["data"]["decod.conf"])
PY
	st=$?
	is "$st" 0 "deploy/*.yaml parse and have the expected objects"
	sed 's/^/# /' "$T/deploy.out" | tail -5
	"$DECOD" --check-config -c "$T/pod.conf" >"$T/cc" 2>&1
	st=$?
	is "$st" 0 "the pod's decod.conf (deploy/configmap.yaml) passes --check-config"
	[ "$st" -eq 0 ] || sed 's/^/# /' "$T/cc"
else
	ok 0 "deploy/*.yaml # SKIP python3-yaml not installed"
fi
if command -v kubectl >/dev/null 2>&1; then
	kubectl kustomize "$top_srcdir/deploy" >"$T/kustomized.yaml" 2>"$T/kustomize.err"
	check "kubectl kustomize deploy/ builds (offline)" grep -q '^kind: Deployment' "$T/kustomized.yaml"
	sed 's/^/# /' "$T/kustomize.err" | head -5
	# the webhook (deploy/webhook/) is part of it: configurations, Certificate, container
	n=$(grep -c -e '^kind: MutatingWebhookConfiguration' -e '^kind: Certificate' \
		-e '^  - name: webhook$' -e '^        name: webhook$' "$T/kustomized.yaml")
	is "$n" 3 "kustomize includes the webhook's configurations, Certificate and container"
else
	ok 0 "kubectl kustomize # SKIP kubectl not installed"
fi

# --- the Dockerfile: multi-stage, runs as a non-root user ----------------------
df="$top_srcdir/deploy/Dockerfile"
is "$(grep -c '^FROM ' "$df")" 2 "deploy/Dockerfile has a build and a runtime stage"
check "... the runtime copies only the install tree from the build stage" \
	grep -qx 'COPY --from=build /out/ /' "$df"
is "$(sed -n 's/^USER //p' "$df" | tail -1)" "10001:10001" "... and runs as uid 10001, not root"

# --- the Dockerfile's runtime stage has every library the programs link ------
if command -v objdump >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
	runtime=$(sed -n '/^FROM debian:12-slim$/,$p' "$top_srcdir/deploy/Dockerfile")
	missing=""
	for f in "$R$sbindir/decod" "$R$bindir/decoctl" "$R$libexecdir"/decod/*; do
		[ -f "$f" ] && objdump -p "$f" | awk '/NEEDED/ {print $2}'
	done | sort -u | grep -v -E '^(libc|libm|libpthread|libdl|ld-linux|libasan|libubsan|libgcc_s)[.-]' \
		>"$T/needed"
	nlib=$(wc -l <"$T/needed" | tr -d ' ')
	: >"$T/needed.files"
	for lib in $(cat "$T/needed"); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
		if [ -n "$path" ]; then basename "$(readlink -f "$path")" >>"$T/needed.files"
		else missing="$missing $lib"; fi
	done
	# one dpkg call for every library (each call costs ~0.3 s); a file name
	# without a slash matches wherever the package put it (/lib or /usr/lib)
	xargs dpkg -S <"$T/needed.files" >"$T/owners" 2>/dev/null
	for f in $(cat "$T/needed.files"); do
		grep -q "/$f\$" "$T/owners" || missing="$missing $f(no-package)"
	done
	for pkg in $(cut -d: -f1 "$T/owners" | sort -u); do
		printf '%s\n' "$runtime" | grep -qw -- "$pkg" || missing="$missing $pkg"
	done
	check "the installed programs link shared libraries ($nlib checked)" test "$nlib" -ge 5
	is "$missing" "" "deploy/Dockerfile's runtime stage installs every linked library's package"
else
	ok 0 "Dockerfile libraries # SKIP objdump or dpkg not available"
fi

# --- a second install keeps the operator's decod.conf; uninstall cleans up ----
echo "log_level = debug" >>"$R$decodconfdir/decod.conf"
mk install DESTDIR="$R" >"$T/install2.log" 2>&1
is "$?" 0 "second make install exits 0"
check "second install keeps the edited decod.conf" \
	grep -qx 'log_level = debug' "$R$decodconfdir/decod.conf"
mk uninstall DESTDIR="$R" >"$T/uninstall.log" 2>&1
is "$?" 0 "make uninstall exits 0"
left=$(cd "$R" && find . -type f | sort | tr '\n' ' ')
is "$left" ".$decodconfdir/decod.conf " "uninstall leaves only the edited decod.conf"

done_testing
