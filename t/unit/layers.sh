#!/bin/sh
# layers.sh - common/ is layers, one static library each, linked higher
# first in DECOD_LAYERS (Makefile.am): kube, stage, resource, journal,
# store, base, proto.  From the #include lines of the sources (t/lib/layers.py):
# no file of a layer includes a header of a layer above it, proto/ includes
# proto/ and the C library only, every folder under common/ is a layer, and
# include/common/ forwards each "common/x.h" to the one layer that holds it.
# Then the same check on a copy with two planted bad includes must fail.
. "$top_srcdir/t/lib/common.sh"
command -v python3 >/dev/null 2>&1 || skip_all "no python3"
check_tree() { python3 "$top_srcdir/t/lib/layers.py" "$1"; }

check_tree "$top_srcdir" >"$T/found" 2>&1
diag "$(wc -l <"$T/found") problem(s)"
while read -r l; do diag "$l"; done <"$T/found"
for kind in layers shim unknown upward libc; do
	is "$(grep -c "^$kind:" "$T/found")" 0 "no '$kind' problem in the tree"
done
is "$(wc -l <"$T/found" | tr -d ' ')" 0 "nothing else reported"
n=$(ls "$top_srcdir"/common/*/*.c | wc -l)
check "the graph covers common/*/ ($n .c files)" test "$n" -gt 20

# a copy of the layers with a base file including the stage, proto
# including base, and a header left in common/ itself
mkdir -p "$T/tree"
cp "$top_srcdir/Makefile.am" "$T/tree/"
cp -R "$top_srcdir/common" "$top_srcdir/proto" "$top_srcdir/include" "$T/tree/"
printf '#include "common/stage.h"\n' >>"$T/tree/common/base/log.c"
printf '#include "common/util.h"\n#include <curl/curl.h>\n' >>"$T/tree/proto/proto.c"
printf '#include "stage.h"\n' >>"$T/tree/common/store/store_keys.h"
: >"$T/tree/common/stray.h"
check_tree "$T/tree" >"$T/bad" 2>&1
while read -r l; do diag "planted: $l"; done <"$T/bad"
check "base including the stage is upward" \
	grep -q '^upward: common/base/log.c:[0-9]* (base) includes "common/stage.h" (stage)' "$T/bad"
check "proto including base is upward" \
	grep -q '^upward: proto/proto.c:[0-9]* (proto) includes "common/util.h" (base)' "$T/bad"
check "proto including curl is not libc" \
	grep -q '^libc: proto/proto.c:[0-9]* includes <curl/curl.h>' "$T/bad"
check "a bare \"stage.h\" from the store resolves to nothing" \
	grep -q '^unknown: common/store/store_keys.h:[0-9]* includes "stage.h"' "$T/bad"
check "a file in common/ itself belongs to no layer" \
	grep -q '^layers: common/stray.h belongs to no layer' "$T/bad"
rm "$T/tree/include/common/kube.h"
check_tree "$T/tree" >"$T/bad" 2>&1
check "a missing forwarding header is found" \
	grep -q '^shim: include/common/kube.h is missing' "$T/bad"
done_testing
