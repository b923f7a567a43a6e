# t/lib/github.sh - the GitHub stand-in (t/stand-in/github.py) for
# integration tests.  Source it after t/lib/common.sh and t/lib/git.sh.
#
#   gh_serve ARGS...   start the stand-in (ARGS: --repo org/repo=PATH,
#                      --zip org/repo=FILE, --token FILE, --rate-limit N);
#                      sets GH_PORT, GH_API (http://127.0.0.1:PORT), GH_PID;
#                      its request log is $T/github.log
#   gh_stat NAME...    counts from one snapshot of /_stand-in/stats, space separated
#   gh_ratelimit N S   set the remaining budget to N, reset in S seconds

gh_serve() {
	rm -f "$T/github.port"
	python3 "$top_srcdir/t/stand-in/github.py" --port-file "$T/github.port" \
	    --log "$T/github.log" "$@" >>"$T/github.err" 2>&1 &
	GH_PID=$!
	track_pid $GH_PID
	wait_for 10 test -s "$T/github.port" || bail "GitHub stand-in did not start"
	read -r GH_PORT GH_CODELOAD_PORT <"$T/github.port"
	GH_API="http://127.0.0.1:$GH_PORT"
}

gh_stat() {
	curl -sf "$GH_API/_stand-in/stats" |
	    python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(str(d[k]) for k in sys.argv[1:]))' "$@"
}

gh_ratelimit() {
	curl -sf -X POST "$GH_API/_stand-in/ratelimit?remaining=$1&reset_in=$2" >/dev/null
}
