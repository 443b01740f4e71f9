#!/usr/bin/env bash
# etl.sh - transforms next to the data, two rows of numbers in one run.
#
# Inline: GET of a 1 MiB object through an identity transformer (a Python
# worker, aisd.etl.serve, over stdio and over http: the same file
# registered twice, --comm stdio and --comm http; and stdio-c and http-c,
# the identity in C, $BUILD/etlident, which splices the bytes from its
# input to its output: what the transform path costs apart from the
# worker's own work) vs a plain GET, on a
# cluster of 1 gateway + 1 target on this host. Each round runs N
# sequential GETs of each kind in turn on one keep-alive connection to
# the target (the gateway's 307 resolved once), workers warm, each GET
# timed alone, the first fifth of each block not counted (the host
# settling after the kind before it), each kind in turns with plain GETs
# of its own, one kind after another (what one kind leaves behind weighs
# on no other's numbers): so that a host whose speed drifts for seconds
# at a time (a shared VM) drifts under both sides of a ratio alike. Prints, per kind, MiB/s at
# the median GET (1 MiB / its time) of it and of its plain GETs and the
# ratio etl / plain, its 90th percentile (ms), and the CPU time
# per GET of the target, the workers and the client and their sum (/proc:
# what a loaded host's wall clock hides; totals over the rounds), with the
# ratio of the sums, plain / etl: the speed ratio where CPU is the limit. With BASE=DIR (a checkout of an earlier tree,
# built: DIR/build/aisd, DIR/tools/python) a second cluster runs that
# build and its aisd.etl, its rounds interleaved with this one's: before
# and after side by side under the same load.
#
# Offline: a cluster of 1 gateway + 3 targets, a WebDataset of NSHARD tar
# shards of NPER real JPEG files each (made with Debian's python3-pil in
# the bench: 640x480 gradients and noise, quality 90), transformed per
# member (decode, resize to 224x224, re-encode at quality 85) two ways, in
# one run: aisctl etl bucket (each target transforms the shards it holds,
# aisd.etl.serve_members) vs a client doing plain GETs and the same
# function in 3 processes. Prints samples/s and the bytes sent to the
# client for each.
#
# usage: BUILD=build tools/bench/etl.sh      (make bench-etl)
#   ROUNDS (default 15), N GETs per round and kind (default 100),
#   WORKERS (default 1), NSHARD (default 12), NPER (default 16),
#   BASE=DIR (before/after), OFFLINE=0 skips the offline row,
#   INLINE=0 the inline one, KEEP=1 keeps the temp dir.
set -euo pipefail
BENCH_NAME=etl
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-15} N=${N:-100} WORKERS=${WORKERS:-1} NSHARD=${NSHARD:-12} NPER=${NPER:-16}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3 # Debian's: python3-pil (the workers run it too: their PATH)
[ -x "$PY" ] || PY=python3
bench_setup etl
chmod 755 "$TMP" # the worker runs as nobody: its scripts must be readable
cat >"$TMP/identity.py" <<'PY'
from aisd.etl import serve
serve(lambda data, meta, args: data)
PY
chmod 644 "$TMP/identity.py"
[ -x "$BUILD/etlident" ] || die "$BUILD/etlident not built (make $BUILD/etlident)"
install -m 755 "$BUILD/etlident" "$TMP/etlident" # where the workers' user may run it

# inline_cluster LABEL DIR AISD PYTHONPATH: a 1-target cluster with the four
# identity transformers; appends "LABEL GW TARGETPID" to $TMP/clusters.
inline_cluster() {
	mkdir -p "$2"
	AISD=$3 start_cluster "$2" 1 --set store.fsync=never || die "no cluster ($1)"
	create_bucket "$GW" eb || die "no bucket"
	"$BUILD/aisctl" -e "$GW" etl init ident --cmd "$PY $TMP/identity.py" --workers "$WORKERS" \
		"PYTHONPATH=$4" >/dev/null || die "etl init failed"
	"$BUILD/aisctl" -e "$GW" etl init identh --comm http --cmd "$PY $TMP/identity.py" --workers "$WORKERS" \
		"PYTHONPATH=$4" >/dev/null || die "etl init --comm http failed"
	"$BUILD/aisctl" -e "$GW" etl init identc --cmd "$TMP/etlident" --workers "$WORKERS" >/dev/null ||
		die "etl init of the C identity failed"
	"$BUILD/aisctl" -e "$GW" etl init identch --comm http --cmd "$TMP/etlident" --workers "$WORKERS" >/dev/null ||
		die "etl init --comm http of the C identity failed"
	echo "$1 $GW ${TGTPID[1]}" >>"$TMP/clusters"
}

if [ "${INLINE:-1}" != 0 ]; then
	: >"$TMP/clusters"
	if [ -n "${BASE:-}" ]; then
		inline_cluster before "$TMP/base" "$BASE/build/aisd" "$BASE/tools/python"
	fi
	inline_cluster "$([ -n "${BASE:-}" ] && echo after || echo this)" "$TMP/inl" "$BUILD/aisd" "$ROOT/tools/python"
	"$PY" - "$TMP/clusters" "$ROUNDS" "$N" <<'PY'
import http.client, os, socket, statistics, struct, sys, time, urllib.parse
clusters = [l.split() for l in open(sys.argv[1])]
rounds, n = int(sys.argv[2]), int(sys.argv[3])
data = bytes(range(256)) * 4096  # 1 MiB
TICK = os.sysconf("SC_CLK_TCK")

def own(pid):
    """utime + stime of pid (every thread), in seconds; 0 once gone."""
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0

def below(pid):
    """Every process below pid (its workers, their shells)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    todo, out = list(kids.get(pid, [])), []
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out

conns = []
for label, gw, tpid in clusters:
    u = urllib.parse.urlsplit(gw)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("PUT", "/v1/objects/eb/obj", body=data); r = c.getresponse(); r.read()
    if r.status == 307:
        loc = urllib.parse.urlsplit(r.getheader("location"))
        t = http.client.HTTPConnection(loc.hostname, loc.port, timeout=60)
        t.request("PUT", loc.path + ("?" + loc.query if loc.query else ""), body=data); r = t.getresponse(); r.read()
    assert r.status == 200, r.status
    c.request("GET", "/v1/objects/eb/obj"); r = c.getresponse(); r.read()
    loc = urllib.parse.urlsplit(r.getheader("location")) if r.status == 307 else u
    # A blocking socket whose timeout is the kernel's (SO_RCVTIMEO): with a
    # Python timeout each read of a body would poll first, a wake-up and
    # two system calls more per piece, the client's cost dwarfing the
    # servers' differences.
    t = http.client.HTTPConnection(loc.hostname, loc.port)
    t.connect()
    for o in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
        t.sock.setsockopt(socket.SOL_SOCKET, o, struct.pack("ll", 60, 0))
    conns.append((label, t, int(tpid)))

KINDS = (("plain", ""), ("stdio", "?etl=ident"), ("http", "?etl=identh"), ("stdio-c", "?etl=identc"),
         ("http-c", "?etl=identch"))
# Each kind runs in turns with plain GETs of its own (pair k: the blocks
# of k and the plain blocks before them), all of a pair's rounds before
# the next pair's, so that what one kind leaves behind on the host (a
# Python worker's freed memory) weighs on no other kind's numbers.
# Seconds per GET and CPU seconds (target, workers, client).
lat = {(l, k, w): [] for l, _, _ in conns for k, _ in KINDS[1:] for w in ("plain", "etl")}
use = {(l, k, w): [0.0, 0.0, 0.0] for l, _, _ in conns for k, _ in KINDS[1:] for w in ("plain", "etl")}

def run(t, q, tpid, kids, acc, times):
    """n GETs, each timed alone (its body checked after), the first fifth
    not kept: the host settling after another kind; the CPU of the
    target, its workers (kids, found once: /proc walked outside the
    rounds) and this client added to acc."""
    a = (own(tpid), sum(own(p) for p in kids), time.process_time())
    for j in range(n):
        t0 = time.perf_counter()
        t.request("GET", "/v1/objects/eb/obj" + q); r = t.getresponse(); b = r.read()
        if j >= n // 5:
            times.append(time.perf_counter() - t0)
        assert r.status == 200 and b == data, (r.status, len(b), b[:200])
    z = (own(tpid), sum(own(p) for p in kids), time.process_time())
    for i in range(3):
        acc[i] += z[i] - a[i]

def mibs(l, k, w):
    return 1 / statistics.median(lat[(l, k, w)])  # 1 MiB objects: MiB/s at the median GET

def ms(l, k, w):
    """CPU ms per GET: target, workers, client, their sum."""
    u, cnt = use[(l, k, w)], rounds * n
    return [x * 1000 / cnt for x in u] + [sum(u) * 1000 / cnt]

for label, t, tpid in conns:  # start the workers
    for _, q in KINDS[1:]:
        run(t, q, tpid, [], [0.0] * 3, [])
kids = {tpid: below(tpid) for _, _, tpid in conns}
for k, q in KINDS[1:]:  # one pair at a time: its rounds, then the next pair's
    for i in range(rounds):
        for label, t, tpid in conns:
            for w, qq in (("plain", ""), ("etl", q)):
                run(t, qq, tpid, kids[tpid], use[(label, k, w)], lat[(label, k, w)])
    print("%s: %s" % (k, ", ".join("%s %.2fx" % (l, mibs(l, k, "etl") / mibs(l, k, "plain")) for l, _, _ in conns)))

print("| build | mode | plain GET (MiB/s) | GET ?etl= (MiB/s) | etl/plain | p90 ms (etl) | CPU ms per GET (etl): "
      "target | workers | client | all | CPU plain/etl |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for label, _, _ in conns:
    for k, _ in KINDS[1:]:
        mp, cp, me, ce = mibs(label, k, "plain"), ms(label, k, "plain"), mibs(label, k, "etl"), ms(label, k, "etl")
        p90 = sorted(lat[(label, k, "etl")])[len(lat[(label, k, "etl")]) * 9 // 10] * 1000
        print("| %s | %s | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |"
              % (label, k, mp, me, me / mp, p90, *ce, cp[3] / ce[3]))
    print("| %s | (plain, all pairs) | | | | | %.2f | | %.2f | %.2f | |" % (label, *[
        sum(ms(label, k, "plain")[j] for k, _ in KINDS[1:]) / (len(KINDS) - 1) for j in (0, 2, 3)]))
PY
	stop_all
fi

[ "${OFFLINE:-1}" = 0 ] && exit 0
# --- offline: etl bucket on 3 targets vs plain GETs + the transform on a client ---
"$PY" -c 'import PIL' 2>/dev/null || die "python3-pil is missing (make deps installs it)"
mkdir -p "$TMP/off"
start_cluster "$TMP/off" 3 --set store.fsync=never || die "no 3-target cluster"
create_bucket "$GW" wsrc || die "no bucket"
create_bucket "$GW" wdst || die "no bucket"
cat >"$TMP/resize.py" <<'PY'
import io
from PIL import Image
def resize(name, data, *_):
    """A JPEG decoded, resized to 224x224 and encoded again."""
    im = Image.open(io.BytesIO(data)).convert("RGB").resize((224, 224), Image.BILINEAR)
    out = io.BytesIO()
    im.save(out, "JPEG", quality=85)
    return out.getvalue()
if __name__ == "__main__":
    from aisd.etl import serve_members
    serve_members(resize, ext=(".jpg",))
PY
chmod 644 "$TMP/resize.py"
"$BUILD/aisctl" -e "$GW" etl init resize --cmd "$PY $TMP/resize.py" --workers 1 --timeout 120s \
	"PYTHONPATH=$ROOT/tools/python" >/dev/null || die "etl init failed"
PYTHONPATH="$TMP:$ROOT/tools/python" "$PY" - "$GW" "$NSHARD" "$NPER" "$BUILD/aisctl" <<'PY'
import http.client, io, json, multiprocessing, os, random, subprocess, sys, tarfile, time, urllib.parse
from PIL import Image
from resize import resize
from aisd.etl import transform_members
gw, nshard, nper, ctl = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def req(method, path, body=None):
    u = urllib.parse.urlsplit(gw)
    for _ in range(3):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        c.request(method, path, body=body)
        r = c.getresponse(); b = r.read(); c.close()
        if r.status != 307:
            return r.status, b
        u = urllib.parse.urlsplit(r.getheader("location"))
        path = u.path + ("?" + u.query if u.query else "")
    return r.status, b

def jpeg(seed):
    """A real JPEG: a 640x480 gradient under noise, quality 90."""
    rnd = random.Random(seed)
    im = Image.merge("RGB", [Image.linear_gradient("L").resize((640, 480)).rotate(rnd.randrange(360)),
                             Image.effect_noise((640, 480), rnd.randrange(20, 80)),
                             Image.radial_gradient("L").resize((640, 480))])
    out = io.BytesIO()
    im.save(out, "JPEG", quality=90)
    return out.getvalue()

names, src_bytes, t0 = [], 0, time.monotonic()
for s in range(nshard):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for k in range(nper):
            for ext, body in ((".jpg", jpeg(s * 1000 + k)), (".cls", b"%d" % (k % 10))):
                ti = tarfile.TarInfo("s%05d%s" % (s * nper + k, ext))
                ti.size = len(body)
                tf.addfile(ti, io.BytesIO(body))
    name = "shard-%05d.tar" % s
    st, _ = req("PUT", "/v1/objects/wsrc/" + name, buf.getvalue())
    assert st == 200, st
    names.append(name)
    src_bytes += len(buf.getvalue())
nsamp = nshard * nper
print("dataset: %d shards, %d JPEGs, %.1f MiB (made in %.1f s)" % (nshard, nsamp, src_bytes / 1048576, time.monotonic() - t0))

out = subprocess.run([ctl, "-e", gw, "etl", "bucket", "resize", "wsrc", "wdst"], capture_output=True, text=True)
t0 = time.monotonic()
w = out.stdout.split()
assert "job" in w, out.stdout + out.stderr
rid = w[w.index("job") + 1]
while True:
    st, b = req("GET", "/v1/jobs?id=" + rid)
    run = (json.loads(b).get("runs") or [{}])[0]
    if run.get("state") not in (None, "running"):
        break
    time.sleep(0.05)
dt_off = time.monotonic() - t0
assert run.get("state") == "done", run
st, b = req("GET", "/v1/objects/wdst/" + names[0])
assert st == 200 and Image.open(io.BytesIO(tarfile.open(fileobj=io.BytesIO(b)).extractfile("s00000.jpg").read())).size == (224, 224)

def client(n):
    st, b = req("GET", "/v1/objects/wsrc/" + n)
    assert st == 200
    return len(b), len(transform_members(resize, b, ext=(".jpg",)))

t0 = time.monotonic()
with multiprocessing.Pool(3) as p:
    res = p.map(client, names)
dt_cli = time.monotonic() - t0
got = sum(r[0] for r in res)
print("| way | samples | time (s) | samples/s | bytes to the client |")
print("|---|---:|---:|---:|---:|")
print("| etl bucket, 3 targets, 1 worker each | %d | %.2f | %.1f | 0 |" % (nsamp, dt_off, nsamp / dt_off))
print("| client: plain GET + the same transform, 3 processes | %d | %.2f | %.1f | %.1f MiB |"
      % (nsamp, dt_cli, nsamp / dt_cli, got / 1048576))
print("offline / client samples/s: %.2f" % (dt_cli / dt_off))
PY
