"""policy.py - anonymous S3 GETs of a 100-byte object that a bucket policy
allows, with the policy decided on every request: a 1-gateway 1-target
cluster (S3 keys, store.fsync=never), wrk (1 thread, 4 connections, D
seconds, default 8) straight at the target, R rounds (default 3). The
policy has 21 statements (~4 KiB, IpAddress conditions), so its parse is
what a request pays when it is parsed per request. Prints requests/s and
the median latency of each round, and their medians; compare builds with
BUILD=... (make bench-policy BUILD=old-build).

    AISD_BIN=build/aisd AISD_DIR=$(mktemp -d) /usr/bin/python3 tools/bench/policy.py

Uses the integration tests' cluster harness (tests/integration/clulib.py);
every node is stopped by PID at the end.
"""
import json, os, re, statistics, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
from itlib import T
import boto3, botocore.config
from s3lib import AK, SK, REGION, cluster

D, R = int(os.environ.get("D", "8")), int(os.environ.get("R", "3"))
t = T()
EP = cluster(t, "polbench", targets=1)
tg = cluster.nodes[1]
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION,
                  config=botocore.config.Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="polbench")
s3.put_object(Bucket="polbench", Key="pub/o", Body=b"x" * 100)
ARN = "arn:aws:s3:::"
st = [{"Sid": "s%d" % i, "Effect": "Allow", "Principal": {"AWS": "uid-%d" % i},
       "Action": ["s3:GetObject", "s3:PutObject"], "Resource": ARN + "polbench/p%d/*" % i,
       "Condition": {"IpAddress": {"aws:SourceIp": ["10.%d.0.0/16" % i]}}} for i in range(20)]
st.append({"Sid": "pub", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
           "Resource": ARN + "polbench/pub/*"})
doc = json.dumps({"Version": "2012-10-17", "Statement": st})
s3.put_bucket_policy(Bucket="polbench", Policy=doc)
print("# policy: %d bytes, %d statements; wrk -t1 -c4 -d%ds %s/polbench/pub/o" % (len(doc), len(st), D, tg.url))
rps, p50 = [], []
for k in range(R):
    out = subprocess.run(["wrk", "-t1", "-c4", "-d%ds" % D, "--latency", tg.url + "/polbench/pub/o"],
                         capture_output=True, text=True, timeout=D + 60).stdout
    m, l = re.search(r"Requests/sec:\s+([\d.]+)", out), re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    assert m and l and not non2xx, out
    rps.append(float(m.group(1)))
    p50.append(float(l.group(1)) * {"us": 1, "ms": 1000, "s": 1e6}[l.group(2)])
    print("round %d: %.0f requests/s, median latency %.0f us" % (k + 1, rps[-1], p50[-1]))
print("median: %.0f requests/s, median latency %.0f us" % (statistics.median(rps), statistics.median(p50)))
t.finish()
