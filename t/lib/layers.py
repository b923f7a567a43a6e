#!/usr/bin/env python3
"""layers.py ROOT - the include graph of decod's layers, and what breaks them.

The layers are the libraries of DECOD_LAYERS in ROOT/Makefile.am, highest
first (the link order): libdecod_proto.a is proto/, every other
libdecod_<name>.a is common/<name>/.  A file of a layer may include its own
layer's headers and those of layers after it in DECOD_LAYERS, nothing above;
"config.h" (configure's) is allowed everywhere.  proto/ includes proto/ and
the C library only.  Headers keep the spelling "common/x.h": include/common/
holds one forwarding header per header of common/*/, so basenames are unique.

Prints one line per problem, "KIND: detail", and nothing when the tree is
sound.  KIND is one of
  layers   DECOD_LAYERS and the folders under common/ disagree
  shim     include/common/ and the headers of common/*/ disagree
  unknown  an include that names no header of any layer (or a program's)
  upward   a layer includes a header of a layer above it
  libc     proto/ includes a system header outside the C library
"""
import os
import re
import sys

# ISO C and the few POSIX headers the C library itself provides
LIBC = set("""assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h
iso646.h limits.h locale.h math.h setjmp.h signal.h stdalign.h stdarg.h
stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h stdnoreturn.h
string.h tgmath.h threads.h time.h uchar.h wchar.h wctype.h unistd.h
strings.h endian.h fcntl.h sys/types.h sys/uio.h sys/stat.h""".split())
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_order(root):
    text = open(os.path.join(root, "Makefile.am")).read().replace("\\\n", " ")
    m = re.search(r"^DECOD_LAYERS\s*=(.*)$", text, re.M)
    if not m:
        return None
    return [re.sub(r"^libdecod_(.*)\.a$", r"\1", w) for w in m.group(1).split()]


def folder(root, layer):
    return os.path.join(root, "proto" if layer == "proto" else
                        os.path.join("common", layer))


def main(root):
    problems = []
    order = layer_order(root)
    if not order:
        print("layers: no DECOD_LAYERS in Makefile.am")
        return
    rank = {name: i for i, name in enumerate(order)}  # 0 is the highest
    common = os.path.join(root, "common")
    on_disk = sorted(d for d in os.listdir(common)
                     if os.path.isdir(os.path.join(common, d)))
    for d in on_disk:
        if d not in rank:
            problems.append("layers: common/%s/ is not in DECOD_LAYERS" % d)
    for name in order:
        if not os.path.isdir(folder(root, name)):
            problems.append("layers: libdecod_%s.a has no folder" % name)
    for f in sorted(os.listdir(common)):
        if f.endswith((".c", ".h")):
            problems.append("layers: common/%s belongs to no layer" % f)

    # every file of every layer, and which layer holds each header
    files = []     # (layer, path relative to root)
    owner = {}     # "common/x.h" or "proto/x.h" -> layer
    for name in order:
        d = folder(root, name)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)
            files.append((name, rel))
            if f.endswith(".h"):
                key = ("proto/" if name == "proto" else "common/") + f
                if key in owner:
                    problems.append("layers: %s is in both %s and %s"
                                    % (key, owner[key], name))
                owner[key] = name

    # include/common/x.h forwards to common/<layer>/x.h, one for each
    shims = os.path.join(root, "include", "common")
    have = set(os.listdir(shims)) if os.path.isdir(shims) else set()
    for key, name in sorted(owner.items()):
        if name == "proto":
            continue
        f = key.split("/", 1)[1]
        want = "../../common/%s/%s" % (name, f)
        if f not in have:
            problems.append("shim: include/common/%s is missing" % f)
            continue
        got = [m.group(2) for m in map(INCLUDE.match,
               open(os.path.join(shims, f))) if m]
        if got != [want]:
            problems.append("shim: include/common/%s forwards to %s, not %s"
                            % (f, got, want))
    for f in sorted(have - {k.split("/", 1)[1] for k in owner
                            if not k.startswith("proto/")}):
        problems.append("shim: include/common/%s names no header" % f)

    # the graph
    for name, rel in files:
        here = os.path.dirname(rel)
        for n, line in enumerate(open(os.path.join(root, rel)), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, inc = m.groups()
            where = "%s:%d" % (rel, n)
            if kind == "<":
                if name == "proto" and inc not in LIBC:
                    problems.append("libc: %s includes <%s>" % (where, inc))
                continue
            if inc == "config.h":
                continue
            if os.path.exists(os.path.join(root, here, inc)):
                inc = os.path.normpath(os.path.join(here, inc))
                inc = re.sub(r"^common/[^/]+/", "common/", inc)
            target = owner.get(inc)
            if target is None:
                problems.append("unknown: %s includes \"%s\"" % (where, inc))
            elif rank[target] < rank[name]:
                problems.append("upward: %s (%s) includes \"%s\" (%s)"
                                % (where, name, inc, target))
            elif name == "proto" and target != "proto":
                problems.append("libc: %s includes \"%s\"" % (where, inc))
    for p in problems:
        print(p)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
