"""test_ranges.py - Range requests and conditional GET/HEAD, byte for byte.

Ranges: a-b, a-, -n, an end beyond the object (clamped), a start at or past
the end (416 with Content-Range: bytes */SIZE), malformed or multiple
ranges (the whole object, 200). Conditionals: If-Match, If-None-Match,
If-Modified-Since, If-Unmodified-Since with matching and mismatching values.
"""
import email.utils
import os
import time

from itlib import T, create_bucket, obj_path, req

t = T()
B = "rng"
SIZE = 10000
data = os.urandom(SIZE)

t.eq(create_bucket(B).status, 200, "create bucket")
P = obj_path(B, "obj")
t.eq(req("PUT", P, data).status, 200, "PUT a 10000-byte object")
t.eq(req("PUT", obj_path(B, "empty"), b"").status, 200, "PUT an empty object")


def rng(spec, path=P, method="GET", extra=None):
    h = {"Range": spec}
    h.update(extra or {})
    return req(method, path, headers=h)


def partial(spec, start, end, what):
    """spec must give 206 with bytes start..end (inclusive)."""
    r = rng(spec)
    good = (r.status == 206 and r.body == data[start:end + 1]
            and r.h("content-range") == "bytes %d-%d/%d" % (start, end, SIZE)
            and r.h("content-length") == str(end - start + 1))
    t.check(good, "%s: Range %s -> 206 bytes %d-%d" % (what, spec, start, end),
            "status %d, Content-Range %r, Content-Length %r, body %d bytes (%s)" % (
                r.status, r.h("content-range"), r.h("content-length"), len(r.body),
                "equal" if r.body == data[start:end + 1] else "differs"))


def whole(spec, what, path=P, want=data):
    r = rng(spec, path)
    t.check(r.status == 200 and r.body == want and r.h("content-range") is None
            and r.h("content-length") == str(len(want)),
            "%s: Range %r -> 200 with the whole object" % (what, spec),
            "status %d, Content-Range %r, %d bytes" % (r.status, r.h("content-range"), len(r.body)))


def unsatisfiable(spec, what, path=P, size=SIZE):
    r = rng(spec, path)
    d = r.json() or {}
    t.check(r.status == 416 and r.h("content-range") == "bytes */%d" % size
            and d.get("status") == 416 and d.get("message"),
            "%s: Range %s -> 416, Content-Range: bytes */%d" % (what, spec, size), r)


partial("bytes=0-99", 0, 99, "first 100")
partial("bytes=0-0", 0, 0, "first byte")
partial("bytes=1234-5677", 1234, 5677, "middle")
partial("bytes=9999-9999", 9999, 9999, "last byte")
partial("bytes=9990-", 9990, 9999, "open end")
partial("bytes=0-", 0, 9999, "open end from 0")
partial("bytes=-100", 9900, 9999, "suffix")
partial("bytes=-1", 9999, 9999, "suffix of 1")
partial("bytes=9000-20000", 9000, 9999, "end beyond the object")
partial("bytes=5000-18446744073709551615", 5000, 9999, "end at 2^64-1")
partial("bytes=-20000", 0, 9999, "suffix longer than the object")
partial("Bytes=10-19", 10, 19, "case-insensitive unit")

unsatisfiable("bytes=10000-", "start at the size")
unsatisfiable("bytes=10000-10005", "start at the size, with end")
unsatisfiable("bytes=123456-", "start far beyond")
unsatisfiable("bytes=-0", "empty suffix")
unsatisfiable("bytes=0-", "any range of an empty object", obj_path(B, "empty"), 0)
unsatisfiable("bytes=-5", "suffix of an empty object", obj_path(B, "empty"), 0)

whole("bytes=abc", "malformed")
whole("bytes=", "empty spec")
whole("bytes=5-2", "end before start")
whole("bytes=1-2-3", "two dashes")
whole("bytes=-", "lone dash")
whole("bytes=x-5", "non-numeric start")
whole("items=0-5", "other unit")
whole("bytes=0-1,5-6", "multiple ranges")
whole("bytes=0-1, 9000-", "multiple ranges with space")
whole("bytes=99999999999999999999999-", "overflowing number")

# HEAD with a range: headers only, never a body
r = rng("bytes=0-99", method="HEAD")
t.check(r.status in (200, 206) and r.body == b"", "HEAD with Range: headers only", r)

# --- conditionals -----------------------------------------------------------
h = req("HEAD", P)
etag = h.h("etag")
t.check(etag and etag.startswith('"') and etag.endswith('"') and len(etag) > 2, "ETag is a quoted string", h)
lm = h.h("last-modified")
t.check(lm and email.utils.parsedate_to_datetime(lm) is not None, "Last-Modified is an HTTP date", h)

future = email.utils.formatdate(time.time() + 86400 * 365, usegmt=True)
past = email.utils.formatdate(time.time() - 86400 * 365 * 5, usegmt=True)


def cond(hdrs, want, what, method="GET"):
    r = req(method, P, headers=hdrs)
    good = r.status == want
    if want == 200:
        good = good and (method == "HEAD" or r.body == data)
    elif want == 304:
        good = good and r.body == b"" and r.h("etag") == etag
    t.check(good, "%s %s -> %d" % (method, what, want), r)


cond({"If-None-Match": etag}, 304, "If-None-Match: the ETag")
cond({"If-None-Match": etag}, 304, "If-None-Match: the ETag", method="HEAD")
cond({"If-None-Match": "W/" + etag}, 304, "If-None-Match: the weak ETag")
cond({"If-None-Match": '"nope", ' + etag}, 304, "If-None-Match: a list with the ETag")
cond({"If-None-Match": "*"}, 304, "If-None-Match: *")
cond({"If-None-Match": '"nope"'}, 200, "If-None-Match: another ETag")
cond({"If-Match": '"nope"'}, 412, "If-Match: another ETag")
cond({"If-Match": '"nope"'}, 412, "If-Match: another ETag", method="HEAD")
cond({"If-Match": etag}, 200, "If-Match: the ETag")
cond({"If-Match": "*"}, 200, "If-Match: *")
cond({"If-Modified-Since": future}, 200, "If-Modified-Since: a future date (invalid, ignored: RFC 9110)")
cond({"If-Modified-Since": lm}, 304, "If-Modified-Since: Last-Modified itself")
cond({"If-Modified-Since": past}, 200, "If-Modified-Since: a past date")
cond({"If-Modified-Since": "garbage"}, 200, "If-Modified-Since: not a date (ignored)")
cond({"If-Unmodified-Since": past}, 412, "If-Unmodified-Since: a past date")
cond({"If-Unmodified-Since": future}, 200, "If-Unmodified-Since: a future date")
cond({"If-None-Match": '"nope"', "If-Modified-Since": future}, 200,
     "If-None-Match mismatch wins over If-Modified-Since")
cond({"If-Match": etag, "If-Unmodified-Since": past}, 200,
     "If-Match match wins over If-Unmodified-Since")

r = rng("bytes=0-9", extra={"If-Match": etag})
t.check(r.status == 206 and r.body == data[:10], "Range with a matching If-Match -> 206", r)
r = rng("bytes=0-9", extra={"If-None-Match": etag})
t.check(r.status == 304 and r.body == b"", "Range with a matching If-None-Match -> 304", r)

# after an overwrite the old ETag no longer matches
data2 = os.urandom(SIZE)
t.eq(req("PUT", P, data2).status, 200, "overwrite")
r = req("GET", P, headers={"If-None-Match": etag})
t.check(r.status == 200 and r.body == data2, "old ETag after overwrite: If-None-Match -> 200 new data", r)
r = req("GET", P, headers={"If-Match": etag})
t.eq(r.status, 412, "old ETag after overwrite: If-Match -> 412")

r = req("GET", obj_path(B, "missing"), headers={"Range": "bytes=0-5"})
t.eq(r.status, 404, "Range on a missing object -> 404")

t.finish()
