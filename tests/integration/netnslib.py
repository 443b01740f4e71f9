"""netnslib.py - what the network-namespace tests share: the path of
deploy/netns/cluster.sh, where its cluster lives in the test's dir, the
skip when namespaces cannot be made here (not root, or no `ip netns`), and
sh() to run the script."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "deploy", "netns", "cluster.sh")
BINDIR = os.path.dirname(os.environ["AISD_BIN"])
DIR = os.path.join(os.environ["AISD_DIR"], "netns")


def skip(why):
    print("ok 1 # skip %s" % why)
    sys.exit(0)


def require(name):
    """Ends the test with one skip line unless a namespace can be made."""
    if os.geteuid() != 0:
        skip("not root (network namespaces)")
    probe = "%sprobe" % name
    if subprocess.run(["ip", "netns", "add", probe], stderr=subprocess.DEVNULL).returncode != 0:
        skip("ip netns add does not work here")
    subprocess.run(["ip", "netns", "del", probe])


def sh(*args, timeout=120):
    """Runs cluster.sh ARGS -d DIR: (exit status, output)."""
    cp = subprocess.run([SCRIPT] + list(args) + ["-d", DIR], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, timeout=timeout)
    return cp.returncode, cp.stdout.decode(errors="replace")
