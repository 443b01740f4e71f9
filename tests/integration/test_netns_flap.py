"""test_netns_flap.py - health checks on saturated links: a cluster whose
every link is limited to 4 Mbit/s each way (tc tbf, as the locality test
limits them) and busy with plain data loading must not drop and re-add its
targets. Every node in its own network namespace (deploy/netns/cluster.sh):
a gateway g0 and 3 targets, the short keepalive settings of the locality
tests (cluster.keepalive=300ms, cluster.grace=1500ms).

Plain loading: in each target's namespace FLAP_READERS (default 8)
readers loop over 24 objects of FLAP_KIB (default 1024) KiB through the
gateway (curl -L: the 307, then the owner target), so every link carries
data both ways, for FLAP_SECS (default 25) seconds.
Checks: the readers moved data (at least half of what the links can carry);
the cluster map's version did not change and the primary removed no target
(no "removing it from the cluster map" line); every node still in the map.
FLAP_SET="-s KEY=VALUE ..." adds node settings (e.g. -s log.access=on).
Needs root and `ip netns` (else one "ok # skip" line).
"""
# serial: network namespaces (ip netns)
# timeout: 150
import os
import subprocess
import time

from itlib import T

from clulib import request
from netnslib import BINDIR, require, sh

t = T()
NAME = "f%d" % (os.getpid() % 100000)
NET = "10.217.%d" % (os.getpid() % 250 + 1)
JSON = {"Content-Type": "application/json"}
RATE = "4mbit"
SECS = int(os.environ.get("FLAP_SECS", "25"))
READERS = int(os.environ.get("FLAP_READERS", "8"))
SIZE = int(os.environ.get("FLAP_KIB", "1024")) << 10
require(NAME)

TS = ["t0", "t1", "t2"]
IP = {"g0": NET + ".10", **{n: "%s.%d" % (NET, 100 + i) for i, n in enumerate(TS)}}
G = "http://%s:8080" % IP["g0"]
DIR = os.path.join(os.environ["AISD_DIR"], "netns")


def limit(node, rate):
    """tbf both ways: the host end's egress (into the node) and eth0's."""
    cmds = [["tc", "qdisc", "replace", "dev", NAME + node, "root", "tbf", "rate", rate, "burst", "32kb",
             "latency", "100ms"],
            ["ip", "netns", "exec", "%s-%s" % (NAME, node), "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
             "rate", rate, "burst", "32kb", "latency", "100ms"]]
    return all(subprocess.run(c, stderr=subprocess.PIPE).returncode == 0 for c in cmds)


def smap():
    r = request("GET", G, "/v1/cluster?what=smap", timeout=10)
    return r.json() if r.status == 200 else None


def log_text(node):
    try:
        with open(os.path.join(DIR, node, "aisd.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


READER = r'''
i=$1; end=$(( $(date +%s) + $2 )); n=0
while [ "$(date +%s)" -lt "$end" ]; do
	o=$(( (i * 7 + n) % 24 )); n=$((n + 1))
	curl -s -L -m 8 -o /dev/null -w '%{size_download}\n' "$3/v1/objects/fl/o$o" || echo 0
done
'''

rc, out = sh("up", "-g", "1", "-t", str(len(TS)), "-n", NAME, "-a", NET, "-b", BINDIR, "-s", "cluster.keepalive=300ms",
             "-s", "cluster.grace=1500ms", "-s", "store.fsync=never", *os.environ.get("FLAP_SET", "").split())
if not t.check(rc == 0, "netns cluster up: a gateway and %d targets, each in its own namespace" % len(TS), out):
    sh("down")
    t.finish()
readers = []
try:
    t.eq(request("POST", G, "/v1/buckets/fl", b'{"action":"create-bck"}', JSON).status, 200, "bucket fl")
    data = os.urandom(SIZE)
    ok = 0
    for i in range(24):
        r = request("PUT", G, "/v1/objects/fl/o%d" % i, data, timeout=30)
        if r.status == 307:
            base, _, p = r.h("location").partition("/v1/")
            r = request("PUT", base, "/v1/" + p, data, timeout=30)
        ok += r.status == 200
    t.eq(ok, 24, "24 objects of 256 KiB PUT")
    before = smap() or {}
    v0, ids0 = before.get("version"), {n["id"] for n in before.get("nodes", [])}
    t.check(all(limit(n, RATE) for n in ["g0"] + TS), "every link limited to %s each way (tc tbf)" % RATE)
    t0 = time.monotonic()
    for n in TS:
        for k in range(READERS):
            readers.append(subprocess.Popen(["ip", "netns", "exec", "%s-%s" % (NAME, n), "bash", "-c", READER, "rd",
                                             str(k + READERS * TS.index(n)), str(SECS), G],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
    outs = [p.communicate(timeout=SECS + 60)[0] for p in readers]
    secs = time.monotonic() - t0
    got = sum(int(x) for o in outs for x in o.split() if x.isdigit())
    # what the targets' links can send in that time, all of them together
    cap = len(TS) * 4e6 / 8 * secs
    t.diag("plain loading for %.0f s: %.1f MiB read, local reads included (%.0f%% of what the targets' links "
           "carry)" % (secs, got / 2**20, 100 * got / cap))
    t.check(got >= cap / 2, "the readers kept the links busy (%.1f MiB in %.0f s)" % (got / 2**20, secs))
    after = smap() or {}
    removed = log_text("g0").count("removing it from the cluster map")
    t.diag("cluster map v%s -> v%s, %d removals by the primary" % (v0, after.get("version"), removed))
    t.eq(removed, 0, "the primary removed no target while the links were saturated")
    t.eq(after.get("version"), v0, "the cluster map did not change (v%s)" % v0)
    t.eq({n["id"] for n in after.get("nodes", [])}, ids0, "every node still in the map")
finally:
    for p in readers:
        if p.poll() is None:
            p.kill()
            p.wait()
    rc, out = sh("down")
    t.check(rc == 0, "netns cluster down", out)
errs = [ln for n in ["g0"] + TS for ln in log_text(n).splitlines() if " E " in ln[:30]]
t.check(not errs, "no node log has an error-level line", "\n".join(errs[:5]))
t.finish()
