#!/bin/sh
# setup.sh BUILDDIR - install playwright-core (package.json, pinned) under
# BUILDDIR once, print BUILDDIR.  It drives the system's chromium; it
# downloads no browser.
set -e
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
if [ ! -d "$1/node_modules/playwright-core" ]; then
	cp "$here/package.json" "$1/"
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$1" --no-audit --no-fund \
	    --silent >&2
fi
echo "$1"
