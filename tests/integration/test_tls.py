"""test_tls.py - HTTPS end to end: a CA, node and client certificates made
here with the openssl CLI, then a 1-gateway 2-target cluster serving HTTPS
only and requiring client certificates (mTLS) on every connection,
intra-cluster calls included (join, metasync, keepalive, redirects, the S3
proxy all go over https with the node's certificate, and are signed with
cluster.secret as well).

Checks: the map's node URLs are https://; curl --cacert/--cert PUTs and
GETs objects byte for byte through the gateway, following its 307 to an
https:// target URL; a target's /metrics (over 16 KiB) comes back whole,
and on a standalone HTTPS target a 40000-byte object read 4 times comes
back whole from the hot cache; aisctl --cacert/--cert/--key (and the AIS_CACERT,
AIS_CERT, AIS_KEY environment, and its config file) puts and gets, and
its errors name what to pass (no --cacert, no client certificate, http://
to an HTTPS port, a CA or certificate file that is not there); a
2-copy bucket gets both copies (replica writes between targets over
https) and a GetBatch spanning both targets comes back whole (peer
requests over https); boto3 over https with
verify=CAFILE and a client certificate puts, gets and lists (the gateway
forwards to the owner target over https), and a multipart upload into the
2-copy bucket lands whole on both targets; a 16 MiB PUT into the 2-copy
bucket lands on both targets, and with its owner killed (kill -9) reads
back whole from the copy; when it is back, a byte flipped in its file is
found on the next read (store.verify_on_read) and the good copy fetched
from the other target over https (the transport's GET, signed, mTLS);
a third target joining gets, by the rebalance
over https, every object HRW places on it, byte for byte; aws-chunked PUTs over https
(unsigned chunks with a CRC32 trailer, and chained chunk signatures) store
the decoded bytes on both targets, and a chunk changed after signing is 403
with nothing stored; a plain-HTTP request to the TLS
port gets a plain 400 that says to use https, then a close; a client with
no certificate is refused (curl and Python's ssl); the Python client
(tools/python) with cafile/certfile; SIGHUP with a new certificate at the
same path: a keep-alive connection opened before keeps working, a new
connection sees the new certificate; no node logs an error-level line and
every node exits 0; deploy/local/cluster.sh up -s brings up an HTTPS
cluster that curl --cacert DIR/tls/ca.pem uses.
"""
# timeout: 120
import filecmp
import glob
import json
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import sys
import tarfile

from itlib import T

import clulib
import hrwlib
from clulib import Node, follow, get, poll, procs, request, smap_ids

t = T()
D = os.path.join(os.environ["AISD_DIR"], "tls")
os.makedirs(D, exist_ok=True)
CA, NODE, NODEKEY = os.path.join(D, "ca.pem"), os.path.join(D, "node.pem"), os.path.join(D, "node.key")
CLI, CLIKEY = os.path.join(D, "client.pem"), os.path.join(D, "client.key")
AK, SK = "tlstestkey", "tlstestsecret"


def sh(*args, **kw):
    return subprocess.run(list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=kw.get("timeout", 60), env=kw.get("env"), cwd=kw.get("cwd"))


def mkcert(name, cn):
    """A key and a certificate signed by the CA, valid for 127.0.0.1 as a
    server and as a client."""
    key, csr, ext, pem = (os.path.join(D, name + x) for x in (".key", ".csr", ".ext", ".pem"))
    r1 = sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", "/CN=" + cn, "-keyout", key, "-out", csr)
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    r2 = sh("openssl", "x509", "-req", "-in", csr, "-CA", CA, "-CAkey", os.path.join(D, "ca.key"),
            "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", pem)
    return r1.returncode == 0 and r2.returncode == 0


r = sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-days", "2", "-subj", "/CN=aisd test CA", "-keyout", os.path.join(D, "ca.key"), "-out", CA)
ok = r.returncode == 0 and mkcert("node", "aisd node 1") and mkcert("client", "aisd client") and \
    mkcert("node2", "aisd node 2")
if not t.check(ok, "openssl makes a CA, node and client certificates", r.stderr.decode()[-500:]):
    t.finish()

cctx = ssl.create_default_context(cafile=CA)
cctx.load_cert_chain(CLI, CLIKEY)
clulib.init(t, "tlsclu", ["--set", "net.tls.cert=" + NODE, "--set", "net.tls.key=" + NODEKEY,
                          "--set", "net.tls.client_ca=" + CA, "--set", "net.tls.ca=" + CA,
                          "--set", "cluster.secret=tls-test-cluster-secret-0123456789",
                          "--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                          "--set", "store.verify_on_read=true",
                          "--set", "s3.key=%s:%s:tls-test:TLS Test" % (AK, SK)])
clulib.use_tls(cctx)

g = Node("g1", "gateway")
ts = [Node("t1", "target"), Node("t2", "target")]
nodes = [g] + ts
if not t.check(g.start(), "gateway starts with HTTPS and mTLS"):
    t.finish()
if not t.check(all(x.start(join=g.url) for x in ts), "2 targets join " + g.url):
    t.finish()
want = {n.id for n in nodes}
if not t.check(poll(lambda: smap_ids(g) == want, 20), "the map lists every node (join and metasync over mTLS)"):
    t.finish()
smap = get(g.url, "/v1/cluster?what=smap").json()
urls = [n.get("public_url", "") for n in smap["nodes"]]
t.check(urls and all(u.startswith("https://127.0.0.1:") for u in urls), "every node URL in the map is https://",
        urls)

def on_disk(tg, data):
    """How many object files of target tg hold exactly data."""
    n = 0
    for f in glob.glob(os.path.join(tg.dir, "mp*", "obj", "**"), recursive=True):
        if os.path.isfile(f) and os.path.getsize(f) == len(data):
            with open(f, "rb") as fh:
                n += fh.read() == data
    return n


# --- curl through the gateway ---------------------------------------------------

TLS_ARGS = ["--cacert", CA, "--cert", CLI, "--key", CLIKEY]


def curl(*args):
    r = sh("curl", "-sS", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}", *args)
    return r.stdout.decode().strip(), r.returncode, r.stderr.decode().strip()


B = "tlsb"
code, _, err = curl(*TLS_ARGS, "-L", "-X", "POST", "-H", "Content-Type: application/json",
                    "--data-binary", '{"action":"create-bck"}', g.url + "/v1/buckets/" + B)
t.eq(code, "200", "curl --cacert --cert: bucket create through the gateway")
big = os.path.join(D, "big.bin")
with open(big, "wb") as f:
    f.write(os.urandom(3 * 1024 * 1024 + 4321))
small = os.path.join(D, "small.bin")
with open(small, "wb") as f:
    f.write(os.urandom(1000))
for name, path in (("big", big), ("small", small)):
    code, rc, err = curl(*TLS_ARGS, "-L", "-T", path, "%s/v1/objects/%s/%s" % (g.url, B, name))
    t.eq(code, "200", "curl PUT %s through the gateway (307 followed over https)" % name)
    out = path + ".got"
    r = sh("curl", "-sS", "-m", "30", "-L", *TLS_ARGS, "-o", out, "%s/v1/objects/%s/%s" % (g.url, B, name))
    t.check(r.returncode == 0 and filecmp.cmp(path, out, shallow=False),
            "curl GET %s through the gateway: byte for byte" % name, r.stderr.decode()[-300:])
def hot_hits(node):
    m = re.search(r"^aisd_hot_hits_total (\d+)$", get(node.url, "/metrics").body.decode(errors="replace"), re.M)
    return int(m.group(1)) if m else -1


# A memory body of 16 KiB or more is written after the head, not copied
# behind it: a target's /metrics comes back whole over https.
for tg in ts:
    r = get(tg.url, "/metrics")
    txt = r.body.decode(errors="replace")
    t.check(r.status == 200 and len(r.body) > 16384 and txt.endswith("\n") and
            re.search(r"^aisd_hot_hits_total \d+$", txt, re.M) is not None,
            "%s /metrics over https: a body over 16 KiB, whole" % tg.id, (r.status, len(r.body), txt[-200:]))

# A hot object of 16 KiB or more is written from the hot cache's own copy
# after the head (a standalone target: verify_on_read keeps reads off the
# cache); 40000 bytes, read 4 times, whole, with hits.
h = Node("h1", "target")
clulib.ARGS.extend(["--set", "store.verify_on_read=false"])
if t.check(h.start(), "a standalone HTTPS target without verify_on_read starts"):
    r = request("POST", h.url, "/v1/buckets/hotb", b'{"action":"create-bck"}', {"Content-Type": "application/json"})
    t.eq(r.status, 200, "create bucket hotb on it")
    mid = os.urandom(40000)
    t.eq(request("PUT", h.url, "/v1/objects/hotb/mid", mid).status, 200, "PUT a 40000-byte object")
    hits0 = hot_hits(h)
    got = [request("GET", h.url, "/v1/objects/hotb/mid") for _ in range(4)]
    t.check(all(x.status == 200 and x.body == mid for x in got),
            "GET a hot 40000-byte object 4 times over https: byte for byte", [(x.status, len(x.body)) for x in got])
    t.check(hot_hits(h) > hits0, "served from the hot cache", (hits0, hot_hits(h)))
hp = procs.pop("h1", None)  # stopped by its PID now, its exit checked by stop_all
if hp is not None:
    hp.terminate()
    hp.wait(20)
del clulib.ARGS[-2:]

r1 = request("GET", g.url, "/v1/objects/%s/big" % B)
loc = r1.h("location") or ""
t.check(r1.status == 307 and loc.startswith("https://127.0.0.1:"), "the gateway's 307 points at an https:// target",
        r1)

# --- refusals -----------------------------------------------------------------------

s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
try:
    while len(data) < 4096:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError as e:
    data += b" <%s>" % str(e).encode()
s.close()
t.check(data.startswith(b"HTTP/1.1 400 ") and b"use https://" in data and data.endswith(b"}"),
        "plain HTTP to the TLS port: a plain 400 saying to use https, then a close", data[:300])

code, rc, err = curl("--cacert", CA, g.url + "/v1/health")
t.check(code != "200" and rc != 0, "curl without a client certificate is refused (mTLS)", (code, rc, err))
nocert = ssl.create_default_context(cafile=CA)
try:
    c = clulib.http.client.HTTPSConnection("127.0.0.1", g.port, timeout=10, context=nocert)
    c.request("GET", "/v1/health")
    st = c.getresponse().status
    c.close()
except (OSError, ssl.SSLError) as e:
    st = "refused: %s" % e
t.check(not isinstance(st, int), "Python ssl without a client certificate is refused", st)
code, rc, err = curl("--cert", CLI, "--key", CLIKEY, g.url + "/v1/health")
t.check(code != "200" and rc != 0, "curl not trusting the cluster's CA refuses the server", (code, rc, err))

# --- aisctl -------------------------------------------------------------------------

ctl = os.environ["AISCTL"]
env = dict(os.environ, AISCTL_CONFIG=os.path.join(D, "aisctl.conf"))
with open(env["AISCTL_CONFIG"], "w") as f:
    f.write("# empty\n")
r = sh(ctl, "-e", g.url, "--cacert", CA, "--cert", CLI, "--key", CLIKEY, "put", big, B + "/ctl-big", env=env)
t.check(r.returncode == 0, "aisctl --cacert --cert --key put through the gateway", r.stderr.decode()[-300:])
envx = dict(env, AIS_ENDPOINT=g.url, AIS_CACERT=CA, AIS_CERT=CLI, AIS_KEY=CLIKEY)
out = os.path.join(D, "ctl-big.got")
r = sh(ctl, "get", B + "/ctl-big", out, env=envx)
t.check(r.returncode == 0 and os.path.exists(out) and filecmp.cmp(big, out, shallow=False),
        "aisctl get with AIS_CACERT/AIS_CERT/AIS_KEY: byte for byte", r.stderr.decode()[-300:])
with open(env["AISCTL_CONFIG"], "w") as f:
    f.write("endpoint = %s\ncacert = %s\ncert = %s\nkey = %s\n" % (g.url, CA, CLI, CLIKEY))
r = sh(ctl, "ls", B, env=env)
t.check(r.returncode == 0 and "ctl-big" in r.stdout.decode(), "aisctl ls with cacert/cert/key in its config file",
        r.stderr.decode()[-300:])
r = sh(ctl, "-e", g.url, "--cert", CLI, "--key", CLIKEY, "ls", B, env=dict(env, AISCTL_CONFIG=os.devnull))
t.check(r.returncode != 0, "aisctl without --cacert does not trust the cluster", r.stdout.decode()[-200:])
t.check("pass --cacert FILE or set AIS_CACERT" in r.stderr.decode() and "issuer" not in r.stderr.decode().split(":")[1],
        "aisctl without --cacert says to pass --cacert FILE or set AIS_CACERT", r.stderr.decode()[-300:])
noconf = dict(env, AISCTL_CONFIG=os.devnull)
r = sh(ctl, "-e", g.url, "--cacert", CA, "ls", B, env=noconf)
t.check(r.returncode != 0 and "--cert FILE --key FILE" in r.stderr.decode(),
        "aisctl without a client certificate (mTLS) says to pass --cert/--key", r.stderr.decode()[-300:])
r = sh(ctl, "-e", g.url.replace("https://", "http://"), "ls", B, env=noconf)
t.check(r.returncode != 0 and "use https://" in r.stderr.decode(),
        "aisctl with http:// to an https port says to use https://", r.stderr.decode()[-300:])
missing = os.path.join(os.path.dirname(CA), "no-such.pem")
r = sh(ctl, "-e", g.url, "--cacert", missing, "--cert", CLI, "--key", CLIKEY, "ls", B, env=noconf)
t.check(r.returncode != 0 and "--cacert / AIS_CACERT must name a readable PEM file" in r.stderr.decode(),
        "aisctl with a --cacert file that is not there says --cacert must name a readable PEM file",
        r.stderr.decode()[-300:])
r = sh(ctl, "-e", g.url, "--cacert", CA, "--cert", missing, "--key", CLIKEY, "ls", B, env=noconf)
t.check(r.returncode != 0 and "--cert FILE and --key FILE" in r.stderr.decode(),
        "aisctl with a --cert file that is not there says --cert/--key must name a certificate and its key",
        r.stderr.decode()[-300:])
r = sh(ctl, "-e", g.url, "-k", "--cert", CLI, "--key", CLIKEY, "ls", B, env=dict(env, AISCTL_CONFIG=os.devnull))
t.check(r.returncode == 0, "aisctl --insecure skips the verification", r.stderr.decode()[-300:])

# config show: the running configuration, secrets masked (the whole output searched)
r = sh(ctl, "-e", g.url, *TLS_ARGS, "--json", "config", "show", env=noconf)
out = r.stdout.decode()
cfg = json.loads(out) if r.returncode == 0 else {}
t.check(cfg.get("cluster.secret") == "****" and cfg.get("s3.key") == ["%s:****:tls-test:TLS Test" % AK]
        and cfg.get("net.tls.cert") == NODE and SK not in out and "tls-test-cluster-secret" not in out,
        "aisctl config show: the running configuration, cluster.secret and the S3 secret masked",
        (r.returncode, r.stderr.decode()[-300:], cfg.get("cluster.secret"), cfg.get("s3.key")))
r = sh(ctl, "-e", g.url, *TLS_ARGS, "config", "show", "--node", ts[0].id, "net.tls.", env=noconf)
out = r.stdout.decode()
t.check(r.returncode == 0 and out.startswith("net.tls.") and all(l.startswith("net.tls.") for l in out.splitlines())
        and "net.tls.client_ca" in out, "aisctl config show --node NODE KEY-PREFIX: that node's keys under the prefix",
        (r.returncode, out[-300:], r.stderr.decode()[-300:]))

# --- replica writes and GetBatch peers: target to target over https ------------------

MB = "tlsmirror"
r = sh(ctl, "bucket", "create", MB, env=envx)
t.check(r.returncode == 0, "aisctl bucket create", r.stderr.decode()[-300:])
r = sh(ctl, "bucket", "props", "set", MB, "mirror.enabled=true", "mirror.copies=2", env=envx)
t.check(r.returncode == 0, "aisctl bucket props set mirror.copies=2", r.stderr.decode()[-300:])
names = ["m%02d" % i for i in range(8)]
msmall, small_bytes = os.path.join(D, "msmall.bin"), os.urandom(1001)
with open(msmall, "wb") as f:
    f.write(small_bytes)
for n in names:
    r = sh(ctl, "put", msmall, "%s/%s" % (MB, n), env=envx)
    if r.returncode != 0:
        break
t.check(r.returncode == 0, "8 PUTs into the 2-copy bucket (replica writes over mTLS)", r.stderr.decode()[-300:])
t.eq([on_disk(tg, small_bytes) for tg in ts], [len(names)] * 2, "both targets store a copy of each of the %d" % len(names))
# one more entry owned by the target that does not own "big" (placement
# computed from the map here), so the batch always needs a peer
ids = [x.id for x in ts]
far = next(n for n in ("far%d" % i for i in range(1000))
           if hrwlib.top(B + "/" + n, ids, 1) != hrwlib.top(B + "/big", ids, 1))
r = sh(ctl, "put", small, "%s/%s" % (B, far), env=envx)
t.check(r.returncode == 0, "PUT %s (owned by the other target)" % far, r.stderr.decode()[-300:])
owners = {request("GET", g.url, "/v1/objects/%s/%s" % (B, n)).h("location").split("/v1/")[0]
          for n in ("big", "small", "ctl-big", far)}
t.eq(len(owners), 2, "the GetBatch entries live on both targets (the gateway's 307s agree with HRW)")
gb = os.path.join(D, "batch.tar")
r = sh(ctl, "ml", "get-batch", B, gb, "--list", "big,small,ctl-big," + far, "--onob", env=envx)
try:
    with tarfile.open(gb) as tf:
        got = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
    with open(big, "rb") as f:
        want_big = f.read()
    ok = got.get("big") == want_big and got.get("ctl-big") == want_big and len(got.get("small", b"")) == 1000 \
        and got.get(far) == got.get("small")
except (OSError, tarfile.TarError) as e:
    ok, got = False, e
t.check(r.returncode == 0 and ok, "aisctl ml get-batch (entries on other targets come from peers over https)",
        r.stderr.decode()[-300:] or repr(got)[:200])

# --- boto3 (S3 through the gateway, proxied to the owner target over https) ------------

try:
    import boto3
    import botocore.config
    cfg = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                 client_cert=(CLI, CLIKEY))
    s3 = boto3.client("s3", endpoint_url=g.url, aws_access_key_id=AK, aws_secret_access_key=SK,
                      region_name="us-east-1", config=cfg, verify=CA)
    body = os.urandom(200 * 1024 + 7)
    s3.put_object(Bucket=B, Key="s3/obj", Body=body)
    got = s3.get_object(Bucket=B, Key="s3/obj")["Body"].read()
    t.check(got == body, "boto3 over https (verify=CA, client cert): put and get byte for byte")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix="s3/").get("Contents", [])]
    t.eq(keys, ["s3/obj"], "boto3 list over https")

    # multipart into the 2-copy bucket: parts proxied to the owner over
    # https, Complete's copy sent to the other target over https
    parts = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(123457)]
    up = s3.create_multipart_upload(Bucket=MB, Key="mpu/obj")["UploadId"]
    etags = [s3.upload_part(Bucket=MB, Key="mpu/obj", UploadId=up, PartNumber=i + 1, Body=p)["ETag"]
             for i, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=MB, Key="mpu/obj", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    whole = b"".join(parts)
    t.check(s3.get_object(Bucket=MB, Key="mpu/obj")["Body"].read() == whole,
            "boto3 multipart upload over https (3 parts, 10 MiB): reads back byte for byte")
    t.eq([on_disk(tg, whole) for tg in ts], [1, 1],
         "  both targets store the completed object (its copy went over https)")
except Exception as e:  # any failure is the test's
    t.fail("boto3 over https", repr(e))

# aws-chunked uploads over https: unsigned chunks with a CRC32 trailer, and
# signed chunks (each chunk's signature chained from the request's)
try:
    from s3lib import chunked_put
    for signed in (False, True):
        key = "chunked/%s" % ("signed" if signed else "trailer")
        data = os.urandom(300 * 1024 + 11)
        st, resp = chunked_put(g.url, MB, key, data, ak=AK, sk=SK, ctx=cctx, signed=signed)
        t.eq(st, 200, "aws-chunked PUT over https (%s)" % key)
        t.eq([on_disk(tg, data) for tg in ts], [1, 1], "  both targets store the decoded bytes (%s)" % key)
    data = os.urandom(100 * 1024)
    st, resp = chunked_put(g.url, MB, "chunked/badsig", data, ak=AK, sk=SK, ctx=cctx, signed=True, tamper=True)
    t.check(st == 403 and b"SignatureDoesNotMatch" in resp and b"chunk" in resp,
            "aws-chunked over https, a byte changed after its chunk was signed: 403 naming the chunk",
            (st, resp[:300]))
    t.eq(follow("GET", g.url, "/v1/objects/%s/chunked/badsig" % MB)[1].status, 404, "  and nothing was stored")
except Exception as e:  # any failure is the test's
    t.fail("aws-chunked over https", repr(e))

# --- the Python client ---------------------------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))
try:
    import aisd
    pc = aisd.Client(g.url, cafile=CA, certfile=CLI, keyfile=CLIKEY, retry_for=5)
    with open(small, "rb") as f:
        want_small = f.read()
    t.check(pc.get(B, "small") == want_small, "the Python client with cafile/certfile: get byte for byte")
except Exception as e:
    t.fail("the Python client over https", repr(e))

# --- SIGHUP: a new certificate ------------------------------------------------------


def peer_cn(sock):
    for rdn in sock.getpeercert().get("subject", ()):
        for k, v in rdn:
            if k == "commonName":
                return v
    return None


old = clulib.http.client.HTTPSConnection("127.0.0.1", g.port, timeout=10, context=cctx)
old.request("GET", "/v1/health")
r = old.getresponse()
r.read()
t.eq((r.status, peer_cn(old.sock)), (200, "aisd node 1"), "a keep-alive connection before the reload")
sock_before = old.sock
os.replace(os.path.join(D, "node2.pem"), NODE)
os.replace(os.path.join(D, "node2.key"), NODEKEY)
procs["g1"].send_signal(signal.SIGHUP)


def reloaded():
    with open(g.log, errors="replace") as f:
        return "TLS: reloaded" in f.read()


t.check(poll(reloaded, 10), "the gateway logs the reload after SIGHUP")
old.request("GET", "/v1/health")
r = old.getresponse()
r.read()
t.check(r.status == 200 and old.sock is sock_before and peer_cn(old.sock) == "aisd node 1",
        "the connection opened before the reload keeps working, with the old certificate")
new = clulib.http.client.HTTPSConnection("127.0.0.1", g.port, timeout=10, context=cctx)
new.request("GET", "/v1/health")
r = new.getresponse()
r.read()
t.eq((r.status, peer_cn(new.sock)), (200, "aisd node 2"), "a new connection sees the new certificate")
new.close()
old.close()
r1, r2 = follow("GET", g.url, "/v1/objects/%s/small" % B)
t.check(r2.status == 200 and r2.body == want_small, "GET through the gateway after the reload", r2)

# --- object bytes between targets over https: a 16 MiB 2-copy PUT, its copy
# read with the owner dead, a target joining ---------------------------------

data16, f16 = os.urandom(16 << 20), os.path.join(D, "big16.bin")
with open(f16, "wb") as f:
    f.write(data16)
code, _, err = curl(*TLS_ARGS, "-L", "-T", f16, "%s/v1/objects/%s/big16" % (g.url, MB))
t.eq(code, "200", "PUT 16 MiB into the 2-copy bucket (its copy streamed to the other target over https)")
t.eq([on_disk(tg, data16) for tg in ts], [1, 1], "  both targets store the 16 MiB object")
owner = next(tg for tg in ts if tg.id == hrwlib.top(MB + "/big16", ids, 1)[0])
other = next(tg for tg in ts if tg is not owner)
owner.kill9()
t.check(poll(lambda: smap_ids(g) == {g.id, other.id}, 20), "kill -9 of the owner: the gateway drops it")
r1, r2 = follow("GET", g.url, "/v1/objects/%s/big16" % MB)
t.check(r2.status == 200 and r2.body == data16, "GET 16 MiB with its owner dead: the copy, byte for byte",
        (r2.status, len(r2.body)))
t.check(owner.start(join=g.url), "the killed target comes back")
t.check(poll(lambda: smap_ids(g) == {g.id, owner.id, other.id}, 20), "  the gateway lists it again")
# a damaged copy on the owner: fetched again from the other target, over https
bad = [f for f in glob.glob(os.path.join(owner.dir, "mp*", "obj", "**"), recursive=True)
       if os.path.isfile(f) and os.path.getsize(f) == len(data16)]
if t.check(len(bad) == 1, "the owner's file of big16 found", bad):
    with open(bad[0], "r+b") as f:
        f.seek(1 << 20)
        c = f.read(1)
        f.seek(1 << 20)
        f.write(bytes([c[0] ^ 0xFF]))
    r1, r2 = follow("GET", g.url, "/v1/objects/%s/big16" % MB)
    log = open(owner.log, errors="replace").read()
    t.check(r2.status == 200 and r2.body == data16 and "does not match its checksum" in log and
            "restored %s/big16 from another target" % MB in log,
            "a byte flipped in the owner's copy: the read gets the good bytes, fetched from the other target "
            "over https", (r2.status, len(r2.body), [ln for ln in log.splitlines() if "big16" in ln][-3:]))
    t.eq(on_disk(owner, data16), 1, "  and the owner's copy is whole again")
t3 = Node("t3", "target")
t.check(t3.start(join=g.url), "a third target joins")
ts3 = ts + [t3]
nodes.append(t3)
t.check(poll(lambda: smap_ids(g) == {n.id for n in nodes}, 20), "the map lists all 3 targets")
ids3 = [x.id for x in ts3]
with open(big, "rb") as f:
    big_bytes = f.read()
# what HRW puts on the new target now: a 2-copy object has 2 holders
moved = [(big_bytes, B + "/big", 1), (big_bytes, B + "/ctl-big", 1), (data16, MB + "/big16", 2)] + [(small_bytes, MB + "/" + n, 2) for n in names]
distinct = {len(d): d for d, _, _ in moved}  # (one content per size)
want3 = {n: 0 for n in distinct}
for data, uname, k in moved:
    if t3.id in hrwlib.top(uname, ids3, k):
        want3[len(data)] += 1


def t3_has():
    return {n: on_disk(t3, d) for n, d in distinct.items()}


t.check(any(want3.values()) and poll(lambda: t3_has() == want3, 60),
        "the rebalance on join moves to the new target, over https, what HRW places there (byte for byte)",
        (want3, t3_has()))
for data, uname, k in moved:
    r1, r2 = follow("GET", g.url, "/v1/objects/" + uname)
    if r2.status != 200 or r2.body != data:
        break
t.check(r2.status == 200 and r2.body == data, "every object reads back whole through the gateway after the join",
        (uname, r2.status))

with open(g.log, errors="replace") as f:
    m = re.search(r"TLS: kTLS (.*)", f.read())
t.diag("kTLS: %s" % (m.group(1) if m else "not reported"))

# --- deploy/local/cluster.sh up -s ----------------------------------------------------

clulib.stop_all()
repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
cs, csdir = os.path.join(repo, "deploy", "local", "cluster.sh"), os.path.join(D, "cs")
base = 20000 + random.randrange(10000)  # below the ephemeral range; cluster.sh skips busy ports
bindir = os.path.dirname(os.environ["AISD_BIN"])
r = sh(cs, "up", "-s", "-g", "1", "-t", "1", "-d", csdir, "-p", str(base), "-b", bindir, timeout=60)
out = r.stdout.decode()
m = re.search(r"^endpoint: (https://\S+)$", out, re.M)
csca = os.path.join(csdir, "tls", "ca.pem")
t.check(r.returncode == 0 and m is not None and "tls: ca=" + csca in out,
        "cluster.sh up -s starts an HTTPS cluster and names its CA", (out + r.stderr.decode())[-400:])
if m:
    code, _, err = curl("--cacert", csca, "-L", "-X", "POST", "--data-binary", '{"action":"create-bck"}',
                        m.group(1) + "/v1/buckets/csb")
    code2, _, err2 = curl("--cacert", csca, "-L", "-T", small, m.group(1) + "/v1/objects/csb/x")
    got = sh("curl", "-sS", "-m", "30", "--cacert", csca, "-L", m.group(1) + "/v1/objects/csb/x").stdout
    t.check(code == "200" and code2 == "200" and got == want_small,
            "curl --cacert DIR/tls/ca.pem: bucket, PUT and GET through it", (code, code2, err, err2))
r = sh(cs, "down", "-d", csdir, timeout=60)
t.check(r.returncode == 0, "cluster.sh down", r.stderr.decode()[-300:])

# --- stop, then the logs -------------------------------------------------------------

t.check(all(p.returncode == 0 for p in procs.values()), "every node exits 0 on SIGTERM",
        {k: p.returncode for k, p in procs.items()})
clulib.check_logs(nodes)
t.finish()
