"""test_client_failover.py - the Python client (tools/python/aisd/client.py)
with several gateway endpoints, against fake gateways in this process.

Two fake gateways (threaded HTTP/1.1 servers with keep-alive) serve one
shared object store, as two gateways of one cluster do. A load of PUT then
GET (byte for byte) runs from 4 threads while the gateway in use dies
mid-run (its listening socket and every connection closed: the client sees
resets, then refused connects): no request fails and every acknowledged
PUT reads back. A gateway that answers 503 (draining) is left for the
other at once, with no backoff pause; a 508 (a request between nodes whose
maps disagree for a moment) is asked again. Endpoints from a list or one
comma-separated string, a pickled client keeps them all, bad endpoints
are refused, a bucket create (not retried) fails over only from a refused
connect, and with every gateway down a GET raises within its retry_for.

Run: /usr/bin/python3 tests/unit/test_client_failover.py (make check-unit does).
"""
import http.server
import os
import pickle
import socket
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python"))
import aisd.client  # noqa: E402
from aisd import Client, HTTPError  # noqa: E402


class FakeGateway:
    """A fake gateway on a free loopback port: PUT/GET/POST of
    /v1/objects/B/NAME and /v1/buckets/B on a store shared with the others;
    .mode "503" answers every request 503 (draining); kill() closes the
    listening socket and every open connection."""

    def __init__(self, store):
        self.store, self.mode, self.hits = store, "ok", 0
        self.conns, self.lock = set(), threading.Lock()
        gw = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                with gw.lock:
                    gw.conns.add(self.connection)

            def finish(self):
                with gw.lock:
                    gw.conns.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def answer(self, status, body=b""):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def serve(self):
                with gw.lock:
                    gw.hits += 1
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                if gw.mode == "503":
                    return self.answer(503, b'{"message":"shutting down"}')
                if gw.mode == "508once":
                    gw.mode = "ok"
                    return self.answer(508, b'{"message":"request routed 2 times between nodes that disagree"}')
                if self.command == "PUT":
                    gw.store[self.path] = body
                    return self.answer(200)
                if self.command == "POST":
                    return self.answer(200)
                if self.path not in gw.store:
                    return self.answer(404, b'{"message":"no such object"}')
                return self.answer(200, gw.store[self.path])

            do_GET = do_PUT = do_POST = serve

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    def kill(self):
        self.srv.shutdown()
        self.srv.server_close()
        with self.lock:
            for c in list(self.conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        if self.thread.is_alive():
            self.kill()
        self.thread.join(5)


def dead_url():
    """A loopback URL nothing listens on (a port bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


class Failover(unittest.TestCase):
    def setUp(self):
        self.store = {}
        self.g = [FakeGateway(self.store), FakeGateway(self.store)]

    def tearDown(self):
        for g in self.g:
            g.stop()

    def test_endpoints_parsed(self):
        a, b = self.g[0].url, self.g[1].url
        self.assertEqual(Client([a, b + "/"]).endpoints, [a, b])
        self.assertEqual(Client(" %s , %s/ " % (a, b)).endpoints, [a, b])
        self.assertEqual(Client(a).endpoint, a)
        c = pickle.loads(pickle.dumps(Client("%s,%s" % (a, b), retry_for=7)))
        self.assertEqual((c.endpoints, c.retry_for), ([a, b], 7))
        for bad in ("", ",", "ftp://x", [a, "nohost"], []):
            self.assertRaises(ValueError, Client, bad)

    def test_gateway_dies_under_load(self):
        c = Client([g.url for g in self.g], timeout=5, retry_for=20)
        self.addCleanup(c.close)
        acked, errors, stop = {}, [], threading.Event()

        def load(k):
            i = 0
            while not stop.is_set() and i < 5000:
                name, data = "w%d/o%d" % (k, i), os.urandom(100 + (i * 37) % 3000)
                try:
                    c.put("b", name, data)
                    acked[name] = data
                    if c.get("b", name) != data:
                        errors.append("%s: read back other bytes" % name)
                except Exception as e:  # noqa: BLE001 - every failure counts
                    errors.append("%s: %r" % (name, e))
                i += 1

        ts = [threading.Thread(target=load, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        t0 = time.monotonic()
        while self.g[0].hits < 200 and time.monotonic() - t0 < 20:
            time.sleep(0.01)
        self.assertGreaterEqual(self.g[0].hits, 200, "the load did not start on the first gateway")
        self.g[0].kill()  # mid-run: resets on kept-alive connections, then refused connects
        h1 = self.g[1].hits
        t0 = time.monotonic()
        while self.g[1].hits < h1 + 200 and time.monotonic() - t0 < 20:
            time.sleep(0.01)
        stop.set()
        for t in ts:
            t.join(30)
        self.assertFalse(any(t.is_alive() for t in ts), "load threads hang")
        self.assertEqual(errors, [])
        self.assertGreaterEqual(self.g[1].hits, h1 + 200, "the load did not move to the second gateway")
        self.assertEqual(c.endpoint, self.g[1].url)
        for name, data in acked.items():  # nothing lost: every acknowledged PUT reads back
            self.assertEqual(c.get("b", name), data, name)

    def test_draining_gateway_503(self):
        self.g[0].mode = "503"
        self.store["/v1/objects/b/x"] = b"abc"
        c = Client([g.url for g in self.g], timeout=5, retry_for=20)
        self.addCleanup(c.close)
        pauses = []
        real_sleep = aisd.client.time.sleep
        aisd.client.time.sleep = lambda s: (pauses.append(s), real_sleep(s))
        try:
            self.assertEqual(c.get("b", "x"), b"abc")
        finally:
            aisd.client.time.sleep = real_sleep
        self.assertEqual(pauses, [], "the second gateway was asked only after a pause")
        self.assertEqual((self.g[0].hits, c.endpoint), (1, self.g[1].url))
        self.assertEqual(c.get("b", "x"), b"abc")
        self.assertEqual(self.g[0].hits, 1)  # stays with the one that answered

    def test_loop_508_retried(self):
        """508: two nodes' maps disagreed for a moment and the request was
        not routed again; the answer says to retry once the map settles."""
        self.store["/v1/objects/b/y"] = b"xyz"
        c = Client([self.g[0].url], timeout=5, retry_for=20)
        self.addCleanup(c.close)
        self.g[0].mode = "508once"
        self.assertEqual(c.get("b", "y"), b"xyz")
        self.assertEqual(self.g[0].hits, 2)
        c0 = Client([self.g[0].url], timeout=5, retry_for=0)
        self.addCleanup(c0.close)
        self.g[0].mode = "508once"
        with self.assertRaises(HTTPError) as e:
            c0.get("b", "y")  # retry_for=0: no retries
        self.assertEqual(e.exception.status, 508)

    def test_not_retried_fails_over_only_when_refused(self):
        c = Client([dead_url(), self.g[1].url], timeout=5, retry_for=20)
        self.addCleanup(c.close)
        c.create_bucket("nb")  # POST, not retried: the refused connect sent nothing
        self.assertEqual(c.endpoint, self.g[1].url)
        self.g[0].mode = "503"
        c = Client([self.g[0].url, self.g[1].url], timeout=5, retry_for=20)
        self.addCleanup(c.close)
        with self.assertRaises(HTTPError) as e:
            c.create_bucket("nb")  # a 503 answer: the request reached a gateway
        self.assertEqual(e.exception.status, 503)

    def test_all_down_bounded(self):
        c = Client([dead_url(), dead_url()], timeout=2, retry_for=1.5)
        t0 = time.monotonic()
        self.assertRaises(ConnectionRefusedError, c.get, "b", "x")
        self.assertLess(time.monotonic() - t0, 10)


if __name__ == "__main__":
    unittest.main()
