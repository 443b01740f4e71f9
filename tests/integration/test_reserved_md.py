"""test_reserved_md.py - custom metadata keys the cluster writes itself
(s3., bk., ver., lock., archive., dsort., ais.) are refused on a client's
native PUT, while the cluster's own writers (an archive job's shard)
still set them, on a 1-gateway 2-target cluster with cluster.secret and
S3 keys.

Checks: a native PUT (through the gateway's redirect) naming archive.run,
dsort.run, ver.id, ver.dm, lock.mode, ais.x, in any case, also after an
ordinary key, is 400 naming the reserved prefixes and stores nothing;
an ordinary key is stored and shown by HEAD; S3's x-amz-meta-archive.run
is kept under S3's own encoded key (no bare archive.run item); an archive
job still marks the shard it commits with archive.run=ID.
"""
# timeout: 120
import os
import subprocess

import boto3
import botocore.config

import clulib
from clulib import follow
from itlib import T
from s3lib import AK, SK, REGION, cluster, error_lines

t = T()
tsf, csf = clulib.secret_files("resmd")
EP = cluster(t, "resmd", targets=2, args=["--set", "cluster.secret_file=" + csf])
g = cluster.nodes[0]
CTL = os.environ["AISCTL"]
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION,
                  config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.create_bucket(Bucket="resmd")


def put(obj, md):
    return follow("PUT", g.url, "/v1/objects/resmd/" + obj, b"client bytes", {"Ais-Custom-Md": md})[1]


def head(obj):
    return follow("HEAD", g.url, "/v1/objects/resmd/" + obj)[1]


for i, md in enumerate(["archive.run=r-123", "dsort.run=r-456", "color=red,ver.id=0123", "ver.dm=1",
                        "lock.mode=COMPLIANCE,lock.until=4102444800", "ais.next=1", " Dsort.Run=r-456"]):
    r = put("o%d" % i, md)
    t.check(r.status == 400 and b"reserved" in r.body and b"dsort." in r.body,
            "native PUT with custom metadata %r: 400 naming the reserved keys" % md, (r.status, r.body[:300]))
    t.eq(head("o%d" % i).status, 404, "  nothing stored")

r = put("plain", "color=blue,run=dsort.run")
t.eq(r.status, 200, "an ordinary key (a value that looks like a reserved key too): 200")
t.check("color=blue" in (head("plain").headers.get("ais-custom-md") or ""), "  HEAD shows it",
        head("plain").headers)

s3.put_object(Bucket="resmd", Key="s3meta", Body=b"s3 bytes", Metadata={"archive.run": "r-123"})
cm = head("s3meta").headers.get("ais-custom-md") or ""
t.check("s3.m.archive.run=r-123" in cm and not any(i.startswith("archive.") for i in cm.split(",")),
        "S3 x-amz-meta-archive.run: kept under s3.m., no bare archive.run item", cm)
t.eq(s3.head_object(Bucket="resmd", Key="s3meta")["Metadata"], {"archive.run": "r-123"}, "  and S3 shows it as sent")

# the cluster's own writer: an archive run's shard carries its mark
cp = subprocess.run([CTL, "-e", g.url, "archive", "put", "resmd/shard.tar", "--from", "resmd", "--list", "plain"],
                    stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
words = cp.stdout.split()
rid = words[words.index("job") + 1] if cp.returncode == 0 and "job" in words else ""
t.check(rid, "aisctl archive put: started", cp.stdout + cp.stderr)
cp = subprocess.run([CTL, "-e", g.url, "job", "wait", rid or "none", "--timeout-s", "60"], stdin=subprocess.DEVNULL,
                    capture_output=True, text=True, timeout=90)
t.check(cp.stdout.strip() == "%s: done" % rid, "  the run is done", cp.stdout + cp.stderr)
cm = head("shard.tar").headers.get("ais-custom-md") or ""
t.check(("archive.run=%s" % rid) in cm.split(","), "  its shard is marked archive.run=ID (the cluster's own write)",
        cm)

t.eq(error_lines(), [], "no error-level log line on any node")
t.finish()
