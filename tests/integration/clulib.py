"""clulib.py - a cluster of aisd nodes for integration tests: gateways and
targets started on free loopback ports with their own dirs and logs under
AISD_DIR/<subdir>, stopped by PID when the test exits (also on the
runner's SIGTERM), plus the HTTP helpers the cluster tests share.

Use: procs, Node, ... = from clulib import *; then clulib.init(t, "subdir",
extra_args, mountpaths=1) before starting nodes.
"""
import atexit
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from itlib import Resp, q

BIN = os.environ["AISD_BIN"]
DIR = None     # AISD_DIR/<subdir>, set by init
ARGS = []      # extra daemon arguments of every node, set by init
MOUNTPATHS = 1
SCHEME = "http"  # "https" after use_tls()
SSL_CTX = None   # the ssl.SSLContext of every https request, set by use_tls()
t = None
procs = {}  # name -> Popen (the nodes this test started)
started = []  # (name, Popen) of every aisd process ever started, restarts too


def _exit_ok(rc):
    """0 after SIGTERM, or SIGKILL (a test's kill -9): anything else (an
    abort, a crash, a sanitizer's exit status) is a defect."""
    return rc in (0, -signal.SIGKILL)


def init(test, subdir, args, mountpaths=1):
    """Binds the harness to the test's T, its node directory and the
    arguments every node gets."""
    global DIR, ARGS, MOUNTPATHS, t
    t = test
    DIR = os.path.join(os.environ["AISD_DIR"], subdir)
    ARGS = list(args)
    MOUNTPATHS = mountpaths


TOKEN_SECRET, CLUSTER_SECRET = "token-secret-0123456789abcdef", "cluster-secret-0123456789abcdef"


def secret_files(subdir):
    """Writes the token and cluster secrets (mode 0600) under AISD_DIR/subdir;
    returns their paths (auth.secret_file, cluster.secret_file)."""
    base = os.path.join(os.environ["AISD_DIR"], subdir)
    os.makedirs(base, exist_ok=True)
    paths = os.path.join(base, "auth.secret"), os.path.join(base, "cluster.secret")
    for path, val in zip(paths, (TOKEN_SECRET, CLUSTER_SECRET)):
        with open(path, "w") as f:
            f.write(val + "\n")
        os.chmod(path, 0o600)
    return paths


def use_tls(ctx):
    """Nodes serve HTTPS (their args carry net.tls.*): URLs become https://
    and every request of this module goes through ctx."""
    global SCHEME, SSL_CTX
    SCHEME, SSL_CTX = "https", ctx


def stop_all():
    """Stops every process of procs (SIGTERM, SIGKILL after 20 s), then
    fails the test for each aisd process this test started that ended other
    than by exit 0 or SIGKILL, or ignored SIGTERM. Node stderr files (kept
    in each node's dir, appended across restarts) are left for the runner,
    which scans them for sanitizer reports."""
    every = list(procs.items()) + [(n, p) for n, p in started if p not in procs.values()]
    for name, p in every:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 20  # room for a loaded machine; a hang is forever
    hung = set()
    for name, p in every:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print("# %s (pid %d) ignored SIGTERM: SIGKILL" % (name, p.pid), flush=True)
            hung.add(p.pid)
            p.kill()
            p.wait(5)
    if t is None:
        return
    for name, p in started:
        if p.pid in hung:
            t.fail("%s (pid %d) stops on SIGTERM within 20 s" % (name, p.pid))
        elif not _exit_ok(p.returncode):
            err = os.path.join(DIR, name, "stderr")
            try:
                with open(err, errors="replace") as f:
                    tail = f.read()[-1500:]
            except OSError:
                tail = ""
            t.fail("%s (pid %d) exited with status %d" % (name, p.pid, p.returncode), tail)


def check_logs(nodes):
    """Checks that no node's log has an error-level line (nodes: Node)."""
    errs = []
    for n in nodes:
        try:
            with open(n.log, errors="replace") as f:
                errs += ["%s: %s" % (n.name, line.rstrip()) for line in f if re.match(r"^\S+ E ", line)]
        except OSError as e:
            errs.append("%s: %s" % (n.name, e))
    t.check(not errs, "no node log has an error-level line", "\n".join(errs[:10]))


atexit.register(stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))  # the runner's timeout: clean up


class Node:
    def __init__(self, name, role):
        self.name, self.role = name, role
        self.dir = os.path.join(DIR, name)
        self.port = 0
        self.preexec = None  # run in the child before exec (resource limits)
        os.makedirs(self.dir, exist_ok=True)

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (SCHEME, self.port)

    @property
    def id(self):
        return "127.0.0.1:%d" % self.port

    @property
    def log(self):
        return os.path.join(self.dir, "aisd.log")

    def start(self, join=None):
        pf = os.path.join(self.dir, "port")
        if os.path.exists(pf):
            os.unlink(pf)
        args = [BIN, "--port", str(self.port), "--port-file", pf,
                "--set", "log.file=" + self.log] + ARGS
        if self.role == "gateway":
            args += ["--role", "gateway", "--dir", os.path.join(self.dir, "meta")]
        else:
            for i in range(MOUNTPATHS):
                args += ["-m", os.path.join(self.dir, "mp%d" % (i + 1))]
        if join:
            args += ["--join", join]
        err = open(os.path.join(self.dir, "stderr"), "ab")
        procs[self.name] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                            preexec_fn=self.preexec)
        started.append((self.name, procs[self.name]))
        err.close()
        for _ in range(100):
            if os.path.exists(pf) and open(pf).read().strip():
                self.port = int(open(pf).read())
                break
            if procs[self.name].poll() is not None:
                break
            time.sleep(0.1)
        if not self.port:
            return False
        for _ in range(100):
            try:
                if get(self.url, "/v1/health").status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def kill9(self):
        p = procs[self.name]
        p.kill()
        p.wait(10)


R = Resp  # a response: status, headers (lower-case names), body; h(), json()


def request(method, url, path, body=None, headers=None, timeout=30):
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        c = http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=SSL_CTX)
    else:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return R(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        c.close()


def get(url, path, **kw):
    return request("GET", url, path, **kw)


def follow(method, url, path, body=None, headers=None, redirects=3):
    """One request, then its 307s followed (at most redirects of them: a
    gateway's, and during a rebalance a new holder's to the old one and
    that one's back) with the same method and body. Returns (first
    response, final response)."""
    r1 = r = request(method, url, path, body, headers)
    for _ in range(redirects):
        if r.status != 307:
            break
        loc = urllib.parse.urlsplit(r.h("location"))
        p = loc.path + ("?" + loc.query if loc.query else "")
        r = request(method, "%s://%s" % (loc.scheme, loc.netloc), p, body, headers)
    return r1, r


def aisctl(url, *args, token=None, timeout=90, text=True):
    """aisctl -e URL ARGS (the aisctl beside AISD_BIN) with no config file:
    (exit status, stdout, stderr), stdout decoded unless text is False.
    token: AIS_AUTHN_TOKEN for the call ("": none); None keeps the
    environment's."""
    e = dict(os.environ)
    e["AISCTL_CONFIG"] = os.devnull
    if token is not None:
        e.pop("AIS_AUTHN_TOKEN", None)
        if token:
            e["AIS_AUTHN_TOKEN"] = token
    cp = subprocess.run([os.environ.get("AISCTL") or os.path.join(os.path.dirname(BIN), "aisctl"), "-e", url]
                        + list(args),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                        timeout=timeout)
    return cp.returncode, cp.stdout.decode(errors="replace") if text else cp.stdout, \
        cp.stderr.decode(errors="replace")


def etl_scripts(prefix, files):
    """A new temp dir (prefix) holding the ETL worker scripts files ({name:
    text}) where a worker can read them: it runs as nobody when the target
    runs as root, so the dir is 0755, the files 0644 and the dirs above it
    up to AISD_DIR traversable by others. Returns its path."""
    wdir = tempfile.mkdtemp(prefix=prefix)
    os.chmod(wdir, 0o755)
    for name, text in files.items():
        with open(os.path.join(wdir, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(wdir, name), 0o644)
    d = wdir
    while d.startswith(os.environ["AISD_DIR"]) and len(d) >= len(os.environ["AISD_DIR"]):
        os.chmod(d, os.stat(d).st_mode | 0o011)
        d = os.path.dirname(d)
    return wdir


def rss_kib(pid):
    """The resident set of process pid, KiB."""
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def raw_get(node, path, rcvbuf=64 << 10):
    """A GET of path to node on a plain socket with a small receive buffer
    (a client that reads at its own pace): (socket, the answer's head)."""
    s = socket.create_connection(("127.0.0.1", node.port), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (path.encode(), node.port))
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    return s, head


def curl(*args):
    """curl -s ... ; returns the HTTP code as a string."""
    cp = subprocess.run(["curl", "-s", "-m", "30", "-o", "/dev/null", "-w", "%{http_code}"] + list(args),
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return cp.stdout.decode().strip()


def no_id(loc):
    """A redirect's Location without its ais_id parameter (the request id
    it passes on: every redirect carries its own)."""
    if not loc or "?" not in loc:
        return loc
    base, query = loc.split("?", 1)
    kept = [kv for kv in query.split("&") if not kv.startswith("ais_id=")]
    return base + ("?" + "&".join(kept) if kept else "")


def smap(node, timeout=5):
    """node's cluster map (GET /v1/cluster?what=smap), None when it does not answer 200."""
    try:
        r = get(node.url, "/v1/cluster?what=smap", timeout=timeout)
        return r.json() if r.status == 200 else None
    except OSError:
        return None


def smap_ids(node):
    """The ids of the nodes in node's cluster map, or None."""
    try:
        d = smap(node)
        return {n["id"] for n in d["nodes"]} if d else None
    except (KeyError, TypeError):
        return None


def node_id(n):
    return n.id


def health(n):
    try:
        return get(n.url, "/v1/health", timeout=2).status == 200
    except OSError:
        return False


def health_prober(nodes, secs, lat, fails):
    """Asks every node of nodes for /v1/health (1 s timeout) every 0.2 s for
    secs seconds: each answer's latency goes to lat, each non-200 answer or
    error to fails as (name, status or message). A thread's target."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        for n in nodes:
            t0 = time.monotonic()
            try:
                st = get(n.url, "/v1/health", timeout=1).status
                if st != 200:
                    fails.append((n.name, st))
            except OSError as e:
                fails.append((n.name, str(e)))
            lat.append(time.monotonic() - t0)
        time.sleep(0.2)


def poll(cond, secs):
    """Polls cond() every 0.1 s for at most secs seconds."""
    deadline = time.monotonic() + secs
    while True:
        if cond():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def start_cluster(targets, secs=15, node_class=None):
    """Starts gateway g1 and targets t1..tN that join it (node_class: Node
    or a subclass); returns (g, [targets]) once every node's map lists
    every node (so no write lands under a map some target has not seen),
    or finishes the test."""
    cls = node_class or Node
    g = cls("g1", "gateway")
    ts = [cls("t%d" % (i + 1), "target") for i in range(targets)]
    if not t.check(g.start(), "gateway starts"):
        t.finish()
    if not t.check(all(x.start(join=g.url) for x in ts), "%d targets start and join" % targets):
        t.finish()
    want = {g.id} | {x.id for x in ts}
    if not t.check(poll(lambda: all(smap_ids(n) == want for n in [g] + ts), secs),
                   "the cluster map lists every node, on every node", smap_ids(g)):
        t.finish()
    return g, ts


def in_map(g, nodes):
    """Whether g's cluster map lists g and nodes, no other."""
    return smap_ids(g) == {g.id} | {n.id for n in nodes}


def names(url, bck, prefix="", partial=False):
    """The sorted names of bck's first listing page of up to 10,000 under
    prefix (JSON body; partial: a page without the targets not heard
    from), or None when it is not a 200."""
    body = json.dumps({"action": "list", "value": {"pagesize": 10000, "prefix": prefix, "partial": partial}})
    r = get(url, "/v1/buckets/" + bck, body=body, headers={"Content-Type": "application/json"})
    return sorted(e["name"] for e in (r.json() or {}).get("entries", [])) if r.status == 200 else None


def bucket_names(node):
    r = get(node.url, "/v1/buckets/")
    d = r.json() if r.status == 200 else None
    return {b["name"] for b in d} if isinstance(d, list) else None


def list_pages(url, bck, pagesize):
    """Every page of the JSON-body listing; returns a list of name lists,
    or (None, last response) on failure."""
    pages, token = [], ""
    for _ in range(10000):
        body = json.dumps({"action": "list", "value": {"pagesize": pagesize, "continuation_token": token}})
        r = get(url, "/v1/buckets/" + bck, body=body, headers={"Content-Type": "application/json"})
        d = r.json() if r.status == 200 else None
        if not isinstance(d, dict) or not isinstance(d.get("entries"), list):
            return None, r
        pages.append([e["name"] for e in d["entries"]])
        token = d.get("continuation_token") or ""
        if not token:
            return pages, r
    return None, "listing did not end"




# --- Prometheus -----------------------------------------------------------------
PROMETHEUS = "/usr/bin/prometheus"


def free_port():
    """A loopback TCP port nobody listens on right now, below 32768; from
    this test's own range when run.sh hands one (AISD_PORT_RANGE, tests
    running at once)."""
    p = low_port()
    if not p:
        raise RuntimeError("no free loopback port below 32768")
    return p


def low_port():
    """A free loopback port below 32768 (outside the ephemeral range): for a
    node whose id must be known before it starts (Node.port before start).
    Drawn from AISD_PORT_RANGE ("LO-HI") when run.sh hands this test a range
    of its own (JOBS>1), so that tests running at once never collide; 0 when
    none is free (tools/free_port.py)."""
    global _free_port
    if _free_port is None:  # loaded once
        import importlib.util
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location("free_port",
                                                      os.path.join(here, "..", "..", "tools", "free_port.py"))
        _free_port = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_free_port)
    return _free_port.pick()


_free_port = None  # tools/free_port.py, once low_port loaded it


def start_prometheus(nodes):
    """Starts Debian's prometheus as a plain process (procs["prometheus"],
    stopped with the nodes) with its config and data under DIR/prom,
    scraping every node each second as job "aisd"; returns its port."""
    pdir = os.path.join(DIR, "prom")
    os.makedirs(pdir, exist_ok=True)
    port = free_port()
    with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: aisd\n    static_configs:\n      - targets: [%s]\n"
                % ", ".join("'127.0.0.1:%d'" % n.port for n in nodes))
    perr = open(os.path.join(pdir, "stderr"), "ab")
    procs["prometheus"] = subprocess.Popen(
        [PROMETHEUS, "--config.file=" + os.path.join(pdir, "prometheus.yml"),
         "--storage.tsdb.path=" + os.path.join(pdir, "data"), "--web.listen-address=127.0.0.1:%d" % port,
         "--log.level=warn"], stdin=subprocess.DEVNULL, stdout=perr, stderr=perr)
    perr.close()
    return port


def prom_api(port, q):
    """Prometheus's JSON answer to the instant query q ("status" is
    "success" or "error"; for a refused query "error" and its "error"
    text), or None when it does not answer."""
    import urllib.error
    import urllib.request
    u = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
    try:
        with urllib.request.urlopen(u, timeout=5) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            return json.loads(e.read())
        except ValueError:
            return {"status": "error", "error": "HTTP %d" % e.code}
    except (OSError, ValueError):
        return None


def owner_put(g, targets, bck, name, data):
    """PUT straight to the object's owner (found by the gateway's 307 to a
    HEAD); the status, or 0 when no target is the owner."""
    loc = request("HEAD", g.url, "/v1/objects/%s/%s" % (bck, q(name))).h("location") or ""
    own = next((x for x in targets if loc.startswith(x.url + "/")), None)
    return request("PUT", own.url, "/v1/objects/%s/%s" % (bck, q(name)), data, timeout=60).status if own else 0


def slice_meta(tg, bck, name):
    """The metadata of tg's slice of bck/name as a dict (d, p, i, size, ...),
    or None when tg holds none."""
    r = get(tg.url, "/v1/ec/%s/%s?meta=true" % (bck, q(name)), headers={"Ais-Intra": "test"})
    if r.status != 200:
        return None
    return dict(kv.split("=", 1) for kv in r.body.decode().split()[1:])


def whole_copy(tg, bck, name):
    """Does tg hold a whole copy of bck/name (asked as another target would)?"""
    return get(tg.url, "/v1/objects/%s/%s" % (bck, q(name)), headers={"Ais-Intra": "test"}).status == 200


def read_loop_during(g, bck, data, fn, secs=120):
    """Runs fn() while a thread GETs the objects of data (name -> bytes)
    through the gateway in turn, for at most secs; returns (how many
    reads, [the failed or wrong ones])."""
    reads, bad, stop = [0], [], threading.Event()

    def reader():
        names, i = sorted(data), 0
        deadline = time.monotonic() + secs
        while not stop.is_set() and time.monotonic() < deadline:
            n = names[i % len(names)]
            i += 1
            r = follow("GET", g.url, "/v1/objects/%s/%s" % (bck, q(n)))[1]
            reads[0] += 1
            if r.status != 200 or r.body != data[n]:
                bad.append((n, r.status, r.body[:100] if r.status != 200 else "wrong bytes"))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        fn()
    finally:
        stop.set()
        th.join(secs)
    return reads[0], bad


def reads_right_or_refused(g, bck, names, data, before=None):
    """GETs each of names through the gateway (calling before(name) first):
    ([names read wrong or refused without a reason], how many were refused
    with a 5xx/404 and a reason)."""
    bad, refused = [], 0
    for n in names:
        if before:
            before(n)
        r = follow("GET", g.url, "/v1/objects/%s/%s" % (bck, q(n)))[1]
        if r.status == 200:
            if r.body != data[n]:
                bad.append((n, "wrong bytes"))
        elif r.status in (404, 500, 502, 503) and len(r.body) > 10:
            refused += 1
        else:
            bad.append((n, r.status, r.body[:160]))
    return bad, refused


def create_ec_bucket(g, targets, bck, data_slices, parity_slices, objsize_limit, whole_copy=True):
    """Creates bck with erasure coding D+P (and ec.whole_copy) and waits
    until every target has that BMD (three checks)."""
    t.eq(request("POST", g.url, "/v1/buckets/" + bck, '{"action":"create-bck"}',
                 {"Content-Type": "application/json"}).status, 200, "create " + bck)
    ec = {"enabled": True, "data_slices": data_slices, "parity_slices": parity_slices, "objsize_limit": objsize_limit,
          "whole_copy": whole_copy}
    r = request("PATCH", g.url, "/v1/buckets/" + bck, json.dumps({"action": "set-bprops", "value": {"ec": ec}}),
                {"Content-Type": "application/json"})
    t.eq(r.status, 200, "ec %d+%d" % (data_slices, parity_slices))
    gv = get(g.url, "/v1/daemon?what=bmd").json()["version"]
    t.check(poll(lambda: all(get(x.url, "/v1/daemon?what=bmd").json()["version"] >= gv for x in targets), 5),
            "targets have the BMD")


def check_deleted_stay_gone(g, bck, gone, kept, data):
    """Through the gateway: every name in gone answers 404 and is not listed;
    every name in kept is listed and reads back as data[name]."""
    back = {n: follow("GET", g.url, "/v1/objects/%s/%s" % (bck, q(n)))[1].status for n in gone}
    t.check(all(s == 404 for s in back.values()), "  no deleted object comes back through the gateway",
            {n: s for n, s in back.items() if s != 404})
    pages, last = list_pages(g.url, bck, 1000)
    listed = {x for p in (pages or []) for x in p}
    t.check(pages is not None and not listed & set(gone) and set(kept) <= listed,
            "  the listing names the kept objects and none of the deleted", sorted(listed & set(gone)) or last)
    wrong = [n for n in kept if follow("GET", g.url, "/v1/objects/%s/%s" % (bck, q(n)))[1].body != data[n]]
    t.check(not wrong, "the objects not deleted read back byte for byte", wrong[:3])
