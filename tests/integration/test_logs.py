"""test_logs.py - request ids, the access log, the log level changed at run
time, set-config errors, the rate limit switched on and off at run time,
and log rotation on SIGHUP, against the runner's standalone target; then a
gateway and a target started here (access log in files of their own, off at
start) changed together with "aisctl config set" through the gateway.

Checks: every response carries X-Request-Id, unique per request, and the
access line of that request (method, target, status, bytes, microseconds)
carries the same id; log.level=debug makes debug lines appear and info
stops them; unknown keys and bad values are 400 with a JSON message and
change nothing; net.rate_limit answers 429 with Retry-After to a burst
(health checks exempt) and 0 switches it off; after the log is renamed and
SIGHUP sent, new lines go to a new file at the old path; aisctl config
set through a gateway changes every node, and a bad key exits 1.
"""
# timeout: 120
import json
import os
import re
import signal
import subprocess
import time

from itlib import DIR, T, create_bucket, req
import clulib
from clulib import poll

t = T()
LOG = os.path.join(DIR, "aisd.log")
URL = os.environ["AISD_URL"]
AISCTL = os.environ["AISCTL"]
PID = int(os.environ["AISD_PID"])
JSON = {"Content-Type": "application/json"}


def log_text(path=LOG):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def aisctl(*args, endpoint=URL):
    cp = subprocess.run([AISCTL, "-e", endpoint] + list(args), stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


def set_config(**kv):
    body = json.dumps({"action": "set-config", "value": {k.replace("_", ".", 1): v for k, v in kv.items()}})
    return req("PUT", "/v1/daemon", body, JSON)


# --- request ids ---------------------------------------------------------------
ids = [req("GET", "/v1/health").h("x-request-id") for _ in range(3)]
t.check(all(i and re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]+", i) for i in ids) and len(set(ids)) == 3,
        "every response has its own X-Request-Id", ids)

# --- access log on, at run time, with aisctl (standalone: per node) ------------
rc, out, err = aisctl("config", "set", "log.access=on")
t.check(rc == 0 and out.strip() == "ok", "aisctl config set log.access=on on a standalone target", (rc, out, err))
t.eq(create_bucket("lg").status, 200, "bucket created")
data = os.urandom(3000)
r = req("PUT", "/v1/objects/lg/o1", data)
r2 = req("GET", "/v1/objects/lg/o1")
t.check(r.status == 200 and r2.status == 200 and r2.body == data, "PUT and GET", (r, r2))
rid = r2.h("x-request-id")
pat = re.compile(r'^\S+ A \S+ req=%s 127\.0\.0\.1 "GET /v1/objects/lg/o1" 200 0 (\d+) (\d+)$' % re.escape(rid), re.M)
m = None
if poll(lambda: pat.search(log_text()), 10):
    m = pat.search(log_text())
t.check(m and int(m.group(1)) >= 3000, "the access line of the GET has its request id, status and bytes",
        [ln for ln in log_text().splitlines() if " A " in ln][-3:])
pid_put = r.h("x-request-id")
# the line is written once the request ends, maybe after the GET's: wait for it
t.check(poll(lambda: re.search(r'req=%s 127\.0\.0\.1 "PUT /v1/objects/lg/o1" 200 3000 ' % re.escape(pid_put),
                               log_text()), 10),
        "the access line of the PUT counts 3000 body bytes in")

# --- log level -----------------------------------------------------------------
r = set_config(log_level="debug")
t.eq(r.status, 200, "PUT /v1/daemon set-config log.level=debug")
r = req("GET", "/v1/objects/lg/o1")
rid = r.h("x-request-id")
t.check(poll(lambda: re.search(r"^\S+ D \S+ req=%s " % re.escape(rid), log_text(), re.M), 5),
        "a debug line with the request's id appears")
t.eq(set_config(log_level="info").status, 200, "log.level back to info")
r = req("GET", "/v1/objects/lg/o1")
rid = r.h("x-request-id")
time.sleep(0.3)
t.check(not re.search(r"^\S+ D \S+ req=%s " % re.escape(rid), log_text(), re.M), "no debug line at info level")

for body, why in [({"action": "set-config", "value": {"net.port": "1"}}, "a key not changeable at run time"),
                  ({"action": "set-config", "value": {"log.level": "loud"}}, "a bad level"),
                  ({"action": "set-config", "value": {"log.level": "debug", "log.access": "maybe"}},
                   "one bad value among good ones"),
                  ({"action": "set-config", "value": {}}, "no keys"),
                  ({"action": "frobnicate"}, "an unknown action"),
                  ("{not json", "bad JSON")]:
    r = req("PUT", "/v1/daemon", body if isinstance(body, str) else json.dumps(body), JSON)
    d = r.json()
    t.check(r.status == 400 and isinstance(d, dict) and d.get("status") == 400 and d.get("message"),
            "set-config with %s: 400 with a JSON message" % why, r)
r = req("GET", "/v1/objects/lg/o1")
time.sleep(0.3)
t.check(not re.search(r"^\S+ D \S+ req=%s " % re.escape(r.h("x-request-id")), log_text(), re.M),
        "the refused change left the level at info")

# --- rate limit -------------------------------------------------------------------
t.eq(set_config(net_rate_limit="2", net_burst="x").status, 400, "net.burst is not a key: 400")
t.eq(set_config(**{"net_rate_limit": "2", "net_rate_burst": "5"}).status, 200, "net.rate_limit=2, burst 5")
c = clulib.http.client.HTTPConnection("127.0.0.1", int(os.environ["AISD_PORT"]), timeout=10)
codes, retry = [], None
for _ in range(200):  # a loaded machine may refill a token or two meanwhile: bounded, not 20
    rr = req("GET", "/v1/objects/lg/o1", c=c)
    codes.append(rr.status)
    if rr.status == 429:
        retry = rr.h("retry-after")
        d = rr.json()
        t.check(d and d.get("status") == 429 and "rate_limit" in d.get("message", ""), "429 has a JSON body", rr)
        break
t.check(429 in codes and codes.count(200) >= 4 and retry and int(retry) >= 1,
        "a burst over the limit gets 429 with Retry-After", (codes, retry))
hc = [req("GET", "/v1/health").status for _ in range(10)]
t.check(all(x == 200 for x in hc), "health checks are not rate limited", hc)
t.eq(set_config(net_rate_limit=0).status, 200, "net.rate_limit=0 (a JSON number) switches it off")
codes = [req("GET", "/v1/objects/lg/o1", c=c).status for _ in range(20)]
t.check(all(x == 200 for x in codes), "no 429 with the limit off", codes)
c.close()
m = re.search(rb'aisd_http_errors_total\{kind="rate_limited"\} (\d+)', req("GET", "/metrics").body)
t.check(m and int(m.group(1)) >= 1, "the 429s are counted in /metrics")

# --- SIGHUP reopens the log ------------------------------------------------------
os.rename(LOG, LOG + ".1")
os.kill(PID, signal.SIGHUP)
t.check(poll(lambda: "reopened the log files" in log_text(), 5), "after SIGHUP the log is written at its path again")
r = req("GET", "/v1/objects/lg/o1")
t.check(poll(lambda: "req=%s " % r.h("x-request-id") in log_text(), 5) and
        "req=%s " % r.h("x-request-id") not in log_text(LOG + ".1"), "new access lines go to the new file only")
t.check("set-config: log.level = debug" in log_text(LOG + ".1"), "the rotated file keeps the older lines")

# --- a cluster: aisctl config set through the gateway -----------------------------
clulib.init(t, "logs", ["--set", "cluster.keepalive=300ms", "--set", "store.fsync=never"])
g = clulib.Node("g1", "gateway")
tg = clulib.Node("t1", "target")
acc = {n.name: os.path.join(n.dir, "access.log") for n in (g, tg)}
base_args = clulib.ARGS + ["--set", "log.access=off"]
clulib.ARGS = base_args + ["--set", "log.access_file=" + acc["g1"]]
okg = g.start()
clulib.ARGS = base_args + ["--set", "log.access_file=" + acc["t1"]]
okt = tg.start(join=g.url)
if not t.check(okg and okt and poll(lambda: clulib.smap_ids(g) == {g.id, tg.id}, 15), "gateway + target up"):
    t.finish()
r = clulib.request("GET", g.url, "/v1/health")
time.sleep(0.2)
t.check(not log_text(acc["g1"]).strip(), "access log off at start (log.access=off)")
rc, out, err = aisctl("config", "set", "log.access=on", "log.level=info", endpoint=g.url)
t.check(rc == 0 and "%s: ok" % g.id in out and "%s: ok" % tg.id in out,
        "aisctl config set through the gateway: every node ok", (rc, out, err))
t.eq(clulib.request("POST", g.url, "/v1/buckets/lc", json.dumps({"action": "create-bck"}), JSON).status, 200,
     "bucket via the gateway")
r1, r2 = clulib.follow("PUT", g.url, "/v1/objects/lc/x", b"hello")
t.check(r1.status == 307 and r2.status == 200, "PUT through the gateway", (r1, r2))
t.check(poll(lambda: '"PUT /v1/objects/lc/x" 307 ' in log_text(acc["g1"]) and
             ("req=%s " % r2.h("x-request-id")) in log_text(acc["t1"]), 5),
        "the gateway's access file has the 307, the target's the PUT with its id",
        (log_text(acc["g1"])[-300:], log_text(acc["t1"])[-300:]))
rc, out, err = aisctl("config", "set", "log.levl=debug", endpoint=g.url)
t.check(rc == 1 and "log.levl" in err, "aisctl config set with an unknown key exits 1 with the message",
        (rc, out, err))
rc, out, err = aisctl("config", "set", "--node", "log.level=warn", endpoint=tg.url)
t.check(rc == 0, "aisctl config set --node on one target", (rc, out, err))
t.finish()
