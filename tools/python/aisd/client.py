"""client.py - an HTTP client for aisd's native API, standard library only.

What it guarantees:
- Connections are kept alive and reused, one pool per process (a forked
  DataLoader worker starts with an empty pool, never a parent's socket);
  a pool hands a connection to one request at a time, so a Client may be
  shared by threads.
- The gateway's 307 redirects are followed here, to the target that owns
  the object, with the same method, headers and body. A large PUT body is
  sent once: the request carries "Expect: 100-continue" and the body goes
  only to the node that asks for it.
- Idempotent requests (GET, HEAD, DELETE, listing, and a PUT of a whole
  object: the same bytes again) are retried on connection errors, timeouts
  and 500, 502, 503, 504 and 508 answers, with exponential backoff for at most `retry_for`
  seconds, each time resolving the owner afresh through the gateway. A
  stream (`open`) is retried until its first byte; reads that fail later
  raise, and the caller resumes with a Range (ShardDataset does).
- Several gateways (a list, or one string of comma-separated URLs): a
  request that fails as above is sent at once to the next gateway, and the
  client stays with the one that answered; the backoff starts only when
  every gateway failed in a row. So a gateway that stops (a refused
  connect, a reset, a 503 while it drains) or restarts costs no failed
  request. Requests that are not retried (bucket create, a node given to
  `open`) fail over only from a refused connect (nothing was sent).
- A response that ends before its Content-Length raises ConnectionError,
  never a silent short read.
- Errors from the server raise HTTPError with the status and the message
  of its JSON body.
- A listing is never silently short: while targets holding part of the
  bucket are down the gateway answers 503 naming them (HTTPError .missing,
  raised after the retries); with list(partial=True) the pages come from
  the other targets and each one that may lack objects issues a
  PartialListing warning (.missing: the targets not heard from).
- Local reads (local=True, the default): a target answering a client on
  its own host names its unix socket ("Ais-Local-Socket"; the first time
  a stream meets a node on this host, a 1-byte read asks); streams
  (`open`) from that target go over the socket asking for the object's
  file as an open descriptor ("Ais-Local-Fd"), and are read with pread:
  no bytes cross TCP and the server sends none. Everything else (auth,
  redirects, Range, If-Match, errors) is the same request. A socket that
  cannot be reached (another host, a container, permissions) is not tried
  again by this process; the read goes over TCP.
"""
import http.client
import io
import json
import os
import random
import select
import socket
import ssl
import threading
import time
import urllib.parse
import warnings

from .tar import iter_members

__all__ = ["Client", "HTTPError", "PartialListing", "Stream", "LocalStream", "Props"]

_REDIRECTS = (301, 302, 303, 307, 308)
# 508: routed between nodes whose cluster maps disagreed for a moment (the
# answer says to retry once the map settles)
_RETRY_STATUS = (500, 502, 503, 504, 508)
_SMALL_BODY = 64 * 1024   # at most this much is sent without 100-continue
_POOL_IDLE_MAX = 32       # idle connections kept per host
_CHUNK = 1 << 20
_DRAIN_MAX = 64 * 1024  # a stream closed this close to its end is read out, keeping the connection


class HTTPError(Exception):
    """An error answer: .status (int), .message (the server's text),
    .url (the last URL asked), .missing (a listing refused for want of
    targets: their ids; else [])."""

    def __init__(self, status, message, url="", missing=None):
        super().__init__("HTTP %d: %s%s" % (status, message, " (%s)" % url if url else ""))
        self.status, self.message, self.url = status, message, url
        self.missing = list(missing or [])


class PartialListing(UserWarning):
    """A page of list(partial=True) that may lack the objects of targets
    not heard from: .bucket, .missing (their ids)."""

    def __init__(self, bucket, missing):
        super().__init__("listing of %s is partial: targets not heard from: %s" % (bucket, ", ".join(missing)))
        self.bucket, self.missing = bucket, list(missing)


def _missing(body):
    try:
        d = json.loads(body)
        m = d.get("missing") if isinstance(d, dict) else None
        return [str(x) for x in m] if isinstance(m, list) else []
    except ValueError:
        return []


def _message(body):
    try:
        d = json.loads(body)
        if isinstance(d, dict) and "message" in d:
            return str(d["message"])
    except ValueError:
        pass
    return body[:300].decode("utf-8", "replace").strip()


def quote(name):
    """Percent-encodes an object name for a URL path (keeps '/')."""
    return urllib.parse.quote(name, safe="/")


class Props(dict):
    """HEAD answer: a dict of the lower-cased headers, plus .size,
    .checksum ((type, value) or None), .version."""

    @property
    def size(self):
        return int(self.get("content-length", -1))

    @property
    def checksum(self):
        t = self.get("ais-checksum-type")
        return (t, self.get("ais-checksum-value")) if t else None

    @property
    def version(self):
        return self.get("ais-version")


class _Pool:
    """Idle keep-alive connections per (scheme, host, port), per process,
    and the targets' unix sockets for local reads (unix: hp -> path, or
    None once it failed; idle sockets under the key ("unix", path))."""

    def __init__(self, timeout, ssl_context=None, local=True):
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.local = local
        self.lock = threading.Lock()
        self.idle = {}
        self.unix = {}
        self.here = {}
        self.pid = os.getpid()

    def is_this_host(self, host):
        """Whether host is an address of this machine (loopback, or one a
        socket can bind to)."""
        v = self.here.get(host)
        if v is None:
            v = host == "localhost" or host.startswith("127.") or host == "::1"
            if not v:
                try:
                    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
                    with socket.socket(fam, socket.SOCK_STREAM) as s:
                        s.bind((host, 0))
                    v = True
                except OSError:
                    v = False
            self.here[host] = v
        return v

    def get(self, hp):
        """Returns (connection, reused)."""
        with self.lock:
            if self.pid != os.getpid():  # forked: the parent's sockets are not ours
                self.idle, self.pid = {}, os.getpid()
            lst = self.idle.get(hp)
            if lst:
                return lst.pop(), True
        return self.new(hp), False

    def new(self, hp):
        scheme, host, port = hp
        if scheme == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(host)
            except BaseException:
                s.close()
                raise
            return s
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self.ssl_context)
        return http.client.HTTPConnection(host, port, timeout=self.timeout)

    def put(self, hp, conn):
        with self.lock:
            if self.pid == os.getpid():
                lst = self.idle.setdefault(hp, [])
                if len(lst) < _POOL_IDLE_MAX:
                    lst.append(conn)
                    return
        conn.close()

    def close(self):
        with self.lock:
            if self.pid == os.getpid():
                for lst in self.idle.values():
                    for c in lst:
                        c.close()
            self.idle = {}


def _hostport(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError("not an http(s) URL: %r" % url)
    return (u.scheme, u.hostname, u.port or (443 if u.scheme == "https" else 80)), u


class Stream(io.RawIOBase):
    """A response body read incrementally. The connection goes back to the
    pool once the body is read to its end; close() before that drops it.
    .status, .headers (lower-cased dict), .length (Content-Length or None),
    .url. A body cut short raises ConnectionError."""

    def __init__(self, pool, hp, conn, resp, url):
        super().__init__()
        self._pool, self._hp, self._conn, self._resp = pool, hp, conn, resp
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        cl = self.headers.get("content-length")
        self.length = int(cl) if cl is not None and cl.isdigit() else None
        self.url = url
        self.got = 0
        self._done = False

    def readable(self):
        return True

    def _eof(self):
        if self.length is not None and self.got < self.length:
            self._drop()
            raise ConnectionError("%s: connection closed after %d of %d bytes" % (self.url, self.got, self.length))
        self._release()

    def read(self, n=-1):
        if self._done:
            return b""
        if n is None or n < 0:
            parts = []
            while True:
                b = self.read(_CHUNK)
                if not b:
                    return b"".join(parts)
                parts.append(b)
        if n == 0:
            return b""
        try:
            b = self._resp.read(n)
        except BaseException:
            self._drop()
            raise
        if not b:
            self._eof()
            return b""
        self.got += len(b)
        if self.length is not None and self.got >= self.length:
            self._release()
        return b

    def readinto(self, buf):
        if self._done or not len(buf):
            return 0
        try:
            n = self._resp.readinto(buf)
        except BaseException:
            self._drop()
            raise
        if not n:
            self._eof()
            return 0
        self.got += n
        if self.length is not None and self.got >= self.length:
            self._release()
        return n

    def _release(self):
        if not self._done:
            self._done = True
            if self._resp.will_close:
                self._conn.close()
            else:
                self._pool.put(self._hp, self._conn)

    def _drop(self):
        if not self._done:
            self._done = True
            self._conn.close()

    def close(self):
        """Releases the connection: back to the pool when the body was read
        whole, or when at most 64 KiB of it were left (read and dropped
        here, e.g. a tar's end blocks); else closed."""
        if not self._done and self.length is not None and self.length - self.got <= _DRAIN_MAX:
            try:
                while self.read(_DRAIN_MAX):
                    pass
            except (OSError, http.client.HTTPException):
                pass
        if not self._done:
            self._drop()
        super().close()


class LocalStream(io.RawIOBase):
    """A response body handed over as an open descriptor of the object's
    file (bytes [offset, offset + length) of it), read with pread. The same
    attributes as Stream."""

    def __init__(self, fd, offset, length, status, headers, url):
        super().__init__()
        self._fd, self._off = fd, offset
        self.length, self.status, self.headers, self.url = length, status, headers, url
        self.got = 0

    def readable(self):
        return True

    def readinto(self, buf):
        n = min(len(buf), self.length - self.got)
        if n <= 0 or self._fd < 0:
            return 0
        k = os.preadv(self._fd, [memoryview(buf)[:n]], self._off + self.got)
        if k == 0:
            raise ConnectionError("%s: object file ended after %d of %d bytes" % (self.url, self.got, self.length))
        self.got += k
        return k

    def close(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        super().close()


def _local_get(pool, path, target, headers, url):
    """GET over a target's unix socket asking for the file as a descriptor.
    Returns a LocalStream, ("redirect", location), or None when the answer
    is not a descriptor (the caller asks over TCP); raises HTTPError for an
    error answer and OSError when the socket cannot be used."""
    key = ("unix", path, 0)
    if any(c in "%s%s%s" % (target, k, v) for k, v in headers.items() for c in "\r\n"):
        raise ValueError("a header or the target holds a line break")  # as http.client refuses
    req = ["GET %s HTTP/1.1\r\nHost: localhost\r\nAis-Local-Fd: true\r\n" % target]
    req += ["%s: %s\r\n" % kv for kv in headers.items()]
    req = ("".join(req) + "\r\n").encode("latin-1")
    sock, reused = pool.get(key)
    fds = []
    try:
        buf = b""
        try:
            sock.sendall(req)
            buf, fds, _, _ = socket.recv_fds(sock, 65536, 4, socket.MSG_CMSG_CLOEXEC)
            if not buf:
                raise ConnectionError("%s: unix socket closed before an answer" % url)
        except ConnectionError:
            if not reused:
                raise
            # a kept-alive socket the server had closed (restarted): once more on a new one
            sock.close()
            sock = pool.new(key)
            sock.sendall(req)
            buf, fds, _, _ = socket.recv_fds(sock, 65536, 4, socket.MSG_CMSG_CLOEXEC)
        while b"\r\n\r\n" not in buf:
            if len(buf) > 65536:
                raise http.client.HTTPException("%s: response head too long" % url)
            data, got, _, _ = socket.recv_fds(sock, 65536, 4, socket.MSG_CMSG_CLOEXEC)
            fds += got
            if not data:
                raise ConnectionError("%s: unix socket closed before an answer" % url)
            buf += data
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if "transfer-encoding" in hdrs:  # a streamed answer: not for this path
            sock.close()
            return None
        need = int(hdrs.get("content-length", "0"))
        while len(rest) < need:
            data = sock.recv(max(need - len(rest), 65536))
            if not data:
                raise ConnectionError("%s: unix socket closed in an answer" % url)
            rest += data
        if hdrs.get("connection", "").lower() == "close":
            sock.close()
        else:
            pool.put(key, sock)
        sock = None
        if status in _REDIRECTS:
            return "redirect", hdrs.get("location")
        if status >= 400:
            raise HTTPError(status, _message(rest) or lines[0], url, _missing(rest))
        if len(fds) == 1 and "ais-local-fd-size" in hdrs:
            fd = fds.pop()
            return LocalStream(fd, int(hdrs["ais-local-fd-offset"]), int(hdrs["ais-local-fd-size"]),
                               status, hdrs, url)
        return None
    finally:
        for fd in fds:
            os.close(fd)
        if sock is not None:
            sock.close()


def _endpoints(endpoint):
    """The endpoint list from a URL, comma-separated URLs or a sequence of
    them; each checked. Raises ValueError when there is none or one is not
    an http(s) URL."""
    parts = endpoint.split(",") if isinstance(endpoint, str) else list(endpoint)
    eps = [p.strip().rstrip("/") for p in parts if p and p.strip()]
    if not eps:
        raise ValueError("no endpoint given")
    for e in eps:
        _hostport(e)  # validates
    return eps


class Client:
    """A client of aisd endpoints: one gateway (or a standalone target), or
    several gateways of one cluster, as a list or one string of
    comma-separated URLs ("https://g0:8080,https://g1:8080", e.g. from
    $AIS_ENDPOINT): retried requests fail over from one to the next (see
    above). .endpoint is the one in use, .endpoints all of them.

    timeout: seconds per socket operation; retry_for: how long idempotent
    requests are retried (connection errors, timeouts, 5xx) before the last
    error is raised; 0 disables retries.

    HTTPS (an https:// endpoint; redirects to https targets): cafile is the
    PEM CA bundle the cluster's certificates are verified with (default:
    the system's), certfile/keyfile a client certificate for clusters that
    require one (mTLS); or pass a ready ssl.SSLContext as ssl_context (it
    is not carried when the client is pickled: use the file names then).

    local: read objects of targets on this host through their unix socket
    as open descriptors when they offer it (see above); False: always TCP."""

    def __init__(self, endpoint, timeout=60.0, retry_for=60.0, cafile=None, certfile=None, keyfile=None,
                 ssl_context=None, token=None, local=True):
        self.endpoints = _endpoints(endpoint)
        self._ep = 0  # index of the endpoint in use (shared by threads: a plain int)
        self.timeout, self.retry_for = timeout, retry_for
        # a bearer token (aisctl auth token create) for a cluster with
        # auth.enabled; default $AIS_AUTHN_TOKEN, as aisctl and AIStore
        self.token = token if token is not None else (os.environ.get("AIS_AUTHN_TOKEN") or None)
        self.cafile, self.certfile, self.keyfile = cafile, certfile, keyfile
        if ssl_context is None and (cafile or certfile):
            ssl_context = ssl.create_default_context(cafile=cafile)
            if certfile:
                ssl_context.load_cert_chain(certfile, keyfile)
        self.local = local
        self._pool = _Pool(timeout, ssl_context, local)

    @property
    def endpoint(self):
        """The endpoint requests go to now."""
        return self.endpoints[self._ep]

    def __repr__(self):
        return "Client(%r)" % (self.endpoint if len(self.endpoints) == 1 else self.endpoints)

    def __getstate__(self):  # picklable for DataLoader workers (spawn)
        return {"endpoint": self.endpoints, "timeout": self.timeout, "retry_for": self.retry_for,
                "cafile": self.cafile, "certfile": self.certfile, "keyfile": self.keyfile, "token": self.token, "local": self.local}

    def __setstate__(self, st):
        self.__init__(st["endpoint"], st["timeout"], st["retry_for"], st.get("cafile"), st.get("certfile"),
                      st.get("keyfile"), token=st.get("token"), local=st.get("local", True))

    def close(self):
        """Closes this process's idle connections."""
        self._pool.close()

    # --- the request engine ---------------------------------------------------

    def _once(self, method, url, body, headers, stream, local=False):
        """One request with its redirects followed. Returns a Stream (stream)
        or (status, headers, data). Raises HTTPError for >= 400 and OSError /
        http.client.HTTPException on transport errors. local: a GET whose
        answer is an object's bytes (a file body on the target), which a
        target on this host may hand over as a descriptor (a LocalStream)."""
        for _ in range(8):
            hp, u = _hostport(url)
            target = (u.path or "/") + ("?" + u.query if u.query else "")
            local = local and self._pool.local
            if local and hp not in self._pool.unix and self._pool.is_this_host(hp[1]):
                self._probe(hp, target, headers)
            upath = self._pool.unix.get(hp) if local else None
            if upath:
                try:
                    r = _local_get(self._pool, upath, target, headers, url)
                except (FileNotFoundError, PermissionError):
                    self._pool.unix[hp] = None  # not reachable from here: TCP from now on
                    r = None
                except (OSError, http.client.HTTPException):
                    r = None  # this time over TCP (which retries as usual)
                if isinstance(r, LocalStream):
                    return r
                if r is not None:
                    if not r[1]:
                        raise HTTPError(307, "redirect without Location", url)
                    url = urllib.parse.urljoin(url, r[1])
                    continue
            conn, reused = self._pool.get(hp)
            try:
                resp, sent_body = self._send(conn, method, target, body, headers)
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                if not reused or not isinstance(e, (ConnectionError, http.client.BadStatusLine)):
                    raise
                # A kept-alive connection the server had closed (reset, or
                # closed before an answer): the request was not served, so
                # send it once more on a new one.
                conn = self._pool.new(hp)
                try:
                    resp, sent_body = self._send(conn, method, target, body, headers)
                except BaseException:
                    conn.close()
                    raise
            if resp.status in _REDIRECTS:
                loc = resp.getheader("Location")
                resp.read()
                self._finish(hp, conn, resp, sent_body, body)
                if not loc:
                    raise HTTPError(resp.status, "redirect without Location", url)
                url = urllib.parse.urljoin(url, loc)
                continue
            if resp.status >= 400:
                try:
                    data = resp.read()
                except BaseException:
                    conn.close()
                    raise
                self._finish(hp, conn, resp, sent_body, body)
                raise HTTPError(resp.status, (_message(data) if method != "HEAD" else "") or resp.reason, url,
                                _missing(data) if method != "HEAD" else None)
            if stream and method != "HEAD":
                return Stream(self._pool, hp, conn, resp, url)
            try:
                data = resp.read()
            except BaseException:
                conn.close()
                raise
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            self._finish(hp, conn, resp, sent_body, body)
            return resp.status, hdrs, data
        raise HTTPError(310, "too many redirects", url)

    def _probe(self, hp, target, headers):
        """A node on this host not asked before: one byte of the object over
        TCP tells whether it offers its unix socket (a target's every answer
        to a client on its host carries Ais-Local-Socket; a gateway's has
        none); the pool remembers either way. Errors are left to the real
        request."""
        conn, _ = self._pool.get(hp)
        try:
            conn.request("GET", target, headers=dict(headers, Range="bytes=0-0"))
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            return
        self._finish(hp, conn, resp, True, None)
        self._pool.unix.setdefault(hp, resp.getheader("Ais-Local-Socket") if self._pool.local else None)

    def _finish(self, hp, conn, resp, sent_body, body):
        """Back to the pool, unless the server said close or is still owed
        a body it never got (an answer to 100-continue before the body)."""
        if resp.will_close or (body is not None and not sent_body):
            conn.close()
        else:
            self._pool.put(hp, conn)

    def _send(self, conn, method, target, body, headers):
        """Sends one request; returns (response, whether the body was sent).
        Bodies above _SMALL_BODY wait for 100 Continue, so a redirect costs
        no body bytes."""
        if body is None or (isinstance(body, (bytes, bytearray, memoryview)) and len(body) <= _SMALL_BODY):
            conn.request(method, target, body=body, headers=headers)
            return conn.getresponse(), True
        size = len(body) if isinstance(body, (bytes, bytearray, memoryview)) else body.size
        conn.putrequest(method, target, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(size))
        conn.putheader("Expect", "100-continue")
        conn.endheaders()
        if _await_continue(conn.sock, min(self.timeout, 5.0)):
            if isinstance(body, (bytes, bytearray, memoryview)):
                conn.sock.sendall(body)
            else:
                body.send(conn.sock)
            return conn.getresponse(), True
        return conn.getresponse(), False

    def _call(self, method, path, query=None, body=None, headers=None, stream=False,
              retry=True, start_url=None, local=False):
        """A request with retries; path is the URL path on the endpoint;
        local: see _once. A retry goes to the next endpoint at once while
        some endpoint has not failed since the last backoff pause (the one
        that answers stays in use); start_url requests stay on their URL."""
        qs = "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote) if query else ""
        headers = dict(headers or {})
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        deadline = time.monotonic() + self.retry_for
        delay = 0.05
        failed = 0  # endpoints failed in a row since the last pause
        n = 1 if start_url else len(self.endpoints)
        while True:
            i = self._ep
            url = (start_url or self.endpoints[i] + path) + qs
            try:
                return self._once(method, url, body, headers, stream, local)
            except HTTPError as e:
                if not retry or e.status not in _RETRY_STATUS:
                    raise
                err = e
            except (OSError, http.client.HTTPException) as e:
                # a refused connect sent nothing: even a request that is not
                # retried may go to the next endpoint
                if not retry and not (isinstance(e, ConnectionRefusedError) and failed + 1 < n):
                    raise
                err = e
            failed += 1
            if n > 1 and self._ep == i:  # another thread may have moved on already
                self._ep = (i + 1) % n
            if failed < n and time.monotonic() <= deadline:
                continue  # the next endpoint, at once
            if time.monotonic() + delay > deadline:
                raise err
            failed = 0
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 2.0)

    # --- objects ---------------------------------------------------------------

    @staticmethod
    def _opath(bucket, name):
        return "/v1/objects/%s/%s" % (bucket, quote(name))

    def open(self, bucket, name, start=0, length=None, archpath=None, if_match=None, node=None, etl=None,
             etl_args=None):
        """GET as a Stream from byte `start` (and at most `length` bytes);
        with if_match (an ETag), HTTPError 412 unless the object still has
        it. The caller reads the stream and closes it. From a target on this
        host that named its unix socket before, a LocalStream (the file as a
        descriptor; the client's local=True). node: a target's URL (a
        listing's "location") asked once, directly; its errors are raised
        (the caller then asks the endpoint). etl, etl_args: the object as
        transformer etl answers it (?etl=; always over HTTP, whole: a Range
        is not applied to the transformed bytes)."""
        q = {"archpath": archpath} if archpath else {}
        if etl:
            q["etl"] = etl
            if etl_args:
                q["etl_args"] = etl_args
        start_url = node.rstrip("/") + self._opath(bucket, name) if node else None
        return self._call("GET", self._opath(bucket, name), q or None,
                          headers=_range(0, None, if_match) if etl else _range(start, length, if_match),
                          stream=True, local=not etl, retry=node is None, start_url=start_url)

    def open_url(self, url, start=0, length=None, if_match=None):
        """The same for any http(s) URL (a plain web server)."""
        return self._call("GET", "", headers=_range(start, length, if_match), stream=True, start_url=url)

    def get(self, bucket, name, archpath=None):
        """The object's bytes (or, with archpath, one file of a tar shard)."""
        q = {"archpath": archpath} if archpath else None
        return self._call("GET", self._opath(bucket, name), q)[2]

    def get_range(self, bucket, name, start, length):
        """length bytes from offset start (fewer at the end of the object)."""
        if length <= 0:
            return b""
        return self._call("GET", self._opath(bucket, name), headers=_range(start, length))[2]

    def get_members(self, bucket, shard, pattern, mode="regexp"):
        """The files of a shard that match pattern (archmode regexp, prefix,
        suffix, substr, or wdskey: every file of one sample key), as
        (member name, bytes) in archive order, from one request."""
        s = self._call("GET", self._opath(bucket, shard), {"archregx": pattern, "archmode": mode}, stream=True)
        try:
            yield from iter_tar(s)
        finally:
            s.close()

    def head(self, bucket, name):
        """Props of the object; HTTPError 404 when missing."""
        return Props(self._call("HEAD", self._opath(bucket, name))[1])

    def put(self, bucket, name, data, checksum=None, custom=None):
        """Stores data (bytes, or a path of a local file) as bucket/name.
        checksum=(type, value) is verified by the target; custom is a dict
        of custom metadata. Returns the answer's headers. Retried like a GET
        (a PUT of the same bytes is idempotent)."""
        body = _FileBody(data) if isinstance(data, (str, os.PathLike)) else bytes(data)
        h = {"Content-Type": "application/octet-stream"}
        if checksum:
            h["Ais-Checksum-Type"], h["Ais-Checksum-Value"] = checksum
        if custom:
            h["Ais-Custom-Md"] = ",".join("%s=%s" % kv for kv in custom.items())
        try:
            return self._call("PUT", self._opath(bucket, name), body=body, headers=h)[1]
        finally:
            if isinstance(body, _FileBody):
                body.close()

    def delete(self, bucket, name):
        """Removes the object; HTTPError 404 when missing."""
        self._call("DELETE", self._opath(bucket, name))

    # --- buckets ----------------------------------------------------------------

    def create_bucket(self, bucket, exist_ok=False):
        try:
            self._call("POST", "/v1/buckets/" + bucket, body=b'{"action":"create-bck"}',
                       headers={"Content-Type": "application/json"}, retry=False)
        except HTTPError as e:
            if not (exist_ok and e.status == 409):
                raise

    def destroy_bucket(self, bucket):
        self._call("DELETE", "/v1/buckets/" + bucket, body=b'{"action":"destroy-bck"}',
                   headers={"Content-Type": "application/json"})

    def buckets(self):
        return [b["name"] for b in json.loads(self._call("GET", "/v1/buckets/")[2])]

    def list(self, bucket, prefix="", pagesize=1000, props=None, archive=False, partial=False):
        """Iterates every entry ({"name","size",...}) of the bucket whose name
        starts with prefix, in name order, a page at a time. archive=True
        (AIStore's LsArchDir, flags=8) puts each shard's members right after
        it, named SHARD/MEMBER, with "flags" 128 (the shard: 512). While
        targets holding part of the bucket are down: HTTPError 503 (.missing
        names them), or with partial=True the other targets' entries and a
        PartialListing warning for each page that may lack objects."""
        token = ""
        while True:
            q = {"prefix": prefix, "pagesize": str(pagesize)}
            if partial:
                q["partial"] = "true"
            if archive:
                q["flags"] = "8"
            if token:
                q["continuation_token"] = token
            if props:
                q["props"] = props
            d = json.loads(self._call("GET", "/v1/buckets/" + bucket, q)[2])
            if d.get("partial"):
                warnings.warn(PartialListing(bucket, d.get("missing") or []), stacklevel=2)
            yield from d.get("entries") or []
            token = d.get("continuation_token") or ""
            if not token:
                return

    def cluster_map(self):
        """The cluster map ({"version", "nodes", ...}) as the endpoint
        knows it; HTTPError 409 from a node outside a cluster."""
        return json.loads(self._call("GET", "/v1/cluster", {"what": "smap"})[2])

    def list_names(self, bucket, prefix=""):
        return [e["name"] for e in self.list(bucket, prefix, pagesize=10000)]

    # --- GetBatch -----------------------------------------------------------------

    def get_batch(self, bucket, entries, coer=False, onob=False):
        """One GetBatch request (GET /v1/ml/moss/BUCKET) for entries in
        order: each a name, or a dict {"objname", "bucket"?, "archpath"?,
        "start"?, "length"?}. Yields (name, bytes) in request order as the
        tar stream arrives (names as the server sends them: bucket/objname
        [/archpath], or __404__/... for a missing entry with coer=True).
        On a connection error mid-stream the entries not yet yielded are
        asked again, so each is yielded exactly once; after 6 broken streams
        in a row without an entry, ConnectionError. HTTPError when the
        request is refused (with coer=false: 404 for a missing first entry,
        503 for one whose every holder is down; a later one cuts the stream,
        so it ends as an HTTPError on the retry that starts with it, or as a
        ConnectionError). A stream cut by the server never yields the entry
        it was cut in: each yielded entry is whole."""
        ents = [{"objname": e} if isinstance(e, str) else dict(e) for e in entries]
        done, fails = 0, 0
        while done < len(ents):
            body = json.dumps({"in": ents[done:], "mime": ".tar", "coer": bool(coer),
                               "onob": bool(onob), "strm": True}).encode()
            s = self._call("GET", "/v1/ml/moss/" + bucket, body=body,
                           headers={"Content-Type": "application/json"}, stream=True)
            progressed = False
            try:
                for name, data in iter_tar(s):
                    done += 1
                    progressed = True
                    yield name, data
                if done < len(ents):
                    raise HTTPError(502, "GetBatch answered %d of %d entries" % (done, len(ents)), s.url)
            except (OSError, http.client.HTTPException) as e:
                fails = 0 if progressed else fails + 1
                if fails > 5 or self.retry_for <= 0:
                    raise ConnectionError("GetBatch from %s broke after %d of %d entries, %d times in a row "
                                          "(with coer=false a missing entry, or one whose every holder is down, "
                                          "ends the stream): %r"
                                          % (s.url, done, len(ents), fails, e)) from e
                time.sleep(0.1 * fails)
            finally:
                s.close()


def iter_tar(f):
    """Yields (name, bytes) for each regular file of the tar read from the
    file object f as a stream (nothing is held but the current member)."""
    for name, data, _ in iter_members(io.BufferedReader(f, 256 * 1024)):
        yield name, data


def _range(start, length, if_match=None):
    h = {"If-Match": if_match} if if_match else {}
    if start or length is not None:
        end = "" if length is None else "%d" % (start + length - 1)
        h["Range"] = "bytes=%d-%s" % (start, end)
    return h


def _await_continue(sock, timeout):
    """After a request head with Expect: 100-continue: True when the server
    says 100 Continue (consumed here) or says nothing for `timeout` seconds
    (then the body goes anyway, as curl does); False when a final answer came
    first (left unread for http.client)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            return True
        peek = sock.recv(1024, socket.MSG_PEEK)
        if not peek:
            return False  # closed: let getresponse() report it
        if len(peek) < 12:
            time.sleep(0.001)
            continue
        if peek[9:12] != b"100":
            return False
        end = peek.find(b"\r\n\r\n")
        if end < 0:
            time.sleep(0.001)
            continue
        n = end + 4
        while n:
            n -= len(sock.recv(n))
        return True


class _FileBody:
    """A local file as a PUT body: its size, sent with sendfile from offset
    0 each time (so a retry sends it whole again)."""

    def __init__(self, path):
        self.f = open(path, "rb")
        self.size = os.fstat(self.f.fileno()).st_size

    def send(self, sock):
        off = 0
        while off < self.size:
            n = sock.sendfile(self.f, off, self.size - off)
            if not n:
                raise ConnectionError("sendfile: file shrank")
            off += n

    def close(self):
        self.f.close()

    def __len__(self):
        return self.size
