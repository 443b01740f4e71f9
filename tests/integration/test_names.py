"""test_names.py - object and bucket names: every legal name round-trips
byte for byte and lists back exactly; illegal ones are refused with a 400
JSON body; no name reaches the file system outside the mountpaths.
"""
import json
import os
import subprocess

from itlib import DIR, T, create_bucket, list_all, obj_path, q, req

t = T()
B = "names"
t.eq(create_bucket(B).status, 200, "create bucket")

names = [
    "plain",
    "a",
    "a/b",
    "a/b/c",
    "a//b",
    "dir/",
    "dir",
    "with space",
    "  leading and trailing  ",
    "plus+sign",
    "percent%sign",
    "percent%25literal",
    "question?mark",
    "hash#mark",
    "amp&eq=semi;",
    "quote\"apos'back\\slash",
    "unicode-\u65e5\u672c\u8a9e/\u0444\u0430\u0439\u043b-\u00fc.txt",
    "emoji-\U0001F600",
    "..etc/..passwd",
    "...",
    ".hidden/x.",
    "a..b/..c../...",
    "new\nline\r\ttab",
    "ctl\x01\x7f",
    "n" * 1024,
    "\u00e9" * 512,  # 1024 bytes of two-byte characters
]
payload = {}
for i, n in enumerate(names):
    data = ("%d:%s" % (i, n)).encode() * (1 + i % 3)
    payload[n] = data
    r = req("PUT", obj_path(B, n), data)
    t.check(r.status == 200, "PUT %r (%d bytes of name)" % (n[:40], len(n.encode())), r)

for n in names:
    r = req("GET", obj_path(B, n))
    t.check(r.status == 200 and r.body == payload[n], "GET %r round-trips" % n[:40], r)

# the listing holds exactly these names, byte for byte, in byte order
got = [e["name"] for e in list_all(B, props="name")]
want = sorted(names, key=lambda s: s.encode())
t.check(got == want, "listing has exactly the names, sorted by bytes",
        "missing %r, extra %r" % (sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))

# raw (unencoded) characters allowed in a path: '+' is not a space
r = req("GET", "/v1/objects/%s/plus+sign" % B)
t.check(r.status == 200 and r.body == payload["plus+sign"], "raw '+' in the path is a plus", r)
r = req("GET", "/v1/objects/%s/a/b?unrelated=1" % B)
t.check(r.status == 200 and r.body == payload["a/b"], "a query string is not part of the name", r)
r = req("GET", "/v1/objects/%s/a%%2Fb" % B)
t.check(r.status == 200 and r.body == payload["a/b"], "%2F decodes to '/'", r)
r = req("GET", "/v1/objects/%s/A%%2fB" % B)
t.eq(r.status, 404, "names are case-sensitive (A/B is not a/b)")

# deleting "a" leaves "a/b"; deleting "dir/" leaves "dir"
t.eq(req("DELETE", obj_path(B, "a")).status, 200, "DELETE a")
r = req("GET", obj_path(B, "a/b"))
t.check(r.status == 200 and r.body == payload["a/b"], "a/b survives the DELETE of a", r)
t.eq(req("GET", obj_path(B, "a")).status, 404, "a is gone")
t.eq(req("DELETE", obj_path(B, "dir/")).status, 200, "DELETE dir/")
r = req("GET", obj_path(B, "dir"))
t.check(r.status == 200 and r.body == payload["dir"], "dir survives the DELETE of dir/", r)


# --- refused names ----------------------------------------------------------
def bad(method, path, what, body=None):
    r = req(method, path, body)
    d = r.json() or {}
    t.check(r.status == 400 and d.get("status") == 400 and isinstance(d.get("message"), str),
            "%s -> 400 JSON" % what, r)


bad("PUT", "/v1/objects/%s/%s" % (B, "n" * 1025), "a 1025-byte name", b"x")
bad("PUT", "/v1/objects/%s/%s" % (B, "%C3%A9" * 512 + "x"), "a 1025-byte UTF-8 name", b"x")
bad("GET", "/v1/objects/%s/%s" % (B, "n" * 1025), "GET of a 1025-byte name")
bad("PUT", "/v1/objects/%s/bad%%ffutf8" % B, "invalid UTF-8 (%ff)", b"x")
bad("PUT", "/v1/objects/%s/bad%%c3%%28" % B, "invalid UTF-8 (%c3%28)", b"x")
bad("PUT", "/v1/objects/%s/overlong%%c0%%af" % B, "overlong UTF-8 (%c0%af)", b"x")
bad("PUT", "/v1/objects/%s/surrogate%%ed%%a0%%80" % B, "UTF-8 surrogate (%ed%a0%80)", b"x")
bad("PUT", "/v1/objects/%s/trunc%%e6%%97" % B, "truncated UTF-8 (%e6%97)", b"x")
bad("PUT", "/v1/objects/%s/nul%%00byte" % B, "NUL (%00)", b"x")
bad("GET", "/v1/objects/%s/nul%%00byte" % B, "GET with NUL (%00)")
bad("PUT", "/v1/objects/%s/bad%%zzescape" % B, "malformed escape %zz", b"x")
bad("PUT", "/v1/objects/%s/bad%%4" % B, "truncated escape %4", b"x")
bad("PUT", "/v1/objects/%s/" % B, "an empty object name", b"x")
# "." and ".." segments, raw or percent-encoded: refused, never resolved
for nm in ["..", ".", "../../etc/passwd", "../../../../../../../../tmp/escape", "./dot/./x", "a/..",
           "%2E%2E/etc/passwd", "..%2Fetc%2Fpasswd", "a%2F%2e%2e%2Fb", "dir/%2e/x"]:
    bad("PUT", "/v1/objects/%s/%s" % (B, nm), "PUT %s (a dot segment)" % nm, b"x")
    bad("GET", "/v1/objects/%s/%s" % (B, nm), "GET %s (a dot segment)" % nm)
    bad("DELETE", "/v1/objects/%s/%s" % (B, nm), "DELETE %s (a dot segment)" % nm)
bad("PUT", "/v1/objects/%s" % B, "no object name at all", b"x")

# error messages quote names; they must stay valid JSON (UTF-8) even when
# the quoted name is cut in the middle of a character
r = req("GET", obj_path(B, "x" + "\u00e9" * 511))
d = r.json() or {}
t.check(r.status == 404 and d.get("status") == 404 and d.get("message"),
        "404 for a long UTF-8 name is a valid JSON body", r)

long_bucket = "b" * 65
for bb, what in [("bad%20name", "space"), ("b@d", "'@'"), ("a%2Fb", "encoded '/'"),
                 (long_bucket, "65 characters"), ("%C3%BCber", "non-ASCII"),
                 ("nul%00", "NUL"), ("%ff", "invalid UTF-8")]:
    bad("POST", "/v1/buckets/" + bb, "create bucket with %s in the name" % what,
        json.dumps({"action": "create-bck"}))
    bad("PUT", "/v1/objects/%s/x" % bb, "PUT into a bucket named with %s" % what, b"x")
    bad("GET", "/v1/buckets/" + bb, "list a bucket named with %s" % what)
t.eq(create_bucket("b" * 64).status, 200, "a 64-character bucket name is fine")
t.eq(create_bucket("Ok.name_with-all").status, 200, "bucket name with . _ - and upper case")
r = req("GET", "/v1/buckets/")
bl = sorted(b["name"] for b in (r.json() or []))
t.eq(bl, sorted(["Ok.name_with-all", "b" * 64, B]), "no refused bucket was created")

# nothing of a refused name was stored
got2 = [e["name"] for e in list_all(B, props="name")]
want2 = sorted(set(names) - {"a", "dir/"}, key=lambda s: s.encode())
t.check(got2 == want2, "refused names stored nothing", "extra %r" % sorted(set(got2) - set(want2))[:5])

# --- nothing escaped the mountpaths ------------------------------------------
found = subprocess.run(["find", DIR, "-name", "passwd"], capture_output=True, text=True).stdout
t.eq(found, "", "no file named passwd anywhere under the test dir")
found = subprocess.run(["find", DIR, "-name", "escape*"], capture_output=True, text=True).stdout
t.eq(found, "", "no file named escape anywhere under the test dir")
top = sorted(os.listdir(DIR))
allowed = {"mp1", "mp2", "tmp", "aisd.log", "aisd.stderr", "pid", "port", "test.out"}
t.check(set(top) <= allowed, "nothing new at the top of the test dir", top)
etc = os.path.join(os.path.dirname(DIR), "etc")
t.check(not os.path.exists(os.path.join(etc, "passwd")) or os.path.getmtime(os.path.join(etc, "passwd")) < 0,
        "no etc/passwd next to the test dir")

t.finish()
