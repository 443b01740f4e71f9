#!/usr/bin/python3
"""s3_botocore.py - requests signed by botocore, for test_s3_botocore.

Builds S3 requests with a real botocore client (what boto3 and the aws CLI
send): each API call is stopped at botocore's before-send event, so nothing
goes on the network, and the request exactly as it would go on the wire is
printed as one JSON object per line:

  {"name", "method", "path", "query", "headers": [[name, value], ...],
   "body": base64, "content_length": N or -1, "now": epoch seconds,
   "expect": "ok" or an S3 error code}

Cases: object keys with spaces, unicode, '+', '&', '%', quotes; listing
queries; multipart; copy; metadata; Range and conditionals; PUT bodies over
http (hex sha256 payload) and https (UNSIGNED-PAYLOAD, and aws-chunked
STREAMING-UNSIGNED-PAYLOAD-TRAILER with x-amz-checksum-* trailers when a
checksum is asked for); x-amz-checksum-* headers; presigned URLs (valid and
expired); and tampered copies that must fail. Exits 77 when botocore is
missing.
"""
import base64
import io
import json
import sys
import time
import urllib.parse

try:
    import botocore.session
    from botocore.config import Config
except ImportError:
    sys.exit(77)

AK = "AKIDBOTOCORE"
SK = "boto/Secret+Key=0123456789"
KEYS = [
    "plain.txt",
    "dir/sub/file.bin",
    "a b  c",
    "\u00fcn\u00efc\u00f8d\u00e9/\u043a\u043b\u044e\u0447 \u20ac",
    "plus+and&amp%25=eq",
    "quote'dq\"back`",
    "tilde~star*paren()bang!",
    "semi;colon,comma:at@dollar$",
    "hash#question?",
    "sp ace/../dot/./x//y",
]


class Captured(Exception):
    pass


cases = []
skipped = []


def emit(name, method, url, headers, body, expect="ok", now=None):
    parts = urllib.parse.urlsplit(url)
    hdrs = [[k, v.decode() if isinstance(v, bytes) else str(v)] for k, v in headers.items()]
    if not any(k.lower() == "host" for k, _ in hdrs):
        hdrs.insert(0, ["Host", parts.netloc])
    if body is None:
        body = b""
    elif hasattr(body, "read"):
        body = body.read()
    elif isinstance(body, str):
        body = body.encode()
    cl = -1
    for k, v in hdrs:
        if k.lower() == "content-length":
            cl = int(v)
    cases.append({
        "name": name,
        "method": method,
        "path": parts.path,
        "query": parts.query,
        "headers": hdrs,
        "body": base64.b64encode(body).decode(),
        "content_length": cl,
        "now": int(now if now is not None else time.time()),
        "expect": expect,
    })
    return cases[-1]


def client(endpoint, **cfg):
    s = botocore.session.get_session()
    c = s.create_client(
        "s3",
        region_name="eu-central-1",
        endpoint_url=endpoint,
        aws_access_key_id=AK,
        aws_secret_access_key=SK,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg),
    )
    state = {}

    def before_send(request, **kwargs):
        state["req"] = request
        raise Captured()

    c.meta.events.register("before-send.s3", before_send)
    return c, state


def capture(c, state, name, op, expect="ok", **kw):
    try:
        getattr(c, op)(**kw)
    except Captured:
        pass
    except Exception as e:  # an SDK that lacks a feature (e.g. CRC32C without awscrt)
        skipped.append("%s (%s)" % (name, str(e).splitlines()[0][:60]))
        return None
    r = state.pop("req")
    return emit(name, r.method, r.url, r.headers, r.body, expect)


def tampered(case, what):
    """A copy of case with one thing changed: the verifier must refuse it."""
    t = json.loads(json.dumps(case))
    t["name"] += " (tampered " + what + ")"
    if what == "path":
        t["path"] = t["path"] + "x"
        t["expect"] = "SignatureDoesNotMatch"
    elif what == "query":
        t["query"] = (t["query"] + "&" if t["query"] else "") + "extra=1"
        t["expect"] = "SignatureDoesNotMatch"
    elif what == "header":
        for h in t["headers"]:
            if h[0].lower() == "x-amz-date":
                h[1] = h[1][:-3] + ("10Z" if h[1][-3:] != "10Z" else "11Z")
        t["expect"] = "SignatureDoesNotMatch"
    elif what == "body":
        b = bytearray(base64.b64decode(t["body"]))
        b[len(b) // 2] ^= 1
        t["body"] = base64.b64encode(bytes(b)).decode()
    elif what == "secret":
        t["expect"] = "SignatureDoesNotMatch"
    cases.append(t)
    return t


def main():
    for scheme in ("http", "https"):
        c, st = client(scheme + "://127.0.0.1:8080")
        for i, key in enumerate(KEYS):
            g = capture(c, st, "%s get %r" % (scheme, key), "get_object", Bucket="bkt", Key=key)
            if i < 3:
                tampered(g, "path")
                tampered(g, "header")
            capture(c, st, "%s head %r range" % (scheme, key), "head_object", Bucket="bkt", Key=key,
                    Range="bytes=0-9", IfNoneMatch='"abc"')
            capture(c, st, "%s delete %r" % (scheme, key), "delete_object", Bucket="bkt", Key=key)
            p = capture(c, st, "%s put %r" % (scheme, key), "put_object", Bucket="bkt", Key=key,
                        Body=b"hello " + key.encode() * 3, Metadata={"k1": "v  1", "K2": "two words"},
                        ContentType="text/plain")
            if p and i < 2:
                t = tampered(p, "body")
                # over http the body's sha256 is signed; over https the
                # default checksum header of newer SDKs (or nothing) holds
                hdrs = {h[0].lower() for h in t["headers"]}
                if scheme == "http":
                    t["expect"] = "XAmzContentSHA256Mismatch"
                elif any(h.startswith("x-amz-checksum-") for h in hdrs) or "content-md5" in hdrs:
                    t["expect"] = "BadDigest"
                else:
                    cases.pop()
        capture(c, st, scheme + " list v2", "list_objects_v2", Bucket="bkt", Prefix="a b/\u00fc+&=",
                Delimiter="/", StartAfter="x+y z", MaxKeys=5, EncodingType="url", FetchOwner=True)
        l1 = capture(c, st, scheme + " list v1", "list_objects", Bucket="bkt", Marker="m&n=o%p", Prefix="~")
        tampered(l1, "query")
        capture(c, st, scheme + " list buckets", "list_buckets")
        capture(c, st, scheme + " create bucket", "create_bucket", Bucket="bkt2",
                CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
        capture(c, st, scheme + " location", "get_bucket_location", Bucket="bkt")
        capture(c, st, scheme + " mpu create", "create_multipart_upload", Bucket="bkt", Key="big file+1")
        capture(c, st, scheme + " mpu part", "upload_part", Bucket="bkt", Key="big file+1", PartNumber=7,
                UploadId="u+p/l=o&a", Body=b"x" * 5000)
        capture(c, st, scheme + " mpu complete", "complete_multipart_upload", Bucket="bkt", Key="big file+1",
                UploadId="u+p/l=o&a",
                MultipartUpload={"Parts": [{"PartNumber": 7, "ETag": '"0123456789abcdef0123456789abcdef"'}]})
        capture(c, st, scheme + " copy", "copy_object", Bucket="bkt", Key="dst key",
                CopySource={"Bucket": "src", "Key": "s\u00fc b+c&d"}, MetadataDirective="REPLACE",
                Metadata={"a": "b"})
        capture(c, st, scheme + " delete many", "delete_objects", Bucket="bkt",
                Delete={"Objects": [{"Key": k} for k in KEYS], "Quiet": True})
        for alg in ("CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"):
            body = io.BytesIO(b"checksummed body " * 100)
            capture(c, st, "%s put checksum %s" % (scheme, alg), "put_object", Bucket="bkt", Key="ck " + alg,
                    Body=body, ChecksumAlgorithm=alg)
        # an empty body
        capture(c, st, scheme + " put empty", "put_object", Bucket="bkt", Key="empty", Body=b"")

        # presigned URLs: valid now, expired later, not valid yet
        for method, op, kw in (("GET", "get_object", {}), ("PUT", "put_object", {})):
            url = c.generate_presigned_url(op, Params=dict(Bucket="bkt", Key="pre signed/\u00fc+&", **kw),
                                           ExpiresIn=600)
            body = b"presigned body" if method == "PUT" else b""
            ok = emit("%s presigned %s" % (scheme, method), method, url, {}, body)
            e = json.loads(json.dumps(ok))
            e["name"] += " (expired)"
            e["now"] += 700
            e["expect"] = "AccessDenied"
            cases.append(e)
            tampered(ok, "path")

    # a client that signs with another secret
    s = botocore.session.get_session()
    bad = s.create_client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:8080",
                          aws_access_key_id=AK, aws_secret_access_key=SK + "x",
                          config=Config(s3={"addressing_style": "path"}))
    st = {}
    bad.meta.events.register("before-send.s3", lambda request, **kw: (st.__setitem__("req", request), (_ for _ in ()).throw(Captured())))
    try:
        bad.get_object(Bucket="bkt", Key="k")
    except Captured:
        pass
    r = st["req"]
    emit("wrong secret", r.method, r.url, r.headers, r.body, "SignatureDoesNotMatch")
    # an unknown key
    other = s.create_client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:8080",
                            aws_access_key_id="AKIDUNKNOWN", aws_secret_access_key=SK,
                            config=Config(s3={"addressing_style": "path"}))
    other.meta.events.register("before-send.s3", lambda request, **kw: (st.__setitem__("req", request), (_ for _ in ()).throw(Captured())))
    try:
        other.get_object(Bucket="bkt", Key="k")
    except Captured:
        pass
    r = st["req"]
    emit("unknown key", r.method, r.url, r.headers, r.body, "InvalidAccessKeyId")

    for c in cases:
        print(json.dumps(c))
    print("# botocore %s: %d requests; not supported by this botocore: %s"
          % (botocore.__version__, len(cases), "; ".join(skipped) or "none"), file=sys.stderr)


if __name__ == "__main__":
    main()
