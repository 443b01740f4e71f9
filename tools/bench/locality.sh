#!/usr/bin/env bash
# locality.sh - make bench-ml: locality-aware loading and the node cache,
# measured where the network is the bottleneck, beside the predictions of
# aisd.model (python3 -m aisd.model).
#
# Runs tests/integration/test_netns_locality.py (root: a gateway and 4
# targets in network namespaces, links limited to 8 Mbit/s each way with tc,
# 2 ranks x 2 DataLoader workers on every target's node, 32 shards of 1 MiB,
# 2 copies) with LOC_RESULTS set, then writes $BUILD/bench-locality.md:
# seconds per epoch and bytes over the links for locality off/on (epochs 1
# and 2: after the first) and for a node with no target, cache off (its
# first epoch: every byte comes over its link) and on (its second), each
# with the model's prediction and the error. The model gets the link rate,
# the dataset and sample sizes, and one measured rate: the training
# pipeline's samples/s per rank, taken from the locality run's epoch 1
# (that row is a calibration, the others are predictions).
# Without root or namespaces it says so and exits 0 (nothing measured).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
if [ "$(id -u)" != 0 ]; then
	echo "locality.sh: not root (network namespaces): skipped, nothing measured"
	exit 0
fi
out=$BUILD/bench-locality.json
rm -f "$out"
ONLY=test_netns_locality LOC_RESULTS=$out BUILD=$BUILD "$REPO/tests/integration/run.sh" | tail -n 30 || true
[ -s "$out" ] || { echo "locality.sh: no measurements (see the test's output above)" >&2; exit 1; }
PYTHONPATH=$REPO/tools/python /usr/bin/python3 - "$out" "$BUILD/bench-locality.md" <<'PY'
import json, sys
from aisd.model import parse_size, predict
m = json.load(open(sys.argv[1]))
B = parse_size(m["rate"])
D, Ds = m["dataset"], m["small_dataset"]
n_samples = m["plain"][0]["samples"]
s = D / n_samples
per_rank = m["locality"][1]["samples"] / m["locality"][1]["secs"] / m["ranks"]  # calibration
kw = dict(dataset=D, sample=s, storage=1e9, network=B, train=per_rank, preprocess=per_rank, ranks_per_node=2)
rows = []
def row(what, meas_s, meas_b, pred):
    err = (pred["secs"] - meas_s) / meas_s * 100
    rows.append("| %s | %.2f | %.1f | %.2f | %.1f | %+.0f%% |" % (what, meas_s, meas_b / 1e6, pred["secs"],
                                                                 pred["net_bytes"] / 1e6, err))
for mode, key in (("plain", "plain"), ("locality", "locality")):
    ep = [m[key][1], m[key][2]]
    secs = sum(e["secs"] for e in ep) / 2
    cross = sum(e["link_bytes"] for e in ep) / 2 / 2  # each cross-node byte passes two target links
    row("locality %s (8 ranks, 4 nodes)" % ("on" if key == "locality" else "off"), secs, cross,
        predict(8, **kw)[mode])
cs = dict(kw, dataset=Ds, sample=s, targets=4, cache=1 << 30)
for ep, label, first in ((0, "cache off (first epoch)", True), (1, "cache on (second epoch)", False)):
    e = m["cache"][ep]
    row("no-target node, %s, 2 ranks" % label, e["secs"], e["link_bytes"],
        predict(2, **dict(cs, first_epoch=first))["locality"])
md = ["| run | measured s/epoch | measured MB over links | model s/epoch | model MB | model error (time) |",
      "|---|---:|---:|---:|---:|---:|"] + rows
md.append("")
md.append("links %s each way; dataset %.1f MB (%d samples of ~%.0f KB); model training rate %.0f samples/s per "
          "rank (from the locality-on run: a calibration)" % (m["rate"], D / 1e6, n_samples, s / 1e3, per_rank))
open(sys.argv[2], "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
