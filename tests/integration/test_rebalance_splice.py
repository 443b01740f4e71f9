"""test_rebalance_splice.py - copies between targets received by splice
(the sender's socket -> a pipe -> the temp file, no byte in the receiving
target's user space), on 1 gateway and 2 (then 3) targets started here on
loopback ports, stopped by PID; net.body_timeout 3 s.

Checks:
 1. Objects of 1 MiB - 1, 1 MiB, 1 MiB + 1, 3 MiB + 5 and 64 MiB + 3
    bytes (more than the 1 MiB pipe), all placed on the 3rd target by the
    3-target map, and small ones, are moved there by the rebalance when it
    joins: each reads back byte for byte (sha256) from it, the old holders
    dropped theirs, and its aisd_put_spliced_bytes_total grew by exactly
    the bytes of the objects of 1 MiB or more (those took the spliced
    path, the smaller ones did not); the other targets' stayed 0 (the
    clients' PUTs were read as before).
 2. Four copies of 64 MiB sent by curl at full speed (its 64 KiB writes
    make segments that splice(2) sometimes refuses into an empty pipe:
    those bytes are copied, the body does not wait) are stored. A sender
    (curl, an intra-cluster PUT of 64 MiB at 4 MiB/s with the
    right checksum) killed with kill -9 mid-body, after the receiver
    spliced some of it: no object is visible, the receiver's tmp/ is
    empty and it holds no more descriptors than before; a sender stopped
    (SIGSTOP) mid-body: the same once net.body_timeout passed.
 3. A copy whose Ais-Checksum-Value does not match its bytes (3 MiB,
    spliced): 400, nothing stored, tmp/ empty; the same copy with the
    right value: 200 and stored.
 4. No error-level line in the nodes' logs.
"""
# timeout: 240
import hashlib
import os
import re
import signal
import subprocess
import time

from itlib import T, xxh64

import clulib
import hrwlib
from clulib import Node, get, poll, request

JSON = {"Content-Type": "application/json"}
MiB = 1 << 20
t = T()
clulib.init(t, "rebsplice", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=3s",
                             "--set", "store.fsync=never", "--set", "net.workers=2",
                             "--set", "net.body_timeout=3s"])
g, (t1, t2) = clulib.start_cluster(2)
t3 = Node("t3", "target")
t3.port = clulib.low_port()  # its id before it starts: the names are picked for it
B = "b1"
t.eq(request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create b1")


def payload(n, seed):
    block = hashlib.sha256(b"rebsplice%d" % seed).digest() * 2048  # 64 KiB
    return (block * (n // len(block) + 2))[seed % 61:seed % 61 + n]


def pid(node):
    return clulib.procs[node.name].pid


def metric(node, name):
    body = get(node.url, "/metrics").body.decode()
    m = re.search(r"^%s (\d+)$" % name, body, re.M)
    return int(m.group(1)) if m else -1


def spliced(node):
    return metric(node, "aisd_put_spliced_bytes_total")


def nfds(node):
    return len(os.listdir("/proc/%d/fd" % pid(node)))


def tmp_files(node):
    return os.listdir(os.path.join(node.dir, "mp1", "tmp"))


def on_t3(prefix):
    """A name whose owner, once t3 is in, is t3 (a copy sent to t3 stays
    there: t3's rebalance would move one it does not hold)."""
    ids = [t1.id, t2.id, t3.id]
    i = 0
    while hrwlib.top("%s/%s-%d" % (B, prefix, i), ids, 1)[0] != t3.id:
        i += 1
    return "%s-%d" % (prefix, i)


def holds(node, name):
    return request("HEAD", node.url, "/v1/objects/%s/%s" % (B, name), headers={"Ais-Intra": "test"}).status == 200


# --- 1. a rebalance moves them, spliced from 1 MiB on -------------------------------------
SIZES = [1000, 64 << 10, MiB - 1, MiB, MiB + 1, 3 * MiB + 5, 64 * MiB + 3]
data = {}
for k, n in enumerate(SIZES):
    name = on_t3("o%d" % n)
    data[name] = payload(n, k)
    t.eq(clulib.owner_put(g, [t1, t2], B, name, data[name]), 200, "PUT %s (%d bytes)" % (name, n))
if not t.check(t3.start(join=g.url), "t3 starts and joins"):
    t.finish()


def settled():
    r = get(g.url, "/v1/cluster?what=rebalance", timeout=10)
    j = r.json() if r.status == 200 else None
    return bool(j) and len(j["targets"]) == 3 and j["state"] == "done" and \
        all(v.get("state") == "done" for v in j["targets"].values()) and \
        all(holds(t3, n) for n in data)


t.check(poll(settled, 90), "the rebalance ends done with every object on t3")
for name, body in data.items():
    r = get(t3.url, "/v1/objects/%s/%s" % (B, name))
    t.check(r.status == 200 and hashlib.sha256(r.body).digest() == hashlib.sha256(body).digest(),
            "%s (%d bytes) reads back byte for byte from t3" % (name, len(body)), (r.status, len(r.body)))
t.check(not any(holds(x, n) for x in (t1, t2) for n in data), "the old holders dropped their copies")
want = sum(n for n in SIZES if n >= MiB)
t.eq(spliced(t3), want, "t3 spliced exactly the bytes of the objects of 1 MiB or more")
t.check(spliced(t1) == 0 and spliced(t2) == 0, "the clients' PUTs were not spliced (t1, t2: 0)",
        (spliced(t1), spliced(t2)))

# --- 2. a sender killed or stopped mid-body -------------------------------------------------
big = payload(64 * MiB, 9)
src = os.path.join(clulib.DIR, "big")
with open(src, "wb") as f:
    f.write(big)
cksum = xxh64(big)


def sender(name, value=cksum, rate="4M"):
    """curl: an intra-cluster PUT of the file to t3, as a copy from another
    target (Expect: 100-continue, Content-Length), at most 30 s."""
    return subprocess.Popen(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-m", "30", "--limit-rate", rate,
                             "-T", src, "-H", "Ais-Intra: rebalance", "-H", "Ais-Checksum-Type: xxhash",
                             "-H", "Ais-Checksum-Value: " + value,
                             "%s/v1/objects/%s/%s" % (t3.url, B, name)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def gone_clean(name, fd0, what):
    t.check(poll(lambda: not tmp_files(t3), 10), "%s: t3's tmp/ is empty" % what, tmp_files(t3))
    t.check(not holds(t3, name), "%s: no object is visible" % what)
    ok = poll(lambda: nfds(t3) <= fd0, 10)
    t.check(ok, "%s: t3 holds no more descriptors than before (%d -> %d)" % (what, fd0, nfds(t3)))


# curl writes from its buffer in 64 KiB writes: on loopback a segment of
# 53 bytes follows each 65483, and splice(2) now and then refuses such
# bytes with an empty pipe (those are copied, not waited for)
for i in range(4):
    name = on_t3("whole%d" % i)
    p = sender(name, rate="10G")
    out = p.communicate(timeout=40)[0].decode(errors="replace")  # (curl gives up after 30 s)
    r = get(t3.url, "/v1/objects/%s/%s" % (B, name), headers={"Ais-Intra": "test"})
    t.check(p.returncode == 0 and r.status == 200 and r.body == big,
            "a 64 MiB copy sent by curl at full speed is stored (%d)" % i, (p.returncode, out, r.status, len(r.body)))

for how in ("killed", "stopped"):
    name = on_t3("cut-" + how)
    fd0, s0 = nfds(t3), spliced(t3)
    p = sender(name)
    mid = poll(lambda: spliced(t3) - s0 >= 2 * MiB, 20)
    t.check(mid, "%s sender: t3 splices the body as it comes" % how, spliced(t3) - s0)
    t.check(poll(lambda: len(tmp_files(t3)) == 1, 5), "%s sender: one temp file while it comes" % how)
    if how == "killed":
        p.kill()  # SIGKILL
        p.wait(10)
        gone_clean(name, fd0, "a sender killed mid-body")
    else:
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(3.5)  # net.body_timeout is 3 s
        gone_clean(name, fd0, "a sender stopped mid-body")
        os.kill(p.pid, signal.SIGCONT)
        p.kill()
        p.wait(10)

# --- 3. a copy whose checksum does not match its bytes --------------------------------------
small = payload(3 * MiB, 11)
with open(src, "wb") as f:
    f.write(small)
s0 = spliced(t3)
wrong = "%016x" % (int(xxh64(small), 16) ^ 1)
bad, bad2, good = on_t3("bad"), on_t3("bad2"), on_t3("good")
p = sender(bad, value=wrong, rate="1G")
p.communicate(timeout=40)
r = request("PUT", t3.url, "/v1/objects/%s/%s" % (B, bad2), small,
            {"Ais-Intra": "rebalance", "Ais-Checksum-Type": "xxhash", "Ais-Checksum-Value": wrong})
t.check(r.status == 400 and b"checksum" in r.body, "a copy with a checksum that does not match: 400", (r.status, r.body[:200]))
t.eq(spliced(t3) - s0, 2 * len(small), "... both went the spliced path")
t.check(not holds(t3, bad) and not holds(t3, bad2), "... nothing stored")
t.check(poll(lambda: not tmp_files(t3), 5), "... t3's tmp/ is empty", tmp_files(t3))
r = request("PUT", t3.url, "/v1/objects/%s/%s" % (B, good), small,
            {"Ais-Intra": "rebalance", "Ais-Checksum-Type": "xxhash", "Ais-Checksum-Value": xxh64(small)})
t.eq(r.status, 200, "the same copy with the right checksum: 200")
r = get(t3.url, "/v1/objects/%s/%s" % (B, good), headers={"Ais-Intra": "test"})
t.check(r.status == 200 and r.body == small, "... stored byte for byte")

clulib.check_logs([g, t1, t2, t3])
t.finish()
