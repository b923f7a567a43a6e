#!/usr/bin/env python3
# t/lib/git_http.py ROOT PORTFILE USER TOKENFILE - a git smart-HTTP remote
# for tests that need credentials: git http-backend (the real one) behind a
# server that answers 401 with a Basic challenge unless the request carries
# USER and the token in TOKENFILE (a file, so no ps listing shows it).  Binds 127.0.0.1 on a free port and writes the port to
# PORTFILE once it listens.  Stopped by the test's kill of its PID.
import base64, http.server, os, subprocess, sys

root, portfile, user, tokenfile = sys.argv[1:5]
token = open(tokenfile).read().strip()
want = "Basic " + base64.b64encode(("%s:%s" % (user, token)).encode()).decode()


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def handle_git(self):
        if self.headers.get("Authorization") != want:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=path, QUERY_STRING=query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type") or "",
                   CONTENT_LENGTH=str(len(body)), REMOTE_USER=user,
                   HTTP_GIT_PROTOCOL=self.headers.get("Git-Protocol") or "")
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             stdout=subprocess.PIPE).stdout
        head, _, data = out.partition(b"\r\n\r\n")
        status = 200
        hdrs = []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.strip().split()[0])
            elif k:
                hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = handle_git
    do_POST = handle_git


s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
