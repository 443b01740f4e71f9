#!/usr/bin/env python3
"""getbatch.py - GetBatch vs one GET per object, from one client stream
(run by getbatch.sh against a cluster it started; standard library only).

For each object size and batch size: batches of random objects are fetched
for DUR seconds, from one client thread, (a) one GET per object through the
gateway, following its 307 (two requests per object), (b) one GET per
object straight to its owner target (the owners learnt from the gateway's
307s before the timing: one request per object, the best a client of one
connection per node can do), and (c) one GetBatch request per batch through
the gateway (307 to the designated target, body resent). Every connection is
kept alive: one to the gateway and one to each target (4 with 3 targets).
Rounds alternate a, b and c; the medians of objects/s and the ratios c/a and
c/b are printed, and as a markdown table to OUT.md.

usage: getbatch.py GATEWAY_URL OUT.md [--sizes 10K,100K] [--batches 64,256]
       [--rounds 3] [--dur 5] [--objects N]
"""
import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse

BUCKET = "gbbench"


class Conns:
    """One keep-alive connection per host:port."""

    def __init__(self):
        self.c = {}

    def get(self, netloc):
        c = self.c.get(netloc)
        if c is None:
            host, port = netloc.rsplit(":", 1)
            c = self.c[netloc] = http.client.HTTPConnection(host, int(port), timeout=60)
        return c

    def request(self, method, url, body=None, headers=None):
        u = urllib.parse.urlsplit(url)
        path = u.path + ("?" + u.query if u.query else "")
        for attempt in (0, 1):
            c = self.get(u.netloc)
            try:
                c.request(method, path, body=body, headers=headers or {})
                r = c.getresponse()
                data = read_all(r)
                return r.status, r.getheader("Location"), data
            except (http.client.HTTPException, OSError):
                c.close()
                del self.c[u.netloc]
                if attempt:
                    raise


def read_all(r):
    """The body, read in large pieces (r.read() of a chunked body is slow)."""
    parts = []
    while True:
        b = r.read1(1 << 20)
        if not b:
            return b"".join(parts)
        parts.append(b)


def get_follow(conns, url, body=None, headers=None):
    st, loc, data = conns.request("GET", url, body, headers)
    if st == 307:
        st, _, data = conns.request("GET", loc, body, headers)
    return st, data


def parse_size(s):
    m = {"K": 1024, "M": 1 << 20}
    return int(s[:-1]) * m[s[-1].upper()] if s[-1].upper() in m else int(s)


def put_all(gw, names, size):
    rnd = random.Random(size)
    body = rnd.randbytes(size)
    errs = []

    def worker(part):
        conns = Conns()
        for n in part:
            url = "%s/v1/objects/%s/%s" % (gw, BUCKET, n)
            st, loc, _ = conns.request("HEAD", url)
            if st == 307:
                st, _, _ = conns.request("PUT", loc, body)
            if st != 200:
                errs.append((n, st))

    ths = [threading.Thread(target=worker, args=(names[i::8],)) for i in range(8)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errs:
        sys.exit("getbatch-bench: PUT failed: %r" % errs[:3])


def owners(gw, names):
    """{name: the owner's URL of the object}, from the gateway's 307s."""
    conns, out = Conns(), {}
    for n in names:
        st, loc, _ = conns.request("HEAD", "%s/v1/objects/%s/%s" % (gw, BUCKET, n))
        if st != 307 or not loc:
            sys.exit("getbatch-bench: HEAD %s through the gateway: %d" % (n, st))
        out[n] = loc
    return out


def run_per_object(gw, names, batch, dur, size, rnd, direct=None):
    conns = Conns()
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < dur:
        for name in rnd.sample(names, batch):
            url = direct[name] if direct else "%s/v1/objects/%s/%s" % (gw, BUCKET, name)
            st, data = get_follow(conns, url)
            if st != 200 or len(data) != size:
                sys.exit("getbatch-bench: GET %s: %d, %d bytes" % (name, st, len(data)))
        n += batch
    return n / (time.monotonic() - t0)


def run_batch(gw, names, batch, dur, size, rnd):
    conns = Conns()
    hdr = {"Content-Type": "application/json"}
    n, t0 = 0, time.monotonic()
    want = batch * (512 + (size + 511) // 512 * 512)
    while time.monotonic() - t0 < dur:
        body = json.dumps({"in": [{"objname": x} for x in rnd.sample(names, batch)],
                           "mime": ".tar", "strm": True, "onob": True}).encode()
        st, data = get_follow(conns, "%s/v1/ml/moss/%s" % (gw, BUCKET), body, hdr)
        if st != 200 or len(data) < want:
            sys.exit("getbatch-bench: GetBatch: %d, %d bytes (want >= %d): %r" % (st, len(data), want, data[:200]))
        n += batch
    return n / (time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gw")
    ap.add_argument("out")
    ap.add_argument("--sizes", default="10K,100K")
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dur", type=float, default=5)
    ap.add_argument("--objects", type=int, default=2048)
    a = ap.parse_args()

    st, _, data = Conns().request("POST", a.gw + "/v1/buckets/" + BUCKET, json.dumps({"action": "create-bck"}))
    if st not in (200, 409):
        sys.exit("getbatch-bench: create bucket: %d %r" % (st, data[:200]))
    rows = []
    for sz in a.sizes.split(","):
        size = parse_size(sz)
        names = ["s%s/obj-%06d" % (sz, i) for i in range(a.objects)]
        put_all(a.gw, names, size)
        own = owners(a.gw, names)
        for batch in (int(b) for b in a.batches.split(",")):
            per, dir_, bat = [], [], []
            rnd = random.Random(batch)
            for r in range(a.rounds):
                per.append(run_per_object(a.gw, names, batch, a.dur, size, rnd))
                dir_.append(run_per_object(a.gw, names, batch, a.dur, size, rnd, own))
                bat.append(run_batch(a.gw, names, batch, a.dur, size, rnd))
                print("  %s batch %d round %d: per-object %.0f obj/s, direct %.0f obj/s, GetBatch %.0f obj/s" %
                      (sz, batch, r + 1, per[-1], dir_[-1], bat[-1]), file=sys.stderr, flush=True)
            p, d, b = statistics.median(per), statistics.median(dir_), statistics.median(bat)
            goal = 10 if size <= 10 * 1024 else 2
            rows.append((sz, batch, p, d, b, goal))
    lines = ["| object size | batch | GET per object via gateway (obj/s) | GET per object, direct (obj/s) "
             "| GetBatch (obj/s) | ratio vs via gateway | ratio vs direct | goal |",
             "|---|---|---|---|---|---|---|---|"]
    for sz, batch, p, d, b, goal in rows:
        lines.append("| %s | %d | %.0f | %.0f | %.0f | %.1fx | %.1fx | >= %dx |" % (sz, batch, p, d, b, b / p, b / d, goal))
    text = "\n".join(lines)
    print(text)
    with open(a.out, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
