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
import http.server
import io
import json
import os
import socket
import socketserver
import sys
import tarfile
import traceback

__all__ = ["serve", "serve_http", "serve_members", "transform_members"]


def _read_exact(f, n):
    """n bytes of f, read into one buffer (a socket's reader hands out small
    pieces: appending them costs more than the transform)."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            raise EOFError
        got += k
    return bytes(buf)


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


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection, as aisd sends

    def do_PUT(self):
        from urllib.parse import unquote_to_bytes
        n = int(self.headers.get("Content-Length") or 0)
        data = _read_exact(self.rfile, n) if n else b""
        meta = json.loads(unquote_to_bytes(self.headers.get("Ais-Etl-Meta", "")) or b"{}")
        args = unquote_to_bytes(self.headers.get("Ais-Etl-Args", "")).decode("utf-8", "replace")
        status, out = _call(self.server.fn, data, meta, args)
        self.send_response(status)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_POST = do_PUT

    def log_message(self, fmt, *a):  # the log is for errors
        pass


class _UnixServer(socketserver.UnixStreamServer):
    def __init__(self, fn, sock):
        super().__init__(None, _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.fn = fn

    def get_request(self):
        conn, _ = self.socket.accept()
        return conn, ("aisd", 0)


def serve_http(fn, fd=None):
    """Serves fn over HTTP on the listening unix socket aisd gave the worker
    (descriptor fd, default AISD_ETL_FD or 3) until the worker is killed."""
    fd = int(os.environ.get("AISD_ETL_FD", "3")) if fd is None else fd
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    _UnixServer(fn, sock).serve_forever()


def serve(fn, stdin=None, stdout=None, comm=None):
    """Runs fn(data: bytes, meta: dict, args: str) -> bytes on every request:
    over stdio until standard input closes, or over HTTP (comm="http", or
    AISD_ETL_COMM=http in the environment)."""
    if (comm or os.environ.get("AISD_ETL_COMM", "stdio")) == "http":
        return serve_http(fn)
    rd = stdin or sys.stdin.buffer
    wr = stdout or sys.stdout.buffer
    while True:
        line = rd.readline(128)
        if not line:
            return
        parts = line.split()
        if len(parts) != 5 or parts[0] != b"AISETL" or parts[1] != b"1":
            sys.stderr.write("aisd.etl: malformed request header %r\n" % line[:64])
            return
        ml, al, dl = (int(x) for x in parts[2:])
        try:
            meta = json.loads(_read_exact(rd, ml) or b"{}")
            args = _read_exact(rd, al).decode("utf-8", "replace")
            data = _read_exact(rd, dl)
        except EOFError:
            return
        status, out = _call(fn, data, meta, args)
        wr.write(b"%d %d\n" % (status, len(out)))
        wr.write(out)
        wr.flush()


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
