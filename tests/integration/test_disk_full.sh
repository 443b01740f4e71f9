#!/usr/bin/env bash
# serial: tmpfs mounts and a full disk
# test_disk_full.sh - running out of space.
# (a) store.min_free above the disk's free space: PUTs are refused with a 507
#     JSON body (plain and chunked), earlier objects still read back, no temp
#     files; back to the default, PUTs work again.
# (b) as root, a real full disk: a second target on a 32 MiB tmpfs filled
#     with 4 MiB PUTs until one fails with 507; no partial object is visible,
#     the failed name is 404, the others read back whole, no temp files, and
#     after a DELETE a PUT fits again.
set -u
source "$(dirname "$0")/lib.sh"

D=$TMPDIR/df
mkdir -p "$D"
create_bucket full
check_eq "create bucket" "$R_CODE" 200
for i in 1 2 3; do
	head -c $((i << 20)) /dev/urandom >"$D/o$i"
	req PUT "/v1/objects/full/o$i" -T "$D/o$i"
	check_eq "PUT o$i before the disk is 'full'" "$R_CODE" 200
done

# --- (a) min_free larger than any disk ------------------------------------------
check "restart with store.min_free=1000TiB" restart_target --set store.min_free=1000TiB
head -c $((1 << 20)) /dev/urandom >"$D/new"
req PUT /v1/objects/full/new -T "$D/new"
check_eq "PUT below min_free: 507" "$R_CODE" 507
check "  with an error JSON" is_error_json 507
cat "$D/new" | curl -s -m 60 -T - -o "$R_BODY" -w '%{http_code}' "$AISD_URL/v1/objects/full/new-chunked" >"$D/code"
check_eq "chunked PUT below min_free: 507" "$(cat "$D/code")" 507
req PUT /v1/objects/full/new -T "$D/new" -H 'Expect: 100-continue'
check_eq "PUT with Expect: 100-continue below min_free: 507" "$R_CODE" 507
check "  refused before any 100 Continue" test -z "$(grep '^HTTP/1.1 100' "$R_HDRS")"
req PUT /v1/objects/full/o1 -T "$D/new"
check_eq "overwrite below min_free: 507" "$R_CODE" 507
req PUT /v1/objects/full/empty -T /dev/null
check_eq "even an empty PUT below min_free: 507" "$R_CODE" 507
for i in 1 2 3; do
	req GET "/v1/objects/full/o$i"
	check "GET o$i below min_free: 200, identical" test "$R_CODE" = 200 -a -n "$(cmp "$R_BODY" "$D/o$i" && echo same)"
done
req GET /v1/objects/full/new
check_eq "the refused object does not exist" "$R_CODE" 404
req GET "/v1/buckets/full?props=name"
check_eq "listing still works" "$(tr -d ' \n' <"$R_BODY")" \
	'{"entries":[{"name":"o1"},{"name":"o2"},{"name":"o3"}],"continuation_token":""}'
req DELETE /v1/objects/full/o3
check_eq "DELETE works below min_free" "$R_CODE" 200
check_eq "no temp files left" "$(tmp_files)" ""
check "restart with the default min_free" restart_target
req PUT /v1/objects/full/new -T "$D/new"
check_eq "PUT works again" "$R_CODE" 200
req GET /v1/objects/full/new
check "  and reads back" cmp -s "$R_BODY" "$D/new"

# --- (b) a real full disk: a 32 MiB tmpfs ---------------------------------------
if [ "$(id -u)" != 0 ]; then
	skip "a real full disk (tmpfs)" "needs root to mount a tmpfs"
	finish
fi
SMALL=$AISD_DIR/small
mkdir -p "$SMALL"
if ! mount -t tmpfs -o size=32m tmpfs "$SMALL" 2>"$D/mount.err"; then
	skip "a real full disk (tmpfs)" "cannot mount a tmpfs: $(head -1 "$D/mount.err")"
	finish
fi
PORT2=$(free_port)
URL2=http://127.0.0.1:$PORT2
"$AISD_BIN" --port "$PORT2" -m "$SMALL/mp" --set "log.file=$AISD_DIR/aisd.log" --set store.min_free=0 \
	</dev/null >>"$AISD_DIR/aisd.stderr" 2>&1 &
PID2=$!
cleanup() {
	kill -TERM "$PID2" 2>/dev/null
	wait_gone "$PID2" 10 || kill -9 "$PID2" 2>/dev/null
	wait_gone "$PID2" 10
	umount "$SMALL" 2>/dev/null
}
trap cleanup EXIT
check "second target on a 32 MiB tmpfs is up" wait_health "$URL2" 10
curl -s -o /dev/null -m 10 -X POST "$URL2/v1/buckets/small" --data-binary '{"action":"create-bck"}'
head -c $((4 << 20)) /dev/urandom >"$D/four"
stored=()
failed=""
for i in $(seq 1 20); do
	cp "$D/four" "$D/four.$i"
	printf '%08d' "$i" | dd of="$D/four.$i" conv=notrunc status=none # each one different
	code=$(curl -s -m 60 -T "$D/four.$i" -o "$D/fill.body" -w '%{http_code}' "$URL2/v1/objects/small/f$i")
	if [ "$code" = 200 ]; then
		stored+=("$i")
	else
		failed=$i
		break
	fi
done
diag "stored ${#stored[@]} objects of 4 MiB before PUT f$failed answered $code"
check_eq "filling the disk ends with 507" "$code" 507
check "  with an error JSON" /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); sys.exit(not (d["status"] == 507 and d["message"]))' "$D/fill.body"
check "  after at least 3 objects fitted" test "${#stored[@]}" -ge 3
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL2/v1/objects/small/f$failed")
check_eq "the failed name is 404" "$code" 404
listing=$(curl -s -m 10 "$URL2/v1/buckets/small?props=name,size")
check_eq "the listing has exactly the stored objects, each 4 MiB" "$(echo "$listing" | /usr/bin/python3 -c 'import json, sys
print(" ".join("%s:%d" % (e["name"], e["size"]) for e in json.load(sys.stdin)["entries"]))')" \
	"$(for i in "${stored[@]}"; do echo "f$i:$((4 << 20))"; done | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
bad=0
for i in "${stored[@]}"; do
	curl -s -m 30 -o "$D/back" "$URL2/v1/objects/small/f$i"
	cmp -s "$D/back" "$D/four.$i" || bad=$((bad + 1))
done
check_eq "every stored object reads back whole on the full disk" "$bad" 0
check_eq "no temp files on the full disk" "$(find "$SMALL"/mp/tmp -type f | head -3)" ""
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE "$URL2/v1/objects/small/f${stored[0]}")
check_eq "DELETE on the full disk" "$code" 200
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE "$URL2/v1/objects/small/f${stored[1]}")
code=$(curl -s -m 60 -T "$D/four.$failed" -o /dev/null -w '%{http_code}' "$URL2/v1/objects/small/f$failed")
check_eq "after freeing 8 MiB the failed PUT fits" "$code" 200
curl -s -m 30 -o "$D/back" "$URL2/v1/objects/small/f$failed"
check "  and reads back" cmp -s "$D/back" "$D/four.$failed"
cleanup
trap - EXIT
check "the tmpfs is unmounted" test -z "$(grep " $SMALL " /proc/mounts)"
rm -rf "$D" "$SMALL"
finish
