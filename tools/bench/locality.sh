#!/usr/bin/env bash
# locality.sh - make bench-locality (and, as a quick subset, part of make
# bench-ml): locality-aware loading and the node cache, measured where the
# network is the bottleneck, beside the predictions of aisd.model.
#
# For every configuration of the matrix (tools/bench/locality.py runs one:
# an aisd cluster in network namespaces, a gateway and NODES targets, every
# link limited with tc tbf; ranks in the targets' namespaces; rows appended
# to $BUILD/bench-locality.jsonl), then writes $BUILD/bench-locality.md:
# plain vs locality (seconds per epoch, samples/s and the speedup,
# cross-node bytes and their share of plain's, the busiest link), and the
# node cache of a node with no target at CACHES x its share under each
# policy (hit rate, bytes over its link, seconds), each with the model's
# prediction and its error.
#
#   MATRIX=full (make bench-locality): NODES="4 8" COPIES="1 2"
#     RATES="4mbit 8mbit 32mbit" CACHES=0.25,0.5,1,2, cache rows at every
#     rate; hours on a shared 2-core machine.
#   MATRIX=quick (the default; make bench-ml): NODES=4 COPIES=2 RATES=8mbit
#     CACHES=0.5.
#   Any of NODES, COPIES, RATES, CACHES, CACHE_RATES (rates that get cache
#   rows), POLICIES ("belady lru"), PREFETCH (the prefetcher's budget in
#   the belady rows, a rate or "half" of the link's, the default; empty:
#   none), RANKS_PER_NODE (2),
#   WORKERS (2), SHARDS_PER_NODE (64), SHARD_KIB (64), SAMPLE_KIB (16)
#   overrides (the shape: many small shards per target, as a real dataset
#   has; with few, copies 1 measures HRW's uneven placement, see
#   locality.py). The
#   model's training rate is this machine's, measured in each
#   configuration (locality.py). KEEP_JSONL=1 appends to the previous rows instead of
#   starting over.
# Everything runs under nice -n 10. Without root or namespaces it says so
# and exits 0 (nothing measured).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
if [ "$(id -u)" != 0 ]; then
	echo "locality.sh: not root (network namespaces): skipped, nothing measured"
	exit 0
fi
if [ "${MATRIX:-quick}" = full ]; then
	: "${NODES:=4 8}" "${COPIES:=1 2}" "${RATES:=4mbit 8mbit 32mbit}" "${CACHES=0.25,0.5,1,2}"
	: "${CACHE_RATES:=$RATES}"
else
	: "${NODES:=4}" "${COPIES:=2}" "${RATES:=8mbit}" "${CACHES=0.5}"
	: "${CACHE_RATES:=8mbit}"
fi
POLICIES=${POLICIES:-belady lru}
PREFETCH=${PREFETCH-half}
out=$BUILD/bench-locality.jsonl
[ "${KEEP_JSONL:-0}" = 1 ] || rm -f "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aisd-locality.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export AISD_BIN=$BUILD/aisd AISD_DIR=$tmp IT_LIB=$REPO/tests/integration TMPDIR=$tmp
done_cache=""
for n in $NODES; do
	for c in $COPIES; do
		for r in $RATES; do
			caches="[]"
			[ -n "$CACHES" ] || CACHE_RATES=""
			# cache rows (a node with no target) do not depend on copies:
			# once per node count and rate
			case " $CACHE_RATES " in *" $r "*)
				case " $done_cache " in *" $n/$r "*) ;; *)
					caches="[$CACHES]"
					done_cache="$done_cache $n/$r" ;;
				esac ;;
			esac
			pols=$(printf '"%s",' $POLICIES)
			cfg=$(printf '{"nodes": %d, "copies": %d, "rate": "%s", "ranks_per_node": %d, "workers": %d, "shards_per_node": %d, "shard_kib": %d, "sample_kib": %d, "caches": %s, "policies": [%s], "prefetch": %s, "out": "%s"}' \
				"$n" "$c" "$r" "${RANKS_PER_NODE:-2}" "${WORKERS:-2}" "${SHARDS_PER_NODE:-64}" "${SHARD_KIB:-64}" "${SAMPLE_KIB:-16}" \
				"$caches" "${pols%,}" "$( [ -n "$PREFETCH" ] && echo "\"$PREFETCH\"" || echo null)" "$out")
			echo "== $cfg"
			nice -n 10 /usr/bin/python3 "$HERE/locality.py" "$cfg" || echo "locality.py failed for $cfg" >&2
		done
	done
done
[ -s "$out" ] || { echo "locality.sh: no measurements" >&2; exit 1; }
PYTHONPATH=$REPO/tools/python /usr/bin/python3 "$HERE/locality_md.py" "$out" >"$BUILD/bench-locality.md"
cat "$BUILD/bench-locality.md"
