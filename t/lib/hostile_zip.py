#!/usr/bin/env python3
"""hostile_zip.py KIND OUT - write a hostile zipball for the fetcher's tests.

Every archive starts with a root folder entry, as GitHub's do, and holds one
good block beside the hostile part, so a refusal can only come from the guard.
  slip      an entry ../../evil.json (zip-slip)
  abs       an entry /etc/evil.json (absolute path)
  symlink   a block that is a symbolic link (unix mode 0120777) to /etc/passwd
  bomb      a 64 MiB block of spaces (~64 KiB compressed: ratio ~1000:1)
  many N    N small blocks (past max_archive_entries)
  latin1    a block named Caf\xe9.json in Latin-1, no UTF-8 flag, as an
            old zipper on such a system writes it (not UTF-8)
  bigbomb   one 2 GiB block of zeros in ~2 MiB (deflate's ~1030:1), the
            archive's own ratio as high as the entry's; written in a
            blink (one deflate unit repeated), not compressed here
"""
import struct
import sys
import zipfile
import zlib


def big_bomb(out, root, size=2 << 30):
    """a zip of root, Good.json and blocks/Bomb.json: size zero bytes"""
    unit_len = 1 << 20
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    # a full flush empties the window: every 1 MiB of zeros deflates alike
    unit = c.compress(bytes(unit_len)) + c.flush(zlib.Z_FULL_FLUSH)
    tail = c.flush(zlib.Z_FINISH)
    crc = 0
    chunk = bytes(unit_len)
    for _ in range(size // unit_len):
        crc = zlib.crc32(chunk, crc)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo(root), b"")
        z.writestr(root + "blocks/Good.json", b'{"good":true}')
    with open(out, "rb") as f:
        head = f.read()
    cd_at = struct.unpack("<I", head[-6:-2])[0]
    entries = head[:cd_at]
    central = head[cd_at:-22]
    name = (root + "blocks/Bomb.json").encode()
    csize = len(unit) * (size // unit_len) + len(tail)
    local = struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 8, 0, 0x21, crc, csize, size,
                        len(name), 0) + name
    offset = len(entries)
    cent = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 0x314, 20, 0, 8, 0, 0x21, crc, csize,
                       size, len(name), 0, 0, 0, 0, 0o100644 << 16, offset) + name
    with open(out, "wb") as f:
        f.write(entries)
        f.write(local)
        for _ in range(size // unit_len):
            f.write(unit)
        f.write(tail)
        cd = central + cent
        cd_off = offset + len(local) + csize
        f.write(cd)
        f.write(struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 3, 3, len(cd), cd_off, 0))


kind, out = sys.argv[1], sys.argv[2]
root = "acme-evil-0000000/"
if kind == "bigbomb":
    big_bomb(out, root)
    sys.exit(0)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr(zipfile.ZipInfo(root), b"")
    z.writestr(root + "blocks/Good.json", b'{"good":true}')
    if kind == "slip":
        z.writestr(root + "blocks/../../../evil.json", b'{"evil":true}')
        # zipfile keeps the name as given only through ZipInfo
        info = zipfile.ZipInfo("../../evil.json")
        z.writestr(info, b'{"evil":true}')
    elif kind == "abs":
        z.writestr(zipfile.ZipInfo("/etc/evil.json"), b'{"evil":true}')
    elif kind == "symlink":
        info = zipfile.ZipInfo(root + "blocks/Link.json")
        info.create_system = 3
        info.external_attr = (0o120777 << 16)
        z.writestr(info, b"/etc/passwd")
    elif kind == "bomb":
        z.writestr(root + "blocks/Bomb.json", b" " * (64 << 20))
    elif kind == "latin1":
        # zipfile flags any non-ASCII str UTF-8: write a placeholder, patched below
        z.writestr(root + "blocks/Caf@.json", b'{"latin1":true}')
    elif kind == "many":
        for i in range(int(sys.argv[3])):
            z.writestr(root + "blocks/b%05d.json" % i, b"{}")
    else:
        sys.exit("unknown kind " + kind)
if kind == "latin1":
    with open(out, "rb") as f:
        data = f.read()
    with open(out, "wb") as f:
        f.write(data.replace(b"blocks/Caf@.json", b"blocks/Caf\xe9.json"))
