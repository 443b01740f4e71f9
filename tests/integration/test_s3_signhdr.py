"""test_s3_signhdr.py - everything that steers an S3 request is signed: a
request whose x-amz-* headers are not all in its SignedHeaders is refused
(403 AccessDenied, <HeadersNotSigned>), in the presigned and the header
form, through the gateway. 1 gateway + 3 targets, s3.auth on, one key.

Checks:
 1. A presigned PUT URL (signed for host only) sent with an added
    x-amz-copy-source of a private object and x-amz-acl: public-read:
    403 AccessDenied naming the header; nothing is written, the private
    bytes are not readable anonymously at the URL's key.
 2. The same URL with an added x-amz-acl, x-amz-grant-read or
    x-amz-meta-*: 403 each; the URL as signed (with an unsigned
    Content-Type) still uploads, and the object stays private.
 3. A header-signed PUT (botocore's signer) replayed with an added
    x-amz-acl, x-amz-grant-read, x-amz-meta-* or x-amz-copy-source: 403
    each; the same request as signed: 200, private.
 4. A header-signed request that leaves x-amz-content-sha256 out of its
    SignedHeaders is still accepted (its value is the signed payload hash).
 5. A request dated by its Date header instead of x-amz-date (botocore
    does so when the caller sets Date, writing an RFC 5322 date with a
    numeric zone, "-0000"): 200, PUT and GET; the same request with a
    Date an hour off: 403 RequestTimeTooSkewed (or 400 for the credential's
    day near midnight), never 200.
"""
# timeout: 120
import hashlib
import urllib.parse
import xml.etree.ElementTree as ET

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from itlib import T
from s3lib import AK, REGION, SK, boto3_client, cluster, error_lines, http_raw

t = T()
EP = cluster(t, "s3signhdr")
s3 = boto3_client(EP, signature_version="s3v4")
ALL = "http://acs.amazonaws.com/groups/global/AllUsers"

s3.create_bucket(Bucket="vault")
s3.put_object(Bucket="vault", Key="payroll", Body=b"private payroll bytes")
s3.create_bucket(Bucket="drop")


def path_of(url):
    p = urllib.parse.urlsplit(url)
    return p.path + ("?" + p.query if p.query else "")


def error_of(body):
    try:
        x = ET.fromstring(body)
        return x.findtext("Code"), x.findtext("HeadersNotSigned"), x.findtext("Message")
    except ET.ParseError:
        return None, None, body[:200]


def anon_get(key):
    st, _, body = http_raw(EP, "GET", "/drop/" + key)
    return st, body


# 1. a presigned PUT turned into a copy of a private object, made public
url = s3.generate_presigned_url("put_object", Params={"Bucket": "drop", "Key": "upload"}, ExpiresIn=600)
st, _, body = http_raw(EP, "PUT", path_of(url), b"",
                       {"x-amz-copy-source": "vault/payroll", "x-amz-acl": "public-read"})
code, hns, msg = error_of(body)
t.check(st == 403 and code == "AccessDenied" and hns in ("x-amz-copy-source", "x-amz-acl"),
        "presigned PUT + unsigned x-amz-copy-source and x-amz-acl: 403 AccessDenied, HeadersNotSigned",
        (st, body[:300]))
t.eq(msg, "There were headers present in the request which were not signed", "S3's message")
st, body = anon_get("upload")
t.check(st in (403, 404) and b"payroll" not in body, "nothing copied: the private bytes are not public", (st, body[:200]))
try:
    s3.head_object(Bucket="drop", Key="upload")
    t.fail("the refused presigned PUT wrote an object")
except s3.exceptions.ClientError as e:
    t.eq(e.response["ResponseMetadata"]["HTTPStatusCode"], 404, "the refused presigned PUT wrote nothing")

# 2. one added header at a time; the URL as signed still works
for h, v in (("x-amz-acl", "public-read"), ("X-Amz-Grant-Read", 'uri="%s"' % ALL), ("x-amz-meta-owner", "mallory"),
             ("x-amz-copy-source", "vault/payroll")):
    st, _, body = http_raw(EP, "PUT", path_of(url), b"uploaded", {h: v})
    code, hns, _ = error_of(body)
    t.check(st == 403 and code == "AccessDenied" and hns == h.lower(), "presigned PUT + unsigned %s: 403" % h,
            (st, body[:300]))
st, _, body = http_raw(EP, "PUT", path_of(url), b"uploaded", {"Content-Type": "text/plain"})
t.eq(st, 200, "the presigned PUT as signed (and an unsigned Content-Type): 200")
got = s3.get_object(Bucket="drop", Key="upload")
t.check(got["Body"].read() == b"uploaded" and not got.get("Metadata"), "the upload holds its own bytes, no metadata")
acl = s3.get_object_acl(Bucket="drop", Key="upload")
t.check(all(g["Grantee"].get("URI") != ALL for g in acl["Grants"]), "the upload is private", acl["Grants"])
t.eq(anon_get("upload")[0], 403, "anonymous GET of the upload: 403")


# 3. a header-signed PUT replayed with one more header
def signed_put(key, body):
    rq = AWSRequest(method="PUT", url="%s/drop/%s" % (EP, key), data=body,
                    headers={"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(rq)
    return dict(rq.headers)


hdrs = signed_put("hdr", b"header-signed")
t.check("x-amz-date" in hdrs["Authorization"], "botocore signs its x-amz-* headers", hdrs["Authorization"])
for h, v in (("x-amz-acl", "public-read"), ("x-amz-grant-read", 'uri="%s"' % ALL), ("X-Amz-Meta-Tag", "evil"),
             ("x-amz-copy-source", "vault/payroll")):
    st, _, body = http_raw(EP, "PUT", "/drop/hdr", b"header-signed", dict(hdrs, **{h: v}))
    code, hns, _ = error_of(body)
    t.check(st == 403 and code == "AccessDenied" and hns == h.lower(),
            "header-signed PUT replayed + unsigned %s: 403 AccessDenied" % h, (st, body[:300]))
st, body = anon_get("hdr")
t.check(st in (403, 404) and b"payroll" not in body, "no public object came of the replays", (st, body[:200]))
st, _, body = http_raw(EP, "PUT", "/drop/hdr", b"header-signed", hdrs)
t.eq(st, 200, "the header-signed PUT as signed: 200")
t.eq(anon_get("hdr")[0], 403, "and it is private")

# 4. x-amz-content-sha256 left out of SignedHeaders: accepted (its value is signed as the payload hash)
rq = AWSRequest(method="GET", url="%s/drop/hdr" % EP, data=b"")
SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(rq)
h4 = dict(rq.headers)
h4["x-amz-content-sha256"] = hashlib.sha256(b"").hexdigest()  # (botocore's SigV4Auth signs what it saw)
t.check("x-amz-content-sha256" not in h4["Authorization"], "the header is not among the signed ones", h4["Authorization"])
st, _, body = http_raw(EP, "GET", "/drop/hdr", None, h4)
t.check(st == 200 and body == b"header-signed", "a GET with an unsigned x-amz-content-sha256: 200", (st, body[:200]))

# 5. dated by Date (RFC 5322, numeric zone), no x-amz-date
def date_signed(method, key, body, date_hdr=None):
    rq = AWSRequest(method=method, url="%s/drop/%s" % (EP, key), data=body,
                    headers={"Date": "", "x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    SigV4Auth(Credentials(AK, SK), "s3", REGION).add_auth(rq)
    h = dict(rq.headers)
    if date_hdr:
        h["Date"] = date_hdr(h["Date"])
    return h


h5 = date_signed("PUT", "dated", b"dated by Date")
t.check("X-Amz-Date" not in h5 and h5["Date"].endswith("-0000"), "botocore dates it by Date, zone -0000", h5)
st, _, body = http_raw(EP, "PUT", "/drop/dated", b"dated by Date", h5)
t.check(st == 200, "a PUT dated by an RFC 5322 Date header: 200", (st, body[:300]))
st, _, body = http_raw(EP, "GET", "/drop/dated", None, date_signed("GET", "dated", b""))
t.check(st == 200 and body == b"dated by Date", "and a GET dated so reads it back", (st, body[:300]))
h5 = date_signed("PUT", "skewed", b"x", lambda d: d[:-5] + "+0100")
st, _, body = http_raw(EP, "PUT", "/drop/skewed", b"x", h5)
# (near midnight the hour moves the day too: the credential's date then mismatches, 400)
t.check((st, b"RequestTimeTooSkewed" in body) == (403, True) or (st, b"AuthorizationHeaderMalformed" in body) == (400, True),
        "a Date one hour off (+0100): 403 RequestTimeTooSkewed", (st, body[:300]))

t.eq(error_lines(), [], "no error-level log lines")
t.finish()
