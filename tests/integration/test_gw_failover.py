"""test_gw_failover.py - the Python client with several gateway endpoints
while gateways stop and restart under a read/write load: 2 gateways (g1
primary, g2) and 2 targets on loopback, keepalive 300 ms, grace 1.5 s.

Two clients run the load from two threads: A (endpoints g1, g2) PUTs new
objects, B (g2, g1) reads each back and compares; a third thread reads the
objects written before through A and B in turn. Meanwhile: g2 stopped by
SIGTERM (graceful: its listener closes, requests in progress finish) and
restarted (it rejoins); the primary g1 stopped by SIGTERM and restarted at
once (it resumes as primary: back within the grace, no election); g1
stopped again and left down past the grace (g2 is elected) and past the
clients' retry_for (a client of g1 alone would fail), then started again
(it follows the newer map). Checks: zero failed requests, each
client failed over from a stopping gateway, every acknowledged PUT reads
back byte for byte, and the map at the end has the 4 nodes and one
primary that both gateways agree on.
"""
# timeout: 180
import os
import signal
import sys
import threading
import time

from itlib import T

import clulib
from clulib import Node, node_id, poll, procs, smap, smap_ids

ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from aisd import Client  # noqa: E402

t = T()
clulib.init(t, "gwfo", ["--set", "cluster.keepalive=300ms", "--set", "cluster.grace=1500ms",
                        "--set", "store.fsync=never"])


def primary_of(node):
    d = smap(node)
    return d["primary"] if d else None


g1, g2 = Node("g1", "gateway"), Node("g2", "gateway")
targets = [Node("t%d" % i, "target") for i in (1, 2)]
nodes = [g1, g2] + targets
if not t.check(g1.start(), "g1 (primary) starts"):
    t.finish()
if not t.check(all([g2.start(join=g1.url)] + [x.start(join=g1.url) for x in targets]), "g2 and 2 targets join g1"):
    t.finish()
want = {node_id(n) for n in nodes}
if not t.check(poll(lambda: all(smap_ids(n) == want for n in nodes), 15), "every node's map lists all 4"):
    t.finish()

# retry_for 5 s, shorter than g1's last time down (8 s): a client of one
# gateway would fail there
RETRY_FOR = 5
a = Client([g1.url, g2.url], timeout=10, retry_for=RETRY_FOR)
b = Client([g2.url, g1.url], timeout=10, retry_for=RETRY_FOR)
a.create_bucket("gwfo")
pre = {"pre/%d" % i: os.urandom(1000 + 97 * i) for i in range(20)}
for k, v in pre.items():
    a.put("gwfo", k, v)

stop = threading.Event()
acked, fails, moves = {}, [], [0, 0]
rounds = [0, 0]


def writer():
    i, last = 0, [a.endpoint, b.endpoint]
    while not stop.is_set() and i < 20000:
        i += 1
        name, data = "load/o%d" % i, b"object %d\n" % i + os.urandom(i * 7919 % 20000)
        try:
            a.put("gwfo", name, data)
            acked[name] = data
        except Exception as e:  # noqa: BLE001 - every failed request counts
            fails.append("PUT %s: %r" % (name, e))
            continue
        try:
            if b.get("gwfo", name) != data:
                fails.append("GET %s: other bytes" % name)
        except Exception as e:  # noqa: BLE001
            fails.append("GET %s: %r" % (name, e))
        for j, c in enumerate((a, b)):
            if c.endpoint != last[j]:
                last[j], moves[j] = c.endpoint, moves[j] + 1
        rounds[0] = i
        time.sleep(0.005)


def reader():
    i = 0
    while not stop.is_set() and i < 20000:
        i += 1
        k = "pre/%d" % (i % 20)
        try:
            if (a, b)[i % 2].get("gwfo", k) != pre[k]:
                fails.append("GET %s: other bytes" % k)
        except Exception as e:  # noqa: BLE001
            fails.append("GET %s: %r" % (k, e))
        rounds[1] = i
        time.sleep(0.005)


ths = [threading.Thread(target=writer), threading.Thread(target=reader)]
for th in ths:
    th.start()


def load_runs(n=20, secs=30):
    """Waits until the load did n more write rounds (bounded)."""
    r0 = rounds[0]
    return poll(lambda: rounds[0] >= r0 + n, secs)


def sigterm(node):
    p = procs[node.name]
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(20) == 0
    except Exception:  # noqa: BLE001 - a timeout: the check fails
        return False


t.check(load_runs(), "the load runs through both gateways")
t.check(sigterm(g2), "g2 stops on SIGTERM (exit 0)")
t.check(load_runs(), "the load goes on while g2 is down")
t.check(g2.start(join=g1.url), "g2 restarted")
t.check(poll(lambda: smap_ids(g1) == want and smap_ids(g2) == want, 15), "g2 back in the map")
t.check(load_runs(), "the load goes on")

t.check(sigterm(g1), "the primary g1 stops on SIGTERM (exit 0)")
t.check(g1.start(), "g1 restarted at once")
t.check(poll(lambda: primary_of(g1) == g1.id and primary_of(g2) == g1.id and smap_ids(g1) == want, 15),
        "g1 resumes as primary (back within the grace: no election)", (primary_of(g1), primary_of(g2)))
t.check(load_runs(), "the load goes on")

t.check(sigterm(g1), "the primary g1 stops on SIGTERM again")
t_down = time.monotonic()
t.check(poll(lambda: primary_of(g2) == g2.id, 15), "g2 elected primary while g1 stays down past the grace",
        primary_of(g2))
t.check(load_runs(), "the load goes on through g2 alone")
while time.monotonic() < t_down + RETRY_FOR + 3:
    time.sleep(0.1)
t.check(load_runs(), "the load goes on through g2 alone, g1 down for longer than the clients' retry_for")
t.check(g1.start(), "g1 started again")
t.check(poll(lambda: primary_of(g1) == g2.id and smap_ids(g1) == want and smap_ids(g2) == want, 15),
        "g1 follows the newer map (g2 primary) and the map has all 4 nodes", (primary_of(g1), smap_ids(g2)))
t.check(load_runs(), "the load goes on")

stop.set()
for th in ths:
    th.join(60)
t.check(not any(th.is_alive() for th in ths), "the load threads end")
t.eq(fails[:5], [], "zero failed requests (%d PUT+GET rounds, %d reads of earlier objects)" % tuple(rounds))
t.check(moves[0] >= 1 and moves[1] >= 1, "each client failed over from a stopping gateway", moves)
lost = [k for k, v in acked.items() if a.get("gwfo", k) != v]
t.check(len(acked) >= 50 and not lost, "every acknowledged PUT (%d) reads back byte for byte" % len(acked),
        lost[:5])
t.finish()
