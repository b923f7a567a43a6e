#!/usr/bin/env python3
"""bench_kube_scale.py - helpers of bench_kube_scale.sh, on the official
Python client (python3-kubernetes), reading what the API server holds, never
what decod says.

  ready KUBECONFIG NS N TIMEOUT -- CMD...
      Lists the Decofiles of NS (for a resourceVersion), starts a watch, runs
      CMD (the fast creation of the CRs), and waits until N Decofiles show
      Ready=True with a contentHash.  Prints the seconds from the start of
      CMD to its end ("created"), to the first and to the last CR Ready,
      and the wall clock (epoch seconds) of the first and last Ready
      ("first_at", "last_at": step 4 times them from decod's start).
  writes KUBECONFIG / requests KUBECONFIG
      apiserver_request_total summed by verb and resource (writes only), as
      JSON on one line, from the API server's /metrics (requests: every verb).
  settled KUBECONFIG NS N TIMEOUT
      Waits until N Decofiles of NS show Ready, Syncing and PodsNotified=True
      for the hash they show (every stage's status on the CR).
  notified KUBECONFIG NS NAME TIMEOUT
      Waits until Decofile NS/NAME shows PodsNotified=True for the
      contentHash it shows with Ready=True; prints both lastTransitionTimes.
"""
import json
import re
import subprocess
import sys
import threading
import time

from kubernetes import client, config

G, V, P = "deco.sites", "v1alpha1", "decofiles"


def cond(obj, t):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == t:
            return c
    return None


def ready(cfg, ns, n, timeout, cmd):
    config.load_kube_config(cfg)
    api = client.ApiClient()
    rv = client.CustomObjectsApi(api).list_namespaced_custom_object(G, V, ns, P, limit=1)[
        "metadata"]["resourceVersion"]
    done = set()
    times, epochs = {}, {}
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd)

    def waiter():
        proc.wait()
        times["created"] = time.monotonic() - t0
    th = threading.Thread(target=waiter)
    th.start()
    deadline = t0 + timeout
    while len(done) < n and time.monotonic() < deadline:
        path = "/apis/%s/%s/namespaces/%s/%s" % (G, V, ns, P)
        try:
            r = api.call_api(path, "GET", query_params=[
                ("watch", "1"), ("resourceVersion", rv), ("allowWatchBookmarks", "true"),
                ("timeoutSeconds", str(int(max(1, deadline - time.monotonic()))))],
                auth_settings=["BearerToken"], _preload_content=False,
                _request_timeout=None)[0]
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            print("watch: %s" % e, file=sys.stderr)
            time.sleep(0.5)
            continue
        buf = b""
        for chunk in r.stream(65536):
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                ev = json.loads(line)
                o = ev.get("object") or {}
                rv = (o.get("metadata") or {}).get("resourceVersion", rv)
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    c = cond(o, "Ready")
                    name = o["metadata"]["name"]
                    if (c and c.get("status") == "True" and (o.get("status") or {}).get(
                            "contentHash") and name not in done):
                        done.add(name)
                        if len(done) == 1:
                            times["first"] = time.monotonic() - t0
                            epochs["first_at"] = time.time()
                        if len(done) % 1000 == 0:
                            print("# %d Ready at %.1f s" % (len(done), time.monotonic() - t0),
                                  file=sys.stderr)
                        if len(done) == n:
                            times["last"] = time.monotonic() - t0
                            epochs["last_at"] = time.time()
                            break
            if len(done) == n:
                break
        r.close()
    th.join()
    # cpu_s: this watch's own CPU (it shares the machine with what it times)
    print(json.dumps({"n": n, "ready": len(done), **{k: round(v, 3) for k, v in times.items()},
                      **epochs, "cpu_s": round(time.process_time(), 2)}))
    return 0 if len(done) == n else 1


WRITES = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")


def writes(cfg, every=False):
    """the API server's requests by verb and resource (writes only unless
    every), and with every what its watches sent, by kind: events and KiB"""
    config.load_kube_config(cfg)
    api = client.ApiClient()
    r = api.call_api("/metrics", "GET", auth_settings=["BearerToken"],
                     _preload_content=False)[0]
    out = {}
    pat = re.compile(r'^apiserver_(request_total|watch_events_total|watch_events_sizes_sum)'
                     r'\{(.*)\} ([0-9.e+]+)$')
    for line in r.data.decode().splitlines():
        m = pat.match(line)
        if not m:
            continue
        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        v = float(m.group(3))
        if m.group(1) == "request_total":
            if lab.get("verb") not in WRITES and not every:
                continue
            k = "%s %s%s" % (lab["verb"], lab.get("resource", ""),
                             "/" + lab["subresource"] if lab.get("subresource") else "")
        elif not every:
            continue
        else:
            k = "WATCH %s%s" % (lab.get("kind", lab.get("resource", "")),
                                " KiB" if m.group(1) == "watch_events_sizes_sum" else "")
            if m.group(1) == "watch_events_sizes_sum":
                v /= 1024
        out[k] = out.get(k, 0) + int(v)
    print(json.dumps(out, sort_keys=True))
    return 0


def settled(cfg, ns, n, timeout):
    """every Decofile of ns shows Ready, Syncing and PodsNotified=True for the
    hash it shows: all stages' status is on the CRs (nothing left to write)"""
    config.load_kube_config(cfg)
    api = client.CustomObjectsApi()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ok, cont = 0, None
        while True:
            r = api.list_namespaced_custom_object(G, V, ns, P, limit=500, _continue=cont)
            for o in r["items"]:
                st = o.get("status") or {}
                rd, pn, sy = cond(o, "Ready"), cond(o, "PodsNotified"), cond(o, "Syncing")
                if (rd and rd.get("status") == "True" and pn and pn.get("status") == "True"
                        and sy and st.get("contentHash")
                        and st.get("notifiedHash") == st.get("contentHash")):
                    ok += 1
            cont = r["metadata"].get("continue")
            if not cont:
                break
        if ok >= n:
            return 0
        time.sleep(0.5)
    print("settled: %d of %d" % (ok, n), file=sys.stderr)
    return 1


def decod_writes(api):
    """the API server's count of writes to Decofiles, their status and
    ConfigMaps (not Leases: their renewals never stop)"""
    r = api.call_api("/metrics", "GET", auth_settings=["BearerToken"],
                     _preload_content=False)[0]
    pat = re.compile(r'^apiserver_request_total\{(.*)\} ([0-9.e+]+)$')
    n = 0
    for line in r.data.decode().splitlines():
        m = pat.match(line)
        if m:
            lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if lab.get("verb") in WRITES and lab.get("resource") in ("decofiles", "configmaps"):
                n += int(float(m.group(2)))
    return n


def quiet(cfg, still, timeout):
    """wait until no write to a Decofile, its status or a ConfigMap has
    landed for `still` seconds: the last status write in flight and the
    recheck it may bring are done, so a restart finds nothing to write"""
    config.load_kube_config(cfg)
    api = client.ApiClient()
    deadline = time.monotonic() + timeout
    last, since = decod_writes(api), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        n = decod_writes(api)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= still:
            return 0
    print("quiet: writes still landing after %.0f s" % timeout, file=sys.stderr)
    return 1


def notified(cfg, ns, name, timeout):
    config.load_kube_config(cfg)
    api = client.CustomObjectsApi()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        o = api.get_namespaced_custom_object(G, V, ns, P, name)
        st = o.get("status") or {}
        pn, rd = cond(o, "PodsNotified"), cond(o, "Ready")
        if (pn and pn.get("status") == "True" and rd and rd.get("status") == "True"
                and st.get("notifiedHash") == st.get("contentHash")):
            print(json.dumps({"ready": rd.get("lastTransitionTime"),
                              "notified": pn.get("lastTransitionTime"),
                              "message": pn.get("message")}))
            return 0
        time.sleep(0.2)
    print(json.dumps(o.get("status")), file=sys.stderr)
    return 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "ready":
        sys.exit(ready(a[1], a[2], int(a[3]), float(a[4]), a[a.index("--") + 1:]))
    if a[0] == "writes":
        sys.exit(writes(a[1]))
    if a[0] == "requests":
        sys.exit(writes(a[1], True))
    if a[0] == "settled":
        sys.exit(settled(a[1], a[2], int(a[3]), float(a[4])))
    if a[0] == "quiet":
        sys.exit(quiet(a[1], float(a[2]), float(a[3])))
    if a[0] == "notified":
        sys.exit(notified(a[1], a[2], a[3], float(a[4])))
    sys.exit(2)
