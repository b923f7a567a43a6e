#!/usr/bin/env python3
"""bignode.py - a hostile Valkey node for the acl stage's tests: to a client
whose commands include ACL (the acl stage's AUTH + ACL GETUSER/SETUSER
pipeline) it answers with a bulk string declared --declare bytes long
(default 2 GB) and streams filler for it, or with --array an array
declared --declare elements long and streams one-byte strings ("$1 x") for
it; at most --limit bytes (a bounded loop), stopping when the client closes; any other client (Sentinel's own
links to a known replica) is closed after its first commands.  Bound to
127.0.0.1, port written to --port-file once it listens.  Per attacked
connection one line goes to --log: "sent N" (bytes sent before it stopped).
"""
import argparse
import os
import socket
import threading


def serve(conn, args, logf, lock):
    seen = b""
    conn.settimeout(2.0)
    try:
        while b"ACL" not in seen and len(seen) < 65536:
            chunk = conn.recv(4096)
            if not chunk:
                return
            seen += chunk
    except OSError:
        return
    finally:
        if b"ACL" not in seen:
            conn.close()
    sent = 0
    filler = b"$1\r\nx\r\n" * 9362 if args.array else b"x" * 65536
    conn.settimeout(10.0)
    try:
        conn.sendall(b"%s%d\r\n" % (b"*" if args.array else b"$", args.declare))
        while sent < args.limit:
            sent += conn.send(filler)
    except OSError:
        pass
    finally:
        conn.close()
    with lock:
        logf.write("sent %d\n" % sent)
        logf.flush()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--declare", type=int, default=2_000_000_000)
    p.add_argument("--array", action="store_true")
    p.add_argument("--limit", type=int, default=200 * 1024 * 1024)
    args = p.parse_args()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    lock = threading.Lock()
    logf = open(args.log, "a")
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(tmp, args.port_file)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, args, logf, lock), daemon=True).start()


if __name__ == "__main__":
    main()
