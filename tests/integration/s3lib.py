"""s3lib.py - what the S3 integration tests share: a 1-gateway 3-target
cluster (clulib) with its S3 endpoint, test files of given sizes, a tree of
awkward names, and running a client command with a bound.

    from s3lib import *
    c = cluster(t, "s3x")          # starts g1 + t1..t3, returns the endpoint URL
    rc, out = run(t, ["aws", ...])

    st, body = chunked_put(c, "bck", "key", data)   # an aws-chunked PUT
"""
import base64
import hashlib
import hmac
import http.client
import os
import re
import subprocess
import urllib.parse
import zlib

import clulib

AK, SK, REGION = "aisdtestkey", "aisdtestsecret", "us-east-1"
# the AWS CLI's environment: the test key, no config files, no metadata service, no pager
AWS_ENV = {"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK, "AWS_DEFAULT_REGION": REGION,
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_PAGER": ""}

# awkward names, as S3 sees keys: spaces, unicode, + & % quotes, nesting
TREE = {
    "with space.txt": b"a" * 3,
    "plus+sign.txt": b"b" * 5,
    "amp&er.txt": b"c" * 7,
    "per%cent.txt": b"d" * 11,
    "quote'single.txt": b"e" * 13,
    'dq"uote.txt': b"f" * 17,
    "sub dir/x y.txt": b"g" * 19,
    "ünï/cödé ✓.txt": b"h" * 23,
    "deep/er/est/file": b"i" * 29,
}


def cluster(t, subdir, targets=3, args=()):
    """Starts a gateway and `targets` targets; returns the gateway URL (the
    S3 endpoint), or finishes the test when the cluster does not form."""
    clulib.init(t, subdir, ["--set", "cluster.keepalive=500ms", "--set", "store.fsync=never",
                            "--set", "s3.key=%s:%s:aisd-test:AIS Test" % (AK, SK)] + list(args))
    g, ts = clulib.start_cluster(targets, secs=20)
    cluster.nodes = [g] + ts
    return g.url


def http_raw(base, method, path, body=None, headers=None):
    """One plain HTTP request to base (no signing, no SDK): (status,
    lower-case headers, body)."""
    p = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(p.hostname, p.port, timeout=30)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def signed(base, method, path, body=b"", headers=None, ak=AK, sk=SK):
    """One raw request to base signed with SigV4 (the payload hash of body),
    for what an SDK would not send: (status, lower-case headers, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    r = AWSRequest(method=method, url=base + path, data=body, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(ak, sk), "s3", REGION).add_auth(r)
    return http_raw(base, method, path, body or None, dict(r.prepare().headers))


def error_lines():
    """Error-level lines in every node's log (the runner checks only its own
    standalone target)."""
    out = []
    for n in getattr(cluster, "nodes", []):
        try:
            with open(n.log, errors="replace") as f:
                out += [n.name + ": " + l.rstrip() for l in f if " E " in l[:40]]
        except OSError:
            pass
    return out


def make_file(path, size, seed=0):
    """A file of `size` pseudo-random bytes (fast: a repeated 1 MiB block
    salted per MiB so that parts differ)."""
    block = hashlib.sha256(b"%d" % seed).digest() * (1 << 15)
    with open(path, "wb") as f:
        left, i = size, 0
        while left:
            chunk = (i.to_bytes(8, "little") + block)[: min(left, len(block))]
            f.write(chunk)
            left -= len(chunk)
            i += 1
    return path


def make_tree(root):
    for name, data in TREE.items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    return root


def same_tree(a, b):
    """True when trees a and b hold the same files with the same bytes."""
    def files(root):
        out = {}
        for d, _, fs in os.walk(root):
            for f in fs:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
        return out
    fa, fb = files(a), files(b)
    return fa == fb, sorted(set(fa) ^ set(fb))


def same_file(a, b):
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            p, q = x.read(1 << 20), y.read(1 << 20)
            if p != q:
                return False
            if not p:
                return True


def run(cmd, env=None, timeout=120, cwd=None, input=None):
    """Runs a client; returns (exit code, combined output)."""
    e = dict(os.environ)
    e.update(env or {})
    try:
        cp = subprocess.run(cmd, env=e, cwd=cwd, input=input, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        return cp.returncode, cp.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as ex:
        return -1, "timed out after %d s: %s" % (timeout, (ex.stdout or b"").decode(errors="replace")[-500:])


SIZES = {"zero": 0, "two_k": 2048, "five_m": 5 << 20, "ten_m": 10 << 20, "fifty_m": 50 << 20}


def client_data(work):
    """WORK/up: sizes/{zero,two_k,five_m,ten_m,fifty_m} (0 B .. 50 MiB) and
    tree/ (the awkward names), the tree every client uploads and downloads."""
    up = os.path.join(work, "up")
    os.makedirs(os.path.join(up, "sizes"))
    for i, (n, sz) in enumerate(SIZES.items()):
        make_file(os.path.join(up, "sizes", n), sz, seed=i)
    make_tree(os.path.join(up, "tree"))
    return up


def boto3_client(endpoint, **cfg):
    import boto3
    import botocore.config
    c = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg)
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name=REGION, config=c)


def fill_many(s3, bucket, n=1100):
    """A bucket of n one-byte keys k/00000.. (more than one listing page)."""
    import concurrent.futures
    s3.create_bucket(Bucket=bucket)
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda i: s3.put_object(Bucket=bucket, Key="k/%05d" % i, Body=b"x"), range(n)))


def chunked_put(base, bck, key, data, ak=AK, sk=SK, ctx=None, signed=False, chunk=64 << 10, tamper=False):
    """An aws-chunked PUT signed with SigV4 (botocore), as the SDKs send it:
    unsigned chunks with a CRC32 trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER),
    or, with signed, chunks of `chunk` bytes each signed in the chain of
    STREAMING-AWS4-HMAC-SHA256-PAYLOAD. ctx: the ssl context of an https
    base; tamper flips a byte of the last data chunk after signing it.
    Returns (status, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" if signed else "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    hdrs = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
            "X-Amz-Content-SHA256": mode}
    if not signed:
        hdrs["x-amz-trailer"] = "x-amz-checksum-crc32"
    url = "%s/%s/%s" % (base, bck, urllib.parse.quote(key))
    r = AWSRequest(method="PUT", url=url, data=b"", headers=hdrs)

    class Streaming(S3SigV4Auth):
        def payload(self, request):  # botocore would sign the framed body's sha256
            return mode
    Streaming(Credentials(ak, sk), "s3", REGION).add_auth(r)
    p = r.prepare()
    if signed:
        amzdate = p.headers["X-Amz-Date"]
        scope = "%s/%s/s3/aws4_request" % (amzdate[:8], REGION)
        prev = re.search(r"Signature=([0-9a-f]+)", p.headers["Authorization"]).group(1)
        k = ("AWS4" + sk).encode()
        for part in (amzdate[:8], REGION, "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        body = b""
        pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
        for c in pieces:
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev, hashlib.sha256(b"").hexdigest(),
                             hashlib.sha256(c).hexdigest()])
            prev = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
            if tamper and c is pieces[-2]:
                c = c[:-1] + bytes([c[-1] ^ 1])
            body += b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode()) + c + b"\r\n"
    else:
        crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big"))
        body = b"%x\r\n" % len(data) + data + b"\r\n0\r\nx-amz-checksum-crc32:" + crc + b"\r\n\r\n"
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        c = http.client.HTTPSConnection(u.hostname, u.port, timeout=60, context=ctx)
    else:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.request("PUT", u.path, body=body, headers=dict(p.headers, **{"Content-Length": str(len(body))}))
        resp = c.getresponse()
        return resp.status, resp.read()
    finally:
        c.close()


# --- server-side encryption tests ------------------------------------------------------------
def write_keys(path, keys):
    """A key file (s3.sse_key_file, s3.kms_key_file) of [(ID, 32 bytes)],
    0600, replaced atomically (a running daemon may reload it)."""
    with open(path + ".tmp", "w") as f:
        f.write("# test keys\n" + "".join("%s %s\n" % (i, base64.b64encode(k).decode()) for i, k in keys))
    os.chmod(path + ".tmp", 0o600)
    os.replace(path + ".tmp", path)


def sse_cluster(t, subdir, master_keys, kms_keys, args=()):
    """A 1-gateway 3-target cluster (cluster()) serving SSE-S3 and SSE-KMS
    from key files written under AISD_DIR/subdir (master_keys and kms_keys:
    [(ID, 32 bytes)]), SSE-C over plain HTTP allowed, args added: (endpoint,
    master key file, KMS key file); a test may rewrite the files (rotation)."""
    base = os.path.join(os.environ["AISD_DIR"], subdir)
    os.makedirs(base, exist_ok=True)
    master, kms = os.path.join(base, "sse.keys"), os.path.join(base, "kms.keys")
    write_keys(master, master_keys)
    write_keys(kms, kms_keys)
    ep = cluster(t, subdir, targets=3, args=["--set", "s3.sse_key_file=" + master, "--set", "s3.kms_key_file=" + kms,
                                             "--set", "s3.sse_c_plain_http=on"] + list(args))
    return ep, master, kms


def status_code(fn):
    """(HTTP status, S3 error code) of a boto3 call: (200, None) when it
    succeeds."""
    try:
        fn()
    except Exception as e:  # botocore ClientError
        r = getattr(e, "response", {})
        return r.get("ResponseMetadata", {}).get("HTTPStatusCode"), r.get("Error", {}).get("Code")
    return 200, None


def disk_has(nodes, marker):
    """The files under the nodes' dirs that hold marker (plaintext on disk)."""
    found = []
    for n in nodes:
        for root, _, files in os.walk(n.dir):
            for f in files:
                p = os.path.join(root, f)
                try:
                    with open(p, "rb") as fh:
                        if marker in fh.read():
                            found.append(p)
                except OSError:
                    pass
    return found


def keys_in_logs(nodes, keys):
    """The indexes of keys found (base64 or hex, either case) in any
    node's log or stderr."""
    texts = []
    for n in nodes:
        for f in (n.log, os.path.join(n.dir, "stderr")):
            try:
                texts.append(open(f, "rb").read())
            except OSError:
                pass
    blob = b"".join(texts)
    return [i for i, k in enumerate(keys)
            if base64.b64encode(k) in blob or k.hex().encode() in blob or k.hex().upper().encode() in blob]
