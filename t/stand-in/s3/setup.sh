#!/bin/sh
# setup.sh DIR - install the S3 stand-in's npm packages (s3rver, aws4, at the
# versions of package-lock.json) into DIR/node_modules, once.  Prints DIR on
# success (run the scripts with NODE_PATH=DIR/node_modules); exits 1 (with the reason on stderr) when node or npm is missing or
# the registry cannot be reached.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
command -v node >/dev/null 2>&1 || { echo "node not installed (apt-get install nodejs npm)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "npm not installed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dir"
if [ ! -f "$dir/node_modules/.decod-ok" ] || ! cmp -s "$here/package-lock.json" "$dir/package-lock.json"; then
	cp "$here/package.json" "$here/package-lock.json" "$dir/"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
		{ echo "npm ci failed in $dir (see $dir/npm.log)" >&2; exit 1; }
	touch "$dir/node_modules/.decod-ok"
fi
echo "$dir"
