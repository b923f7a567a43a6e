# t/lib/common.sh - shared shell helpers for integration tests (TAP output).
# Source it from a test:  . "$top_srcdir/t/lib/common.sh"
# It makes $T (a temporary folder removed at exit), kills every process
# registered with track_pid at exit, and provides TAP helpers.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
T=$(mktemp -d "${TMPDIR:-/tmp}/decod-test.XXXXXX")
TAP_N=0
TAP_FAILED=0
TRACKED_PIDS=""

# the tests' python3 is the system's, which has the Debian packages they
# use (python3-kubernetes, -cryptography): a version manager's shim first
# on PATH costs a shell script per start (2 s each under load)
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
	mkdir -p "$T/.bin" && ln -sf /usr/bin/python3 "$T/.bin/python3" &&
	    PATH="$T/.bin:$PATH" && export PATH
fi

# scaled MS: a time bound stretched by DECOD_TEST_TIME_SCALE (default 1).
# The plain build asserts the real bounds; the sanitizer run (several times
# slower to start a program) sets 3 and still checks that things happen.
scaled() { echo $(( $1 * ${DECOD_TEST_TIME_SCALE:-1} )); }

# latency_bound MS: a bound on a measured latency (a restart, a failover),
# scaled, and stretched again while the machine is overloaded: one factor
# per twice as many runnable tasks as cores (load 17 on 2 cores: 5), read
# when the bound is checked. A CI run at its usual load asserts the real
# bound; a machine shared with other builds does not fail it for them.
latency_bound() {
	awk -v ms="$(scaled "$1")" -v n="$(nproc 2>/dev/null || echo 1)" \
	    '{ f = int($1 / (2 * n)); if (f * 2 * n < $1) f++; if (f < 1) f = 1;
	       print ms * f; exit }' /proc/loadavg
}

track_pid() { TRACKED_PIDS="$TRACKED_PIDS $1"; }

CLEANUP_HOOKS=""
# at_cleanup FUNCTION: run FUNCTION at exit before the tracked PIDs are
# killed (for services that must stop in an order, like kube.sh's)
at_cleanup() { CLEANUP_HOOKS="$CLEANUP_HOOKS $1"; }

cleanup() {
	for h in $CLEANUP_HOOKS; do "$h"; done
	for p in $TRACKED_PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $TRACKED_PIDS; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ "${KEEP_TMP:-}" = "" ]; then rm -rf "$T"; else echo "# kept $T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { # ok COND_EXIT_STATUS DESCRIPTION
	TAP_N=$((TAP_N + 1))
	if [ "$1" -eq 0 ]; then echo "ok $TAP_N - $2"; else
		echo "not ok $TAP_N - $2"; TAP_FAILED=$((TAP_FAILED + 1)); fi
}
check() { # check DESCRIPTION CMD...: passes when CMD exits 0
	d=$1; shift
	if "$@"; then ok 0 "$d"; else ok 1 "$d"; fi
}
is() { # is GOT WANT DESCRIPTION
	if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; echo "#   got  '$1'"; echo "#   want '$2'"; fi
}
diag() { echo "# $*"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
done_testing() { echo "1..$TAP_N"; [ "$TAP_FAILED" -eq 0 ]; }
bail() { echo "Bail out! $*"; exit 1; }

# db_read DB SQL: a read of the journal, read-only (a test never changes
# state behind a stage's back by accident); db_write DB SQL: a fixture
# written on purpose.  Prefer `decoctl ... -o json` where it can say it.
db_read() { sqlite3 -readonly -cmd '.timeout 5000' "$1" "$2"; }
db_write() { sqlite3 -cmd '.timeout 5000' "$1" "$2"; }

# free_port - print a TCP port on 127.0.0.1 that nothing listens on now
free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# wait_for SECONDS CMD...: retry CMD every 50 ms until it succeeds or time runs out
wait_for() {
	limit=$1; shift
	end=$(( $(date +%s%N) / 1000000 + limit * 1000 ))
	while ! "$@" >/dev/null 2>&1; do
		[ $(( $(date +%s%N) / 1000000 )) -ge $end ] && return 1
		sleep 0.05
	done
	return 0
}

# port_open PORT: something accepts TCP on 127.0.0.1:PORT
port_open() {
	python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null
}

# bin NAME: path of a built program (decod, decoctl, stage programs, examples)
bin() {
	for d in "$top_builddir" "$top_builddir/daemons/$1" "$top_builddir/cli" \
	    "$top_builddir/examples/site" "$top_builddir/bench" "$top_builddir/t"; do
		[ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	echo "$top_builddir/$1"
}

# alive PID: the process exists and is not a zombie waiting to be reaped
# (an orphan's zombie lingers until PID 1 reaps it; it is gone for us)
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
