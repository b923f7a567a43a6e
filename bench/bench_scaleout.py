#!/usr/bin/env python3
# bench_scaleout.py - the measuring half of bench/bench_scaleout.sh: talks to
# etcd through its v3 JSON gateway and reads a decod journal with sqlite3.
#   put-many URL NS COUNT          COUNT inline Decofiles NS/d-0.. (txns of 100)
#   latency URL NS COUNT DB        put one Decofile at a time, latency to its
#                                  renderer item (items.created_ms - put start)
#   latency-edit URL NS COUNT DB   the same for an edit of each (lock already held)
#   count DB                       renderer items in the journal
#   owners URL                     "holder count" per lock holder
import base64, json, sqlite3, sys, time, urllib.request

def b64(s):
    return base64.b64encode(s.encode()).decode()

def call(url, path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)

def doc(ns, name, i, salt="x"):
    return json.dumps({"apiVersion": "deco.sites/v1alpha1", "kind": "Decofile",
        "metadata": {"name": name, "namespace": ns, "generation": 1},
        "spec": {"source": "inline", "inline": {"value": {
            "Header": {"n": i, "salt": salt}, "Footer": {"text": "site %d" % i}}}}})

def put_many(url, ns, count):
    for start in range(0, count, 100):
        ops = [{"request_put": {"key": b64("/decod/decofiles/%s/d-%d" % (ns, i)),
                                "value": b64(doc(ns, "d-%d" % i, i))}}
               for i in range(start, min(count, start + 100))]
        call(url, "/v3/kv/txn", {"success": ops})

def items(db, ns, name, nth=0):
    c = sqlite3.connect(db, timeout=5)
    try:
        r = c.execute("SELECT created_ms FROM items WHERE stage='renderer' AND ns=? AND name=?"
                      " ORDER BY id LIMIT 1 OFFSET ?", (ns, name, nth)).fetchone()
    except sqlite3.OperationalError:
        r = None
    c.close()
    return r[0] if r else None

def latency(url, ns, count, db, edit=False):
    out = []
    for i in range(count):
        name = "lat-%d" % i
        t0 = time.time() * 1000
        call(url, "/v3/kv/put", {"key": b64("/decod/decofiles/%s/%s" % (ns, name)),
                                 "value": b64(doc(ns, name, i, "y" if edit else "x"))})
        deadline = time.time() + 10
        while True:
            t = items(db, ns, name, 1 if edit else 0)
            if t is not None:
                out.append(t - t0)
                break
            if time.time() > deadline:
                out.append(float("inf"))
                break
            time.sleep(0.002)
    out.sort()
    pct = lambda p: out[min(len(out) - 1, int(p * len(out)))]
    print("n=%d p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f" %
          (len(out), pct(0.5), pct(0.9), pct(0.99), out[-1]))

def count(db):
    c = sqlite3.connect(db, timeout=5)
    try:
        print(c.execute("SELECT count(DISTINCT name) FROM items WHERE stage='renderer'").fetchone()[0])
    except sqlite3.OperationalError:
        print(0)
    c.close()

def owners(url):
    r = call(url, "/v3/kv/range", {"key": b64("/decod/locks/"), "range_end": b64("/decod/locks0")})
    by = {}
    for kv in r.get("kvs", []):
        v = base64.b64decode(kv["value"]).decode()
        by[v] = by.get(v, 0) + 1
    for k, v in sorted(by.items()):
        print(k, v)

if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "put-many":
        put_many(a[1], a[2], int(a[3]))
    elif a[0] == "latency":
        latency(a[1], a[2], int(a[3]), a[4])
    elif a[0] == "latency-edit":
        latency(a[1], a[2], int(a[3]), a[4], True)
    elif a[0] == "count":
        count(a[1])
    elif a[0] == "owners":
        owners(a[1])
