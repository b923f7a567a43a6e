#!/usr/bin/env python3
"""github.py - a GitHub stand-in for decod's tests (not GitHub; no machine
here can reach it).  It speaks the part of the REST API the fetcher uses, as
strictly as GitHub does:

  GET /repos/{org}/{repo}/commits/{ref}   sha of a ref (Accept: vnd.github.sha
      gives the bare sha, else JSON); ETag, If-None-Match -> 304 that does not
      count against the rate limit; X-RateLimit-* headers on every answer
  GET /repos/{org}/{repo}/zipball/{ref}   302 to a codeload-like URL on a
      second port (another origin) with a one-time ?token=; the zip is made by
      `git archive --format=zip --prefix=<org>-<repo>-<sha7>/`
  401 {"message":"Bad credentials"} without or with a wrong token (--token),
  404 {"message":"Not Found"} for unknown repositories and refs,
  403 with X-RateLimit-Remaining: 0 once the budget (--rate-limit) is spent.

Repositories: --repo org/repo=PATH (a git repository read at every request,
so a push is seen) or --zip org/repo=FILE (a fixed zip served for ref "main"
with a made-up sha, for hostile archives).  Control endpoints for tests, not
GitHub's: GET /_stand-in/stats (request counts), POST
/_stand-in/ratelimit?remaining=N&reset_in=S.  Ports: bound to 127.0.0.1:0,
written to --port-file as "API_PORT CODELOAD_PORT" once both listen.
"""
import argparse
import hashlib
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

lock = threading.Lock()
stats = {"commits": 0, "commits_304": 0, "zipball": 0, "codeload": 0,
         "codeload_with_auth": 0, "unauthorized": 0, "rate_limited": 0}
rate = {"limit": 5000, "remaining": 5000, "reset": int(time.time()) + 3600}
tickets = {}  # one-time codeload tokens -> (org, repo, sha)
zip_cache = {}
args = None
codeload_port = 0


def log_line(prefix, h, code):
    """one request: METHOD PATH auth|noauth STATUS ms=UNIX_MS (the time it was answered)"""
    if args.log:
        auth = "auth" if h.headers.get("Authorization") else "noauth"
        with lock, open(args.log, "a") as f:
            f.write("%s%s %s %s %s ms=%d\n" % (prefix, h.command, h.path.split("?")[0], auth,
                                               getattr(code, "value", code),
                                               int(time.time() * 1000)))


def count(k):
    with lock:
        stats[k] += 1


def resolve(org, repo, ref):
    """sha of ref in the repository, or None"""
    key = f"{org}/{repo}"
    if key in args.zips:
        if ref in ("main", "HEAD") or ref == zip_sha(key):
            return zip_sha(key)
        return None
    path = args.repos.get(key)
    if path is None:
        return None
    if ref.startswith("-"):
        return None
    r = subprocess.run(["git", "-C", path, "rev-parse", "--verify", "-q",
                        ref + "^{commit}"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def zip_sha(key):
    with open(args.zips[key], "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def make_zip(org, repo, sha):
    key = f"{org}/{repo}"
    if key in args.zips:
        with open(args.zips[key], "rb") as f:
            return f.read()
    with lock:
        if (key, sha) in zip_cache:
            return zip_cache[(key, sha)]
    prefix = f"{org}-{repo}-{sha[:7]}/"
    data = subprocess.run(["git", "-C", args.repos[key], "archive", "--format=zip",
                           "--prefix=" + prefix, sha], capture_output=True,
                          check=True).stdout
    with lock:
        zip_cache[(key, sha)] = data
    return data


class API(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def log_request(self, code="-", size="-"):
        log_line("", self, code)

    def send(self, code, body=b"", ctype="application/json; charset=utf-8", headers=()):
        self.send_response(code)
        with lock:
            self.send_header("X-RateLimit-Limit", str(rate["limit"]))
            self.send_header("X-RateLimit-Remaining", str(rate["remaining"]))
            self.send_header("X-RateLimit-Reset", str(rate["reset"]))
            self.send_header("X-RateLimit-Used", str(rate["limit"] - rate["remaining"]))
        self.send_header("X-RateLimit-Resource", "core")
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        for k, v in headers:
            self.send_header(k, v)
        if code != 304:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if code != 304 and self.command != "HEAD":
            self.wfile.write(body)

    def error(self, code, message, headers=()):
        body = json.dumps({"message": message,
                           "documentation_url": "https://docs.github.com/rest",
                           "status": str(code)}).encode()
        self.send(code, body, headers=headers)

    def authorized(self):
        if not args.token:
            return True
        got = self.headers.get("Authorization", "")
        if got in ("token " + args.token, "Bearer " + args.token):
            return True
        count("unauthorized")
        self.error(401, "Bad credentials")
        return False

    def spend(self):
        """one request against the budget; False (answered 403) when spent"""
        with lock:
            if rate["reset"] <= time.time():
                rate["remaining"] = rate["limit"]
                rate["reset"] = int(time.time()) + 3600
            if rate["remaining"] <= 0:
                spent = True
            else:
                rate["remaining"] -= 1
                spent = False
        if spent:
            count("rate_limited")
            self.error(403, "API rate limit exceeded for 127.0.0.1. (But here's the "
                       "good news: Authenticated requests get a higher rate limit.)")
        return not spent

    def do_POST(self):
        u = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if u.path == "/_stand-in/ratelimit":
            q = parse_qs(u.query)
            with lock:
                rate["remaining"] = int(q.get("remaining", ["0"])[0])
                rate["reset"] = int(time.time()) + int(q.get("reset_in", ["60"])[0])
            self.send(204)
            return
        self.error(404, "Not Found")

    def do_GET(self):
        u = urlsplit(self.path)
        parts = u.path.split("/")
        if u.path == "/_stand-in/stats":
            with lock:
                body = json.dumps(stats).encode()
            self.send(200, body)
            return
        # /repos/{org}/{repo}/commits/{ref...}  /repos/{org}/{repo}/zipball/{ref...}
        if len(parts) < 6 or parts[1] != "repos" or parts[4] not in ("commits", "zipball"):
            self.error(404, "Not Found")
            return
        org, repo, what, ref = parts[2], parts[3], parts[4], "/".join(parts[5:])
        if not self.authorized():
            return
        key = f"{org}/{repo}"
        if key not in args.repos and key not in args.zips:
            if self.spend():
                self.error(404, "Not Found")
            return
        sha = resolve(org, repo, ref)
        if what == "commits":
            accept = self.headers.get("Accept", "")
            if sha is not None:
                sha_only = "application/vnd.github.sha" in accept or \
                    "application/vnd.github.v3.sha" in accept
                if sha_only:
                    body = sha.encode()
                    etag = '"%s"' % sha
                    ctype = "application/vnd.github.sha; charset=utf-8"
                else:
                    body = json.dumps({"sha": sha, "node_id": "C_" + sha[:12],
                                       "commit": {"message": "stand-in"}}).encode()
                    etag = 'W/"%s"' % hashlib.sha256(body).hexdigest()
                    ctype = "application/json; charset=utf-8"
                inm = self.headers.get("If-None-Match")
                if inm is not None and etag in [t.strip() for t in inm.split(",")]:
                    with lock:              # free: no rate cost
                        stats["commits"] += 1
                        stats["commits_304"] += 1
                    self.send(304, headers=[("ETag", etag)])
                    return
            count("commits")
            if not self.spend():
                return
            if sha is None:
                self.error(422 if key in args.repos and len(ref) != 40 else 404,
                           "No commit found for SHA: " + ref)
                return
            self.send(200, body, ctype, headers=[("ETag", etag),
                                                 ("Cache-Control", "private, max-age=60")])
            return
        count("zipball")
        if not self.spend():
            return
        if sha is None:
            self.error(404, "Not Found")
            return
        t = secrets.token_hex(16)
        with lock:
            tickets[t] = (org, repo, sha)
        loc = "http://127.0.0.1:%d/%s/%s/legacy.zip/%s?token=%s" % (
            codeload_port, org, repo, sha, t)
        self.send(302, b"", "text/html;charset=utf-8", headers=[("Location", loc)])


class Codeload(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def log_request(self, code="-", size="-"):
        log_line("codeload ", self, code)

    def do_GET(self):
        u = urlsplit(self.path)
        count("codeload")
        if self.headers.get("Authorization"):
            count("codeload_with_auth")
        t = parse_qs(u.query).get("token", [""])[0]
        with lock:
            ticket = tickets.pop(t, None)
        parts = u.path.split("/")
        if ticket is None or len(parts) != 5 or (parts[1], parts[2], parts[4]) != ticket:
            body = b"Not Found"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = make_zip(*ticket)
        self.send_response(200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Disposition", "attachment; filename=%s-%s-%s.zip" % (
            ticket[0], ticket[1], ticket[2][:7]))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    global args, codeload_port
    p = argparse.ArgumentParser()
    p.add_argument("--repo", action="append", default=[])
    p.add_argument("--zip", action="append", default=[])
    p.add_argument("--token", default=None, help="file holding the one valid token")
    p.add_argument("--rate-limit", type=int, default=5000)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", default=None)
    args = p.parse_args()
    args.repos = dict(r.split("=", 1) for r in args.repo)
    args.zips = dict(z.split("=", 1) for z in args.zip)
    if args.token:
        with open(args.token) as f:
            args.token = f.read().strip()
    rate["limit"] = rate["remaining"] = args.rate_limit
    api = ThreadingHTTPServer(("127.0.0.1", 0), API)
    cl = ThreadingHTTPServer(("127.0.0.1", 0), Codeload)
    codeload_port = cl.server_address[1]
    threading.Thread(target=cl.serve_forever, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (api.server_address[1], codeload_port))
    os.rename(tmp, args.port_file)
    try:
        api.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
