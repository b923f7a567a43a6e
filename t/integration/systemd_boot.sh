#!/bin/sh
# systemd_boot - decod's own units under a real systemd: `make install` of
# the build under test into a Debian 12 minbase root (debootstrap, cached
# by t/lib/debroot.sh), booted with `systemd-nspawn --boot` (no network),
# driven with systemctl inside it (nsenter: this host's PID 1 is not
# systemd, so there is no machined for `machinectl` or `systemctl -M`).
# Checked, as installed and unmodified: sysusers makes the decod user at
# boot; decod.service (Type=notify) is active only once every stage is up,
# runs everything as decod with the hardening in force, pings the
# watchdog; a stage killed with -9 is restarted by the supervisor, the
# supervisor killed with -9 by systemd (no orphaned stage left); `systemctl
# reload` works without procps; `systemctl stop` stops every process;
# decod-stages.target runs each stage as its own unit, restarts one killed
# with -9, and gives way to decod.service (they conflict).
# Not run by the sanitizer pass: see the skip below and doc/operations.md.
. "$top_srcdir/t/lib/common.sh"
. "$top_srcdir/t/lib/debroot.sh"

[ "$(id -u)" -eq 0 ] || skip_all "booting a container needs root (systemd-nspawn)"
for c in systemd-nspawn debootstrap nsenter tar curl flock; do
	command -v "$c" >/dev/null 2>&1 ||
	    bail "booting the units needs $c (examples/install-deps.sh installs it)"
done
if ldd "$(bin decod)" 2>/dev/null | grep -q -e libasan -e libubsan; then
	# LeakSanitizer is on by default (the test's ASAN_OPTIONS do not reach
	# a unit) and its stop-the-world at exit fails in the units' sandbox:
	# `decod --check-config` (ExecStartPre=) then exits 1 and decod.service
	# never starts.  A drop-in loosening the units would no longer test them
	# as shipped; the plain pass boots them.
	skip_all "an -fsanitize build cannot run under the units as shipped (LeakSanitizer fails in their sandbox; the plain pass boots them)"
fi
t0=$(date +%s)
step() { diag "$(( $(date +%s) - t0 )) s: $*"; }
STAGES="fetcher renderer publisher notifier"	# decod.conf's default stages

# --- the root: cached Debian + systemd, then make install ----------------------
pkgs="$(debroot_runtime_pkgs) systemd systemd-sysv dbus" ||
    bail "cannot read the packages of deploy/Dockerfile"
# shellcheck disable=SC2086 # one argument per package
if ! debroot_tar "$T/base.tar" $pkgs; then
	why=$(debroot_reachable) || skip_all "debootstrap: $why"
	bail "debootstrap failed with the mirror $(debroot_mirror) reachable"
fi
step "cached root $(readlink -f "$T/base.tar")"
R="$T/root"
mkdir -m 755 "$R"
tar -C "$R" --numeric-owner --xattrs -xf "$T/base.tar" || bail "cannot unpack the root"
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" "$@"; }
mk -s print-install-dirs >"$T/dirs.out" 2>&1 || bail "make print-install-dirs failed"
# only the name=value lines (make may first regenerate its Makefile)
grep -E '^[a-z]+=' "$T/dirs.out" >"$T/dirs"
. "$T/dirs"
# the build's own paths: the units, defaults and programs agree on them
mk install DESTDIR="$R" >"$T/install.log" 2>&1 ||
    { tail -20 "$T/install.log" | sed 's/^/#   /'; bail "make install failed"; }
diag "installed with prefix $prefix, units in $systemdsystemunitdir"
check "the root has no decod user before boot (sysusers.d must make it)" \
    sh -c "! grep -q '^decod:' '$R/etc/passwd'"
check "the root has no /bin/kill (procps), as a minimal Debian" test ! -e "$R/bin/kill"
step "root unpacked and decod installed"

# --- boot ------------------------------------------------------------------------
# --register=no --keep-unit: no machined or host systemd to talk to
systemd-nspawn --boot --register=no --keep-unit --private-network --console=pipe \
    -M "decod-ci-$$" -D "$R" </dev/null >"$T/boot.log" 2>&1 &
NSPAWN=$!
stop_container() {
	[ -n "$NSPAWN" ] || return 0
	# nspawn turns SIGTERM into an orderly shutdown of the container
	kill -TERM "$NSPAWN" 2>/dev/null
	i=0
	while alive "$NSPAWN" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	alive "$NSPAWN" && { kill -KILL "$NSPAWN" 2>/dev/null; r=1; } || r=0
	wait "$NSPAWN" 2>/dev/null
	NSPAWN=""
	return $r
}
at_cleanup stop_container
leader() { cat "/proc/$NSPAWN/task/$NSPAWN/children" 2>/dev/null | awk '{print $1}'; }
is_systemd() { [ "$(cat "/proc/$(leader)/comm" 2>/dev/null)" = systemd ]; }
wait_for 60 is_systemd ||
    { sed 's/^/#   /' "$T/boot.log" | tail -20; bail "systemd-nspawn did not start systemd"; }
L=$(leader)
ct() { nsenter -t "$L" -a "$@"; }
# systemctl answers once systemd's private socket is there
wait_for 60 ct test -S /run/systemd/private || bail "systemd in the container made no control socket"
state=$(ct timeout 120 systemctl is-system-running --wait 2>&1)
is "$state" running "the container boots to 'running' (no failed unit)"
[ "$state" = running ] || ct systemctl --failed --no-pager --plain | sed 's/^/#   /'
step "booted"

# --- sysusers --------------------------------------------------------------------
pw=$(ct getent passwd decod)
uid=$(echo "$pw" | cut -d: -f3)
check "systemd-sysusers made the decod user at boot ($pw)" test -n "$uid"
check "... a system user (uid $uid < 1000) with no login shell" \
    sh -c "[ '${uid:-1000}' -lt 1000 ] && echo '$pw' | grep -q ':/usr/sbin/nologin\$'"

# procs: "PID PPID UID NONEWPRIVS SECCOMP CAPEFF PROGRAM" for every process
# running one of decod's programs (no procps in the root: /proc); a line
# "container-gone" when the container cannot be entered, so that a check
# for no process cannot pass on a container that is gone
procs() {
	ct true 2>/dev/null || { echo container-gone; return 1; }
	ct sh -c 'for d in /proc/[0-9]*; do
		exe=$(tr "\0" " " <"$d/cmdline" | cut -d" " -f1)
		case $exe in '"$sbindir/decod|$libexecdir/decod/"'*) ;; *) continue ;; esac
		awk -v p="${d#/proc/}" -v e="$exe" "/^PPid:/ {pp=\$2} /^Uid:/ {u=\$2}
		    /^NoNewPrivs:/ {n=\$2} /^Seccomp:/ {s=\$2} /^CapEff:/ {c=\$2}
		    END {print p, pp, u, n, s, c, e}" "$d/status"
	done' 2>/dev/null
}
prog_pids() { procs | awk -v e="$1" '$7 == e {print $1}' | sort -n | tr '\n' ' '; }
show() { ct systemctl show -p "$2" --value "$1"; }
journal_count() { ct journalctl -q -u "$1" --no-pager -o cat | grep -c -- "$2"; }
all_sockets() {
	for s in $STAGES; do ct test -S "$runstatedir/decod/$s.ipc" || return 1; done
}

# --- decod.service: Type=notify, as decod, hardened --------------------------------
is "$(ct systemctl is-enabled decod.service)/$(show decod.service ActiveState)" disabled/inactive \
    "decod.service is installed disabled: nothing started it at boot"
ct timeout 120 systemctl start decod.service >"$T/start.out" 2>&1
st=$?
is "$st" 0 "systemctl start decod exits 0"
[ "$st" -eq 0 ] && step "decod.service started" ||
    { sed 's/^/#   /' "$T/start.out"; ct journalctl -u decod --no-pager | tail -20 | sed 's/^/#   /'; }
# Type=notify: start returns on READY=1, which decod sends once every stage
# said ready; with Type=simple it would return before any stage ran
check "when start returns, every stage's pipeline socket is there (READY=1 came after them)" all_sockets
is "$(show decod.service ActiveState)/$(show decod.service Type)" active/notify \
    "decod.service is active, Type=notify"
procs >"$T/procs"
sed 's/^/#   /' "$T/procs"
is "$(wc -l <"$T/procs" | tr -d ' ')" 5 "the supervisor and its 4 stages run"
MAIN=$(show decod.service MainPID)
is "$(awk -v m="$MAIN" '$1 != m && $2 == m' "$T/procs" | wc -l | tr -d ' ')" 4 \
    "... the stages are the supervisor's children"
is "$(awk -v u="$uid" '$3 == u' "$T/procs" | wc -l | tr -d ' ')" 5 \
    "all 5 run as decod (uid $uid), none as root"
is "$(awk '$4 == 1 && $5 == 2 && $6 == "0000000000000000"' "$T/procs" | wc -l | tr -d ' ')" 5 \
    "... all 5 with NoNewPrivs, a seccomp filter and no capabilities"
# systemd stamps WatchdogTimestamp at start and on every WATCHDOG=1
wd0=$(show decod.service WatchdogTimestampMonotonic)
pinged() {
	w=$(show decod.service WatchdogTimestampMonotonic)
	[ "${w:-0}" -gt "${wd0:-0}" ] 2>/dev/null && [ "$wd0" -gt 0 ]
}
check "the watchdog is pinged (WATCHDOG=1 within WatchdogSec=30)" wait_for "$(scaled 40)" pinged
is "$(show decod.service ActiveState)" active "... and decod.service is still active"

# --- a stage killed with -9: the supervisor restarts it ------------------------------
old=$(prog_pids "$libexecdir/decod/fetcher")
ct sh -c "kill -KILL $old"
fetcher_back() {
	p=$(prog_pids "$libexecdir/decod/fetcher")
	[ -n "$p" ] && [ "$p" != "$old" ]
}
check "the fetcher killed with -9 (pid $old) is started again" wait_for "$(scaled 30)" fetcher_back
check "... by the supervisor, which says so in the journal" \
    wait_for 10 sh -c "nsenter -t $L -a journalctl -q -u decod.service -o cat | grep 'stage died; restarting' | grep -q 'stage=fetcher'"
is "$(show decod.service MainPID)/$(show decod.service NRestarts)" "$MAIN/0" \
    "... and systemd did not restart decod.service"
is "$(procs | awk -v e="$libexecdir/decod/fetcher" '$7 == e {print $2}')" "$MAIN" "... and is its child"
step "stage restarted"

# --- the supervisor killed with -9: systemd restarts it -----------------------------
stages_before=$(procs | awk -v m="$MAIN" '$1 != m {print $1}' | tr '\n' ' ')
ct sh -c "kill -KILL $MAIN"
restarted() {
	m=$(show decod.service MainPID)
	[ "$m" != 0 ] && [ "$m" != "$MAIN" ] && [ "$(show decod.service ActiveState)" = active ]
}
check "the supervisor killed with -9 is restarted by systemd (Restart=on-failure)" \
    wait_for "$(scaled 60)" restarted
is "$(show decod.service NRestarts)" 1 "... NRestarts=1"
MAIN=$(show decod.service MainPID)
procs >"$T/procs"
left=""
for p in $stages_before; do awk -v p="$p" '$1 == p' "$T/procs" | grep -q . && left="$left $p"; done
is "$left" "" "no stage of the killed supervisor is left running (KillMode=mixed)"
is "$(awk -v m="$MAIN" '$2 == m' "$T/procs" | wc -l | tr -d ' ')" 4 \
    "the new supervisor runs 4 stages of its own"
check "... all ready again (sockets)" all_sockets
step "supervisor restarted"

# --- reload: the shell's kill, no procps ---------------------------------------------
n0=$(journal_count decod.service 'configuration reloaded')
ct timeout 60 systemctl reload decod.service >"$T/reload.out" 2>&1
st=$?
is "$st" 0 "systemctl reload decod exits 0 (no /bin/kill in the root)"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/reload.out"
check "... decod re-read its configuration (journal)" \
    wait_for 10 sh -c "[ \$(nsenter -t $L -a journalctl -q -u decod.service -o cat | grep -c 'configuration reloaded') -gt $n0 ]"
is "$(show decod.service MainPID)/$(show decod.service ActiveState)" "$MAIN/active" \
    "... same supervisor, still active"

# --- stop: every process ---------------------------------------------------------------
ct timeout 60 systemctl stop decod.service
is "$?" 0 "systemctl stop decod exits 0"
is "$(show decod.service ActiveState)/$(show decod.service Result)" inactive/success \
    "decod.service stopped cleanly (Result=success: no timeout, no SIGKILL)"
is "$(procs | wc -l | tr -d ' ')" 0 "no decod process is left"
step "stopped"

# --- decod-stages.target: a unit per stage ----------------------------------------------
units=""
for s in $STAGES; do units="$units decod-$s.service"; done
# shellcheck disable=SC2086
ct systemctl enable $units >"$T/enable.out" 2>&1
is "$?" 0 "systemctl enable$units (WantedBy=decod-stages.target)"
ct timeout 120 systemctl start decod-stages.target >"$T/target.out" 2>&1
st=$?
is "$st" 0 "systemctl start decod-stages.target exits 0"
[ "$st" -eq 0 ] || sed 's/^/#   /' "$T/target.out"
check "every stage unit's pipeline socket appears" wait_for "$(scaled 30)" all_sockets
procs >"$T/procs"
sed 's/^/#   /' "$T/procs"
bad=""
for s in $STAGES; do
	u=decod-$s.service
	m=$(show "$u" MainPID)
	[ "$(show "$u" ActiveState)" = active ] || bad="$bad $u:$(show "$u" ActiveState)"
	[ "$(show "$u" ControlGroup)" = "/system.slice/$u" ] || bad="$bad $u:cgroup"
	awk -v m="$m" -v e="$libexecdir/decod/$s" -v u="$uid" \
	    '$1 == m && $7 == e && $3 == u && $4 == 1 && $5 == 2' "$T/procs" | grep -q . ||
	    bad="$bad $u:main-$m"
done
is "$bad" "" "each stage is its own active unit, in its own cgroup, its program as MainPID, as decod, hardened"
is "$(awk -v e="$sbindir/decod" '$7 == e' "$T/procs" | wc -l | tr -d ' ')" 0 "no supervisor runs"
old=$(show decod-renderer.service MainPID)
ct sh -c "kill -KILL $old"
unit_back() {
	m=$(show decod-renderer.service MainPID)
	[ "$m" != 0 ] && [ "$m" != "$old" ] && [ "$(show decod-renderer.service ActiveState)" = active ]
}
check "decod-renderer killed with -9 is restarted by systemd" wait_for "$(scaled 30)" unit_back
is "$(show decod-renderer.service NRestarts)" 1 "... NRestarts=1, the other stage units untouched" &&
    is "$(show decod-fetcher.service NRestarts)" 0 "... decod-fetcher NRestarts=0"
n0=$(journal_count decod-publisher.service 'reloaded configuration')
ct timeout 60 systemctl reload decod-publisher.service
is "$?" 0 "systemctl reload decod-publisher exits 0"
check "... the stage re-read its configuration (journal)" \
    wait_for 10 sh -c "[ \$(nsenter -t $L -a journalctl -q -u decod-publisher.service -o cat | grep -c 'reloaded configuration') -gt $n0 ]"
# decod.service conflicts with the target: starting it stops the stage units
ct timeout 120 systemctl start decod.service
is "$?" 0 "systemctl start decod while the stage units run exits 0"
bad=""
for u in decod-stages.target $units; do
	a=$(show "$u" ActiveState)
	[ "$a" = inactive ] || bad="$bad $u:$a"
done
is "$bad" "" "... the target and every stage unit stopped (Conflicts=)"
is "$(procs | awk -v m="$(show decod.service MainPID)" '$2 == m' | wc -l | tr -d ' ')" 4 \
    "... and decod.service runs the 4 stages itself"
ct timeout 60 systemctl stop decod.service
is "$(procs | wc -l | tr -d ' ')" 0 "stopped again: no decod process left"
step "stage units done"

stop_container
is "$?" 0 "the container shuts down on SIGTERM within 30 s (no SIGKILL needed)"
step "container stopped"
done_testing
