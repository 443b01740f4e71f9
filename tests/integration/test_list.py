"""test_list.py - listing objects: 2,500 objects with mixed prefixes, paged
by 1000 with the JSON-body and the query-parameter forms; every page sorted
by raw bytes, all pages together exactly the set created, no duplicates,
an empty continuation token at the end; prefix, start_after, props;
pagesize clamped to 10000; bad requests refused with 400.
"""
# aisd-args: --set store.fsync=never
import json
import queue
import random
import threading

from itlib import Reader, T, conn, create_bucket, list_page, obj_path, q, raw, req, xxh64

t = T()
B = "lst"
t.eq(create_bucket(B).status, 200, "create bucket")

# names that exercise byte order: '-' < '/' < '0' < 'A' < 'a' < 0xc3 (e-acute)
rnd = random.Random(42)
names = set()
prefixes = ["a/", "a-", "a0", "b/", "b/c/", "b/c/d/", "B/", "c", "\u00e9t\u00e9/", "z z/", ""]
while len(names) < 2500:
    p = rnd.choice(prefixes)
    names.add("%s%s-%d" % (p, rnd.choice(["x", "Y", "0", "~", "\u00fc"]), rnd.randrange(10 ** 6)))
names = sorted(names)
data = {n: ("%s|" % n).encode() * rnd.randrange(0, 4) for n in names}


def put_many(bck, items, nthreads=4):
    """PUTs (name, bytes) pairs over keep-alive connections; returns failures."""
    work = queue.Queue()
    for it in items:
        work.put(it)
    errors = []

    def run():
        c = conn()
        while True:
            try:
                n, d = work.get_nowait()
            except queue.Empty:
                break
            for attempt in range(2):
                try:
                    r = req("PUT", obj_path(bck, n), d, c=c)
                    if r.status != 200:
                        errors.append((n, r.status))
                    break
                except (OSError, Exception) as e:  # reconnect once
                    c.close()
                    c = conn()
                    if attempt:
                        errors.append((n, repr(e)))
        c.close()

    th = [threading.Thread(target=run) for _ in range(nthreads)]
    for x in th:
        x.start()
    for x in th:
        x.join(240)
    return errors


errs = put_many(B, data.items())
t.check(not errs, "PUT 2,500 objects over keep-alive connections (4 threads)", errs[:5])

want_sorted = sorted(names, key=lambda s: s.encode())


def check_pages(pages, what, want):
    """pages: list of (entries, token). Checks sorted, complete, no dups."""
    allnames = [e["name"] for ents, _ in pages for e in ents]
    sorted_ok = all([e["name"].encode() for e in ents] == sorted(e["name"].encode() for e in ents)
                    for ents, _ in pages)
    t.check(sorted_ok, "%s: every page sorted by raw bytes" % what)
    t.check(len(allnames) == len(set(allnames)), "%s: no duplicates" % what,
            "%d names, %d distinct" % (len(allnames), len(set(allnames))))
    t.check(allnames == want, "%s: exactly the objects, in byte order" % what,
            "%d listed, %d wanted; missing %r extra %r" % (
                len(allnames), len(want), sorted(set(want) - set(allnames))[:3],
                sorted(set(allnames) - set(want))[:3]))
    t.check(pages and pages[-1][1] == "" and all(tok for _, tok in pages[:-1]),
            "%s: continuation_token set on every page but the last" % what,
            [tok for _, tok in pages])


def list_json(prefix="", pagesize=1000, start_after=None, props=None, maxpages=100):
    pages, token = [], ""
    c = conn()
    for _ in range(maxpages):
        v = {"pagesize": pagesize, "continuation_token": token, "prefix": prefix}
        if start_after is not None:
            v["start_after"] = start_after
        if props is not None:
            v["props"] = props
        r, ents, token = list_page(B, c=c, **v)
        if ents is None:
            t.fail("list page", r)
            break
        pages.append((ents, token))
        if not token:
            break
    c.close()
    return pages


def list_query(prefix="", pagesize=1000, maxpages=100):
    pages, token = [], ""
    c = conn()
    for _ in range(maxpages):
        r = req("GET", "/v1/buckets/%s?pagesize=%d&prefix=%s&continuation_token=%s" % (
            B, pagesize, q(prefix).replace("/", "%2F"), q(token).replace("/", "%2F")), c=c)
        d = r.json() if r.status == 200 else None
        if not isinstance(d, dict):
            t.fail("list page (query)", r)
            break
        token = d.get("continuation_token")
        pages.append((d.get("entries"), token))
        if not token:
            break
    c.close()
    return pages


pages = list_json()
t.eq([len(e) for e, _ in pages], [1000, 1000, 500], "JSON form: pages of 1000, 1000, 500")
check_pages(pages, "JSON form", want_sorted)
ents = [e for es, _ in pages for e in es]
bad_meta = [e["name"] for e in ents if e.get("size") != len(data[e["name"]])
            or e.get("checksum") != xxh64(data[e["name"]]) or e.get("version") != "1"
            or not e.get("atime")]
t.check(not bad_meta, "every entry has the right size, xxhash checksum, version and an atime", bad_meta[:3])

pages = list_query()
t.eq([len(e) for e, _ in pages], [1000, 1000, 500], "query form: pages of 1000, 1000, 500")
check_pages(pages, "query form", want_sorted)

pages = list_json(pagesize=777)
check_pages(pages, "pagesize 777", want_sorted)
t.eq([len(e) for e, _ in pages], [777, 777, 777, 169], "pagesize 777: page sizes")

r = req("GET", "/v1/buckets/" + B)
d = r.json() or {}
t.check(r.status == 200 and len(d.get("entries", [])) == 1000 and d.get("continuation_token"),
        "no body, no parameters: a first page of the default 1000", r)

# --- prefixes --------------------------------------------------------------
for p in ["a/", "a", "b/c/", "b/c/d/", "B/", "\u00e9t\u00e9/", "z z/", "c", "nothing-here", "b/c/d/x"]:
    want = [n for n in want_sorted if n.encode().startswith(p.encode())]
    check_pages(list_json(prefix=p, pagesize=300), "prefix %r (%d objects)" % (p, len(want)), want)
check_pages(list_query(prefix="b/", pagesize=250), "query form, prefix 'b/'",
            [n for n in want_sorted if n.startswith("b/")])

# --- start_after -----------------------------------------------------------
for sa in ["b/", want_sorted[1234], want_sorted[-1], "", "\u00ff"]:
    want = [n for n in want_sorted if n.encode() > sa.encode()]
    check_pages(list_json(start_after=sa), "start_after %r (%d objects)" % (sa[:20], len(want)), want)
sa = "b/c/"
want = [n for n in want_sorted if n.startswith("b/") and n.encode() > sa.encode()]
check_pages(list_json(prefix="b/", start_after=sa, pagesize=100), "prefix b/ with start_after b/c/", want)

# a token survives the deletion of the object it names
r, ents, tok = list_page(B, pagesize=1000)
t.eq(req("DELETE", obj_path(B, tok)).status, 200, "delete the object the token names")
r, ents2, tok2 = list_page(B, pagesize=1000, continuation_token=tok)
t.check(ents2 is not None and ents2[0]["name"] == want_sorted[1000],
        "continuing after a deleted token resumes right after it", r)
t.eq(req("PUT", obj_path(B, tok), data[tok]).status, 200, "put it back")

# --- props -----------------------------------------------------------------
for props, keys in [("name,size", {"name", "size"}), ("name", {"name"}), ("size", {"name", "size"}),
                    ("name,checksum,version", {"name", "checksum", "version"}),
                    ("name, size, atime", {"name", "size", "atime"})]:
    r, ents, _ = list_page(B, pagesize=50, props=props)
    t.check(ents and all(set(e) == keys for e in ents), "props %r: entries have exactly %s" % (props, sorted(keys)),
            ents[:2] if ents else r)
r = req("GET", "/v1/buckets/%s?props=name%%2Csize&pagesize=10" % B)
d = r.json() or {}
t.check(r.status == 200 and d.get("entries") and all(set(e) == {"name", "size"} for e in d["entries"]),
        "query props=name,size", r)

# --- pagesize clamp -----------------------------------------------------------
C = "clamp"
t.eq(create_bucket(C).status, 200, "create a bucket for 10,001 objects")
errs = put_many(C, [("o%05d" % i, b"") for i in range(10001)], nthreads=4)
t.check(not errs, "PUT 10,001 empty objects", errs[:5])
r, ents, tok = list_page(C, pagesize=20000, props="name")
t.check(ents is not None and len(ents) == 10000 and tok == "o09999",
        "pagesize 20000 is clamped to 10000", "%d entries, token %r" % (len(ents or []), tok))
r, ents, tok = list_page(C, pagesize=20000, props="name", continuation_token="o09999")
t.check(ents is not None and [e["name"] for e in ents] == ["o10000"] and tok == "",
        "the next page has the last one and no token", r)
r = req("GET", "/v1/buckets/%s?pagesize=50000&props=name" % C)
d = r.json() or {}
t.check(r.status == 200 and len(d.get("entries", [])) == 10000, "query pagesize=50000 is clamped too",
        "status %d, %d entries" % (r.status, len(d.get("entries", []))))
r, ents, tok = list_page(C, pagesize=0, props="name")
t.check(ents is not None and len(ents) == 1000, "pagesize 0 means the default 1000", r)


# --- bad requests ------------------------------------------------------------
def bad(body, what, path="/v1/buckets/" + B, method="GET"):
    r = req(method, path, body, {"Content-Type": "application/json"})
    d = r.json() or {}
    t.check(r.status == 400 and d.get("status") == 400 and d.get("message"), "%s -> 400 JSON" % what, r)


bad("{not json", "malformed JSON")
bad("[1,2]", "JSON that is not an object")
bad('{"action":"list","action":"list"}', "duplicate keys")
bad('{"value":{}}', "no action")
bad('{"action":"destroy-everything"}', "unknown action")
bad('{"action":42}', "action not a string")
bad('{"action":"list","value":[1]}', "value not an object")
bad('{"action":"list","value":{"pagesize":-1}}', "negative pagesize")
bad('{"action":"list","value":{"pagesize":"10"}}', "pagesize a string")
bad('{"action":"list","value":{"prefix":5}}', "prefix a number")
bad('{"action":"list","value":{"props":"name,bogus"}}', "unknown prop")
bad(None, "query pagesize=abc", path="/v1/buckets/%s?pagesize=abc" % B)
bad(None, "query pagesize=-5", path="/v1/buckets/%s?pagesize=-5" % B)
bad(None, "query props=bogus", path="/v1/buckets/%s?props=bogus" % B)
bad('{"action":"list"}', "list action with POST", method="POST")
# a JSON body over the 1 MiB limit: 413 (the server may answer before the
# body arrives, so send the head and read)
s = raw()
s.sendall(("GET /v1/buckets/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n\r\n" % (B, 2 << 20)).encode() + b"x" * 1000)
try:
    r = Reader(s).response()
    t.eq(r.status, 413, "a 2 MiB JSON body -> 413")
except (OSError, EOFError, ValueError) as e:
    t.fail("a 2 MiB JSON body -> 413", repr(e))
s.close()
r = req("GET", "/v1/buckets/nosuch", json.dumps({"action": "list"}))
t.eq(r.status, 404, "listing a missing bucket -> 404")

# still exactly the set after all that
check_pages(list_json(), "final listing", want_sorted)
t.finish()
