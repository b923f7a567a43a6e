# proto/: the wire formats between decod and its stages, the lowest layer
# (libc only; t/unit/layers.sh checks); docs in PROTOCOL.md
noinst_LIBRARIES += libdecod_proto.a
libdecod_proto_a_SOURCES = proto/proto.c proto/proto.h proto/proto_detail.c
EXTRA_DIST += proto/PROTOCOL.md
