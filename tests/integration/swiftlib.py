"""swiftlib.py - an OpenStack Swift all-in-one speaking S3 (s3api) for the
remote-backend tests: proxy with s3api + tempauth, account, container and
object servers from Debian's swift packages, one device in a temp dir,
rings built here, every server on a free loopback port, started and
stopped by PID (registered in clulib.procs, so they are stopped at exit
too).

Use, after clulib.init: sw = swiftlib.Swift(t); sw.start(); sw.wait_up();
sw.client() is a boto3 S3 client of Swift's user (AK, SK); sw.url its
endpoint; sw.stop() stops it (sw.start() again brings it back, same data).
"""
import os
import shutil
import subprocess
import urllib.parse

import clulib
from clulib import Node, poll, request

AK, SK = "test:tester", "testing"


def s3c(endpoint, ak=AK, sk=SK, attempts=1):
    """A boto3 S3 client: path-style, us-east-1, no retries unless asked."""
    import boto3
    import botocore.config
    c = botocore.config.Config(s3={"addressing_style": "path"},
                               retries={"max_attempts": attempts, "mode": "standard"})
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1", config=c)


class Swift:
    def __init__(self, t):
        for b in ("swift-proxy-server", "swift-object-server", "swift-ring-builder"):
            if not shutil.which(b):
                t.fail("%s is installed (tools/install-deps.sh installs Debian's swift packages)" % b)
                t.finish()
        self.t = t
        self.dir = os.path.join(clulib.DIR, "swiftconf")
        self.procs = {}
        os.makedirs(os.path.join(self.dir, "node", "d1"), exist_ok=True)
        ports = {r: clulib.low_port() for r in ("proxy", "account", "container", "object")}
        self.url = "http://127.0.0.1:%d" % ports["proxy"]
        sw = self.dir
        with open(os.path.join(sw, "swift.conf"), "w") as f:
            f.write("[swift-hash]\nswift_hash_path_suffix = aisdtest\nswift_hash_path_prefix = aisdtest\n"
                    "[storage-policy:0]\nname = Policy-0\ndefault = yes\n")
        for r in ("account", "container", "object"):
            b = os.path.join(sw, r + ".builder")
            for args in (["create", "0", "1", "1"], ["add", "r1z1-127.0.0.1:%d/d1" % ports[r], "1"], ["rebalance"]):
                subprocess.run(["swift-ring-builder", b] + args, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=args[0] != "rebalance")
            with open(os.path.join(sw, r + "-server.conf"), "w") as f:
                f.write("[DEFAULT]\nbind_ip = 127.0.0.1\nbind_port = %d\ndevices = %s\nmount_check = false\n"
                        "swift_dir = %s\nworkers = 0\ndisable_fallocate = true\n[pipeline:main]\n"
                        "pipeline = %s-server\n[app:%s-server]\nuse = egg:swift#%s\n"
                        % (ports[r], os.path.join(sw, "node"), sw, r, r, r))
        with open(os.path.join(sw, "proxy-server.conf"), "w") as f:
            f.write("[DEFAULT]\nbind_ip = 127.0.0.1\nbind_port = %d\nswift_dir = %s\nworkers = 0\n"
                    "[pipeline:main]\npipeline = catch_errors cache s3api tempauth proxy-server\n"
                    "[app:proxy-server]\nuse = egg:swift#proxy\naccount_autocreate = true\n"
                    # Swift's back-end defaults (0.5 s to connect) answer 503 on a loaded machine
                    "conn_timeout = 10\nnode_timeout = 60\nrecoverable_node_timeout = 60\n"
                    "[filter:tempauth]\nuse = egg:swift#tempauth\nuser_test_tester = testing .admin\n"
                    "[filter:s3api]\nuse = egg:swift#s3api\nlocation = us-east-1\n"
                    "[filter:catch_errors]\nuse = egg:swift#catch_errors\n[filter:cache]\n"
                    "use = egg:swift#memcache\n" % (ports["proxy"], sw))

    def start(self):
        for r in ("account", "container", "object", "proxy"):
            log = open(os.path.join(self.dir, r + ".log"), "ab")
            p = subprocess.Popen(["swift-%s-server" % r, os.path.join(self.dir, r + "-server.conf")],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            log.close()
            self.procs[r] = p
            clulib.procs["swift-" + r] = p  # stopped by PID at exit

    def stop(self):
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            p.wait(15)

    def client(self, ak=AK, sk=SK):
        """Swift's own client (sets up and checks data): retries a busy Swift's 503s."""
        return s3c(self.url, ak, sk, attempts=5)

    def up(self):
        try:
            s3c(self.url).list_buckets()
            return True
        except Exception:
            return False

    def wait_up(self, secs=90):  # a loaded machine starts Swift's Python servers slowly
        return poll(self.up, secs)


def start_front(t):
    """The front aisd cluster (gateway g1, targets t1 and t2), started on
    loopback ports and joined: (g, [t1, t2]); ends the test if it fails."""
    g = Node("g1", "gateway")
    ts = [Node("t1", "target"), Node("t2", "target")]
    for n in [g] + ts:
        if not t.check(n.start(join=g.url if n.role == "target" else None), "%s starts" % n.name):
            t.finish()
    t.check(poll(lambda: clulib.smap_ids(g) == {g.id} | {x.id for x in ts}, 20), "the front cluster forms")
    return g, ts


def ctl(g, *args):
    """aisctl against gateway g: (exit status, stdout + stderr)."""
    cp = subprocess.run([os.environ["AISCTL"], "-e", g.url] + list(args), stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return cp.returncode, cp.stdout.decode() + cp.stderr.decode()


def follow(g, method, path, body=None, headers=None):
    """One request to gateway g, its 307 followed with the body."""
    r = request(method, g.url, path, b"" if body else None, headers, timeout=60)
    if r.status != 307:
        return r
    loc = urllib.parse.urlsplit(r.h("location"))
    return request(method, "http://" + loc.netloc, loc.path + "?" + loc.query, body, headers, timeout=60)
