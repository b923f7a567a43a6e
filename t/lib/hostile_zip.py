#!/usr/bin/env python3
"""hostile_zip.py KIND OUT - write a hostile zipball for the fetcher's tests.

Every archive starts with a root folder entry, as GitHub's do, and holds one
good block beside the hostile part, so a refusal can only come from the guard.
  slip      an entry ../../evil.json (zip-slip)
  abs       an entry /etc/evil.json (absolute path)
  symlink   a block that is a symbolic link (unix mode 0120777) to /etc/passwd
  bomb      a 64 MiB block of spaces (~64 KiB compressed: ratio ~1000:1)
  many N    N small blocks (past max_archive_entries)
"""
import sys
import zipfile

kind, out = sys.argv[1], sys.argv[2]
root = "acme-evil-0000000/"
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
    elif kind == "many":
        for i in range(int(sys.argv[3])):
            z.writestr(root + "blocks/b%05d.json" % i, b"{}")
    else:
        sys.exit("unknown kind " + kind)
