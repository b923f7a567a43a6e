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
                   {"match": "...", "delay_ms": 9000, "drop": true, "count": 1}
                                                           hang, then close without
                                                           forwarding (never reaches
                                                           the server)
                   {"down": true} / {"down": false}        refuse everything
                   {"cut": "substring"}                    close the answers in flight
                                                           (watches) whose request has it
    POST /__mark   {"mark": "text"}: a line "MARK text" in the log, to order events
    POST /__clear  drop every fault
    GET  /__stats  {"requests": N, "faulted": N, "cut": N, "hanging": N,
                    "tokens": {"<sha256 prefix of a bearer token>": N}}
    GET  /__hangs  [{"req", "t", "end", "by": "client" or "proxy"}] hangs that ended
    GET  /__log    [{"t": ms, "req": "METHOD PATH", "status": N, "fault": bool}]
                   every request in order (status 0: dropped or refused);
                   t is a monotonic clock in milliseconds
Tokens are never kept or printed: only a 12-hex prefix of their sha256.
"""
import argparse
import hashlib
import http.client
import json
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlparse

LOCK = threading.Lock()
FAULTS = []
STATE = {"down": False, "requests": 0, "faulted": 0, "cut": 0, "hanging": 0, "tokens": {}}
HANGS = []  # hung requests that ended: {"req", "t", "end", "by": "client"|"proxy"}
LOG = []  # one entry per request, bounded by LOG_MAX
LOG_MAX = 20000
OPEN = {}  # sockets of answers in flight -> their request line


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def now_ms():
    return int(time.monotonic() * 1000)


def log_req(t, reqline, status, fault):
    with LOCK:
        if len(LOG) < LOG_MAX:
            LOG.append({"t": t, "req": reqline, "status": status, "fault": fault})


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
                if "down" in body or "cut" in body:
                    if "down" in body:
                        STATE["down"] = bool(body["down"])
                    what = body.get("cut", "") if "cut" in body else None
                    for s, req in list(OPEN.items()):
                        if (what is None and not STATE["down"]) or \
                                (what is not None and what not in req):
                            continue
                        try:
                            s.shutdown(2)
                            STATE["cut"] += 1
                        except OSError:
                            pass
                else:
                    FAULTS.append(body)
            elif self.path == "/__clear":
                FAULTS.clear()
                STATE["down"] = False
            elif self.path == "/__stats":
                out = json.dumps(STATE).encode()
            elif self.path == "/__mark":
                LOG.append({"t": now_ms(), "req": "MARK " + body.get("mark", ""),
                            "status": 0, "fault": False})
            elif self.path == "/__hangs":
                out = json.dumps(HANGS).encode()
            elif self.path == "/__log":
                out = json.dumps(LOG).encode()
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
        t = now_ms()
        reqline = "%s %s" % (self.command, self.path)
        auth = self.headers.get("Authorization") or ""
        with LOCK:
            STATE["requests"] += 1
            down = STATE["down"]
            if auth.startswith("Bearer "):
                h = hashlib.sha256(auth[7:].encode()).hexdigest()[:12]
                STATE["tokens"][h] = STATE["tokens"].get(h, 0) + 1
        if down:
            log_req(t, reqline, 0, True)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        f = take_fault(reqline)
        if f and f.get("drop"):
            log_req(t, reqline, 0, True)
            with LOCK:
                STATE["hanging"] += 1
            by = "proxy"
            end = time.monotonic() + f.get("delay_ms", 0) / 1000.0
            try:
                while time.monotonic() < end:
                    r, _, _ = select.select([self.connection], [], [], end - time.monotonic())
                    if r and not self.connection.recv(1, socket.MSG_PEEK):
                        by = "client"  # the caller gave up (its deadline)
                        break
            except OSError:
                by = "client"
            finally:
                with LOCK:
                    STATE["hanging"] -= 1
                    HANGS.append({"req": reqline, "t": t, "end": now_ms(), "by": by})
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        if f and "status" in f:
            log_req(t, reqline, f["status"], True)
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
            log_req(t, reqline, 502, False)
            self.send_error(502, str(e))
            return
        log_req(t, reqline, resp.status, bool(f))
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "content-encoding"):
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        cut_after = f.get("cut_after") if f else None
        lines = 0
        with LOCK:
            OPEN[self.connection] = reqline
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
                OPEN.pop(self.connection, None)
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
