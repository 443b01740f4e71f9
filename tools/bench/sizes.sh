#!/usr/bin/env bash
# sizes.sh - GET and PUT throughput against object size (make bench): the
# same aisloader runs as bench.sh, gateway.sh and s3.sh, swept over object
# sizes from 1 KiB to 1 GiB, for four ways to reach the bytes:
#   direct   the native API straight to the target
#   gateway  the native API through a gateway (307 followed; the client
#            keeps its connections to the gateway and to the target)
#   s3       S3 (SigV4 signed) through the gateway, which forwards it
#   nginx    nginx (nginx-light, sendfile, WebDAV PUT) on the same disk
# Starts 1 gateway + 1 target (s3.auth on, store.fsync=never as nginx never
# fsyncs) and nginx on free loopback ports under a mktemp -d dir. For each
# size S (SIZES) and each way: GET of a key space of N = 64 MiB / S objects
# (1 to 1000; prefilled, not timed), random keys; then PUT over the same
# key space; DUR seconds each, 16 workers up to 1 MiB and 4 above (as the
# other benches: many connections for small objects, a few streams for big
# ones). Writes MiB/s to $BUILD/bench-sizes.dat and .md, and draws
# $PLOTDIR/sizes-get.png and sizes-put.png with gnuplot (sizes.gp). Every
# process is stopped by its PID and the temp dir removed on exit (KEEP=1
# keeps it); each run is bounded by DUR and a timeout.
#
# Environment: BUILD (default build), DUR (seconds per measurement, 3),
# SIZES ("1K 16K 256K 4M 64M 1G"), PLOTDIR (benchmarks), KEEP.
# Exit status: 0 when every measurement ran without errors, 1 otherwise.
set -u

BUILD=${BUILD:-build}
DUR=${DUR:-3}
SIZES=${SIZES:-1K 16K 256K 4M 64M 1G}
PLOTDIR=${PLOTDIR:-benchmarks}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader
AK=benchkey SK=benchsecret
WAYS=(direct gateway s3 nginx)

die() { echo "sizes-bench: $*" >&2; exit 1; }
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$LOADER" ] || die "no $AISD or $LOADER (run make)"
command -v gnuplot >/dev/null || die "gnuplot missing (tools/install-deps.sh --bench installs gnuplot-nox)"

bench_setup sizes-bench
start_cluster "$TMP" 1 --set s3.auth=on --set "s3.key=$AK:$SK:bench:Bench User" ||
	die "the cluster did not start (see $TMP)"
create_bucket "$GW" sizes || die "create bucket failed"
start_nginx sizes
declare -A URL=([direct]=${TGT[1]}/v1/objects/sizes [gateway]=$GW/v1/objects/sizes
	[s3]=$GW/sizes [nginx]=http://127.0.0.1:$NGINX_PORT/sizes)

# bytes SIZE: SIZE (K, M, G: powers of 1024) in bytes
bytes() { numfmt --from=iec "$1"; }

# measure OP WAY SIZE: MiB/s of one aisloader run (or n/a).
measure() {
	local op=$1 way=$2 sz=$3 b n w s3=() pre=() v
	b=$(bytes "$sz")
	n=$((64 * 1048576 / b))
	((n < 1)) && n=1
	((n > 1000)) && n=1000
	w=16
	((b > 1048576)) && w=4
	[ "$way" = s3 ] && s3=(--s3 "$AK:$SK")
	[ "$op" = get ] && pre=(--prefill)
	v=$(run_loader "$op $way $sz" "${s3[@]}" --url "${URL[$way]}/$way-$sz" --op "$op" --size "$sz" \
		--objects "$n" --random --workers "$w" --duration "$DUR" --count 10000000 "${pre[@]}" | json_field mibps)
	echo "${v:-n/a}"
}

DAT=$BUILD/bench-sizes.dat
echo "sizes-bench: temp dir $TMP, sizes $SIZES, ${DUR}s per measurement" >&2
{
	echo "# aisd sizes bench $(date -u +%Y-%m-%d): MiB/s; DUR=$DUR; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# bytes size get_direct get_gateway get_s3 get_nginx put_direct put_gateway put_s3 put_nginx"
} >"$DAT"
for sz in $SIZES; do
	row="$(bytes "$sz") $sz"
	for op in get put; do
		for way in "${WAYS[@]}"; do
			v=$(measure "$op" "$way" "$sz")
			printf '  %-4s %-3s %-8s %s MiB/s\n' "$sz" "$op" "$way" "$v" >&2
			row="$row $v"
		done
	done
	echo "$row" >>"$DAT"
done

MD=$BUILD/bench-sizes.md
{
	echo "MiB/s, one run of ${DUR} s each ($(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg))"
	echo
	echo "| size | GET direct | GET gateway | GET S3 | GET nginx | PUT direct | PUT gateway | PUT S3 | PUT nginx |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk '!/^#/ { printf "| %s |", $2; for (i = 3; i <= NF; i++) if ($i == "n/a") printf " %s |", $i; else printf " %.0f |", $i; print "" }' "$DAT"
} >"$MD"
cat "$MD"
mkdir -p "$PLOTDIR"
gnuplot -e "dat='$DAT'; outdir='$PLOTDIR'" "$(dirname "$0")/sizes.gp" || die "gnuplot failed"
echo "sizes-bench: $MD, $DAT, $PLOTDIR/sizes-get.png, $PLOTDIR/sizes-put.png" >&2
exit $STATUS
