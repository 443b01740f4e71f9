"""test_hot_cache.py - small objects served from memory (store.hot_cache)
are never older than what a client was told.

The runner's standalone target with a 2 MiB hot cache (so objects are
evicted and filled again all the time) and S3 without auth. First the
cache must serve: GETs of small objects read twice count as hits in
/metrics (aisd_hot_hits_total), with the same bytes, ETag, checksum,
version, Last-Modified and Content-Length as the first read, and Range,
HEAD and If-None-Match answer from it as from the disk.

Then 16 keys are overwritten (sizes 1 to 13 KiB, so they move in and out
of the cache's size range) and deleted in a tight loop by three writers,
each owning its keys: two native (PUT, DELETE) and one S3 (boto3
put_object with the version in its metadata, delete_object), while four
native readers and one S3 reader GET random keys. Every body names its key
and write number and is checked byte for byte, with its checksum and (S3)
metadata; a read must return a write at least as new as the last one
acknowledged before the read started and at most the last one started
before it ended, and a 404 only when a DELETE falls in that window. Ends
with every key as its last operation left it, read twice.

Then a bucket destroyed while its objects are hot answers 404 for them,
also after it is created again under the same name.

Last, answers a slow client holds: a hit is sent from the cache's own
copy, so an answer that waits for the client to read (1024 pipelined GETs
of a hot 8000-byte object on a connection with a tiny receive buffer)
must still send the bytes it started with after the object is
overwritten, deleted and its memory's place taken by other objects
filling the cache: each answer is the first write whole, until the ones
read after the delete, which are 404. Bounded: 12 s of load, each thread
capped in requests.
"""
# aisd-args: --set s3.auth=off --set store.hot_cache=2MiB --set store.hot_object_max=8KiB
# timeout: 180
import hashlib
import http.client
import random
import re
import threading
import time

import boto3
import botocore.config
from botocore.exceptions import ClientError

import socket

from itlib import HOST, PORT, URL, Reader, T, conn, create_bucket, obj_path, req, xxh64

t = T()
B = "hot"
t.eq(create_bucket(B).status, 200, "create bucket hot")


def body_of(key, seq):
    """The bytes of write seq of key: a self-describing head, then a
    pattern of both; 1 to 13 KiB, around hot_object_max."""
    head = ("%s:%d:" % (key, seq)).encode()
    size = 1024 + (seq * 7919 + len(key) * 131) % (12 * 1024)
    seed = hashlib.sha256(head).digest()
    out = head + seed * (size // len(seed) + 1)
    return out[:size]


HEAD_RE = re.compile(rb"^([a-z0-9-]+):(\d+):")


def parse(body):
    """(key, seq) of a body whose bytes are exactly body_of(key, seq), else None."""
    m = HEAD_RE.match(body[:64])
    if not m:
        return None
    key, seq = m.group(1).decode(), int(m.group(2))
    return (key, seq) if body_of(key, seq) == body else None


def metric(name):
    r = req("GET", "/metrics")
    m = re.search(r"^%s (\d+)$" % re.escape(name), r.body.decode(errors="replace"), re.M)
    return int(m.group(1)) if m else None


# --- 1. the cache serves, the same answer as the disk ---------------------------------------------
hits0 = metric("aisd_hot_hits_total")
t.check(hits0 is not None, "/metrics has aisd_hot_hits_total", hits0)
hits0 = hits0 or 0
P = obj_path(B, "warm")
data = body_of("warm", 1)[:4000]
t.eq(req("PUT", P, data).status, 200, "PUT warm (4000 bytes)")
HDRS = ("ETag", "Ais-Checksum-Value", "Ais-Version", "Last-Modified", "Content-Length", "Ais-Mtime-Ns")
r1 = req("GET", P)
r2 = req("GET", P)
t.check(r1.status == 200 and r1.body == data and r2.status == 200 and r2.body == data, "two GETs: the bytes")
t.eq([r2.h(h) for h in HDRS], [r1.h(h) for h in HDRS], "a hit answers the same headers as a miss")
t.eq(r2.h("Ais-Checksum-Value"), xxh64(data), "checksum of the bytes")
hits = metric("aisd_hot_hits_total") or 0
t.check(hits > hits0, "the second GET was served from memory (aisd_hot_hits_total %d -> %d)" % (hits0, hits))
t.check((metric("aisd_hot_objects") or 0) >= 1, "aisd_hot_objects counts it")
r = req("GET", P, headers={"Range": "bytes=10-19"})
t.check(r.status == 206 and r.body == data[10:20] and r.h("Content-Range") == "bytes 10-19/4000",
        "Range of a hot object", (r.status, r.h("Content-Range")))
r = req("HEAD", P)
t.check(r.status == 200 and r.body == b"" and r.h("Content-Length") == "4000", "HEAD of a hot object")
r = req("GET", P, headers={"If-None-Match": r1.h("ETag")})
t.eq(r.status, 304, "If-None-Match of a hot object")
r = req("GET", P, headers={"Range": "bytes=5000-"})
t.eq(r.status, 416, "Range past the end of a hot object")
big = body_of("big", 3) * 4  # over hot_object_max: served from the file
t.eq(req("PUT", obj_path(B, "big"), big).status, 200, "PUT a 4-write object over hot_object_max")
t.check(req("GET", obj_path(B, "big")).body == big and req("GET", obj_path(B, "big")).body == big,
        "an object over hot_object_max reads from the file")

s3 = boto3.client("s3", endpoint_url=URL + "/s3", aws_access_key_id="x", aws_secret_access_key="y",
                  region_name="us-east-1",
                  config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
o = s3.get_object(Bucket=B, Key="warm")
t.check(o["Body"].read() == data, "S3 GET of the hot object")

# --- 2. overwrites and deletes while reading -------------------------------------------------------
KEYS = ["k%02d" % i for i in range(16)]
OWNER = {k: ("s3" if i % 4 == 3 else "n%d" % (i % 2)) for i, k in enumerate(KEYS)}
lock = threading.Lock()
acked = {k: 0 for k in KEYS}      # last operation acknowledged (seq)
started = {k: 0 for k in KEYS}    # last operation started
ops = {k: {0: "put"} for k in KEYS}  # seq -> "put" or "del"
bad = []
counts = {"reads": 0, "hits404": 0, "writes": 0, "deletes": 0}
t.check(all(req("PUT", obj_path(B, k), body_of(k, 0)).status == 200 for k in KEYS), "PUT the 16 keys (write 0)")
DEADLINE = time.time() + 12
stop = threading.Event()


def note(msg):
    with lock:
        if len(bad) < 20:
            bad.append(msg)


def writer(name):
    rnd = random.Random(name)
    mine = [k for k in KEYS if OWNER[k] == name]
    c = conn(30)
    cli = s3 if name == "s3" else None
    for _ in range(3000):
        if stop.is_set() or time.time() > DEADLINE:
            break
        k = rnd.choice(mine)
        with lock:
            seq = started[k] + 1
            kind = "del" if rnd.random() < 0.2 else "put"
            started[k] = seq
            ops[k][seq] = kind
        try:
            if cli:
                if kind == "put":
                    cli.put_object(Bucket=B, Key=k, Body=body_of(k, seq), Metadata={"seq": str(seq)})
                else:
                    cli.delete_object(Bucket=B, Key=k)
                ok = True
            else:
                c.request("PUT" if kind == "put" else "DELETE", obj_path(B, k),
                          body=body_of(k, seq) if kind == "put" else None)
                r = c.getresponse()
                r.read()
                ok = r.status == 200 or (kind == "del" and r.status == 404)
                if not ok:
                    note("%s %s %s: %d" % (name, kind, k, r.status))
        except (ClientError, OSError, http.client.HTTPException) as e:
            note("%s %s %s: %r" % (name, kind, k, e))
            c.close()
            c = conn(30)
            ok = False
        if not ok:
            stop.set()
            break
        with lock:
            acked[k] = seq
            counts["writes" if kind == "put" else "deletes"] += 1
    c.close()


def judge(who, k, lo, hi, status, body, meta_seq=None):
    """lo: acked when the read started; hi: started when it ended."""
    with lock:
        window = {s: ops[k][s] for s in ops[k] if lo <= s <= hi}
        counts["reads"] += 1
    if status == 404:
        if "del" not in window.values():
            note("%s %s: 404 but no DELETE in writes %d..%d (%s)" % (who, k, lo, hi, window))
        else:
            with lock:
                counts["hits404"] += 1
        return
    if status != 200:
        note("%s %s: status %d" % (who, k, status))
        return
    got = parse(body)
    if not got or got[0] != k:
        note("%s %s: %d bytes that are no write of it (%r)" % (who, k, len(body), body[:24]))
        return
    seq = got[1]
    if seq < lo:
        note("%s %s: STALE: write %d read after write %d was acknowledged" % (who, k, seq, lo))
    elif seq > hi or window.get(seq) != "put":
        note("%s %s: write %d read, not a PUT between %d and %d" % (who, k, seq, lo, hi))
    if meta_seq is not None and meta_seq != str(seq):
        note("%s %s: metadata of write %s with the bytes of write %d" % (who, k, meta_seq, seq))


def reader(i):
    rnd = random.Random(100 + i)
    c = conn(30)
    for _ in range(20000):
        if stop.is_set() or time.time() > DEADLINE:
            break
        k = rnd.choice(KEYS)
        with lock:
            lo = acked[k]
        try:
            c.request("GET", obj_path(B, k))
            r = c.getresponse()
            body = r.read()
            cv = r.getheader("Ais-Checksum-Value")
        except (OSError, http.client.HTTPException) as e:
            note("reader %d %s: %r" % (i, k, e))
            c.close()
            c = conn(30)
            continue
        with lock:
            hi = started[k]
        judge("reader %d" % i, k, lo, hi, r.status, body)
        if r.status == 200 and cv != xxh64(body):
            note("reader %d %s: Ais-Checksum-Value %s, bytes %s" % (i, k, cv, xxh64(body)))
    c.close()


def s3_reader():
    rnd = random.Random(7)
    s3k = [k for k in KEYS if OWNER[k] == "s3"]
    for _ in range(5000):
        if stop.is_set() or time.time() > DEADLINE:
            break
        k = rnd.choice(s3k)
        with lock:
            lo = acked[k]
        try:
            o = s3.get_object(Bucket=B, Key=k)
            status, body, meta = 200, o["Body"].read(), o.get("Metadata", {}).get("seq", "0")
        except ClientError as e:
            status, body, meta = e.response["ResponseMetadata"]["HTTPStatusCode"], b"", None
        with lock:
            hi = started[k]
        judge("s3 reader", k, lo, hi, status, body, meta)


threads = [threading.Thread(target=writer, args=(n,)) for n in ("n0", "n1", "s3")]
threads += [threading.Thread(target=reader, args=(i,)) for i in range(4)] + [threading.Thread(target=s3_reader)]
hits_before = metric("aisd_hot_hits_total") or 0
for th in threads:
    th.start()
for th in threads:
    th.join(120)
stop.set()
t.check(not any(th.is_alive() for th in threads), "every thread ended")
hits_during = (metric("aisd_hot_hits_total") or 0) - hits_before
t.diag("%(reads)d reads (%(hits404)d answered 404), %(writes)d PUTs, %(deletes)d DELETEs" % counts +
       "; %d reads served from memory" % hits_during)
t.check(not bad, "no read older than an acknowledged write, none wrong", "\n".join(bad))
t.check(counts["reads"] >= 200 and counts["writes"] >= 30 and counts["deletes"] >= 5,
        "the loop did reads, overwrites and deletes", counts)
t.check(hits_during > 0, "reads were served from memory during the loop")
final_bad = []
for k in KEYS:
    last = acked[k]
    for _ in range(2):
        r = req("GET", obj_path(B, k))
        if ops[k][last] == "del":
            if r.status != 404:
                final_bad.append("%s: deleted last, GET %d" % (k, r.status))
        elif r.status != 200 or r.body != body_of(k, last):
            final_bad.append("%s: last write %d, GET %d %r" % (k, last, r.status, r.body[:16]))
t.check(not final_bad, "every key reads as its last operation left it", "\n".join(final_bad))

# --- 3. a destroyed bucket's hot objects ----------------------------------------------------------
D = "hotgone"
t.eq(create_bucket(D).status, 200, "create bucket hotgone")
PD = obj_path(D, "x")
t.eq(req("PUT", PD, b"still here?").status, 200, "PUT hotgone/x")
t.check(req("GET", PD).body == b"still here?" and req("GET", PD).body == b"still here?", "hotgone/x read twice")
t.eq(req("DELETE", "/v1/buckets/" + D, b'{"action":"destroy-bck"}').status, 200, "destroy bucket hotgone")
t.eq(req("GET", PD).status, 404, "its hot object answers 404")
t.eq(create_bucket(D).status, 200, "create bucket hotgone again")
t.eq(req("GET", PD).status, 404, "the new bucket does not have the old object")

# --- 4. a hot answer held by a slow client while the object changes ------------------------------
K = "slowly"
PK = obj_path(B, K)
v1 = (b"first write of slowly|" * 400)[:8000]
v2 = (b"SECOND write of slowly|" * 400)[:8000]
t.eq(req("PUT", PK, v1).status, 200, "PUT slowly (8000 bytes)")
t.check(req("GET", PK).body == v1 and req("GET", PK).body == v1, "slowly read twice (hot)")
N = 1024  # answers: 8 MB, twice the most a loopback socket's send buffer grows to (tcp_wmem 4 MiB)
sk = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
sk.settimeout(30)
sk.connect((HOST, PORT))
one = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (PK, HOST)).encode()
sk.sendall(one * N)
time.sleep(1.0)  # the target writes what the buffers take, then waits for the client
t.eq(req("PUT", PK, v2).status, 200, "overwrite slowly while its answers wait")
t.eq(req("DELETE", PK).status, 200, "delete slowly while its answers wait")
filler = [(b"filler %03d|" % i) * 700 for i in range(150)]  # 7.7 KB each: 1.1 MiB, the cache's place
fill_ok = True
for i, fb in enumerate(filler):
    fp = obj_path(B, "fill%03d" % i)
    fill_ok = fill_ok and req("PUT", fp, fb).status == 200 and req("GET", fp).body == fb
t.check(fill_ok, "150 other hot objects PUT and read (the freed memory's place is taken)")
rd = Reader(sk)
seen = []
try:
    for _ in range(N):
        r = rd.response()
        seen.append("v1" if r.status == 200 and r.body == v1 else
                    "v2" if r.status == 200 and r.body == v2 else
                    "404" if r.status == 404 else "bad %d %r" % (r.status, r.body[:40]))
except (OSError, EOFError, ValueError) as e:
    seen.append("error %r" % e)
sk.close()
k1 = seen.count("v1")
t.check(len(seen) == N and 1 <= k1 < N and seen == ["v1"] * k1 + ["404"] * (N - k1),
        "each answer the first write whole, then 404 once deleted (%d v1)" % k1,
        " ".join(seen[:8]) + " ... " + " ".join(seen[-4:]))
t.finish()
