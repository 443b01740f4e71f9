"""aisd.etl - turn a Python function into an aisd transformer worker.

A worker reads framed requests on standard input and writes framed answers
on standard output (the stdio protocol of docs/api.md):

    request:  b"AISETL 1 META_LEN ARGS_LEN DATA_LEN\\n" META ARGS DATA
              (META: JSON {"bucket","object","size","version"};
               ARGS: the client's etl_args, UTF-8)
    answer:   b"STATUS LEN\\n" BODY
              (STATUS 200: BODY is the transformed object; else BODY is
               an error message the client sees, with 502)

or, with `aisctl etl init NAME --comm http`, an HTTP/1.1 server on a unix
socket aisd made for the worker (its listening descriptor is 3, AISD_ETL_FD;
its path AISD_ETL_SOCKET): each request is `PUT /` with the object's bytes as
the body and the headers Ais-Etl-Meta and Ais-Etl-Args (percent-encoded);
the answer's status and body play the frame's parts.

Usage, in a file given to `aisctl etl init NAME --cmd 'python3 FILE'`:

    from aisd.etl import serve
    serve(lambda data, meta, args: data.upper())

or, over every member of a tar shard (the shard is rebuilt, members kept
in order, names and modes unchanged):

    from aisd.etl import serve_members
    serve_members(lambda name, data, meta, args: data.upper(), ext=(".txt",))

serve() and serve_members() speak the protocol the worker was started for
(AISD_ETL_COMM, set by aisd: "http" or absent for stdio); comm="http" or
comm="stdio" forces one. Standard library only. An exception in the function answers 500 with its
text; the worker keeps serving.
"""
import io
import json
import os
import select
import socket
import sys
import tarfile
import traceback
from urllib.parse import unquote_to_bytes

__all__ = ["serve", "serve_http", "serve_members", "transform_members"]

_HEAD_READ = 32  # a pipe's head read: little of the body comes with it
_HEAD_PEEK = 4096  # a socket's head: bytes peeked at once to find its end
_HEAD_MAX = 65536  # an HTTP request's head


class _Reader:
    """Reads of a descriptor (a pipe or a socket): a line from small reads
    (a pipe), a head found in the socket's peeked bytes; a body in reads of
    all that is left, each a bytes object of its own, joined only when it
    came in pieces (a file object's small pieces, copied and appended, cost
    more than the transform)."""

    def __init__(self, fd, sock=None):
        self.fd, self.sock, self.buf = fd, sock, b""
        if sock:
            self.poll = select.poll()
            self.poll.register(sock, select.POLLIN)

    def _read(self, n, whole=False):
        if self.sock:  # whole: one buffer filled by the kernel, no pieces to join
            b = self.sock.recv(n, socket.MSG_WAITALL if whole else 0)
        else:
            b = os.read(self.fd, n)
        if not b:
            raise EOFError
        return b

    def until(self, sep, limit):
        """The bytes up to and including sep; None at EOF before any byte.
        On a socket nothing past sep is taken (the kernel's bytes are
        peeked first), so the body that follows comes whole from exact()
        in one read, never in pieces joined by a copy."""
        while True:
            i = self.buf.find(sep, 0, limit)
            if i >= 0:
                out, self.buf = self.buf[: i + len(sep)], self.buf[i + len(sep):]
                return out
            if len(self.buf) >= limit:
                raise ValueError("no %r in the first %d bytes" % (sep, limit))
            try:
                self.buf += self._head_read(sep, limit)
            except EOFError:
                if self.buf:
                    raise
                return None

    def _head_read(self, sep, limit):
        """The next bytes of a head: a pipe's small read; on a socket, the
        bytes waiting there up to the end of sep (or all of them, when sep
        is not among them: every one belongs to the head)."""
        if not self.sock:
            return self._read(_HEAD_READ)
        # Waits in poll, not in recv: a recv asleep on a unix socket is woken
        # each time aisd takes one of the last answer's buffers off it (the
        # socket's write space is signalled on the queue recv sleeps on),
        # some 30 wake-ups per MiB; poll wakes for input only.
        self.poll.poll()
        peek = self.sock.recv(min(_HEAD_PEEK, limit - len(self.buf)), socket.MSG_PEEK)
        if not peek:
            raise EOFError
        back = len(sep) - 1  # sep may begin in bytes already taken
        start = max(0, len(self.buf) - back)
        i = (self.buf[start:] + peek).find(sep)
        n = len(peek) if i < 0 else i + len(sep) - (len(self.buf) - start)
        return self._read(n, True)

    def exact(self, n):
        if len(self.buf) >= n:
            out, self.buf = self.buf[:n], self.buf[n:]
            return out
        parts, got = [self.buf] if self.buf else [], len(self.buf)
        self.buf = b""
        while got < n:
            b = self._read(n - got, True)
            parts.append(b)
            got += len(b)
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _write_all(fd, parts, sock=None):
    """parts written whole, in as few system calls as the kernel allows."""
    parts = [memoryview(p).cast("B") for p in parts if len(p)]
    while parts:
        n = sock.sendmsg(parts) if sock else os.writev(fd, parts)
        while parts and n >= len(parts[0]):
            n -= len(parts[0])
            parts.pop(0)
        if parts and n:
            parts[0] = parts[0][n:]


def _call(fn, data, meta, args):
    """(status, bytes) of fn on one request; an exception answers 500."""
    try:
        out = fn(data, meta, args)
        if isinstance(out, str):
            out = out.encode()
        return 200, out
    except Exception as e:  # the client sees it; the worker lives on
        traceback.print_exc(file=sys.stderr)
        return 500, ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")


_REASON = {200: b"OK", 400: b"Bad Request", 500: b"Internal Server Error"}


def _serve_conn(fn, conn):
    """HTTP/1.1 requests on one connection until the peer closes it (aisd
    keeps it open across requests) or asks for Connection: close."""
    rd = _Reader(None, conn)
    while True:
        head = rd.until(b"\r\n\r\n", _HEAD_MAX)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        hdrs = {}
        for ln in lines[1:]:
            k, sep, v = ln.partition(":")
            if sep:
                hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length") or 0)
        data = rd.exact(n) if n else b""
        meta = json.loads(unquote_to_bytes(hdrs.get("ais-etl-meta", "")) or b"{}")
        args = unquote_to_bytes(hdrs.get("ais-etl-args", "")).decode("utf-8", "replace")
        status, out = _call(fn, data, meta, args)
        close = hdrs.get("connection", "").lower() == "close" or lines[0].endswith("HTTP/1.0")
        _write_all(None, [b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\n%s\r\n"
                          % (status, _REASON.get(status, b"Error"), len(out),
                             b"Connection: close\r\n" if close else b""), out], conn)
        if close:
            return


def serve_http(fn, fd=None):
    """Serves fn over HTTP/1.1 on the listening unix socket aisd gave the
    worker (descriptor fd, default AISD_ETL_FD or 3) until the worker is
    killed: one connection at a time, kept open across requests until aisd
    closes it."""
    fd = int(os.environ.get("AISD_ETL_FD", "3")) if fd is None else fd
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    while True:
        conn, _ = lsock.accept()
        try:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 << 20)  # an answer in one handoff
            _serve_conn(fn, conn)
        except (OSError, EOFError, ValueError) as e:
            sys.stderr.write("aisd.etl: connection dropped: %s\n" % e)
        finally:
            conn.close()


def _keep_heap():
    """glibc hands the heap back after every freed object of a MiB and
    faults it in again for the next (most of a worker's time, on small
    objects): kept up to 256 MiB. Best effort; other C libraries as they are."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 256 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def serve(fn, stdin=None, stdout=None, comm=None):
    """Runs fn(data: bytes, meta: dict, args: str) -> bytes on every request:
    over stdio until standard input closes, or over HTTP (comm="http", or
    AISD_ETL_COMM=http in the environment)."""
    _keep_heap()
    if (comm or os.environ.get("AISD_ETL_COMM", "stdio")) == "http":
        return serve_http(fn)
    rd = _Reader((stdin or sys.stdin.buffer).fileno())
    wfd = (stdout or sys.stdout.buffer).fileno()
    while True:
        try:
            line = rd.until(b"\n", 128)
        except (EOFError, ValueError):
            line = b"?"
        if line is None:
            return
        parts = line.split()
        if len(parts) != 5 or parts[0] != b"AISETL" or parts[1] != b"1":
            sys.stderr.write("aisd.etl: malformed request header %r\n" % line[:64])
            return
        ml, al, dl = (int(x) for x in parts[2:])
        try:
            meta = json.loads(rd.exact(ml) or b"{}")
            args = rd.exact(al).decode("utf-8", "replace")
            data = rd.exact(dl)
        except EOFError:
            return
        status, out = _call(fn, data, meta, args)
        _write_all(wfd, [b"%d %d\n" % (status, len(out)), out])


def transform_members(fn, data, meta=None, args="", ext=None):
    """A tar shard with fn(name, bytes, meta, args) -> bytes applied to each
    regular member (only those whose name ends with one of ext, if given)."""
    src = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    buf = io.BytesIO()
    dst = tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT)
    for m in src:
        body = src.extractfile(m).read() if m.isfile() else None
        if body is not None and (not ext or m.name.endswith(tuple(ext))):
            body = fn(m.name, body, meta or {}, args)
            m.size = len(body)
        dst.addfile(m, io.BytesIO(body) if body is not None else None)
    dst.close()
    return buf.getvalue()


def serve_members(fn, ext=None, stdin=None, stdout=None, comm=None):
    """serve() over tar shards: fn(name, bytes, meta, args) -> bytes per member."""
    serve(lambda data, meta, args: transform_members(fn, data, meta, args, ext), stdin, stdout, comm)
