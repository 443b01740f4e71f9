"""test_ec_encode.py - the re-encode job (ec-encode): a bucket that holds
objects converted from 2 copies to erasure coding 4+2, to slices only, to
2+2, and back, on 1
gateway + 6 targets started here on loopback ports (stopped by PID).

 1. Bucket m, mirror.copies=2: 10 objects of 100-400 KiB and 3 of 10 KiB
    (below ec.objsize_limit 64 KiB), each on its 2 HRW holders.
 2. Refusals: set-bprops of ec.* on it: 409 naming ec-encode; ec-encode
    of a missing bucket: 404; with a key other than ec/mirror: 400; to
    the layout it has: 400; aisctl job start ec-encode without KEY=VALUE:
    usage error (exit 2).
 3. aisctl job start ec-encode m ec.enabled=true ec.data_slices=4
    ec.parity_slices=2 ec.objsize_limit=65536; aisctl job wait ec-encode
    ends 0; job show ec-encode says done, and the JSON names bucket m on
    every target. The props: ec 4+2, mirror off. Every big object: one
    slice on each of the 6 targets (indices 0..5), the whole copy on its
    owner only; every small one: 3 whole copies on its 3 HRW targets.
    Every object reads byte for byte, and a read loop ran through the
    whole conversion with no error and no wrong byte.
 3b. To slices only, ec.whole_copy=false: every big object's whole copy
    dropped, its 6 slices stay; byte for byte (read loop again). Then
    ec.objsize_limit raised to 256 KiB: the objects below it get 3 whole
    copies (rebuilt from the slices) and lose their slices; back to
    64 KiB: sliced again, no whole copy (read loops throughout).
 4. To another layout, 2+2: the slices of 2+2 on each big object's 4
    HRW targets only (the 4+2 slices on the other 2 dropped), still no
    whole copy, every object byte for byte (read loop again), the new
    slices encoded from the old ones.
 5. Back: ec.enabled=false mirror.enabled=true mirror.copies=2 through the
    job: every object on its 2 HRW holders, no slice left anywhere, every
    object byte for byte (read loop again).
"""
# timeout: 180
import json
import os
import subprocess

from itlib import T, q

import clulib
import hrwlib
from clulib import follow, get, poll, request

JSON = {"Content-Type": "application/json"}
INTRA = {"Ais-Intra": "test"}
CTL = os.environ["AISCTL"]
B = "m"

t = T()
clulib.init(t, "ecenc", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                         "--set", "store.fsync=never"])
g, targets = clulib.start_cluster(6)
ids = [x.id for x in targets]


def ctl(*args):
    cp = subprocess.run([CTL, "-e", g.url] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=120)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


def bucket(action, value, name=B):
    return request("POST", g.url, "/v1/buckets/" + name, json.dumps({"action": action, "value": value}), JSON)


def has_slice(tg, n):
    return get(tg.url, "/v1/ec/%s/%s?meta=true" % (B, q(n)), headers=INTRA).status == 200


def whole(tg, n):
    return get(tg.url, "/v1/objects/%s/%s" % (B, q(n)), headers=INTRA).status == 200


def props():
    return json.loads(request("HEAD", g.url, "/v1/buckets/" + B).h("ais-bucket-props") or "{}")


def copies_errors(k):
    """Objects not exactly on their k HRW holders, or with a slice left."""
    errs = []
    for n in data:
        want = sorted(hrwlib.top(B + "/" + n, ids, k))
        have = sorted(x.id for x in targets if whole(x, n))
        if have != want:
            errs.append("%s: copies on %s, want %s" % (n, have, want))
        if any(has_slice(x, n) for x in targets):
            errs.append("%s: a slice left" % n)
    return errs


def ec_errors(dd, pp, whole_copy=True, limit=65536):
    """Objects off the exact EC dd+pp layout: slices (of that layout) on
    the top dd+pp targets only, the whole copy on the owner (none with
    whole_copy False); small ones on their top pp+1."""
    errs = []
    for n, d in data.items():
        top = hrwlib.top(B + "/" + n, ids, dd + pp)
        have = sorted(x.id for x in targets if whole(x, n))
        if len(d) < limit:
            if have != sorted(top[:pp + 1]):
                errs.append("%s (small): copies on %s" % (n, have))
            if any(has_slice(x, n) for x in targets):
                errs.append("%s (small): a slice left" % n)
            continue
        if have != ([top[0]] if whole_copy else []):
            errs.append("%s: whole copies on %s, owner %s" % (n, have, top[0]))
        metas = {x.id: get(x.url, "/v1/ec/%s/%s?meta=true" % (B, q(n)), headers=INTRA) for x in targets}
        metas = {k: dict(kv.split("=", 1) for kv in r.body.decode().split()[1:])
                 for k, r in metas.items() if r.status == 200}
        if sorted(metas) != sorted(top) or sorted(int(m["i"]) for m in metas.values()) != list(range(dd + pp)) \
                or any((m["d"], m["p"]) != (str(dd), str(pp)) for m in metas.values()):
            errs.append("%s: slices %s, HRW names %s" % (n, metas, top))
    return errs


def converge(check, secs, what):
    last = [None]

    def ok():
        last[0] = check()
        return not last[0]
    t.check(poll(ok, secs), what, (last[0] or [])[:3])


def read_loop_during(fn):
    reads, bad = clulib.read_loop_during(g, B, data, fn)
    t.check(reads > 0 and not bad, "read loop during the job: %d reads, 0 failed or wrong" % reads, bad[:3])


def all_bytes(what):
    wrong = [n for n, d in data.items() if follow("GET", g.url, "/v1/objects/%s/%s" % (B, q(n)))[1].body != d]
    t.check(not wrong, what, wrong[:3])


def job_done():
    d = get(g.url, "/v1/cluster?what=ec-encode").json() or {}
    tg = d.get("targets", {})
    return d.get("state") == "done" and len(tg) == 6 and all(v.get("bucket") == B for v in tg.values())


# --- 1. a mirrored bucket with objects -------------------------------------------------------
t.eq(request("POST", g.url, "/v1/buckets/" + B, '{"action":"create-bck"}', JSON).status, 200, "create " + B)
r = request("PATCH", g.url, "/v1/buckets/" + B,
            json.dumps({"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}}), JSON)
t.eq(r.status, 200, "mirror.copies=2")
data = {"b%02d" % i: os.urandom((100 << 10) + i * 30011) for i in range(10)}
data.update({"s%d" % i: os.urandom(10240 + i) for i in range(3)})
badput = [n for n, d in data.items() if follow("PUT", g.url, "/v1/objects/%s/%s" % (B, n), d)[1].status != 200]
t.check(not badput, "%d PUTs" % len(data), badput[:3])
converge(lambda: copies_errors(2), 20, "each object on its 2 HRW holders")

# --- 2. refusals ---------------------------------------------------------------------------------
r = request("PATCH", g.url, "/v1/buckets/" + B, json.dumps({"action": "set-bprops", "value": {
    "ec": {"enabled": True, "data_slices": 4, "parity_slices": 2}, "mirror": {"enabled": False}}}), JSON)
t.check(r.status == 409 and b"ec-encode" in r.body, "set-bprops of ec.* on a bucket with objects: 409 naming ec-encode",
        (r.status, r.body[:200]))
t.eq(bucket("ec-encode", {"ec": {"enabled": True}}, "nosuch").status, 404, "ec-encode of a missing bucket: 404")
r = bucket("ec-encode", {"ec": {"enabled": True}, "versioning": {"enabled": True}})
t.eq(r.status, 400, "ec-encode with a key other than ec and mirror: 400")
r = bucket("ec-encode", {"ec": {"enabled": False}})
t.check(r.status == 400 and b"already" in r.body, "ec-encode to the layout it has: 400", (r.status, r.body[:200]))
rc, _, err = ctl("job", "start", "ec-encode", B)
t.check(rc == 2 and "ec.enabled" in err, "aisctl job start ec-encode without KEY=VALUE: usage error", (rc, err))
t.eq(props().get("mirror", {}).get("copies"), 2, "the props unchanged by the refusals")

# --- 3. to erasure coding --------------------------------------------------------------------------


def to_ec():
    rc, out, err = ctl("job", "start", "ec-encode", B, "ec.enabled=true", "ec.data_slices=4", "ec.parity_slices=2",
                       "ec.objsize_limit=65536")
    t.check(rc == 0 and "ec-encode" in out, "aisctl job start ec-encode %s to 4+2: exit 0" % B, (rc, out, err))
    rc, out, err = ctl("job", "wait", "ec-encode", "--timeout-s", "90")
    t.check(rc == 0, "aisctl job wait ec-encode: exit 0", (rc, out, err))
    t.check(poll(job_done, 30), "GET /v1/cluster?what=ec-encode: done on every target, bucket " + B)
    converge(lambda: ec_errors(4, 2), 30,
             "big objects: one slice on each target and the whole copy on the owner; small: 3 copies")


read_loop_during(to_ec)
rc, out, err = ctl("job", "show", "ec-encode")
t.check(rc == 0 and "ec-encode: done" in out, "aisctl job show ec-encode: done", (rc, out[-300:], err))
pr = props()
t.check(pr.get("ec", {}).get("enabled") and pr["ec"].get("data_slices") == 4 and not pr.get("mirror", {}).get("enabled"),
        "props: ec 4+2, mirror off", pr)
all_bytes("every object byte for byte after the conversion to erasure coding")

# --- 3b. slices only ---------------------------------------------------------------------------------


def to_slices_only():
    rc, out, err = ctl("job", "start", "ec-encode", B, "ec.whole_copy=false")
    t.check(rc == 0, "aisctl job start ec-encode %s ec.whole_copy=false: exit 0" % B, (rc, out, err))
    rc, out, err = ctl("job", "wait", "ec-encode", "--timeout-s", "90")
    t.check(rc == 0, "aisctl job wait ec-encode: exit 0", (rc, out, err))
    converge(lambda: ec_errors(4, 2, whole_copy=False), 30,
             "big objects: one slice on each target and no whole copy left; small: 3 copies")


read_loop_during(to_slices_only)
t.eq(props().get("ec", {}).get("whole_copy"), False, "props: ec.whole_copy false")
all_bytes("every object byte for byte, kept as slices only")


def to_limit(limit):
    rc, out, err = ctl("job", "start", "ec-encode", B, "ec.objsize_limit=%d" % limit)
    t.check(rc == 0, "aisctl job start ec-encode %s ec.objsize_limit=%d: exit 0" % (B, limit), (rc, out, err))
    rc, out, err = ctl("job", "wait", "ec-encode", "--timeout-s", "90")
    t.check(rc == 0, "aisctl job wait ec-encode: exit 0", (rc, out, err))
    converge(lambda: ec_errors(4, 2, whole_copy=False, limit=limit), 30,
             "objects below ec.objsize_limit %d: 3 whole copies and no slice; above: slices only" % limit)


read_loop_during(lambda: to_limit(256 << 10))
all_bytes("every object byte for byte, the limit raised")
read_loop_during(lambda: to_limit(65536))
all_bytes("every object byte for byte, the limit back")

# --- 4. another layout -------------------------------------------------------------------------------


def to_2_2():
    rc, out, err = ctl("job", "start", "ec-encode", B, "ec.data_slices=2", "ec.parity_slices=2")
    t.check(rc == 0, "aisctl job start ec-encode %s to 2+2: exit 0" % B, (rc, out, err))
    rc, out, err = ctl("job", "wait", "ec-encode", "--timeout-s", "90")
    t.check(rc == 0, "aisctl job wait ec-encode: exit 0", (rc, out, err))
    converge(lambda: ec_errors(2, 2, whole_copy=False), 40,
             "2+2: slices of the new layout on the 4 HRW targets only (the former ones dropped); small: 3 copies")


read_loop_during(to_2_2)
all_bytes("every object byte for byte after the conversion to 2+2")

# --- 5. back to copies -------------------------------------------------------------------------------


def to_mirror():
    rc, out, err = ctl("job", "start", "ec-encode", B, "ec.enabled=false", "mirror.enabled=true", "mirror.copies=2")
    t.check(rc == 0, "aisctl job start ec-encode %s back to 2 copies: exit 0" % B, (rc, out, err))
    rc, out, err = ctl("job", "wait", "ec-encode", "--timeout-s", "90")
    t.check(rc == 0, "aisctl job wait ec-encode: exit 0", (rc, out, err))
    converge(lambda: copies_errors(2), 40, "each object on its 2 HRW holders, no slice left")


read_loop_during(to_mirror)
pr = props()
t.check(not pr.get("ec", {}).get("enabled") and pr.get("mirror", {}).get("copies") == 2, "props: 2 copies, ec off", pr)
all_bytes("every object byte for byte after the conversion back")
t.finish()
