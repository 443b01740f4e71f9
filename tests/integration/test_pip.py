"""test_pip.py - the Python package installed with pip, as a user installs
it, against the aisd this harness started (AISD_URL).

Checks:
 1. `make wheel` built BUILD/dist/aisd-VERSION-py3-none-any.whl, and its
    version is the daemon's (include/aisd/version.h) and the source's
    (aisd.__version__).
 2. A fresh venv without the system's packages (no torch): `pip install
    --no-index` of the wheel; `import aisd` works from another directory
    with no PYTHONPATH; the scripts aisd-shard, aisd-plan, aisd-model and
    `python -m aisd.shard|plan|model` answer --help; the installed files
    are under the venv only.
 3. From that venv: the shard tool packs a directory of samples into a
    bucket; the Client lists them; ShardDataset (a plain iterable without
    torch) yields every sample once, byte for byte.
 4. A second venv that sees the system's packages (Debian's python3-torch):
    `pip install` of the source folder (a copy, so the tree stays clean);
    torch's DataLoader with 2 workers over ShardDataset yields every sample
    once.
 5. `pip uninstall` leaves no aisd behind: import fails, scripts gone.
"""
# serial: installs Python packages
# timeout: 240
import glob
import os
import random
import re
import shutil
import subprocess
import tempfile

from itlib import T

t = T()
URL = os.environ["AISD_URL"]
ROOT = os.path.abspath(os.path.join(os.environ["IT_LIB"], "..", ".."))
DIST = os.path.join(os.path.dirname(os.environ["AISD_BIN"]), "dist")
TMP = tempfile.mkdtemp(prefix="pip.")
PY = "/usr/bin/python3"
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
ENV["PIP_NO_INDEX"] = "1"  # nothing from a package index: the wheel and the folder only
ENV["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"


def run(args, cwd=TMP, timeout=120):
    return subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)


def venv(name, system):
    d = os.path.join(TMP, name)
    r = run([PY, "-m", "venv"] + (["--system-site-packages"] if system else []) + [d])
    t.check(r.returncode == 0, "venv %s created" % name, r.stderr[-500:])
    return os.path.join(d, "bin")


with open(os.path.join(ROOT, "include", "aisd", "version.h")) as f:
    VERSION = re.search(r'#define AISD_VERSION "([^"]+)"', f.read()).group(1)
with open(os.path.join(ROOT, "tools", "python", "aisd", "__init__.py")) as f:
    SRCVER = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)
WHEEL = os.path.join(DIST, "aisd-%s-py3-none-any.whl" % VERSION)
t.check(SRCVER == VERSION, "aisd.__version__ is the daemon's version", (SRCVER, VERSION))
if not t.check(os.path.isfile(WHEEL), "make wheel built %s" % os.path.basename(WHEEL), os.listdir(DIST)
               if os.path.isdir(DIST) else "no %s: run make wheel" % DIST):
    t.finish()

# 2. the wheel in a venv of its own
b1 = venv("plain", False)
r = run([os.path.join(b1, "pip"), "install", "-q", "--no-deps", WHEEL])
t.check(r.returncode == 0, "pip install of the wheel", r.stderr[-800:])
r = run([os.path.join(b1, "python"), "-c",
         "import aisd, sys\ntry:\n import torch\n print('torch')\nexcept ImportError:\n print('no torch')\n"
         "print(aisd.__version__, aisd.__file__)"])
out = r.stdout.split()
t.check(r.returncode == 0 and out[:2] == ["no", "torch"] and out[2] == VERSION and out[3].startswith(TMP),
        "import aisd from the venv (no PYTHONPATH, no torch): version and path", (r.stdout, r.stderr[-500:]))
for s in ("aisd-shard", "aisd-plan", "aisd-model"):
    r = run([os.path.join(b1, s), "--help"])
    t.check(r.returncode == 0 and "usage:" in r.stdout, "%s --help" % s, (r.returncode, r.stderr[-300:]))
for m in ("aisd.shard", "aisd.plan", "aisd.model"):
    r = run([os.path.join(b1, "python"), "-m", m, "--help"])
    t.check(r.returncode == 0 and "usage:" in r.stdout, "python -m %s --help" % m, r.stderr[-300:])

# 3. the shard tool, the client and ShardDataset from that venv
src = os.path.join(TMP, "samples")
os.makedirs(src)
rnd = random.Random(7)
files = {}
for i in range(60):
    for ext, n in ((".jpg", rnd.randint(1, 9000)), (".cls", 2)):
        name = "%06d%s" % (i, ext)
        data = rnd.randbytes(n) if ext == ".jpg" else b"%d\n" % (i % 5)
        files[name] = data
        with open(os.path.join(src, name), "wb") as f:
            f.write(data)
r = run([os.path.join(b1, "python"), "-c",
         "import aisd; aisd.Client(%r).create_bucket('pip', exist_ok=True)" % URL])
t.check(r.returncode == 0, "bucket created from the venv", r.stderr[-500:])
r = run([os.path.join(b1, "aisd-shard"), "--size", "64K", "--endpoint", URL, src, "ais://pip/train/"])
t.check(r.returncode == 0, "aisd-shard packs the samples into the bucket", r.stderr[-800:])

READ = """
import aisd, sys
c = aisd.Client(%r)
shards = c.list_names("pip", "train/")
print("shards", len(shards))
ds = aisd.ShardDataset(c, bucket="pip", prefix="train/", seed=3)
%s
seen = {}
for s in it:
    key = s["__key__"]
    for ext, data in s.items():
        if not ext.startswith("__"):
            seen.setdefault(key + "." + ext.lstrip("."), []).append(data)
out = sys.argv[1]
with open(out, "w") as f:
    for name, blobs in sorted(seen.items()):
        f.write("%%s %%d %%s\\n" %% (name, len(blobs), ",".join(b.hex() for b in blobs)))
"""


def read_back(bindir, loop, tag):
    out = os.path.join(TMP, tag + ".txt")
    r = run([os.path.join(bindir, "python"), "-c", READ % (URL, loop), out], cwd=TMP, timeout=180)
    if not t.check(r.returncode == 0, "%s: ShardDataset reads the bucket" % tag, (r.stdout, r.stderr[-1500:])):
        return
    got = {}
    with open(out) as f:
        for line in f:
            name, n, hexes = line.rstrip("\n").split(" ")
            got[name] = (int(n), [bytes.fromhex(h) for h in hexes.split(",")] if hexes else [b""])
    twice = [n for n, (k, _) in got.items() if k != 1]
    bad = [n for n, (k, blobs) in got.items() if k == 1 and files.get(n) != blobs[0]]
    t.check(set(got) == set(files) and not twice and not bad,
            "%s: every sample once, byte for byte (%d files)" % (tag, len(files)),
            {"missing": sorted(set(files) - set(got))[:5], "extra": sorted(set(got) - set(files))[:5],
             "twice": twice[:5], "differ": bad[:5]})


read_back(b1, "it = iter(ds)", "no torch")

# 4. the source folder in a venv that sees Debian's torch
b2 = venv("system", True)
srccopy = os.path.join(TMP, "pysrc")
shutil.copytree(os.path.join(ROOT, "tools", "python"), srccopy,
                ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
r = run([os.path.join(b2, "pip"), "install", "-q", "--no-deps", "--no-build-isolation", srccopy], timeout=180)
t.check(r.returncode == 0, "pip install of the source folder", r.stderr[-800:])
r = run([os.path.join(b2, "python"), "-c", "import aisd, torch; print(aisd.__file__)"])
t.check(r.returncode == 0 and r.stdout.startswith(os.path.join(TMP, "system")),
        "the second venv imports its own aisd and the system's torch", (r.stdout, r.stderr[-500:]))
read_back(b2, "import torch.utils.data as tud\nit = (dict(s) for s in tud.DataLoader(ds, batch_size=None, "
          "num_workers=2))", "torch DataLoader")

# 5. uninstall
r = run([os.path.join(b1, "pip"), "uninstall", "-y", "aisd"])
r2 = run([os.path.join(b1, "python"), "-c", "import aisd"])
left = [p for d in glob.glob(os.path.join(TMP, "plain", "lib", "python*", "site-packages"))
        for p in os.listdir(d) if p.startswith("aisd")]
t.check(r.returncode == 0 and r2.returncode != 0 and not left and not os.path.exists(os.path.join(b1, "aisd-shard")),
        "pip uninstall leaves no aisd behind", (r.stderr[-300:], left))

shutil.rmtree(TMP, ignore_errors=True)
t.finish()
