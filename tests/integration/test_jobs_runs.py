"""test_jobs_runs.py - the job registry end to end: runs with ids, two at
once, stop by id, a target killed (-9) in the middle of a run reports and
resumes it, the history after completion (and after a restart), metrics.
The remote is a small S3 server started here (path style, on a free
loopback port) that answers each object GET after DELAY seconds, so a
prefetch runs long enough to be watched; the cluster is 1 gateway + 2
targets. Every process is stopped by PID; every wait is bounded.

Checks:
 1. Two prefetches of two buckets at once: each POST answers its own id;
    GET /v1/jobs lists both running (kind, bucket, progress); aisctl job
    show ID shows one run with its targets.
 2. aisctl job stop ID stops that run only (aborted); the other goes on;
    later PUT /v1/jobs {"action":"stop","kind":"prefetch"} stops a third.
 3. kill -9 of a target in the middle of the other run; restarted, it
    logs the resume and GET /v1/jobs?id=ID on it reports the run; aisctl
    job wait ID ends 0 ("ID: done") and every object of the template is
    cached.
 4. History: aisctl job show --all lists both runs (done, aborted) and a
    rebalance run; after a clean restart of a target its
    GET /v1/jobs?all=true still has them (the records are files).
 5. /metrics counts runs per kind (started, done, aborted).
 6. Bad input: ?id= not an id -> 400; an id no target knows -> 404 (aisctl
    exit 2); PUT /v1/jobs without id or kind -> 400; stop of a run that
    ended -> 404.
 7. ec-encode of a bucket: the run is named ec-encode-vN; a target killed
    (-9) right after it started reports it once restarted, and it ends
    done (aisctl job wait ID).
 8. No error-level line in any node's log.
"""
# timeout: 240
import json
import os
import pty
import random
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from itlib import T

import clulib
from clulib import Node, poll, request

JSON = {"Content-Type": "application/json"}
CTL = os.environ["AISCTL"]
DELAY = 0.15  # seconds per object GET
N = 240       # objects per prefetch

t = T()
clulib.init(t, "jobruns", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])


class Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, head):
        p = urllib.parse.urlsplit(self.path).path
        parts = p.lstrip("/").split("/", 1)
        key = parts[1] if len(parts) > 1 else ""
        body = b"object " + key.encode()
        if key and not head:
            time.sleep(DELAY)
        self.send_response(200)
        self.send_header("ETag", '"e-%s"' % key)
        self.send_header("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            try:
                self.wfile.write(body)
            except OSError:  # the target was killed in the middle
                pass

    def do_HEAD(self):
        self.answer(True)

    def do_GET(self):
        self.answer(False)


class Srv(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a connection a killed target reset


def serve():
    for _ in range(50):
        port = random.randint(20000, 32000)
        try:
            s = Srv(("127.0.0.1", port), Slow)
        except OSError:
            continue
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
        return s, "127.0.0.1:%d" % port
    t.fail("no free port")
    t.finish()


srv, REMOTE = serve()
g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
t1, t2 = ts
for n, j in ((g, None), (t1, g), (t2, g)):
    if not t.check(n.start(join=j.url if j else None), "%s starts" % n.name):
        t.finish()
t.check(poll(lambda: clulib.smap_ids(g) == {g.id, t1.id, t2.id}, 20), "the cluster forms")
ALL = [g] + ts


def ctl(*args, timeout=60):
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


def runs(url=None, query=""):
    r = request("GET", url or g.url, "/v1/jobs" + query, timeout=15)
    return (r.json() or {}).get("runs", []) if r.status == 200 else []


def run(rid, url=None):
    x = [r for r in runs(url, "?id=" + rid) if r.get("id") == rid]
    return x[0] if x else {}


r = request("PUT", g.url, "/v1/remotes/sr", json.dumps({"kind": "s3", "url": "http://" + REMOTE}), JSON)
t.check(r.status == 200, "remote sr attached", r.body[:200])
for b in ("pa", "pb"):
    r = request("POST", g.url, "/v1/buckets/" + b, json.dumps(
        {"action": "create-bck", "value": {"backend": {"provider": "s3", "remote": "sr", "bucket": "src" + b}}}), JSON)
    t.check(r.status == 200, "bucket %s on the remote" % b, r.body[:200])

# --- 1. two runs at once -------------------------------------------------------------------
ids = {}
for b in ("pa", "pb"):
    r = request("POST", g.url, "/v1/buckets/" + b, json.dumps(
        {"action": "prefetch-listrange", "value": {"template": "o{000..%03d}" % (N - 1)}}), JSON)
    ids[b] = (r.json() or {}).get("id") if r.status == 200 else None
    t.check(r.status == 200 and ids[b], "prefetch %s: 200 with an id" % b, r.body[:300])
A, B = ids["pa"], ids["pb"]
t.check(A != B, "the two runs have distinct ids", ids)
live = {x["id"]: x for x in runs()}
t.check(all(i in live and live[i]["state"] == "running" and live[i]["kind"] == "prefetch" for i in (A, B)),
        "GET /v1/jobs lists both running", json.dumps(live)[:600])
t.check(live.get(A, {}).get("bucket") == "pa" and live.get(B, {}).get("bucket") == "pb", "each with its bucket")
t.check(all(k in live.get(A, {}).get("progress", {}) for k in ("objects", "bytes", "total", "rate_bytes", "eta_s")),
        "and its progress", live.get(A))
t.check(set(live.get(A, {}).get("targets", {})) == {t1.id, t2.id}, "the run of every target, as one", live.get(A))
rc, out, err = ctl("job", "show", A)
t.check(rc == 0 and A in out and "prefetch" in out and t1.id in out and B not in out, "aisctl job show ID", out + err)
rc, out, err = ctl("job", "show", "--json", "--all", "prefetch")
t.check(rc == 0 and {A, B} <= {x["id"] for x in json.loads(out or "{}").get("runs", [])},
        "aisctl job show --all prefetch --json", out[:300] + err)

# --- 2. stop by id -------------------------------------------------------------------------
rc, out, err = ctl("job", "stop", B)
t.check(rc == 0 and "stop %s" % B in out, "aisctl job stop ID", out + err)
t.check(poll(lambda: run(B).get("state") == "aborted", 20), "the stopped run ends aborted", run(B))
t.check(run(A).get("state") == "running", "the other run goes on", run(A))

# --- 3. kill -9 in the middle of a run -----------------------------------------------------
t.check(poll(lambda: run(A, t1.url).get("progress", {}).get("objects", 0) >= 5, 30), "t1 has begun its part",
        run(A, t1.url))
t1.kill9()
t.check(t1.start(join=g.url), "t1 restarts after kill -9")
t.check(poll(lambda: "resuming the run interrupted" in open(t1.log).read(), 20), "t1 logs the resume of the run")
t.check(run(A, t1.url).get("kind") == "prefetch", "t1 reports the run after the restart", run(A, t1.url))


def ctl_tty(*args, timeout=150):
    """aisctl with stderr on a pseudo-terminal (its progress bar on), drained
    as it runs: (exit status, stdout, what the terminal got)."""
    mfd, sfd = pty.openpty()
    got = []

    def drain():
        while True:
            try:
                b = os.read(mfd, 65536)
            except OSError:
                return
            if not b:
                return
            got.append(b)

    th = threading.Thread(target=drain, daemon=True)
    th.start()
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=sfd, timeout=timeout)
    os.close(sfd)
    th.join(10)
    os.close(mfd)
    return cp.returncode, cp.stdout.decode(), b"".join(got).decode(errors="replace")


rc, out, tty = ctl_tty("--timeout", "120", "job", "wait", A)
t.eq((rc, out.strip()), (0, "%s: done" % A), "aisctl --timeout 120 job wait ID: done")
t.check("objects" in tty and "ETA" in tty and "/s" in tty, "with a progress bar on a terminal (bytes, rate, objects, ETA)",
        tty[-400:])
t.check(run(A, t1.url).get("state") == "done", "t1's resumed run is done", run(A, t1.url))


def cached(b):
    body = json.dumps({"action": "list", "value": {"pagesize": 1000, "flags": 1}})
    r = request("GET", g.url, "/v1/buckets/" + b, body, JSON)
    return {e["name"] for e in (r.json() or {}).get("entries", [])} if r.status == 200 else set()


t.check({"o%03d" % i for i in range(N)} <= cached("pa"), "every object of the resumed run is cached")

# stop by kind (curl's way): a third run
r = request("POST", g.url, "/v1/buckets/pb", json.dumps(
    {"action": "prefetch-listrange", "value": {"template": "o{000..%03d}" % (N - 1)}}), JSON)
C = (r.json() or {}).get("id") if r.status == 200 else None
t.check(C and C not in (A, B), "a third prefetch, a third id", r.body[:200])
r = request("PUT", g.url, "/v1/jobs", json.dumps({"action": "stop", "kind": "prefetch"}), JSON)
t.check(r.status == 200 and (r.json() or {}).get("stopped") == 2, "PUT /v1/jobs stop kind prefetch: both targets",
        r.body[:300])
t.check(poll(lambda: run(C or "x").get("state") == "aborted", 20), "it ends aborted", run(C or "x"))

# --- 4. history ---------------------------------------------------------------------------
request("PUT", g.url, "/v1/cluster", '{"action":"rebalance"}', JSON)
rc, out, err = ctl("job", "wait", "rebalance", "--timeout-s", "60")
t.check(rc == 0, "a rebalance run", out + err)
rc, out, err = ctl("job", "show", "--all")
rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:] if ln and not ln.startswith(" ")}
t.check(rc == 0 and out.split()[:2] == ["ID", "KIND"], "aisctl job show --all: a table", out + err)
t.check(rows.get(A, [])[1:4] == ["prefetch", "pa", "done"] and rows.get(B, [])[1:4] == ["prefetch", "pb", "aborted"],
        "it lists both prefetch runs, done and aborted", out)
t.check(any(k.startswith("rebalance-v") for k in rows), "and the rebalance run", out)
clulib.procs["t2"].terminate()
clulib.procs["t2"].wait(20)
t.check(t2.start(join=g.url), "t2 restarts")
h = {x["id"]: x["state"] for x in runs(t2.url, "?all=true")}
t.check(h.get(A) == "done" and h.get(B) == "aborted", "t2 still has the history after a restart", h)
t.check(os.path.exists(os.path.join(t2.dir, "mp1", "jobs", A + ".json")), "its record is a file")

# --- 5. metrics ---------------------------------------------------------------------------
m = request("GET", t2.url, "/metrics").body.decode()
t.check('aisd_job_runs_started_total{job="prefetch"}' in m and 'aisd_job_runs_done_total{job="rebalance"}' in m,
        "/metrics counts runs per kind", [ln for ln in m.splitlines() if "runs_" in ln][:8])

# --- 6. bad input ------------------------------------------------------------------------
t.eq(request("GET", g.url, "/v1/jobs?id=../x").status, 400, "?id= not an id: 400")
t.eq(request("GET", g.url, "/v1/jobs?id=nosuchrun").status, 404, "an unknown id: 404")
rc, out, err = ctl("job", "show", "nosuchrun")
t.eq(rc, 2, "aisctl job show of an unknown id: exit 2")
t.eq(request("PUT", g.url, "/v1/jobs", '{"action":"stop"}', JSON).status, 400, "stop without id or kind: 400")
t.eq(request("PUT", g.url, "/v1/jobs", json.dumps({"action": "stop", "id": A}), JSON).status, 404,
     "stop of a run that ended: 404")

# --- 7. ec-encode: its run is a record, kept across a kill -9 ---------------------------
t.eq(request("POST", g.url, "/v1/buckets/e", '{"action":"create-bck"}', JSON).status, 200, "create e")
bad = [i for i in range(150) if clulib.follow("PUT", g.url, "/v1/objects/e/x%03d" % i, b"e" * (100 + i))[1].status != 200]
t.check(not bad, "150 PUTs to e", bad[:3])
r = request("POST", g.url, "/v1/buckets/e", json.dumps(
    {"action": "ec-encode", "value": {"ec": {"enabled": True, "data_slices": 1, "parity_slices": 1}}}), JSON)
t.check(r.status == 200, "ec-encode e to 1+1", r.body[:200])
enc = []
t.check(poll(lambda: enc.extend(x["id"] for x in runs(None, "?kind=ec-encode&all=true")) or enc, 20),
        "the re-encode is a run", enc)
E = enc[0] if enc else "none"
t.check(E.startswith("ec-encode-v"), "named by the BMD version", E)
t2.kill9()
t.check(t2.start(join=g.url), "t2 restarts after kill -9")
t.check(poll(lambda: run(E, t2.url).get("bucket") == "e", 20), "t2 reports the re-encode after the restart",
        run(E, t2.url))
rc, out, err = ctl("job", "wait", E, "--timeout-s", "90", timeout=120)
t.eq((rc, out.strip()), (0, "%s: done" % E), "aisctl job wait %s: done" % E)
t.check(run(E, t2.url).get("state") == "done", "t2's run is done", run(E, t2.url))

clulib.check_logs(ALL)
srv.shutdown()
t.finish()
