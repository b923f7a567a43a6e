# t/lib/browser.sh - a t/browser/*.js script in Debian's chromium, driven
# by npm's playwright-core (t/browser/setup.sh), its TAP folded into the
# calling test's (after t/lib/common.sh).
#
#   browser_setup       0 when chromium, node, npm and playwright-core are
#                       there (sets CHROMIUM and BR), else 1 with why in
#                       BROWSER_WHY
#   browser_run SCRIPT  node t/browser/SCRIPT with the caller's environment
#                       (CHROMIUM and NODE_PATH set): one ok per TAP line,
#                       then "browser: SCRIPT passed"

browser_setup() {
	CHROMIUM=$(command -v chromium || command -v chromium-browser) || {
		BROWSER_WHY="chromium is not installed (apt-get install chromium, or examples/install-deps.sh)"
		return 1
	}
	{ command -v node && command -v npm; } >/dev/null 2>&1 || {
		BROWSER_WHY="node and npm not installed"
		return 1
	}
	BR=$("$top_srcdir/t/browser/setup.sh" "$top_builddir/t/browser" 2>"$T/setup.err") || {
		BROWSER_WHY="playwright-core not installed: $(cat "$T/setup.err")"
		return 1
	}
}

browser_run() { # SCRIPT
	CHROMIUM=$CHROMIUM NODE_PATH="$BR/node_modules" node "$top_srcdir/t/browser/$1" \
	    >"$T/$1.tap" 2>"$T/$1.err"
	_rc=$?
	# the script speaks TAP: renumber its lines into ours
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok 0 "browser: ${line#* - }" ;;
		"not ok "*) ok 1 "browser: ${line#* - }" ;;
		"#"*) echo "$line" ;;
		"Bail out!"*) echo "# $line"; ok 1 "browser: $1 ran to its end" ;;
		esac
	done <"$T/$1.tap"
	[ $_rc -eq 0 ] || sed 's/^/# /' "$T/$1.err" | head -20
	ok $_rc "browser: $1 passed"
}
