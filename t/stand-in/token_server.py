#!/usr/bin/env python3
"""token_server.py - a stand-in for a registry token service (the Docker
registry's `auth: token` protocol), for decod's tests.  GET /token?service=S
&scope=repository:NAME:ACTIONS with HTTP Basic credentials (the one user of
--users, a file of "user:password") answers {"token": JWT, "access_token": JWT,
"expires_in": 300}; the JWT is RS256-signed with --key, its "kid" is the
libtrust key id of that key, which is how docker-registry finds the key in
its rootcertbundle.  Wrong or missing credentials: 401.  Bound to
127.0.0.1:0; the port is written to --port-file once it listens.
"""
import argparse
import base64
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

args = None
key = None
lock = threading.Lock()
issued = {"tokens": 0, "refused": 0}


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def libtrust_kid(pub):
    der = pub.public_bytes(serialization.Encoding.DER,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    s = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode().rstrip("=")
    return ":".join(s[i:i + 4] for i in range(0, len(s), 4))


def jwt(claims):
    header = {"typ": "JWT", "alg": "RS256", "kid": libtrust_kid(key.public_key())}
    signing = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    sig = key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing + "." + b64(sig)


class Token(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def answer(self, code, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urlsplit(self.path)
        if u.path == "/stats":
            with lock:
                self.answer(200, issued)
            return
        if u.path != "/token":
            self.answer(404, {"errors": [{"code": "NOT_FOUND"}]})
            return
        q = parse_qs(u.query)
        auth = self.headers.get("Authorization", "")
        user = None
        if auth.startswith("Basic "):
            try:
                u_p = base64.b64decode(auth[6:]).decode()
            except Exception:
                u_p = ""
            if secrets.compare_digest(u_p, args.users):
                user = u_p.split(":", 1)[0]
        if user is None:
            with lock:
                issued["refused"] += 1
            self.answer(401, {"errors": [{"code": "UNAUTHORIZED",
                                          "message": "authentication required"}]},
                        [("WWW-Authenticate", 'Basic realm="token"')])
            return
        access = []
        for scope in q.get("scope", []):
            for one in scope.split(" "):
                parts = one.split(":")
                if len(parts) >= 3 and parts[0] == "repository":
                    access.append({"type": "repository", "name": ":".join(parts[1:-1]),
                                   "actions": parts[-1].split(",")})
        now = int(time.time())
        claims = {"iss": args.issuer, "sub": user, "aud": q.get("service", [""])[0],
                  "exp": now + 300, "nbf": now - 10, "iat": now,
                  "jti": secrets.token_hex(8), "access": access}
        t = jwt(claims)
        with lock:
            issued["tokens"] += 1
        self.answer(200, {"token": t, "access_token": t, "expires_in": 300,
                          "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))})


def main():
    global args, key
    p = argparse.ArgumentParser()
    p.add_argument("--key", required=True)
    p.add_argument("--users", required=True, help="file holding user:password")
    p.add_argument("--issuer", default="decod-test-issuer")
    p.add_argument("--port-file", required=True)
    args = p.parse_args()
    with open(args.users) as f:
        args.users = f.read().strip()
    with open(args.key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Token)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, args.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
