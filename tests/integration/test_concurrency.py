"""test_concurrency.py - readers during overwrites see whole versions only.

An 8 MiB object in an md5 bucket is overwritten at least 20 times (and on
until the readers have seen both versions), alternately with B and A, while
4 readers GET it in a loop over keep-alive connections: every body must be
exactly A or B (never a mix, never short), with the md5, ETag and
Content-Length of that content, and the object ends as the last
acknowledged PUT with a version that counts every PUT. Then concurrent writers of one object
(the survivor is one writer's whole content, the version counts every PUT),
and reads racing a DELETE (whole content or 404). Bounded in time.
"""
import os
import threading
import time

from itlib import T, conn, create_bucket, md5, obj_path, req

t = T()
B = "conc"
t.eq(create_bucket(B, "md5").status, 200, "create an md5 bucket")
P = obj_path(B, "obj")
SIZE = 8 << 20
A = os.urandom(SIZE)
Bd = os.urandom(SIZE)
known = {md5(A): A, md5(Bd): Bd}
t.eq(req("PUT", P, A).status, 200, "PUT A (8 MiB)")

stop = threading.Event()
lock = threading.Lock()
stats = {"reads": 0, "A": 0, "B": 0, "bad": []}
DEADLINE = time.time() + 180


def reader(i):
    c = conn(60)
    while not stop.is_set() and time.time() < DEADLINE:
        try:
            c.request("GET", P)
            r = c.getresponse()
            body = r.read()
            st, cv, cl, et = r.status, r.getheader("Ais-Checksum-Value"), r.getheader("Content-Length"), \
                r.getheader("ETag")
        except Exception as e:  # noqa: BLE001 - report and reconnect
            with lock:
                stats["bad"].append("reader %d: %r" % (i, e))
            c.close()
            c = conn(60)
            continue
        h = md5(body)
        with lock:
            stats["reads"] += 1
            if st != 200 or h not in known:
                stats["bad"].append("reader %d: status %d, %d bytes, md5 %s (a mix or a short read)"
                                    % (i, st, len(body), h))
            elif cv != h or cl != str(SIZE) or et != '"%s"' % h:
                stats["bad"].append("reader %d: body %s but Ais-Checksum-Value %s, ETag %s, Content-Length %s"
                                    % (i, h, cv, et, cl))
            else:
                stats["A" if body is not None and h == md5(A) else "B"] += 1
    c.close()


readers = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
for x in readers:
    x.start()
wc = conn(120)
put_fail = []
last = A
n_put = 1
# at least 20 overwrites, and on until the readers have seen both versions
# (bounded: 400 overwrites or the deadline)
for i in range(400):
    with lock:
        seen_both = stats["A"] > 0 and stats["B"] > 0
    if (i >= 20 and seen_both) or time.time() > DEADLINE - 30:
        break
    body = Bd if i % 2 == 0 else A
    r = req("PUT", P, body, c=wc)
    if r.status != 200:
        put_fail.append(r.status)
    else:
        last, n_put = body, n_put + 1
    time.sleep(0.02)
wc.close()
stop.set()
for x in readers:
    x.join(120)
t.check(not any(x.is_alive() for x in readers), "readers finished in time")
t.check(not put_fail, "%d overwrites while reading all answered 200" % (n_put - 1), put_fail)
t.diag("%d reads: %d A, %d B" % (stats["reads"], stats["A"], stats["B"]))
t.check(stats["A"] > 0 and stats["B"] > 0, "readers saw both versions during the overwrites (%d A, %d B)" % (stats["A"], stats["B"]))
t.check(not stats["bad"], "every GET was exactly A or B with its own md5, ETag and length", "\n".join(stats["bad"][:8]))
r = req("GET", P)
t.check(r.status == 200 and r.body == last and r.h("ais-version") == str(n_put),
        "the last acknowledged overwrite wins; version %d" % n_put,
        "status %d, version %s, body is %s" % (r.status, r.h("ais-version"), "A" if r.body == A else "B" if r.body == Bd else "neither"))

# --- concurrent writers of one object -----------------------------------------
W = obj_path(B, "w")
contents = [os.urandom(1 << 20) for _ in range(4)]
wres = []


def writer(i):
    c = conn(120)
    for _ in range(5):
        try:
            wres.append(req("PUT", W, contents[i], c=c).status)
        except Exception as e:  # noqa: BLE001
            wres.append(repr(e))
    c.close()


ws = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
for x in ws:
    x.start()
for x in ws:
    x.join(120)
t.check(wres == [200] * 20, "4 writers x 5 PUTs of one object: all 200", wres)
r = req("GET", W)
t.check(r.status == 200 and r.body in contents and r.h("ais-checksum-value") == md5(r.body),
        "the survivor is one writer's whole content with its md5", r.status)
t.eq(r.h("ais-version"), "20", "the version counts all 20 PUTs")

# --- reads racing a DELETE -----------------------------------------------------
D = obj_path(B, "del")
res = []


def getter():
    c = conn(60)
    for _ in range(30):
        try:
            rr = req("GET", D, c=c)
            res.append((rr.status, rr.body == A if rr.status == 200 else rr.status == 404))
        except Exception as e:  # noqa: BLE001
            res.append((0, repr(e)))
    c.close()


t.eq(req("PUT", D, A).status, 200, "PUT an object to delete")
gs = [threading.Thread(target=getter) for _ in range(3)]
for x in gs:
    x.start()
time.sleep(0.05)
t.eq(req("DELETE", D).status, 200, "DELETE while it is being read")
for x in gs:
    x.join(120)
t.check(all(st in (200, 404) and good is True for st, good in res),
        "reads racing a DELETE: whole content or 404", [x for x in res if x[1] is not True][:5])
t.eq(req("GET", D).status, 404, "after the DELETE: 404")
t.finish()
