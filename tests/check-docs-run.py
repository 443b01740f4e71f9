#!/usr/bin/env python3
"""check-docs-run.py - the command blocks of the README's tour and of the
getting-started guide, run as written, in order (make check-docs-run).

For each Markdown file named (default: README.md and the guides,
GUIDES below; not docs/api.md, whose examples name placeholder buckets), a
fresh local cluster is started the way `make run` starts one
(deploy/local/cluster.sh up: 1 gateway, 3 targets) on free loopback ports
below 32768, with its data under a temp dir, and the
lines it prints to paste (PATH, AIS_ENDPOINT and EP, PYTHONPATH, the S3
key pair) are taken into a shell environment that starts bare: a
standard PATH, HOME, TMPDIR and the working directory in the temp dir
(the cluster's directory is ./run there, as for `make run` in the
checkout). Then every fenced block of the file, in order:

  ```sh / ```bash   run with bash -e -o pipefail; the variables it exports,
                    the functions it defines and its working directory
                    carry on to the next block
  ```python         run with the python3 of that PATH, in that environment
  anything else     (```console, ```text, ```json, ```yaml, no language):
                    not a command block; printed examples, output, config

A block that cannot run on one host of a local cluster (several machines,
systemd, root, hardware) is marked in the Markdown by an HTML comment on
the line before its fence, which readers of the source see:

  <!-- norun: WHY -->

It is reported as a skip with its reason, never as a pass (a file whose
every command block is marked so starts no cluster). A block that
the text asks the reader to save as a file (a policy document, a config)
is marked

  <!-- file: NAME -->

and written to NAME in the current working directory when the blocks
before it have run. A block fails
when it exits non-zero or runs past BLOCK_TIMEOUT seconds; the file's
later blocks still run. Afterwards the cluster is stopped (by the pids
cluster.sh recorded) and its logs must hold no error-level line.

Output is TAP (ok / not ok / # SKIP per block, with the failing block's
last output lines as # lines), then one line
  check-docs-run: N blocks ran, N failed, N skipped by design
and the exit status is 1 when a block failed or a log had an error line.

Files run DOCS_JOBS (default 2) at a time, each with its own cluster,
ports and temp dir; the report keeps the order of the files.

Environment: BUILD (default build) holds aisd, aisctl and aisloader;
KEEP=1 keeps the temp dirs (their paths are printed); AISD_PORT_RANGE
LO-HI limits the ports tried (default 20000-31999).
"""
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK_TIMEOUT = 180
UP_TIMEOUT = 120
BARE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RAN = set()  # the blocks that ran (not skipped), by their "FILE:LINE (LANG)"
GUIDES = ["README.md", "docs/getting-started.md", "docs/ml-data.md", "docs/s3.md",
          "docs/remote-ec.md", "docs/deploying.md", "docs/operating.md", "docs/ansible.md"]
PORTS_LOCK = threading.Lock()
PORTS_TAKEN = set()  # bases handed to files running at once


def blocks(path):
    """The fenced blocks of a Markdown file: (line, lang, text, norun);
    lang is "file:NAME" for a block marked to be saved as NAME."""
    out = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = len(m.group(1)), m.group(2), i
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        nr = re.match(r"^\s*<!--\s*norun:\s*(.*?)\s*-->\s*$", prev)
        fm = re.match(r"^\s*<!--\s*file:\s*([\w.-]+)\s*-->\s*$", prev)
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1
        if fm:
            lang = "file:" + fm.group(1)
        out.append((start + 1, lang, "\n".join(body) + "\n", nr.group(1) if nr else None))
    return out


def free_base():
    """A port P with P..P+3 free on 127.0.0.1, all below 32768, and not
    within 8 of a base already handed out."""
    lo, hi = 20000, 31999
    rng = os.environ.get("AISD_PORT_RANGE", "")
    if re.fullmatch(r"\d+-\d+", rng):
        lo, hi = (int(x) for x in rng.split("-"))
    for _ in range(200):
        base = random.randint(lo, max(lo, min(hi, 32767) - 4))
        with PORTS_LOCK:
            if any(abs(base - b) < 8 for b in PORTS_TAKEN):
                continue
            PORTS_TAKEN.add(base)
        socks = []
        try:
            for p in range(base, base + 4):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise SystemExit("check-docs-run: no 4 free ports in a row")


def cluster(cmd, rundir, build, extra=()):
    env = dict(os.environ, BUILD=str(build))
    return subprocess.run([str(ROOT / "deploy/local/cluster.sh"), cmd, "-d", str(rundir), *extra],
                          env=env, capture_output=True, text=True, timeout=UP_TIMEOUT)


def log_errors(rundir):
    bad = []
    for f in sorted(rundir.glob("*/aisd.log*")) + sorted(rundir.glob("*/aisd.out")):
        if f.suffix == ".gz":
            continue
        for line in f.read_text(errors="replace").split("\n"):
            if re.match(r"^\S+ E ", line) or "AddressSanitizer" in line or "runtime error:" in line:
                bad.append(f"{f.relative_to(rundir)}: {line}")
    return bad


def run_file(md, build, results):
    cmds = [(line, lang, norun) for line, lang, _, norun in blocks(ROOT / md) if lang in ("sh", "bash", "python")]
    if cmds and all(norun is not None for _, _, norun in cmds):  # nothing to run: no cluster
        results.extend((f"{md}:{line} ({lang})", [], norun) for line, lang, norun in cmds)
        return False
    tmp = Path(tempfile.mkdtemp(prefix="aisd-docs-run."))
    for d in ("home", "tmp"):
        (tmp / d).mkdir()
    rundir = tmp / "run"
    failed = False
    try:
        r = cluster("up", rundir, build, ["-p", str(free_base())])
        if r.returncode != 0:
            results.append((f"{md}: the cluster starts", [r.stdout[-2000:], r.stderr[-2000:]], None))
            return True
        paste = [x.strip() for x in r.stdout.split("\n") if x.startswith("  export ")]
        if not any("AIS_ENDPOINT=" in x for x in paste):
            results.append((f"{md}: cluster.sh up prints the lines to paste", [r.stdout[-2000:]], None))
            return True
        state = tmp / ".state.sh"
        state.write_text("\n".join(paste) + "\n")
        (tmp / ".cwd").write_text(str(tmp))
        env = {"PATH": BARE_PATH, "HOME": str(tmp / "home"), "TMPDIR": str(tmp / "tmp"),
               "LANG": "C.UTF-8", "TERM": "dumb", "USER": os.environ.get("USER", "root")}
        for line, lang, text, norun in blocks(ROOT / md):
            what = f"{md}:{line} ({lang})"
            if lang.startswith("file:"):
                Path((tmp / ".cwd").read_text().strip(), lang[5:]).write_text(text)
                continue
            if lang not in ("sh", "bash", "python"):
                continue
            if norun is not None:
                results.append((what, [], norun))
                continue
            if lang == "python":
                text = "python3 - <<'AISD_DOCS_PY'\n" + text + "AISD_DOCS_PY\n"
            script = ("set -eo pipefail\n. \"$AISD_DOCS_STATE\"\ncd \"$(cat \"$AISD_DOCS_CWD\")\"\n" + text +
                      "\n{ export -p; declare -f; } >\"$AISD_DOCS_STATE.new\" && mv \"$AISD_DOCS_STATE.new\" \"$AISD_DOCS_STATE\""
                      " && pwd >\"$AISD_DOCS_CWD\"\n")
            benv = dict(env, AISD_DOCS_STATE=str(state), AISD_DOCS_CWD=str(tmp / ".cwd"))
            try:
                p = subprocess.run(["bash", "-c", script], env=benv, cwd=tmp, capture_output=True,
                                   text=True, timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
                rc, out = p.returncode, p.stdout + p.stderr
            except subprocess.TimeoutExpired as e:
                rc = "timeout"
                out = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")) + \
                      ((e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or ""))
            RAN.add(what)
            if rc != 0:
                failed = True
                results.append((what, [f"exit status {rc}; its last output:"] + out.rstrip().split("\n")[-15:], None))
            else:
                results.append((what, [], None))
    finally:
        d = cluster("down", rundir, build) if rundir.exists() else None
        errs = log_errors(rundir) if rundir.exists() else []
        results.append((f"{md}: the cluster stopped, no error lines in its logs",
                        ([] if d is None or d.returncode == 0 else [d.stderr[-500:]]) + errs[:20], None))
        failed = failed or bool(errs)
        if os.environ.get("KEEP") == "1":
            print(f"# kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return failed


def main():
    build = Path(os.environ.get("BUILD", "build"))
    build = (build if build.is_absolute() else (Path.cwd() / build)).resolve()
    if not (build / "aisd").exists():
        build = (ROOT / os.environ.get("BUILD", "build")).resolve()
    if not (build / "aisd").exists():
        print(f"check-docs-run: {build}/aisd not built", file=sys.stderr)
        return 1
    files = sys.argv[1:] or GUIDES
    jobs = int(os.environ.get("DOCS_JOBS", "2")) if os.environ.get("DOCS_JOBS", "2").isdigit() else 2
    per_file = {md: [] for md in files}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for f in [pool.submit(run_file, md, build, per_file[md]) for md in files]:
            f.result()
    results = [r for md in files for r in per_file[md]]
    print(f"1..{len(results)}")
    nfail = nskip = nran = 0
    for n, (what, bad, skip) in enumerate(results, 1):
        if skip is not None:
            nskip += 1
            print(f"ok {n} - {what} # SKIP norun: {skip}")
            continue
        nran += what in RAN
        if bad:
            nfail += 1
            print(f"not ok {n} - {what}")
            for b in bad:
                for x in str(b).split("\n"):
                    print(f"#   {x}")
        else:
            print(f"ok {n} - {what}")
    print(f"check-docs-run: {nran} blocks ran, {nfail} failed, {nskip} skipped by design")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
