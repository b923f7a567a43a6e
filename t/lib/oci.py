#!/usr/bin/env python3
"""oci.py - push OCI/Docker artifacts to a registry through the distribution
API, for decod's tests (what `oras push` or `docker push` would do): blobs by
monolithic upload (POST, then PUT ?digest=), then the manifest by PUT.  It
answers the registry's WWW-Authenticate challenge itself (Bearer: a token
from the realm with basic credentials; Basic: the credentials).

  oci.py push REGISTRY REPO TAG CREDS_FILE oci|docker LAYER:MEDIATYPE[*N]...
      prints the manifest digest; *N lists that layer N times in a row (its
      blob is uploaded once)
  oci.py index REGISTRY REPO TAG CREDS_FILE DIGEST:OS/ARCH...
      an OCI image index of manifests already pushed; prints its digest
  oci.py hostile-tar slip|symlink|latin1 OUT
      a layer tar with a ../ entry, with a symbolic link block, or with a
      block named in Latin-1 (not UTF-8), as an old tar on such a system
      writes it
  oci.py pax-tar DIR OUT
      a layer tar of DIR as Go's archive/tar (docker, buildkit) writes one:
      PAX, a non-ASCII name in a UTF-8 "path" record
"""
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request

MT = {
    "oci": ("application/vnd.oci.image.manifest.v1+json",
            "application/vnd.oci.image.config.v1+json"),
    "docker": ("application/vnd.docker.distribution.manifest.v2+json",
               "application/vnd.docker.container.image.v1+json"),
}


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


class Registry:
    def __init__(self, base, repo, creds_file):
        self.base, self.repo, self.auth = base.rstrip("/"), repo, None
        with open(creds_file) as f:
            self.creds = f.read().strip()

    def _authenticate(self, challenge):
        basic = "Basic " + base64.b64encode(self.creds.encode()).decode()
        if challenge.startswith("Basic"):
            self.auth = basic
            return
        params = {}
        for part in challenge[len("Bearer "):].split(","):
            k, _, v = part.strip().partition("=")
            params[k] = v.strip('"')
        q = urllib.parse.urlencode({"service": params.get("service", ""),
                                    "scope": "repository:%s:pull,push" % self.repo})
        req = urllib.request.Request(params["realm"] + "?" + q,
                                     headers={"Authorization": basic})
        with urllib.request.urlopen(req) as r:
            self.auth = "Bearer " + json.load(r)["token"]

    def call(self, method, url, body=None, headers=None):
        if not url.startswith("http"):
            url = self.base + url
        for _ in range(2):
            h = dict(headers or {})
            if self.auth:
                h["Authorization"] = self.auth
            req = urllib.request.Request(url, data=body, method=method, headers=h)
            try:
                r = urllib.request.build_opener(NoRedirect).open(req)
                return r.status, dict(r.headers), r.read()
            except urllib.error.HTTPError as e:
                if e.code == 401 and self.auth is None:
                    self._authenticate(e.headers.get("WWW-Authenticate", ""))
                    continue
                if e.code in (201, 202, 307):
                    return e.code, dict(e.headers), e.read()
                raise SystemExit("%s %s: %d %s" % (method, url, e.code, e.read()[:300]))
        raise SystemExit("%s %s: unauthorized" % (method, url))

    def blob(self, data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        code, h, _ = self.call("POST", "/v2/%s/blobs/uploads/" % self.repo, b"")
        loc = h.get("Location")
        if not loc.startswith("http"):
            loc = self.base + loc
        loc += ("&" if "?" in loc else "?") + "digest=" + urllib.parse.quote(digest)
        self.call("PUT", loc, data, {"Content-Type": "application/octet-stream"})
        return digest, len(data)

    def manifest(self, tag, mtype, doc):
        body = json.dumps(doc, separators=(",", ":")).encode()
        self.call("PUT", "/v2/%s/manifests/%s" % (self.repo, tag), body,
                  {"Content-Type": mtype})
        return "sha256:" + hashlib.sha256(body).hexdigest(), len(body)


def push(argv):
    reg, repo, tag, creds, kind = argv[:5]
    r = Registry(reg, repo, creds)
    mtype, ctype = MT[kind]
    cfg = json.dumps({"architecture": "amd64", "os": "linux",
                      "rootfs": {"type": "layers", "diff_ids": []}}).encode()
    cd, cs = r.blob(cfg)
    layers = []
    for spec in argv[5:]:
        path, _, lmt = spec.partition(":")
        lmt, _, times = lmt.partition("*")
        with open(path, "rb") as f:
            d, s = r.blob(f.read())
        layer = {"mediaType": lmt, "digest": d, "size": s}
        if not lmt.startswith("application/vnd.oci.image.layer") and \
                not lmt.startswith("application/vnd.docker.image.rootfs"):
            layer["annotations"] = {"org.opencontainers.image.title":
                                    path.rsplit("/", 1)[-1]}
        layers.extend([layer] * int(times or 1))
    doc = {"schemaVersion": 2, "mediaType": mtype,
           "config": {"mediaType": ctype, "digest": cd, "size": cs}, "layers": layers}
    print(r.manifest(tag, mtype, doc)[0])


def index(argv):
    reg, repo, tag, creds = argv[:4]
    r = Registry(reg, repo, creds)
    ms = []
    for spec in argv[4:]:
        digest, _, osarch = spec.rpartition(":")
        os_, _, arch = osarch.partition("/")
        code, h, body = r.call("GET", "/v2/%s/manifests/%s" % (repo, digest),
                               headers={"Accept": MT["oci"][0]})
        ms.append({"mediaType": MT["oci"][0], "digest": digest, "size": len(body),
                   "platform": {"os": os_, "architecture": arch}})
    mtype = "application/vnd.oci.image.index.v1+json"
    print(r.manifest(tag, mtype, {"schemaVersion": 2, "mediaType": mtype,
                                  "manifests": ms})[0])


def hostile_tar(argv):
    kind, out = argv
    # Latin-1 names go in as their raw bytes, as an old tar writes them
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT, encoding="latin-1") as t:
        good = b'{"good":true}'
        ti = tarfile.TarInfo("blocks/Good.json")
        ti.size = len(good)
        t.addfile(ti, io.BytesIO(good))
        if kind == "slip":
            ti = tarfile.TarInfo("blocks/../../evil.json")
            ti.size = len(good)
            t.addfile(ti, io.BytesIO(good))
        elif kind == "symlink":
            ti = tarfile.TarInfo("blocks/Link.json")
            ti.type = tarfile.SYMTYPE
            ti.linkname = "/etc/passwd"
            t.addfile(ti)
        elif kind == "latin1":
            ti = tarfile.TarInfo("blocks/Caf\u00e9.json")
            ti.size = len(good)
            t.addfile(ti, io.BytesIO(good))
        else:
            raise SystemExit("unknown kind " + kind)


def pax_tar(argv):
    src, out = argv
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT, encoding="utf-8") as t:
        t.add(src, arcname=".")


if __name__ == "__main__":
    {"push": push, "index": index, "hostile-tar": hostile_tar,
     "pax-tar": pax_tar}[sys.argv[1]](sys.argv[2:])
