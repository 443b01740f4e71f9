"""itlib.py - helpers for the Python integration tests (standard library only).

Environment (set by run.sh): AISD_URL, AISD_PID, AISD_DIR, AISD_PORT,
AISD_BIN, AISCTL, TMPDIR.

    from itlib import T, req, q, create_bucket
    t = T()
    r = req("GET", "/v1/health")
    t.check(r.status == 200, "health answers 200", r)
    t.finish()

Also: a raw-socket response reader for pipelining and malformed requests,
XXH64 through libxxhash (ctypes), and "python3 itlib.py xxh64 FILE".
"""
import ctypes
import ctypes.util
import glob
import hashlib
import http.client
import io
import json
import os
import socket
import sys
import tarfile
import threading
import urllib.parse

URL = os.environ.get("AISD_URL", "")
_hp = urllib.parse.urlsplit(URL) if URL else None
HOST = _hp.hostname if _hp else "127.0.0.1"
PORT = _hp.port if _hp else 0
DIR = os.environ.get("AISD_DIR", "")


class T:
    """TAP-like reporting: ok / not ok lines, a count, finish() exits."""

    def __init__(self):
        self.n = 0
        self.fails = 0
        self.skips = 0
        self.lock = threading.Lock()
        # A worker thread that dies of any exception fails the test: a
        # reader loop cut by IncompleteRead must not end silently.
        threading.excepthook = self._thread_died

    def _thread_died(self, a):
        if a.exc_type is SystemExit:
            return
        import traceback
        tb = "".join(traceback.format_exception(a.exc_type, a.exc_value, a.exc_traceback))
        self.fail("thread %s died: %s: %s" % (a.thread.name if a.thread else "?", a.exc_type.__name__, a.exc_value),
                  "\n".join(tb.splitlines()[-10:]))

    def ok(self, what):
        with self.lock:
            self.n += 1
            print("ok %d - %s" % (self.n, what), flush=True)

    def fail(self, what, detail=None):
        with self.lock:
            self.n += 1
            self.fails += 1
            print("not ok %d - %s" % (self.n, what), flush=True)
            if detail is not None:
                for line in str(detail).splitlines()[:10]:
                    print("#   " + line[:300], flush=True)

    def skip(self, what, why):
        """A check that did not run, with the reason: the runner counts it
        as skipped, never as passed."""
        with self.lock:
            self.n += 1
            self.skips += 1
            print("ok %d - %s # SKIP %s" % (self.n, what, why), flush=True)

    def check(self, cond, what, detail=None):
        if cond:
            self.ok(what)
        else:
            self.fail(what, detail)
        return bool(cond)

    def eq(self, got, want, what):
        return self.check(got == want, what, "got %r, want %r" % (_short(got), _short(want)))

    def diag(self, msg):
        print("# " + msg, flush=True)

    def finish(self):
        print("# %d checks, %d failed, %d skipped" % (self.n, self.fails, self.skips), flush=True)
        sys.exit(1 if self.fails else 0)


def _short(v):
    if isinstance(v, (bytes, str)) and len(v) > 200:
        return v[:200] + (b"..." if isinstance(v, bytes) else "...")
    return v


class Resp:
    def __init__(self, status, headers, body, reason=""):
        self.status = status
        self.headers = headers  # dict: lower-case name -> value
        self.body = body
        self.reason = reason

    def h(self, name):
        return self.headers.get(name.lower())

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return "HTTP %d %s %s" % (self.status, self.headers, _short(self.body))


def worker(fn, *args, name=None):
    """A started daemon thread running fn(*args); an exception in it fails
    the test (see T), so a loop cut short cannot pass as a clean run."""
    th = threading.Thread(target=fn, args=args, name=name or fn.__name__, daemon=True)
    th.start()
    return th


def conn(timeout=60):
    return http.client.HTTPConnection(HOST, PORT, timeout=timeout)


def req(method, path, body=None, headers=None, c=None, timeout=60):
    """One request (on connection c if given, kept open; else a new one,
    closed). Returns a Resp."""
    own = c is None
    if own:
        c = conn(timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        return Resp(r.status, hdrs, data, r.reason)
    finally:
        if own:
            c.close()


def q(name):
    """Percent-encodes an object name (str or bytes) for the path; '/' stays."""
    if isinstance(name, str):
        name = name.encode()
    return urllib.parse.quote_from_bytes(name, safe="/")


def obj_path(bck, name):
    return "/v1/objects/%s/%s" % (bck, q(name))


def create_bucket(bck, cksum=None):
    v = {"action": "create-bck"}
    if cksum:
        v["value"] = {"checksum": {"type": cksum}}
    return req("POST", "/v1/buckets/" + bck, json.dumps(v), {"Content-Type": "application/json"})


def list_page(bck, c=None, **value):
    """One page of the JSON-body list; returns (Resp, entries, token)."""
    body = json.dumps({"action": "list", "value": value})
    r = req("GET", "/v1/buckets/" + bck, body, {"Content-Type": "application/json"}, c=c)
    d = r.json() if r.status == 200 else None
    if not isinstance(d, dict):
        return r, None, None
    return r, d.get("entries"), d.get("continuation_token")


def list_all(bck, limit_pages=10000, **value):
    """Every entry, page by page. Returns a list of entry dicts, or raises."""
    out, token = [], ""
    c = conn()
    try:
        for _ in range(limit_pages):
            value["continuation_token"] = token
            r, ents, token = list_page(bck, c=c, **value)
            if ents is None:
                raise RuntimeError("list failed: %r" % r)
            out.extend(ents)
            if not token:
                return out
    finally:
        c.close()
    raise RuntimeError("list did not end")


def tar_members(data, files_only=False):
    """(name, bytes) for each member of the tar in data, as Python's tarfile
    (a reader independent of aisd's) reads it; bytes is None for a member
    that is not a regular file, and files_only leaves those out."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        return [(m.name, tf.extractfile(m).read() if m.isfile() else None)
                for m in tf if m.isfile() or not files_only]


def md5(b):
    return hashlib.md5(b).hexdigest()


def sha256(b):
    return hashlib.sha256(b).hexdigest()


_xxh = None


def _xxh_lib():
    global _xxh
    if _xxh is None:
        name = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
        _xxh = ctypes.CDLL(name)
        _xxh.XXH64.restype = ctypes.c_uint64
        _xxh.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return _xxh


def xxh64(b):
    """XXH64 (seed 0) as 16 hex digits, through libxxhash."""
    return "%016x" % _xxh_lib().XXH64(b, len(b), 0)


def tmp_files():
    """Files left in the mountpaths' temp directories."""
    return [p for p in glob.glob(os.path.join(DIR, "mp*", "tmp", "**"), recursive=True)
            if os.path.isfile(p)]


# --- raw sockets -----------------------------------------------------------

def raw(timeout=30):
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """Reads HTTP/1.x responses one by one from a socket (pipelining)."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > 1 << 20:
                raise ValueError("line too long")
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def response(self, method="GET"):
        """Next response: a Resp (status 100 responses are skipped).
        Raises EOFError if the connection closes first."""
        while True:
            st = self._line()
            parts = st.split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
                raise ValueError("bad status line %r" % st)
            status = int(parts[1])
            hdrs = {}
            while True:
                line = self._line()
                if not line:
                    break
                k, _, v = line.partition(b":")
                hdrs[k.decode().strip().lower()] = v.decode("latin-1").strip()
            if status != 100:
                break
        hdrs[":version"] = parts[0].decode()
        body = b""
        if method == "HEAD" or status in (204, 304):
            pass
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            while True:
                n = int(self._line().split(b";")[0], 16)
                if n == 0:
                    while self._line():
                        pass
                    break
                body += self._exact(n)
                self._exact(2)
        elif "content-length" in hdrs:
            body = self._exact(int(hdrs["content-length"]))
        else:  # until close
            try:
                while True:
                    self._fill()
            except (EOFError, ConnectionResetError):
                pass
            body, self.buf = self.buf, b""
        return Resp(status, hdrs, body)

    def closed(self, timeout=5.0):
        """True if the peer closes (EOF or reset) within timeout seconds with
        nothing more to read."""
        self.s.settimeout(timeout)
        try:
            d = self.s.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        if d:
            self.buf += d
            return False
        return True


def exchange(data, method="GET", timeout=10, close_said=False):
    """Sends data on a new connection; returns (Resp or exception, closed
    after the response?). close_said: the close counts only when the
    response said Connection: close (no 5 s wait on a kept-alive one)."""
    s = raw(timeout)
    try:
        s.sendall(data)
    except OSError:
        pass
    rd = Reader(s)
    try:
        r = rd.response(method)
    except (EOFError, OSError, ValueError) as e:
        s.close()
        return e, True
    closed = (not close_said or r.h("connection") == "close") and rd.closed(5)
    s.close()
    return r, closed


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "xxh64":
        with open(sys.argv[2], "rb") as f:
            print(xxh64(f.read()))
    else:
        sys.exit("usage: itlib.py xxh64 FILE")
