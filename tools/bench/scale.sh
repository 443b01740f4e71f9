#!/usr/bin/env bash
# shellcheck disable=SC2317  # cleanup runs from a trap
# scale.sh - `make bench-scale`: one target's metadata at scale.
#
# 1 gateway + 1 target with 2 mountpaths (store.fsync=never), 4 buckets:
# "big" holds 70% of the objects and s1..s3 10% each. The store is filled
# up to each checkpoint (CHECKPOINTS, default 10k, 100k, 1M, 10M, those up
# to SCALE_N, and SCALE_N itself) with $BUILD/scaleload, which writes
# aisloader's objects through the store's own write protocol while the
# target is stopped (the files and records PUTs of the same bytes leave,
# without the HTTP round trips: filling 10M objects by HTTP takes hours on
# a small machine). At each checkpoint, with the target running again:
#  - PUT and GET rates straight to the target (aisloader, WORKERS
#    connections, DUR seconds, ROUNDS rounds each, median): GETs of random
#    objects of "big" (verified), GETs of random objects of its first HOT
#    (a working set that fits in memory at every size: what the metadata
#    costs, apart from the disk; each round reads it once, untimed, before
#    its timed GETs), PUTs of new objects into a 5th bucket;
#  - with the target stopped, the same random reads of "big" through the
#    store alone (scaleload -r: the LevelDB lookup, open, read and check,
#    WORKERS threads, DUR seconds, ROUNDS rounds): the floor under the
#    random GETs once the objects outgrow the page cache (the disk's);
#  - the target's RSS and the LevelDB size on disk (du of mp*/meta);
#  - then kill -9 and a restart on the same port and mountpaths: seconds
#    until it answers health and a GET of a stored object (ready), and
#    until its background start-up work is done (object count, reconcile:
#    the files it walked and the crash hints it checked; the rebalance run
#    each start makes: the objects it walked).
# At SCALE_N, the listing of "big" through the gateway (pages of PAGE
# names): time to the first page, names/s over the whole bucket, median
# and slowest page, and the median page time of the first and last tenth
# of the bucket (a steady rate has them equal).
# Prints a table and writes $BUILD/bench-scale.md, $BUILD/bench-scale.dat
# and, with gnuplot (scale.gp), $PLOTDIR/scale-rates.png (PLOTDIR defaults
# to $BUILD). Everything lives in a temp dir under TMPDIR, removed at the
# end (KEEP=1 keeps it); the daemons are stopped by PID; the fill runs under
# nice -n 10.
#
# Needs SCALE_N * ~4.2 KiB of disk (one 4 KiB block per object of up to
# 4 KiB, plus LevelDB) and SCALE_N free inodes: checked before it starts.
#
# Environment: BUILD (build), SCALE_N (10000000), CHECKPOINTS, SIZE (1024),
# DUR (10), ROUNDS (3), WORKERS (16), HOT (10000), PAGE (10000), FILL_JOBS (2),
# AISD_SET (more "key=value" store settings for the target and the fill,
# e.g. "store.leveldb_cache=64MiB"), PLOTDIR, KEEP, TMPDIR, SCALE_IMG (a
# file to hold the run as a loop-mounted file system, deleted at the end:
# root; see below).
set -euo pipefail

BUILD=${BUILD:-build}
SCALE_N=${SCALE_N:-10000000}
CHECKPOINTS=${CHECKPOINTS:-10000 100000 1000000 10000000}
SIZE=${SIZE:-1024}
DUR=${DUR:-10}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-16}
HOT=${HOT:-10000}
PAGE=${PAGE:-10000}
FILL_JOBS=${FILL_JOBS:-2}
AISD=$BUILD/aisd
LOADER=$BUILD/aisloader
FILL=$BUILD/scaleload
SET_ARGS=()
for kv in ${AISD_SET:-}; do SET_ARGS+=(--set "$kv"); done
# shellcheck source=tools/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$AISD" ] && [ -x "$LOADER" ] && [ -x "$FILL" ] ||
	die "$AISD, $LOADER or $FILL not built (make BUILD=$BUILD all $BUILD/scaleload)"

# SCALE_IMG=FILE (root): the run lives on a new ext4 file system in FILE
# (sparse, sized for SCALE_N objects, inodes for them), loop-mounted with
# direct I/O so that its blocks are cached once, in the image's own page
# cache; at exit it is unmounted and FILE deleted: seconds, where removing
# 10 million files takes half an hour of a small machine's disk.
IMG_DEV='' IMG_MNT=''
img_cleanup() {
	if [ -n "${KEEP:-}" ] && [ "${KEEP:-}" != 0 ]; then
		bench_cleanup
		echo "scale: $SCALE_IMG is mounted at $IMG_MNT ($IMG_DEV): umount, losetup -d and rm it when done" >&2
		return
	fi
	stop_all
	umount "$IMG_MNT" && rmdir "$IMG_MNT" && losetup -d "$IMG_DEV" && rm -f "$SCALE_IMG" ||
		echo "scale: could not remove the image: umount $IMG_MNT; losetup -d $IMG_DEV; rm $SCALE_IMG" >&2
}
if [ -n "${SCALE_IMG:-}" ]; then
	# shellcheck disable=SC2034 # die names it; bench_setup has not run yet
	BENCH_NAME=scale
	[ "$(id -u)" = 0 ] || die "SCALE_IMG needs root (losetup, mount)"
	[ ! -e "$SCALE_IMG" ] || die "SCALE_IMG=$SCALE_IMG exists: name a file to create (it is deleted at the end)"
	img_gib=$((SCALE_N * 42 / 10 / 1024 / 1024 + 8))
	host_gib=$(df -Pk "$(dirname "$SCALE_IMG")" | awk 'NR == 2 { print int($4 / 1024 / 1024) }')
	[ "$host_gib" -ge "$img_gib" ] || die "SCALE_IMG needs ~$img_gib GiB under $(dirname "$SCALE_IMG"); $host_gib free"
	truncate -s "${img_gib}G" "$SCALE_IMG" || die "cannot create $SCALE_IMG"
	mkfs.ext4 -q -F -N $((SCALE_N + SCALE_N / 10 + 100000)) -E lazy_itable_init=0,lazy_journal_init=0 "$SCALE_IMG" ||
		{ rm -f "$SCALE_IMG"; die "mkfs.ext4 $SCALE_IMG failed"; }
	IMG_DEV=$(losetup --direct-io=on -f --show "$SCALE_IMG") || { rm -f "$SCALE_IMG"; die "losetup failed"; }
	IMG_MNT=$(mktemp -d /tmp/aisd-scale-mnt.XXXXXX)
	mount "$IMG_DEV" "$IMG_MNT" || { losetup -d "$IMG_DEV"; rm -f "$SCALE_IMG"; die "mount $IMG_DEV failed"; }
	export TMPDIR=$IMG_MNT
fi
bench_setup scale
[ -z "${SCALE_IMG:-}" ] || trap img_cleanup EXIT

# The checkpoints up to SCALE_N, and SCALE_N.
CPS=()
for c in $CHECKPOINTS; do [ "$c" -lt "$SCALE_N" ] && CPS+=("$c"); done
CPS+=("$SCALE_N")

need_kib=$((SCALE_N * 42 / 10))
free_kib=$(df -Pk "$TMP" | awk 'NR == 2 { print $4 }')
free_ino=$(df -Pi "$TMP" | awk 'NR == 2 { print $4 }')
[ "$free_kib" -gt $((need_kib + 4 * 1024 * 1024)) ] ||
	die "$SCALE_N objects need ~$((need_kib / 1024)) MiB + 4 GiB spare; $((free_kib / 1024)) MiB free under $TMP"
[ "$free_ino" -gt $((SCALE_N + 100000)) ] || die "$SCALE_N objects need as many inodes; $free_ino free"

T=$TMP/t1
mkdir -p "$T"
TPORT=$(free_port)
start_cluster "$TMP" 0 || die "the gateway did not start"

# tgt_start: the target on TPORT with mp1 and mp2, joined to the gateway;
# sets TPID. Returns at once: callers wait for what they measure.
tgt_start() {
	rm -f "$T/port"
	"$AISD" --port "$TPORT" --port-file "$T/port" --dir "$T/node" -m "$T/mp1" -m "$T/mp2" --join "$GW" \
		--set store.fsync=never --set log.file="$T/aisd.log" "${SET_ARGS[@]}" >>"$T/stderr" 2>&1 &
	TPID=$!
	PIDS+=("$TPID")
}

# tgt_stop [-9]: SIGTERM (or SIGKILL) to the target, reaped.
tgt_stop() {
	if [ "${1:-}" = -9 ]; then
		kill -9 "$TPID" 2>/dev/null || true
		{ wait "$TPID"; } 2>/dev/null || true # (no "Killed" line)
	fi
	stop_pid "$TPID"
}

# stats_field EXPR: a Python expression over the target's stats (d).
stats_field() {
	curl -fsS --max-time 5 "$TGT_URL/v1/daemon?what=stats" 2>/dev/null |
		python3 -c "import json,sys; d=json.load(sys.stdin); print($1)" 2>/dev/null
}

# job_metric NAME: the target's /metrics value of NAME{job="rebalance"}.
job_metric() {
	curl -fsS --max-time 5 "$TGT_URL/metrics" 2>/dev/null | sed -n "s/^$1{job=\"rebalance\"} //p"
}

# settled: true once the start-up work is done: the object count and the
# reconcile of every mountpath, and the rebalance run every start makes.
settled() {
	[ "$(stats_field 'all(m["reconcile"]["done"] and not m.get("counting") for m in d["mountpaths"])')" = True ] &&
		[ "$(job_metric aisd_job_state)" != 1 ]
}

TGT_URL=http://127.0.0.1:$TPORT
tgt_start
wait_http "$TGT_URL/v1/health" 30 || die "the target did not start"
for _ in $(seq 300); do [ "$(smap_count "$GW")" -ge 2 ] && break; sleep 0.1; done
for b in big s1 s2 s3 put; do create_bucket "$GW" "$b" || die "cannot create bucket $b"; done
for _ in $(seq 100); do # the target has them once the BMD reached it
	curl -fsS -o /dev/null --max-time 2 "$TGT_URL/v1/buckets/put?pagesize=1" 2>/dev/null && break
	sleep 0.1
done

declare -A HAVE=([big]=0 [s1]=0 [s2]=0 [s3]=0)
DAT=$BUILD/bench-scale.dat
MD=$BUILD/bench-scale.md
echo "# objects put_per_s get_per_s ready_s settle_s rss_mib leveldb_mib hot_get_per_s store_read_per_s" >"$DAT"
printf '| objects | PUT/s | GET/s random | store alone reads/s | GET / store | GET/s hot set | RSS MiB | LevelDB MiB | restart: ready s | start-up work done s | walked | hints | rebalance walked |\n' >"$MD"
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n' >>"$MD"
echo "scale: 1 gateway + 1 target (2 mountpaths), ${SIZE}-byte objects, checkpoints ${CPS[*]}" >&2
filled_s=0

for cp in "${CPS[@]}"; do
	# --- fill up to cp (target stopped) ------------------------------------
	tgt_stop
	t0=$(date +%s.%N)
	for b in big s1 s2 s3; do
		if [ "$b" = big ]; then want=$((cp - 3 * (cp / 10))); else want=$((cp / 10)); fi
		n=$((want - HAVE[$b]))
		[ "$n" -gt 0 ] || continue
		nice -n 10 "$FILL" -m "$T/mp1" -m "$T/mp2" -b "$b" -f "${HAVE[$b]}" -n "$n" -s "$SIZE" \
			-j "$FILL_JOBS" "${SET_ARGS[@]}" >>"$TMP/fill.out" 2>>"$TMP/fill.err" || die "scaleload failed: $(tail -3 "$TMP/fill.err")"
		HAVE[$b]=$want
	done
	t1=$(date +%s.%N)
	filled_s=$(echo "$filled_s + $t1 - $t0" | bc)
	echo "scale: filled to $cp objects (fill time so far $(printf %.0f "$filled_s") s)" >&2
	tgt_start
	wait_http "$TGT_URL/v1/health" 120 || die "the target did not come back after the fill"
	sleep 1 # the map reaches it: its rebalance run starts
	for _ in $(seq 1200); do settled && break; sleep 0.5; done

	# --- rates ---------------------------------------------------------------
	puts=() gets=() hots=()
	hot=$((HAVE[big] < HOT ? HAVE[big] : HOT))
	for r in $(seq "$ROUNDS"); do
		g=$(run_loader get --url "$TGT_URL/v1/objects/big" --op get --verify --objects "${HAVE[big]}" --size "$SIZE" \
			--duration "$DUR" --workers "$WORKERS" --seed "$r$cp" | json_field ops_per_s)
		# one pass over the hot set first, not timed: the random GETs just
		# before pushed its pages out, and the hot rate is the metadata's
		run_loader hotwarm --url "$TGT_URL/v1/objects/big" --op get --objects "$hot" --seq --count "$hot" \
			--duration 0 --workers "$WORKERS" >/dev/null
		h=$(run_loader hot --url "$TGT_URL/v1/objects/big" --op get --verify --objects "$hot" --size "$SIZE" \
			--duration "$DUR" --workers "$WORKERS" --seed "$r$cp" | json_field ops_per_s)
		hots+=("$h")
		p=$(run_loader put --url "$TGT_URL/v1/objects/put" --op put --objects 1000000000 --size "$SIZE" \
			--duration "$DUR" --workers "$WORKERS" --seed "$r$cp" | json_field ops_per_s)
		gets+=("$g") puts+=("$p")
	done
	put_s=$(printf '%s\n' "${puts[@]}" | median)
	get_s=$(printf '%s\n' "${gets[@]}" | median)
	hot_s=$(printf '%s\n' "${hots[@]}" | median)
	rss=$(awk '/^VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$TPID/status")
	# the PUTs' objects go, so the next checkpoint holds what the fill made
	curl -fsSL -o /dev/null --max-time 600 -X DELETE "$GW/v1/buckets/put" -d '{"action":"destroy-bck"}' ||
		die "cannot destroy bucket put"
	create_bucket "$GW" put || die "cannot create bucket put"
	total=$((HAVE[big] + HAVE[s1] + HAVE[s2] + HAVE[s3]))
	for _ in $(seq 1200); do # the destroy runs on the target after the BMD reached it
		[ "$(stats_field 'd["objects"]')" = "$total" ] && break
		sleep 0.5
	done
	ldb=$(du -sm "$T"/mp1/meta "$T"/mp2/meta | awk '{ s += $1 } END { print s }')
	objs=$(stats_field 'd["objects"]')

	# --- the same random reads through the store alone (target stopped) ------
	tgt_stop
	reads=()
	for r in $(seq "$ROUNDS"); do
		reads+=("$("$FILL" -m "$T/mp1" -m "$T/mp2" -b big -n "${HAVE[big]}" -s "$SIZE" -j "$WORKERS" -r "$DUR" "${SET_ARGS[@]}" \
			2>>"$TMP/fill.err" | sed -n 's/.*"rate":\([0-9.]*\).*/\1/p')")
		[ -n "${reads[-1]}" ] || die "scaleload -r failed: $(tail -3 "$TMP/fill.err")"
	done
	store_s=$(printf '%s\n' "${reads[@]}" | median)
	tgt_start
	wait_http "$TGT_URL/v1/health" 120 || die "the target did not come back after the store reads"
	sleep 1
	for _ in $(seq 1200); do settled && break; sleep 0.5; done

	# --- kill -9, restart: ready, and the start-up work done ---------------------
	tgt_stop -9
	t0=$(date +%s.%N)
	tgt_start
	ready=""
	for _ in $(seq 1200); do
		if curl -fsS -o /dev/null --max-time 1 "$TGT_URL/v1/health" 2>/dev/null &&
			curl -fsS -o /dev/null --max-time 1 "$TGT_URL/v1/objects/big/obj-000001" 2>/dev/null; then
			ready=$(echo "$(date +%s.%N) - $t0" | bc)
			break
		fi
		sleep 0.05
	done
	[ -n "$ready" ] || die "the target was not ready within 60 s of the restart"
	settle=""
	sleep 1
	for _ in $(seq 2400); do
		if settled; then
			settle=$(echo "$(date +%s.%N) - $t0" | bc)
			break
		fi
		sleep 0.5
	done
	reb_walked=$(job_metric aisd_job_objects_walked)
	walked=$(stats_field 'sum(m["reconcile"]["walked"] for m in d["mountpaths"])')
	hints=$(stats_field 'sum(m["reconcile"]["hints"] for m in d["mountpaths"])')
	printf '%s %s %s %.2f %s %s %s %s %s\n' "$objs" "$put_s" "$get_s" "$ready" "${settle:-nan}" "$rss" "$ldb" \
		"$hot_s" "$store_s" >>"$DAT"
	printf '| %s | %.0f | %.0f | %.0f | %s | %.0f | %s | %s | %.2f | %s | %s | %s | %s |\n' "$objs" "$put_s" "$get_s" \
		"$store_s" "$(ratio "$get_s" "$store_s")" "$hot_s" "$rss" "$ldb" "$ready" "${settle:+$(printf %.1f "$settle")}" \
		"$walked" "$hints" "$reb_walked" >>"$MD"
	echo "scale: $objs objects: PUT $put_s/s, GET $get_s/s (store alone $store_s/s, hot set $hot_s/s), RSS $rss MiB, LevelDB $ldb MiB;" \
		"kill -9 -> ready in $(printf %.2f "$ready") s, start-up work done in $(printf %.1f "${settle:-nan}") s (walked $walked files, $hints hints; rebalance walked $reb_walked objects)" >&2
done

# --- the listing of "big" through the gateway ----------------------------------
python3 - "$GW" "$PAGE" "${HAVE[big]}" >>"$MD" <<'PY'
import http.client, json, sys, time, statistics, urllib.parse
ep, page, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = urllib.parse.urlparse(ep)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
token, got, last, pages = "", 0, "", []
t0 = time.perf_counter()
first = None
while True:
    body = json.dumps({"action": "list", "value": {"pagesize": page, "continuation_token": token}})
    s = time.perf_counter()
    c.request("GET", "/v1/buckets/big", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); data = r.read()
    if r.status in (301, 302, 307, 308):  # the gateway may redirect a listing
        loc = urllib.parse.urlparse(r.getheader("Location"))
        c = http.client.HTTPConnection(loc.hostname, loc.port, timeout=300)
        continue
    pages.append(time.perf_counter() - s)
    if first is None:
        first = time.perf_counter() - t0
    assert r.status == 200, (r.status, data[:200])
    doc = json.loads(data)
    for e in doc["entries"]:
        assert e["name"] > last, (e["name"], last)
        last = e["name"]
    got += len(doc["entries"])
    token = doc.get("continuation_token", "")
    if not token:
        break
total = time.perf_counter() - t0
assert got == want, (got, want)
k = max(1, len(pages) // 10)
print(f"\nListing `big` ({got:,} names) through the gateway, pages of {page:,}: first page in {first*1000:.0f} ms, "
      f"{got/total:,.0f} names/s ({total:.1f} s), median page {statistics.median(pages)*1000:.0f} ms, "
      f"slowest {max(pages)*1000:.0f} ms; median page of the first tenth {statistics.median(pages[:k])*1000:.0f} ms, "
      f"of the last tenth {statistics.median(pages[-k:])*1000:.0f} ms.")
PY
echo "" >>"$MD"
echo "Fill by scaleload: $(printf %.0f "$filled_s") s in all; aisloader $WORKERS connections, $DUR s x $ROUNDS rounds per rate (median); hot set: the first $HOT objects of big." >>"$MD"
cat "$MD"
if command -v gnuplot >/dev/null; then
	mkdir -p "${PLOTDIR:-$BUILD}"
	gnuplot -e "dat='$DAT'; out='${PLOTDIR:-$BUILD}/scale-rates.png'" "$(dirname "$0")/scale.gp" &&
		echo "scale: ${PLOTDIR:-$BUILD}/scale-rates.png" >&2
fi
exit "$STATUS"
