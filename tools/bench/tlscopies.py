"""tlscopies.py - PUT of 16 MiB with copies=2 vs copies=1 over https: a
1-gateway 2-target cluster with mTLS (a throw-away CA and node certificate
made with the openssl CLI), store.fsync=never, N (default 15) rounds of one
curl -L PUT into each bucket, alternating; prints the medians and the ratio.

    AISD_BIN=build/aisd AISD_DIR=$(mktemp -d) N=21 /usr/bin/python3 tools/bench/tlscopies.py LABEL

Uses the integration tests' cluster harness (tests/integration/clulib.py);
every node is stopped by PID at the end.
"""
import os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
from itlib import T
import clulib
import ssl
from clulib import Node, poll, smap_ids

D = os.path.join(os.environ["AISD_DIR"], "certs")
os.makedirs(D, exist_ok=True)
CA, NODE, NODEKEY = (os.path.join(D, x) for x in ("ca.pem", "node.pem", "node.key"))


def sh(*a):
    return subprocess.run(list(a), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
if not os.path.exists(NODE):
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-days", "2", "-subj", "/CN=ca", "-keyout", os.path.join(D, "ca.key"), "-out", CA)
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-subj", "/CN=node", "-keyout", NODEKEY, "-out", os.path.join(D, "n.csr"))
    open(os.path.join(D, "ext"), "w").write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    sh("openssl", "x509", "-req", "-in", os.path.join(D, "n.csr"), "-CA", CA, "-CAkey", os.path.join(D, "ca.key"),
       "-CAcreateserial", "-days", "2", "-extfile", os.path.join(D, "ext"), "-out", NODE)
t = T()
ctx = ssl.create_default_context(cafile=CA)
ctx.load_cert_chain(NODE, NODEKEY)
clulib.init(t, "clu", ["--set", "net.tls.cert=" + NODE, "--set", "net.tls.key=" + NODEKEY,
                       "--set", "net.tls.client_ca=" + CA, "--set", "net.tls.ca=" + CA,
                       "--set", "store.fsync=never"])
clulib.use_tls(ctx)
g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
assert g.start() and all(x.start(join=g.url) for x in ts)
assert poll(lambda: len(smap_ids(g)) == 3, 20)
TA = ["--cacert", CA, "--cert", NODE, "--key", NODEKEY]
for b, c in (("c1", None), ("c2", 2)):
    r = sh("curl", "-sS", *TA, "-L", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "--data-binary",
           '{"action":"create-bck"}', g.url + "/v1/buckets/" + b)
    assert r.stdout == b"200", ("create", b, r.stdout, r.stderr)
    if c:
        r = sh("curl", "-sS", *TA, "-L", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH", "--data-binary",
               '{"action":"set-bprops","value":{"mirror":{"enabled":true,"copies":2}}}', g.url + "/v1/buckets/" + b)
        assert r.stdout == b"200", ("set-bprops", b, r.stdout, r.stderr)
f = os.path.join(D, "16m")
with open(f, "wb") as fh:
    fh.write(os.urandom(16 << 20))
res = {"c1": [], "c2": []}
for i in range(int(os.environ.get("N", "15"))):
    for b in ("c1", "c2"):
        r = sh("curl", "-sS", *TA, "-L", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-T", f,
               "%s/v1/objects/%s/o%d" % (g.url, b, i))
        code, tt = r.stdout.decode().split()
        assert code == "200", (b, r.stdout, r.stderr)
        res[b].append(float(tt))
# the copies really are there
n2 = sum(1 for tg in ts for root, _, fs in os.walk(os.path.join(tg.dir, "mp1")) for x in fs
         if os.path.getsize(os.path.join(root, x)) == 16 << 20)
m1, m2 = statistics.median(res["c1"]), statistics.median(res["c2"])
print("%s: 16 MiB PUT over https, median of %d: copies=1 %.1f ms (%.0f MiB/s), copies=2 %.1f ms (%.0f MiB/s), "
      "ratio %.2fx; 16 MiB files on the targets: %d" % (sys.argv[1], len(res["c1"]), m1 * 1e3, 16 / m1, m2 * 1e3,
      16 / m2, m1 / m2, n2))
clulib.stop_all()
