# t/lib/git.sh - git remotes for integration tests.  Source it after
# t/lib/common.sh.  Everything lives under $T; git daemon is killed by PID
# at exit (track_pid).
#
#   git_work DIR                 a work repository with a committer set
#   git_commit DIR PATH TEXT     write PATH (in DIR) and commit it
#   git_bare DIR NAME            bare clone at $T/remotes/NAME.git
#   git_serve                    git daemon over $T/remotes on a free port;
#                                sets GIT_PORT and GIT_BASE (git://127.0.0.1:PORT)
#   git_push DIR NAME [REFS]     push to the bare remote NAME

command -v git >/dev/null 2>&1 || skip_all "git is not installed"

git_work() {
	git init -q -b main "$1" &&
	git -C "$1" config user.email test@decod.invalid &&
	git -C "$1" config user.name decod-test
}

git_commit() {
	mkdir -p "$(dirname "$1/$2")" &&
	printf '%s' "$3" >"$1/$2" &&
	git -C "$1" add -A &&
	git -C "$1" commit -q -m "set $2"
}

git_bare() {
	mkdir -p "$T/remotes" &&
	git clone -q --bare "$1" "$T/remotes/$2.git"
}

git_push() {
	git -C "$1" push -q "$T/remotes/$2.git" ${3:-main}
}

# git_port_open PORT: something accepts TCP there (works under dash too,
# where common.sh's port_open cannot use /dev/tcp)
git_port_open() {
	python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null
}

git_serve() {
	mkdir -p "$T/remotes"
	GIT_PORT=$(free_port)
	git daemon --export-all --reuseaddr --base-path="$T/remotes" \
	    --port="$GIT_PORT" --listen=127.0.0.1 "$T/remotes" \
	    >>"$T/git-daemon.log" 2>&1 &
	GIT_DAEMON_PID=$!
	track_pid $GIT_DAEMON_PID
	wait_for 10 git_port_open "$GIT_PORT" || bail "git daemon did not listen on $GIT_PORT"
	GIT_BASE="git://127.0.0.1:$GIT_PORT"
}
