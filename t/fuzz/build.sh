#!/bin/sh
# t/fuzz/build.sh SRCDIR BUILDDIR - build every harness with libFuzzer,
# AddressSanitizer and UBSan into BUILDDIR/t/fuzz/bin/fuzz_<target>.  Run by
# `make fuzz`, which passes the compiler and library flags configure found
# (FUZZ_CC, FUZZ_CFLAGS, FUZZ_LIBS, FUZZ_DEFS, FUZZ_TARGETS).  The shared
# code is compiled once with coverage into a private archive; a harness
# that includes a program's .c (renderer, site, etcd store) gets its own
# copy of that file instrumented the same way.
set -eu
src=$1
bld=$2
out=$bld/t/fuzz/bin
obj=$bld/t/fuzz/obj
mkdir -p "$out" "$obj"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-g -O1 $SAN -I$src -I$bld -I$src/include $FUZZ_DEFS $FUZZ_CFLAGS -w"
# everything the layers hold (common/*/ and proto/, by folder, so files
# split later are picked up), the renderer's rules, decoctl's YAML reader, the webhook's
# admission code and the JSONPatch checker its harness applies patches with,
# the fetcher's archive reader and the name rule it applies, and the
# reference replica's document code
lib_src=$(cd "$src" && ls common/*/*.c proto/*.c daemons/renderer/render_*.c cli/cli_print.c \
    daemons/webhook/webhook_admit.c daemons/webhook/webhook_mutate.c \
    daemons/webhook/webhook_index.c t/unit/jsonpatch.c \
    daemons/fetcher/fetch_archive.c daemons/fetcher/archive_lazy.c daemons/fetcher/fetch_tree.c \
    daemons/fetcher/fetch_keys.c examples/site/site_doc.c 2>/dev/null)
objs=""
for f in $lib_src; do
	[ -f "$src/$f" ] || continue
	o=$obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
	if [ ! -f "$o" ] || [ "$src/$f" -nt "$o" ]; then
		# shellcheck disable=SC2086
		$FUZZ_CC $CFLAGS -fsanitize=fuzzer-no-link -c "$src/$f" -o "$o"
	fi
	objs="$objs $o"
done
rm -f "$obj/libfuzzdecod.a"
# shellcheck disable=SC2086
ar cr "$obj/libfuzzdecod.a" $objs
for t in $FUZZ_TARGETS; do
	# shellcheck disable=SC2086
	$FUZZ_CC $CFLAGS -fsanitize=fuzzer "$src/t/fuzz/fuzz_$t.c" \
	    "$obj/libfuzzdecod.a" $FUZZ_LIBS -lpthread -o "$out/fuzz_$t"
	echo "  FUZZ     t/fuzz/bin/fuzz_$t"
done
