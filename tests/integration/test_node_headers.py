"""test_node_headers.py - headers only a node may send (authz.h "node
headers": Ais-S3-Client, the client of a relayed S3 request; Ais-Moss-Peer)
are believed only when the cluster secret vouches for them, never for the
sender's address, on a 1-gateway 2-target cluster with cluster.secret and
s3.auth on. Every client here runs on 127.0.0.1 or 127.0.0.2, and every
node listens on 127.0.0.1: a client on 127.0.0.1 has a node's address.

Checks: a bucket policy that denies anonymous GetObject to aws:SourceIp
127.0.0.1/32 (and to plain HTTP for one prefix) refuses a client on
127.0.0.1 that claims to be 127.0.0.2 (or TLS) with its own
Ais-S3-Client header, sent through the gateway, straight to the owner
target and to the other target (which relays it), and on a browser POST form
relayed by the gateway; a forged Ais-Fwd-Auth beside it is 401; the real 127.0.0.2 is still let in through the gateway
and through a target that relays to the owner (the relay's signed
header); a GetBatch with the client's own Ais-Moss-Peer is served whole
(the header dropped), not as a peer's local-only sub-request.
"""
# timeout: 120
import json
import subprocess

import clulib
import hrwlib
from itlib import T
from s3lib import AK, SK, REGION, cluster, error_lines, http_raw

import boto3
import botocore.config

t = T()
tsf, csf = clulib.secret_files("nodehdr")
EP = cluster(t, "nodehdr", targets=2, args=["--set", "cluster.secret_file=" + csf])
g, ts = cluster.nodes[0], cluster.nodes[1:]
s3 = boto3.client("s3", endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name=REGION,
                  config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def curl_from(src, url, headers=()):
    """An anonymous GET of url from source address src; its status."""
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--interface", src]
    for h in headers:
        args += ["-H", h]
    r = subprocess.run(args + [url], capture_output=True, text=True, timeout=30)
    return int(r.stdout or 0)


ARN = "arn:aws:s3:::"
s3.create_bucket(Bucket="nhb")
for k in ("ip/o", "tls/o"):
    s3.put_object(Bucket="nhb", Key=k, Body=b"bytes of " + k.encode())
POL = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "nhb/*"},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "nhb/ip/*",
     "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": ARN + "nhb/tls/*",
     "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": ARN + "nhb/up/*"},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": ARN + "nhb/up/*",
     "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}}]}
s3.put_bucket_policy(Bucket="nhb", Policy=json.dumps(POL))

owner_id = hrwlib.top("nhb/ip/o", [n.id for n in ts], 1)[0]
owner = [n for n in ts if n.id == owner_id][0]
other = [n for n in ts if n.id != owner_id][0]

# the policy as written, through the relays (the gateway's, a target's)
t.eq(curl_from("127.0.0.2", EP + "/nhb/ip/o"), 200, "127.0.0.2 through the gateway: allowed")
t.eq(curl_from("127.0.0.2", other.url + "/nhb/ip/o"), 200,
     "127.0.0.2 through the target that does not hold it (it relays to the owner, signed): allowed")
t.eq(curl_from("127.0.0.1", EP + "/nhb/ip/o"), 403, "127.0.0.1 through the gateway: denied (IpAddress Deny)")
t.eq(curl_from("127.0.0.2", EP + "/nhb/tls/o"), 403, "plain HTTP under tls/: denied (SecureTransport)")

# a client on a node's address claims another address or TLS: never believed
CLAIM = "Ais-S3-Client: 127.0.0.2 1"
for name, url in (("the gateway", EP), ("the owner target", owner.url), ("the other target", other.url)):
    t.eq(curl_from("127.0.0.1", url + "/nhb/ip/o", [CLAIM]), 403,
         "127.0.0.1 claiming 127.0.0.2 (its own Ais-S3-Client) to %s: still denied" % name)
    t.eq(curl_from("127.0.0.1", url + "/nhb/tls/o", [CLAIM]), 403,
         "  claiming TLS to %s: still denied" % name)
forged = "Ais-Fwd-Auth: %d.0123456789abcdef.%s.%s" % (0, "0" * 64, "1" * 64)
t.eq(curl_from("127.0.0.1", owner.url + "/nhb/ip/o", [CLAIM, forged]), 401,
     "the claim with a forged Ais-Fwd-Auth, straight to the owner: 401")
t.eq(curl_from("127.0.0.2", owner.url + "/nhb/ip/o", [forged]), 200,
     "a forged Ais-Fwd-Auth alone (no node header) changes nothing")

# a browser POST form, relayed by the gateway to the key's owner (s3_proxy_pre): the same rule
def post_from(src, url, key, headers=()):
    args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "--interface", src,
            "-F", "key=" + key, "-F", "file=@" + __file__]
    for h in headers:
        args += ["-H", h]
    r = subprocess.run(args + [url], capture_output=True, text=True, timeout=30)
    return int(r.stdout or 0)


t.eq(post_from("127.0.0.2", EP + "/nhb", "up/a"), 204, "an anonymous POST form from 127.0.0.2 through the gateway: 204")
t.eq(post_from("127.0.0.1", EP + "/nhb", "up/b"), 403, "  from 127.0.0.1: 403 (IpAddress Deny)")
t.eq(post_from("127.0.0.1", EP + "/nhb", "up/c", [CLAIM]), 403,
     "  from 127.0.0.1 claiming 127.0.0.2 (Ais-S3-Client on the form's request): still 403")

# a GetBatch that says it is a peer's sub-request: the header is not believed
keys = ["gb/%02d" % i for i in range(8)]
for k in keys:
    s3.put_object(Bucket="nhb", Key=k, Body=k.encode())
far = [k for k in keys if hrwlib.top("nhb/" + k, [n.id for n in ts], 1)[0] != owner.id]
t.check(far, "some GetBatch entries live on the other target", keys)
body = json.dumps({"in": [{"objname": k} for k in keys], "mime": ".tar", "coer": False})
st, _, data = http_raw(owner.url, "GET", "/v1/ml/moss/nhb", body,
                       {"Content-Type": "application/json", "Ais-Moss-Peer": "true"})
t.check(st == 200, "GetBatch to a target with a client's Ais-Moss-Peer: 200 (served whole)", (st, data[:300]))
t.check(all(k.encode() in data for k in keys), "  every entry is in the answer, those of the other target too")

t.eq(error_lines(), [], "no error-level log line on any node")
t.finish()
