#!/usr/bin/env python3
"""blackhole.py PORT_FILE COUNT_FILE - a remote that hangs: it accepts TCP
connections on 127.0.0.1 (a free port, written to PORT_FILE once it listens)
and never answers nor closes them.  COUNT_FILE holds how many it accepted, so
a test can wait until a client is really stuck on it."""
import os
import socket
import sys

port_file, count_file = sys.argv[1], sys.argv[2]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(128)
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(port_file + ".tmp", port_file)
held = []
while True:
    c, _ = s.accept()
    held.append(c)      # kept open, never read, never written
    with open(count_file + ".tmp", "w") as f:
        f.write("%d\n" % len(held))
    os.rename(count_file + ".tmp", count_file)
