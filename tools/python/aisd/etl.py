"""aisd.etl - turn a Python function into an aisd transformer worker.

A worker reads framed requests on standard input and writes framed answers
on standard output (the stdio protocol of docs/api.md):

    request:  b"AISETL 1 META_LEN ARGS_LEN DATA_LEN\\n" META ARGS DATA
              (META: JSON {"bucket","object","size","version"};
               ARGS: the client's etl_args, UTF-8)
    answer:   b"STATUS LEN\\n" BODY
              (STATUS 200: BODY is the transformed object; else BODY is
               an error message the client sees, with 502)

Usage, in a file given to `aisctl etl init NAME --cmd 'python3 FILE'`:

    from aisd.etl import serve
    serve(lambda data, meta, args: data.upper())

or, over every member of a tar shard (the shard is rebuilt, members kept
in order, names and modes unchanged):

    from aisd.etl import serve_members
    serve_members(lambda name, data, meta, args: data.upper(), ext=(".txt",))

Standard library only. An exception in the function answers 500 with its
text; the worker keeps serving.
"""
import io
import json
import sys
import tarfile
import traceback

__all__ = ["serve", "serve_members", "transform_members"]


def _read_exact(f, n):
    out = bytearray()
    while len(out) < n:
        b = f.read(n - len(out))
        if not b:
            raise EOFError
        out += b
    return bytes(out)


def serve(fn, stdin=None, stdout=None):
    """Runs fn(data: bytes, meta: dict, args: str) -> bytes on every request
    until standard input closes."""
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
        try:
            out = fn(data, meta, args)
            if isinstance(out, str):
                out = out.encode()
            status = 200
        except Exception as e:  # the client sees it; the worker lives on
            traceback.print_exc(file=sys.stderr)
            out = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")
            status = 500
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


def serve_members(fn, ext=None, stdin=None, stdout=None):
    """serve() over tar shards: fn(name, bytes, meta, args) -> bytes per member."""
    serve(lambda data, meta, args: transform_members(fn, data, meta, args, ext), stdin, stdout)
