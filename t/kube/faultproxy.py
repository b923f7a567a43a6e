#!/usr/bin/env python3
"""faultproxy - a small fault-injecting proxy between decod and a real
Kubernetes API server, for the faults the real server does not make on
demand: 429 with Retry-After, 500, a watch cut mid-stream, a slow answer,
and "down" (every connection closed at once).  decod talks plain HTTP to it
on 127.0.0.1; it forwards over TLS (verifying the server with --cacert) and
passes the Authorization header through untouched.

    faultproxy.py --upstream https://127.0.0.1:6443 --cacert ca.crt --port-file F

Control (plain HTTP on the same port, never forwarded):
    POST /__fault  {"match": "substring of METHOD PATH", "status": 429,
                    "retry_after": 1, "count": 2}          answer instead
                   {"match": "watch=1", "cut_after": 1, "count": 1}
                                                           cut a stream after N lines
                   {"match": "...", "delay_ms": 3000, "count": 1}   answer late
                   {"down": true} / {"down": false}        refuse everything
    POST /__clear  drop every fault
    GET  /__stats  {"requests": N, "faulted": N, "cut": N, "lines": {...}}
"""
import argparse
import http.client
import json
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlparse

LOCK = threading.Lock()
FAULTS = []
STATE = {"down": False, "requests": 0, "faulted": 0, "cut": 0}
OPEN = set()  # sockets of streams in flight, closed when going down


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def take_fault(reqline):
    with LOCK:
        for f in FAULTS:
            if f.get("count", 1) > 0 and f.get("match", "") in reqline:
                f["count"] = f.get("count", 1) - 1
                STATE["faulted"] += 1
                return dict(f)
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def control(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}") if n else {}
        out = b"{}"
        with LOCK:
            if self.path == "/__fault":
                if "down" in body:
                    STATE["down"] = bool(body["down"])
                    if STATE["down"]:
                        for s in list(OPEN):
                            try:
                                s.shutdown(2)
                            except OSError:
                                pass
                else:
                    FAULTS.append(body)
            elif self.path == "/__clear":
                FAULTS.clear()
                STATE["down"] = False
            elif self.path == "/__stats":
                out = json.dumps(STATE).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def handle_any(self):
        if self.path.startswith("/__"):
            return self.control()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        with LOCK:
            STATE["requests"] += 1
            down = STATE["down"]
        if down:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        reqline = "%s %s" % (self.command, self.path)
        f = take_fault(reqline)
        if f and "status" in f:
            msg = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": "injected by faultproxy", "code": f["status"],
                              "reason": "TooManyRequests" if f["status"] == 429 else "InternalError"}).encode()
            self.send_response(f["status"])
            if "retry_after" in f:
                self.send_header("Retry-After", str(f["retry_after"]))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        if f and "delay_ms" in f:
            time.sleep(f["delay_ms"] / 1000.0)
        up = urlparse(ARGS.upstream)
        ctx = ssl.create_default_context(cafile=ARGS.cacert)
        conn = http.client.HTTPSConnection(up.hostname, up.port, context=ctx, timeout=700)
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in ("host", "connection", "content-length", "accept-encoding")}
        try:
            conn.request(self.command, self.path, body=body, headers=hdrs)
            resp = conn.getresponse()
        except OSError as e:
            self.send_error(502, str(e))
            return
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "content-encoding"):
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        cut_after = f.get("cut_after") if f else None
        lines = 0
        with LOCK:
            OPEN.add(self.connection)
        try:
            while True:
                chunk = resp.readline() if cut_after is not None else resp.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                lines += 1
                if cut_after is not None and lines >= cut_after:
                    with LOCK:
                        STATE["cut"] += 1
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
        finally:
            with LOCK:
                OPEN.discard(self.connection)
            conn.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument("--cacert", required=True)
    p.add_argument("--port-file", required=True)
    ARGS = p.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    with open(ARGS.port_file + ".tmp", "w") as fh:
        fh.write(str(srv.server_address[1]))
    import os
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
