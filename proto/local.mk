# proto/: built into libdecod.a (see common/local.mk); docs in PROTOCOL.md
EXTRA_DIST += proto/PROTOCOL.md
