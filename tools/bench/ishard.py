"""ishard.py - initial sharding in the cluster (aisctl ishard) against the
client-side route (python3 -m aisd.shard ais://SRC ais://DST: every byte
downloaded to the client and uploaded again). 1 gateway + 3 targets on
loopback; N loose objects of SIZE bytes (N/2 samples of a .jpg and a .cls);
both into 1 MiB shards. Prints the wall times, the bytes over the client's
link (the client route: the sources read + the shards written; ishard: the
request and the answers), and the ratios, as a Markdown table.

Environment: AISD_BIN, AISCTL, AISD_DIR (a scratch folder), N (20000),
SIZE (10240).
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
from itlib import T, q  # noqa: E402

import clulib  # noqa: E402
from clulib import Node, poll, request  # noqa: E402

N = int(os.environ.get("N", "20000"))
SIZE = int(os.environ.get("SIZE", "10240"))
CTL = os.environ["AISCTL"]
JSON = {"Content-Type": "application/json"}

t = T()
clulib.init(t, "ishardbench", ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never"])
g = Node("g1", "gateway")
ts = [Node("t%d" % i, "target") for i in (1, 2, 3)]
for n, j in [(g, None)] + [(x, g) for x in ts]:
    if not n.start(join=j.url if j else None):
        sys.exit("cannot start " + n.name)
poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in ts}, 30)
for b in ("src", "viaclient", "incluster"):
    request("POST", g.url, "/v1/buckets/" + b, '{"action":"create-bck"}', JSON)

# the loose files, uploaded with aisctl put -r from a local folder
src = os.path.join(os.environ["AISD_DIR"], "loose")
for i in range(N // 2):
    d = os.path.join(src, "d%02d" % (i % 50))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "%07d.jpg" % i), "wb") as f:
        f.write(os.urandom(SIZE))
    with open(os.path.join(d, "%07d.cls" % i), "wb") as f:
        f.write(os.urandom(SIZE))
subprocess.run([CTL, "-e", g.url, "put", "-r", "--conc", "16", src, "src"], check=True, stdout=subprocess.DEVNULL)
src_bytes = N * SIZE

env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "python"))
t0 = time.monotonic()
subprocess.run([sys.executable, "-m", "aisd.shard", "ais://src", "ais://viaclient", "-s", "1M", "-e", g.url],
               check=True, env=env, stdout=subprocess.DEVNULL)
t_client = time.monotonic() - t0


def listed_bytes(b):
    body = json.dumps({"action": "list", "value": {"pagesize": 10000, "props": "name,size"}})
    r = request("GET", g.url, "/v1/buckets/" + b, body, JSON)
    return sum(e.get("size", 0) for e in r.json().get("entries", []))


shard_bytes = listed_bytes("viaclient")

t0 = time.monotonic()
cp = subprocess.run([CTL, "-e", g.url, "ishard", "src", "incluster", "--shard-size", "1MiB"], check=True,
                    stdout=subprocess.PIPE)
rid = cp.stdout.split()[cp.stdout.split().index(b"job") + 1].decode()
w = subprocess.run([CTL, "-e", g.url, "job", "wait", rid, "--timeout-s", "1200"], stdout=subprocess.PIPE)
t_ishard = time.monotonic() - t0
ok = w.returncode == 0 and b"done" in w.stdout
ishard_link = len(cp.stdout) + len(w.stdout) + 600  # the answers + the requests' heads and bodies (about)
client_link = src_bytes + shard_bytes

print("| route | wall s | bytes over the client's link |")
print("|---|---|---|")
print("| python3 -m aisd.shard (client) | %.1f | %d |" % (t_client, client_link))
print("| aisctl ishard (in the cluster)%s | %.1f | ~%d |" % ("" if ok else " FAILED", t_ishard, ishard_link))
print("| ratio client / ishard | %.1fx | %.0fx |" % (t_client / t_ishard, client_link / ishard_link))
print("(%d loose objects of %d bytes, %d shards bytes, 3 targets)" % (N, SIZE, shard_bytes))
clulib.stop_all()
