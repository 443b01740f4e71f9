"""test_jobs.py - the rebalance job's controls and the mirror-change job,
on 1 gateway + 2 (then 3) targets started here on loopback ports, stopped
by PID.

Checks: GET /v1/cluster?what=rebalance lists every target with its state
and counters; aisctl job show (table and --json), job start (PUT
{"action":"rebalance"}), job wait (exit 0, "rebalance: done"), job stop,
an unknown job name -> exit 2; a 3rd target joins: job wait sees the run
through and the table lists 3 targets; mirror.copies 1 -> 2 on a bucket
with objects starts the job and ends with every object on exactly 2
targets, 2 -> 1 with every object on exactly 1 (its owner); a target
started with a rebalance marker in its dir resumes the run (logged);
/v1/jobs on a standalone target -> 409.
"""
# timeout: 120
import json
import os
import subprocess
import time

from itlib import T, q

import clulib
import hrwlib
from clulib import Node, follow, get, node_id, poll, request, smap_ids

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
CTL = os.environ["AISCTL"]

t = T()
clulib.init(t, "jobs", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms", "--set", "store.fsync=never"])


def ctl(*args):
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=90)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


g = Node("g", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2, 3)]
t1, t2, t3 = targets
if not t.check(g.start() and t1.start(join=g.url) and t2.start(join=g.url), "gateway and 2 targets start"):
    t.finish()
t.check(poll(lambda: len(smap_ids(g) or ()) == 3, 10), "3 nodes in the map")
t.eq(request("POST", g.url, "/v1/buckets/j", '{"action":"create-bck"}', JSON).status, 200, "create j")
data = {"o%04d" % i: os.urandom(500 + i) for i in range(300)}
bad = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/j/" + n, d)[1].status != 200]
t.check(not bad, "300 PUTs", bad[:3])

r = get(g.url, "/v1/cluster?what=rebalance")
d = r.json() or {}
t.eq(r.status, 200, "GET /v1/cluster?what=rebalance: 200")
t.eq(set(d.get("targets", {})), {node_id(t1), node_id(t2)}, "it lists both targets")
t.check(all(k in v for v in d.get("targets", {}).values() for k in ("state", "walked", "total", "moved", "moved_bytes", "errors")),
        "each with state and counters", d)

rc, out, err = ctl("job", "start")
t.eq((rc, out.strip()), (0, "rebalance: sent to 2 targets"), "aisctl job start")
rc, out, err = ctl("job", "wait", "--timeout-s", "30")
t.eq((rc, out.strip()), (0, "rebalance: done"), "aisctl job wait: exit 0, done")
rc, out, err = ctl("job", "show")
lines = out.splitlines()
t.check(rc == 0 and lines[0].split()[:2] == ["TARGET", "STATE"] and len(lines) >= 4 and "rebalance: done" in out,
        "aisctl job show: a table of 2 targets and a summary", out)
rc, out, err = ctl("job", "show", "rebalance", "--json")
t.check(rc == 0 and json.loads(out)["state"] == "done", "aisctl job show --json", out)
rc, out, err = ctl("job", "show", "nosuch")
t.eq(rc, 2, "an unknown job: exit 2")
rc, out, err = ctl("job", "start", "resilver")
t.eq(rc, 2, "job start resilver (a mountpath change starts it): exit 2")
rc, out, err = ctl("job", "stop")
t.eq((rc, out.strip()), (0, "stop rebalance: sent to 2 targets"), "aisctl job stop")

def job_targets():
    """Each target's rebalance status, by node id ({} if none answers)."""
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    d = r.json() if r.status == 200 else None
    return (d or {}).get("targets") or {}


# a 3rd target joins
t.check(t3.start(join=g.url), "t3 joins")
t.check(poll(lambda: len(smap_ids(g) or ()) == 4, 30), "4 nodes in the map")
v_join = get(g.url, "/v1/cluster?what=smap").json()["version"]
# the positive event: every target runs (or ran) the rebalance of the new map,
# so `job wait` cannot return the previous run's "done"
t.check(poll(lambda: len(job_targets()) == 3 and
             all(x.get("cmap_version", 0) >= v_join for x in job_targets().values()), 60),
        "every target took up the rebalance of map v%d" % v_join, job_targets())
rc, out, err = ctl("job", "wait", "--timeout-s", "60")
t.eq((rc, out.strip()), (0, "rebalance: done"), "job wait after the join")
if rc:
    t.diag(ctl("job", "show")[1])
rc, out, err = ctl("job", "show")
t.check(all(node_id(x) in out for x in targets), "the table lists 3 targets", out)
ids = [node_id(x) for x in targets]


def holders(n):
    return {x.name for x in targets if get(x.url, "/v1/objects/j/" + n, headers=INTRA).status == 200}


def placed(k):
    want = {n: {x.name for x in targets if node_id(x) in hrwlib.top("j/" + n, ids, k)} for n in data}
    return [(n, want[n], holders(n)) for n in data if holders(n) != want[n]]


t.check(poll(lambda: not placed(1), 20), "every object on its owner only", placed(1)[:3])

# mirror.copies 1 -> 2 -> 1
for k in (2, 1):
    body = json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": k}}})
    runs0 = {i: x.get("runs", 0) for i, x in job_targets().items()}
    t.eq(request("PATCH", g.url, "/v1/buckets/j", body, JSON).status, 200, "set-bprops mirror.copies=%d" % k)
    t.check(poll(lambda: all(x.get("runs", 0) > runs0.get(i, 0) for i, x in job_targets().items()), 60),
            "every target started a new run for mirror.copies=%d" % k, (runs0, job_targets()))
    rc, out, err = ctl("job", "wait", "--timeout-s", "60")
    t.eq(rc, 0, "the mirror job ends done")
    errs = []
    t.check(poll(lambda: not placed(k), 20), "every object on exactly its %d HRW holder(s)" % k, placed(k)[:3])
wrong = [n for n, d in data.items() if follow("GET", g.url, "/v1/objects/j/" + n)[1].body != d]
t.check(not wrong, "every object reads back byte for byte", wrong[:3])

# resume after a restart
procs = clulib.procs
procs["t1"].terminate()
procs["t1"].wait(10)
open(os.path.join(t1.dir, "mp1", "rebalance.marker"), "w").close()
t.check(t1.start(join=g.url), "t1 restarts with a rebalance marker")
t.check(poll(lambda: "resuming the run interrupted" in open(t1.log).read(), 10), "it resumes the interrupted run")
t.check(poll(lambda: not os.path.exists(os.path.join(t1.dir, "mp1", "rebalance.marker")), 30),
        "the marker is gone once the run is done")

# standalone target
r = get(os.environ["AISD_URL"], "/v1/jobs")
t.eq(r.status, 409, "/v1/jobs on a standalone target: 409")
t.finish()
