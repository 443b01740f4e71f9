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
c/b are printed, and as a markdown table to OUT.md; the speedups also to
OUT.dat (getbatch.gp draws them).

The same with curl (a C client, libcurl): (d) one curl process GETs a run
of batches' objects straight from their owners, one after another on its
kept-alive connections (-K config of URLs), and (e) one curl process sends
a run of GetBatch requests (-L: the 307 followed, the body resent), each
run sized to take about DUR seconds; every transfer's size is checked. The
Python client's own CPU limits (a) to (c) (its share is printed per round);
curl shows the servers with less client cost on both sides.

usage: getbatch.py GATEWAY_URL OUT.md [--sizes 10K,100K] [--batches 64,256]
       [--rounds 3] [--dur 5] [--objects N]
"""
import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
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
    n, t0, c0 = 0, time.monotonic(), time.process_time()
    while time.monotonic() - t0 < dur:
        for name in rnd.sample(names, batch):
            url = direct[name] if direct else "%s/v1/objects/%s/%s" % (gw, BUCKET, name)
            st, data = get_follow(conns, url)
            if st != 200 or len(data) != size:
                sys.exit("getbatch-bench: GET %s: %d, %d bytes" % (name, st, len(data)))
        n += batch
    wall = time.monotonic() - t0
    return n / wall, (time.process_time() - c0) / wall


def curl_run(cfg, n_transfers, want_size, what):
    """Runs one curl -K cfg; checks every transfer's status and size;
    returns the seconds it took."""
    with tempfile.NamedTemporaryFile("w", suffix=".curl", delete=False) as f:
        f.write(cfg)
    try:
        t0 = time.monotonic()
        p = subprocess.run(["curl", "-sS", "-K", f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        secs = time.monotonic() - t0
    finally:
        os.unlink(f.name)
    res = [ln.split() for ln in p.stdout.decode().splitlines() if ln.strip()]
    bad = [r for r in res if r[0] != "200" or not want_size(int(r[1]))]
    if p.returncode or len(res) != n_transfers or bad:
        sys.exit("getbatch-bench: curl %s: exit %d, %d of %d transfers, bad %r: %s" %
                 (what, p.returncode, len(res), n_transfers, bad[:3], p.stderr.decode()[-300:]))
    return secs


def curl_per_object(names, batch, nb, size, rnd, direct):
    urls = [direct[x] for _ in range(nb) for x in rnd.sample(names, batch)]
    cfg = "".join('url = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code} %%{size_download}\\n"\n' % u
                  for u in urls)
    return len(urls) / curl_run(cfg, len(urls), lambda n: n == size, "GET")


def curl_batch(gw, names, batch, nb, size, rnd, tmp):
    want = batch * (512 + (size + 511) // 512 * 512)
    parts = []
    for i in range(nb):
        body = json.dumps({"in": [{"objname": x} for x in rnd.sample(names, batch)],
                           "mime": ".tar", "strm": True, "onob": True})
        bf = os.path.join(tmp, "b%d.json" % i)
        with open(bf, "w") as f:
            f.write(body)
        parts.append('url = "%s/v1/ml/moss/%s"\nrequest = "GET"\ndata-binary = "@%s"\nlocation\n'
                     'header = "Content-Type: application/json"\noutput = "/dev/null"\n'
                     'write-out = "%%{http_code} %%{size_download}\\n"\n' % (gw, BUCKET, bf))
    return nb * batch / curl_run("next\n".join(parts), nb, lambda n: n >= want, "GetBatch")


def run_batch(gw, names, batch, dur, size, rnd):
    conns = Conns()
    hdr = {"Content-Type": "application/json"}
    n, t0, c0 = 0, time.monotonic(), time.process_time()
    want = batch * (512 + (size + 511) // 512 * 512)
    while time.monotonic() - t0 < dur:
        body = json.dumps({"in": [{"objname": x} for x in rnd.sample(names, batch)],
                           "mime": ".tar", "strm": True, "onob": True}).encode()
        st, data = get_follow(conns, "%s/v1/ml/moss/%s" % (gw, BUCKET), body, hdr)
        if st != 200 or len(data) < want:
            sys.exit("getbatch-bench: GetBatch: %d, %d bytes (want >= %d): %r" % (st, len(data), want, data[:200]))
        n += batch
    wall = time.monotonic() - t0
    return n / wall, (time.process_time() - c0) / wall


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
            per, dir_, bat, cper, cbat = [], [], [], [], []
            rnd = random.Random(batch)
            for r in range(a.rounds):
                (x, xc), (y, yc), (z, zc) = (run_per_object(a.gw, names, batch, a.dur, size, rnd),
                                             run_per_object(a.gw, names, batch, a.dur, size, rnd, own),
                                             run_batch(a.gw, names, batch, a.dur, size, rnd))
                per.append(x)
                dir_.append(y)
                bat.append(z)
                with tempfile.TemporaryDirectory() as tmp:
                    cper.append(curl_per_object(names, batch, max(1, int(y * a.dur / batch)), size, rnd, own))
                    cbat.append(curl_batch(a.gw, names, batch, max(2, int(z * a.dur / batch)), size, rnd, tmp))
                print("  %s batch %d round %d (obj/s): python: per-object %.0f, direct %.0f, GetBatch %.0f "
                      "(client CPU %.0f%%, %.0f%%, %.0f%%); curl: direct %.0f, GetBatch %.0f" %
                      (sz, batch, r + 1, x, y, z, 100 * xc, 100 * yc, 100 * zc, cper[-1], cbat[-1]),
                      file=sys.stderr, flush=True)
            md = statistics.median
            goal = 10 if size <= 10 * 1024 else 2
            rows.append((sz, batch, md(per), md(dir_), md(bat), md(cper), md(cbat), goal))
    lines = ["| size | batch | Python: GET via gateway | GET direct | GetBatch | ratio vs via gw | ratio vs direct "
             "| curl: GET direct | GetBatch | ratio | goal |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for sz, batch, p, d, b, cp, cb, goal in rows:
        lines.append("| %s | %d | %.0f | %.0f | %.0f | %.1fx | %.1fx | %.0f | %.0f | %.1fx | >= %dx |" %
                     (sz, batch, p, d, b, b / p, b / d, cp, cb, cb / cp, goal))
    text = "objects/s, medians of %d rounds\n\n" % a.rounds + "\n".join(lines)
    print(text)
    with open(a.out, "w") as f:
        f.write(text + "\n")
    # the speedups for getbatch.gp, one block (a line of the plot) per size
    with open(os.path.splitext(a.out)[0] + ".dat", "w") as f:
        f.write("# getbatch %s: %d rounds of %g s; %d CPUs\n" % (time.strftime("%Y-%m-%d", time.gmtime()),
                                                               a.rounds, a.dur, os.cpu_count()))
        f.write("# size_bytes size batch python_vs_gateway python_vs_direct curl_vs_direct\n")
        for i, (sz, batch, p, d, b, cp, cb, _) in enumerate(rows):
            if i and rows[i - 1][0] != sz:
                f.write("\n\n")
            f.write("%d %s %d %.3f %.3f %.3f\n" % (parse_size(sz), sz, batch, b / p, b / d, cb / cp))


if __name__ == "__main__":
    main()
