#!/usr/bin/env python3
"""bench_kube.py KUBECONFIG NS NAME ROUNDS - CR change -> condition visible on
the CR, against a real API server: each round patches spec.inline.value of
Decofile NS/NAME with a new block, computes the merge's sha256 the way decod
renders it, and watches the CR until (1) status.contentHash is that hash with
Ready=True (the publisher's write, mirrored) and (2) status.notifiedHash is
that hash with PodsNotified=True (the pods reloaded).  Prints p50/p90/max of
both, in ms.  Uses Debian's python3-kubernetes (the official client)."""
import hashlib
import json
import sys
import time

from kubernetes import client, config, watch

cfg, ns, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
config.load_kube_config(cfg)
api = client.CustomObjectsApi()
G, V, P = "deco.sites", "v1alpha1", "decofiles"


def cond(obj, t):
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == t:
            return c.get("status")
    return None


ready, notified = [], []
for i in range(rounds):
    # strings and integers only, keys sorted: the API server re-encodes what it
    # stores (Go), and decod merges what it reads back
    value = {"Bench": {"round": i, "at": "%.6f" % time.time()}, "Header": {"title": "bench"}}
    merged = "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" +
                            json.dumps(value[k], separators=(",", ":"), ensure_ascii=False, sort_keys=True)
                            for k in sorted(value)) + "}"
    want = hashlib.sha256(merged.encode()).hexdigest()
    cur = api.get_namespaced_custom_object(G, V, ns, P, name)
    rv = cur["metadata"]["resourceVersion"]
    t0 = time.monotonic()
    # a merge patch: the keys are the same every round, so the result is value
    api.patch_namespaced_custom_object(G, V, ns, P, name, {"spec": {"inline": {"value": value}}})
    t_ready = t_notified = None
    st = {}
    w = watch.Watch()
    for ev in w.stream(api.list_namespaced_custom_object, G, V, ns, P,
                       field_selector="metadata.name=" + name, resource_version=rv,
                       timeout_seconds=60):
        o = ev["object"]
        st = o.get("status", {}) or {}
        now = time.monotonic()
        if t_ready is None and st.get("contentHash") == want and cond(o, "Ready") == "True":
            t_ready = now
        if t_notified is None and st.get("notifiedHash") == want and cond(o, "PodsNotified") == "True":
            t_notified = now
        if t_ready is not None and t_notified is not None:
            w.stop()
    if t_ready is None or t_notified is None:
        print("round %d: timed out; want %s; last status %s" % (i, want, json.dumps(st)), file=sys.stderr)
        sys.exit(1)
    ready.append((t_ready - t0) * 1000)
    notified.append((t_notified - t0) * 1000)


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]


for label, v in (("Ready (ConfigMap written, status mirrored)", ready),
                 ("PodsNotified (every pod reloaded, status mirrored)", notified),
                 ("Ready -> PodsNotified (publish to every pod notified)",
                  [n - r for r, n in zip(ready, notified)])):
    print("CR change -> %s: p50 %.0f ms, p90 %.0f ms, max %.0f ms (%d rounds)"
          % (label, q(v, .5), q(v, .9), max(v), len(v)))
