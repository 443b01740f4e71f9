#!/usr/bin/env bash
# test_aisctl_cluster.sh - "aisctl cluster show" against a small cluster:
# a gateway and two targets started here on free ports (metadata under
# $AISD_DIR/c-*, logs $AISD_DIR/c-*.log), stopped by PID on exit. The
# runner's own target is standalone: the command must say so and exit 1.
#
# Checks: the table (header line, 3 nodes, primary marked, all ok, uptime,
# objects, disk), --json (the map plus health and stats per node), help;
# then a second gateway and a third target join and every command runs
# through the cluster: bucket create/ls/props show/props set/rm through the
# non-primary gateway (redirected to the primary), put -r through one
# gateway and get (bytes compared) and paged ls through the other, object
# head, rm, show stats (table, --json, NODE --refresh), node maintenance
# start/stop, node decommission, completion of node ids; then one target
# killed with -9 reads "unreachable" with a warning line (the gateway keeps
# it in the map: cluster.grace is 60s) and a stopped one (SIGSTOP) also
# reads "unreachable" within the health timeout.
# timeout: 240
set -u
source "$IT_LIB/lib.sh"
unset AIS_ENDPOINT

W=$TMPDIR/aisctl_cluster
mkdir -p "$W"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait_gone "$p" 10 || kill -9 "$p" 2>/dev/null
	done
}
trap cleanup EXIT

# start_node NAME ARGS...: starts a node on a free port; sets NODE_PID and
# NODE_URL; returns 1 unless it answers /v1/health within 10 s.
start_node() {
	local name=$1 i
	shift
	rm -f "$AISD_DIR/c-$name.port"
	"$AISD_BIN" --port 0 --port-file "$AISD_DIR/c-$name.port" --dir "$AISD_DIR/c-$name" \
		--set "log.file=$AISD_DIR/c-$name.log" "$@" </dev/null >>"$AISD_DIR/c-$name.stderr" 2>&1 &
	NODE_PID=$!
	disown "$NODE_PID" # no "Killed" job notice for the kill -9 below
	PIDS+=("$NODE_PID")
	for ((i = 0; i < 100; i++)); do
		[ -s "$AISD_DIR/c-$name.port" ] && break
		pid_alive "$NODE_PID" || break
		sleep 0.1
	done
	NODE_URL="http://127.0.0.1:$(cat "$AISD_DIR/c-$name.port" 2>/dev/null)"
	wait_health "$NODE_URL" 10
}

# ctl ARGS...: aisctl; $W/out, $W/err, $RC.
ctl() {
	"$AISCTL" "$@" >"$W/out" 2>"$W/err"
	RC=$?
}
show_err() { sed 's/^/#   /' "$W/out" "$W/err" | head -20; }

# row ID: the table row of node ID (ID may carry the primary's '*').
row() { grep -E "^[a-z]+ +$(printf '%s' "$1" | sed 's/[.]/[.]/g')\\*? " "$W/out"; }
# health_of ID: the last column of its row.
health_of() { row "$1" | awk '{print $NF}'; }
# cols ID: role, id, URL, state and health of its row.
cols() { row "$1" | awk '{print $1, $2, $3, $4, $NF}'; }

# --- the standalone target ---------------------------------------------------
ctl -e "$AISD_URL" cluster show
check "standalone target: exit 1" [ "$RC" = 1 ]
check "standalone target: one clear line on stderr, nothing on stdout" \
	bash -c '[ "$(wc -l <"$1")" = 1 ] && grep -q "^aisctl: .*not in a cluster" "$1" && [ ! -s "$2" ]' _ "$W/err" "$W/out"

# --- help ---------------------------------------------------------------------
ctl --help
check "--help lists cluster show" grep -q '^  cluster show ' "$W/out"
ctl help cluster show
check "help cluster show mentions --json" bash -c '[ '"$RC"' = 0 ] && grep -q -- "--json" "$1"' _ "$W/out"
ctl cluster show extra
check "cluster show takes no arguments: exit 2" [ "$RC" = 2 ]

# --- a gateway and two targets ------------------------------------------------
if ! start_node gw --role gateway --set cluster.grace=60s; then
	fail "gateway did not start"
	sed 's/^/#   /' "$AISD_DIR"/c-gw.stderr "$AISD_DIR"/c-gw.log 2>/dev/null | tail -20
	finish
fi
GW=$NODE_URL
GW_ID=${GW#http://}
start_node t1 -m "$AISD_DIR/c-t1-mp" --join "$GW" || fail "target t1 did not start"
T1=$NODE_URL T1_PID=$NODE_PID T1_ID=${NODE_URL#http://}
start_node t2 -m "$AISD_DIR/c-t2-mp" --join "$GW" || fail "target t2 did not start"
T2=$NODE_URL T2_PID=$NODE_PID T2_ID=${NODE_URL#http://}

# wait (bounded) until the gateway's map holds all three
for ((i = 0; i < 100; i++)); do
	n=$(curl -s -m 2 "$GW/v1/cluster?what=smap" | json_get nodes | grep -o "'id'" | wc -l)
	[ "$n" = 3 ] && break
	sleep 0.1
done
check_eq "the gateway's map has 3 nodes" "$n" 3

ctl -e "$GW" cluster show
check "cluster show: exit 0" [ "$RC" = 0 ]
check "header line: uuid, version, 1 gateway, 2 targets" \
	grep -qE '^cluster [A-Za-z0-9._:-]+, map version [0-9]+, 1 gateway, 2 targets$' "$W/out"
check "column header" grep -qE '^ROLE +ID +URL +STATE +UPTIME +OBJECTS +SIZE +DISK +HEALTH$' "$W/out"
check_eq "3 node rows" "$(grep -cE '^(gateway|target) ' "$W/out")" 3
check_eq "the gateway is marked primary" "$(cols "$GW_ID")" "gateway $GW_ID* $GW active ok"
check "the gateway has an uptime and no objects or disk" \
	bash -c 'grep -qE "^gateway +$1\\* +$2 +active +[0-9]+[smhd]([0-9]+[smh])? +- +- +- +ok$" "$3"' _ "$GW_ID" "$GW" "$W/out"
check_eq "only the primary is marked" "$(grep -cE '^(gateway|target) +[^ ]+\* ' "$W/out")" 1
check_eq "t1 healthy" "$(health_of "$T1_ID")" ok
check_eq "t2 healthy" "$(health_of "$T2_ID")" ok
check_eq "targets listed with their URLs" "$(cols "$T1_ID")" "target $T1_ID $T1 active ok"
check "a target row: uptime, objects, size, disk used/total" \
	bash -c 'grep -qE "^target +$1 +$2 +active +[0-9]+[smhd]([0-9]+[smh])? +[0-9]+ +[0-9.]+[KMGTP]?i?B +[0-9.]+[KMGTP]?i?B/[0-9.]+[KMGTP]?i?B +ok$" "$3"' _ "$T1_ID" "$T1" "$W/out"
check "no warning while all is well" bash -c '! grep -q "^warning" "$1"' _ "$W/out"
[ "$T_FAILS" = 0 ] || show_err

ctl -e "$T1" cluster show
check "through a clustered target: the same 3 nodes" \
	bash -c '[ '"$RC"' = 0 ] && [ "$(grep -cE "^(gateway|target) .* ok$" "$1")" = 3 ]' _ "$W/out"

ctl -e "$GW" cluster show --json
check "--json: exit 0" [ "$RC" = 0 ]
check "--json: the map with every node ok" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d["uuid"], str) and d["version"] >= 1 and d["primary"] == sys.argv[2], d
assert len(d["nodes"]) == 3, d
for n in d["nodes"]:
    assert {"id", "role", "state", "public_url", "intra_url"} <= set(n), n
    assert n["health"] == "ok", n
    assert n["stats"]["role"] == n["role"] and n["stats"]["uptime_s"] >= 0, n
    if n["role"] == "target":
        assert n["stats"]["objects"] >= 0 and len(n["stats"]["mountpaths"]) == 1, n
assert sorted(n["role"] for n in d["nodes"]) == ["gateway", "target", "target"], d
' "$W/out" "$GW_ID"


# --- every command through the cluster -----------------------------------------
start_node gw2 --role gateway --join "$GW" || fail "gateway gw2 did not start"
GW2=$NODE_URL GW2_ID=${NODE_URL#http://}
start_node t3 -m "$AISD_DIR/c-t3-mp" --join "$GW" || fail "target t3 did not start"
T3=$NODE_URL T3_ID=${NODE_URL#http://}
for ((i = 0; i < 100; i++)); do
	n=$(curl -s -m 2 "$GW2/v1/cluster?what=smap" | json_get nodes | grep -o "'id'" | wc -l)
	[ "$n" = 5 ] && break
	sleep 0.1
done
check_eq "gw2's map has 5 nodes" "$n" 5
ctl -e "$GW2" cluster show
check "cluster show through the second gateway: 2 gateways, 3 targets, all ok" \
	bash -c 'grep -qE ", 2 gateways, 3 targets$" "$1" && [ "$(grep -cE "^(gateway|target) .* ok$" "$1")" = 5 ]' _ "$W/out"

B=ctl-cluster-$$
ctl -e "$GW2" bucket create "$B"
check "bucket create through the non-primary gateway" [ "$RC" = 0 ]
ctl -e "$T2" bucket ls
check "bucket ls through a target lists it" grep -qx "$B" "$W/out"
ctl -e "$GW2" bucket props set "$B" mirror.enabled=true mirror.copies=2 versioning.enabled=false checksum.type=md5 access=get,head,list
check "bucket props set (5 keys) through the non-primary gateway" [ "$RC" = 0 ]
check "bucket props set prints the new props" \
	bash -c 'grep -qE "^mirror.enabled +true$" "$1" && grep -qE "^mirror.copies +2$" "$1" && grep -qE "^access +ro \(19\)$" "$1"' _ "$W/out"
ctl -e "$GW" bucket props show --json "$B"
check "bucket props show --json through the primary: every value set" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mirror"] == {"enabled": True, "copies": 2}, d
assert d["versioning"] == {"enabled": False} and d["checksum"] == {"type": "md5"}, d
assert d["access"] == 19 and d["provider"] == "ais", d' "$W/out"
ctl -e "$GW" bucket props show "$B"
check "bucket props show: the table" bash -c 'grep -qE "^checksum.type +md5$" "$1" && grep -qE "^versioning.enabled +false$" "$1" && grep -qE "^created +20[0-9-]+T" "$1"' _ "$W/out"
# mirroring off again: the data checks below count each object once (with
# copies, the gateway's listing shows a name once per copy); a read-only
# bucket takes no other property until its access is set back alone
ctl -e "$GW" bucket props set "$B" access=rw mirror.enabled=false
check "bucket props set access=rw mirror.enabled=false of a read-only bucket: refused (patch not allowed)" \
	bash -c '[ '"$RC"' != 0 ] && grep -q "does not allow PATCH (access=ro)" "$1"' _ "$W/err"
ctl -e "$GW" bucket props set "$B" access=rw
check "bucket props set access=rw alone (unlocks it)" \
	bash -c '[ '"$RC"' = 0 ] && grep -qE "^access +rw \(127\)$" "$1"' _ "$W/out"
ctl -e "$GW" bucket props set "$B" mirror.enabled=false
check "bucket props set mirror.enabled=false" \
	bash -c '[ '"$RC"' = 0 ] && grep -qE "^mirror.enabled +false$" "$1"' _ "$W/out"
ctl -e "$GW" bucket props set "$B" mirror.enabled=true mirror.copies=9
check "bucket props set mirror.copies above the targets: exit 1, the server's reason" \
	bash -c '[ '"$RC"' = 1 ] && [ "$(wc -l <"$1")" = 1 ] && grep -q "^aisctl: .*mirror.copies.*(HTTP 400)$" "$1"' _ "$W/err"
ctl -e "$GW" bucket props set "$B" frob.level=3
check "bucket props set of an unknown key: the server names it, exit 1" \
	bash -c '[ '"$RC"' = 1 ] && grep -q "unknown property.*frob" "$1"' _ "$W/err"
ctl -e "$GW" bucket props set "no-such-$B" access=rw
check "bucket props set on a missing bucket: exit 3" [ "$RC" = 3 ]

T=$W/tree
mkdir -p "$T/x/y"
for i in $(seq 1 30); do head -c $((i * 997)) /dev/urandom >"$T/x/f$i"; done
head -c 4000000 /dev/urandom >"$T/x/y/big"
(cd "$T" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$W/want"
ctl -e "$GW" put -r --conc 6 "$T" "$B/t"
check "put -r through a gateway (31 files, 6 at a time)" bash -c '[ '"$RC"' = 0 ] && grep -q "^put 31 files " "$1"' _ "$W/out"
ctl -e "$GW2" ls "$B" --page-size 7 --json
/usr/bin/python3 -c '
import json, sys
for l in open(sys.argv[1]):
    print(json.loads(l)["name"][2:])' "$W/out" >"$W/names"
check "ls through the other gateway, 7 a page: every name once, in order" cmp -s "$W/names" "$W/want"
bad=0
while IFS= read -r rel; do
	"$AISCTL" -e "$GW2" get "$B/t/$rel" - 2>"$W/err" | cmp -s - "$T/$rel" || bad=$((bad + 1))
done <"$W/want"
check_eq "get through the other gateway: the same bytes for every file" "$bad" 0
ctl -e "$GW2" object head --json "$B/t/x/y/big"
check "object head through a gateway" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["size"] == 4000000 and d["checksum"]["type"] == "md5" and len(d["checksum"]["value"]) == 32, d' "$W/out"
ctl -e "$GW" show stats --json
check "show stats --json: every node; the targets hold the 31 objects" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["nodes"]) == 5, d
assert sum(n.get("objects", 0) for n in d["nodes"].values()) == 31, d
assert d["totals"]["objects"] == 31, d' "$W/out"
ctl -e "$GW" show stats
check "show stats: a row per node, all ok, and the totals" \
	bash -c '[ "$(grep -cE "^[^ ]+ +(gateway|target) .* ok$" "$1")" = 5 ] && grep -qE "^total: 31 objects, " "$1"' _ "$W/out"
ctl -e "$GW" show stats "$T2_ID" --refresh 1 --count 2
check "show stats NODE --refresh 1 --count 2: two timed reports of one node" \
	bash -c '[ '"$RC"' = 0 ] && [ "$(grep -cE "^20[0-9-]+T[0-9:]+Z +cluster map version [0-9]+$" "$1")" = 2 ] && [ "$(grep -cE "^$2 +target " "$1")" = 2 ]' _ "$W/out" "$T2_ID"
ctl -e "$GW" rm "$B/t/x/f1" "$B/t/x/f2"
check "rm through a gateway" [ "$RC" = 0 ]
ctl -e "$GW2" get "$B/t/x/f1" -
check "get of a removed object: exit 3" [ "$RC" = 3 ]

ctl -e "$GW2" node maintenance start "$T3_ID"
check "node maintenance start (through gw2)" bash -c '[ '"$RC"' = 0 ] && grep -q "^node $2: maintenance" "$1"' _ "$W/out" "$T3_ID"
ctl -e "$GW" cluster show
check_eq "cluster show: the node is in maintenance" "$(cols "$T3_ID")" "target $T3_ID $T3 maintenance ok"
ctl -e "$GW" node maintenance stop "$T3_ID" --json
check "node maintenance stop --json" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d == {"node": sys.argv[2], "action": "stop-maintenance", "state": "active", "cmap_version": d["cmap_version"]}, d' "$W/out" "$T3_ID"
ctl -e "$GW" node maintenance pause "$T3_ID"
check "node maintenance pause: exit 2" [ "$RC" = 2 ]
ctl -e "$GW" node maintenance start no-such-node
check "node maintenance start of an unknown node: exit 3" [ "$RC" = 3 ]
ctl -e "$GW" node decommission "$T3_ID" </dev/null
check "node decommission without a terminal or --yes: exit 2, nothing done" \
	bash -c '[ '"$RC"' = 2 ] && grep -q -- "pass --yes" "$1"' _ "$W/err"
ctl -e "$GW" --json node decommission --yes "$T3_ID"
check "node decommission --yes --json" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["node"] == sys.argv[2] and d["action"] == "decommission-node" and d["state"] == "removed", d
assert d["cmap_version"] > 0, d' "$W/out" "$T3_ID"
ctl -e "$GW" cluster show
check "the decommissioned node left the map" bash -c '[ '"$RC"' = 0 ] && grep -q ", 2 gateways, 2 targets$" "$1" && ! grep -q " $2 " "$1"' _ "$W/out" "$T3_ID"

# completion of node ids and buckets from a cluster
comp() {
	AIS_ENDPOINT=$GW bash --norc --noprofile -c '
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
_aisctl; printf "%s\n" "${COMPREPLY[@]}"' _ "$IT_LIB/../../tools/completion/aisctl.bash" "$AISCTL" "$@" 2>&1
}
comp node maintenance start "" >"$W/c"
check "complete: node ids from the cluster map" bash -c 'grep -qx "$2" "$1" && grep -qx "$3" "$1"' _ "$W/c" "$T1_ID" "$GW2_ID"
comp get "${B:0:10}" >"$W/c"
check "complete: buckets through a gateway" grep -qx "$B/" "$W/c"
ctl -e "$GW2" ls "$B/t/" -H -p name
n_left=$(wc -l <"$W/out")
ctl -e "$GW2" get -r --conc 3 "$B/t" "$W/tgot"
check "get -r --conc 3 through the other gateway: every object under the prefix, byte for byte" \
	bash -c '[ '"$RC"' = 0 ] && [ "$4" -gt 20 ] && grep -q "^got $4 files" "$1" && [ "$(find "$3" -type f | wc -l)" = "$4" ] &&
		(cd "$3" && find . -type f | while read -r f; do cmp -s "$f" "$2/$f" || exit 1; done)' _ "$W/out" "$T" "$W/tgot" "$n_left"
# cp -r: the copy-bck job with a prefix, waited for; get -r of the copies
ctl -e "$GW" cp -r "$B/t/x/y" "cp$B"
check "cp -r to a missing bucket: exit 3" [ "$RC" = 3 ]
ctl -e "$GW" bucket create "cp$B"
ctl -e "$GW" cp -r "$B/t/x/y" "cp$B"
check "cp -r BUCKET/PREFIX BUCKET2: server-side, waits for the job" bash -c '[ '"$RC"' = 0 ] && grep -q ": done$" "$1"' _ "$W/out"
ctl -e "$GW2" get -r "cp$B/t/x" "$W/cpgot"
check "cp -r: only the prefix copied, names kept, byte for byte" diff -r "$T/x/y" "$W/cpgot/y"
check "cp -r: nothing outside the prefix" bash -c '[ "$(ls "$1")" = y ]' _ "$W/cpgot"
ctl -e "$GW" bucket rm --yes "cp$B"
ctl -e "$GW2" bucket rm --yes "$B"
check "bucket rm through gw2" [ "$RC" = 0 ]

# --- a dead target, a hung one ------------------------------------------------
kill -9 "$T1_PID"
wait_gone "$T1_PID" 10
ctl -e "$GW" cluster show
check "after kill -9: exit 0, still 4 nodes (2 gateways, 2 targets)" \
	bash -c '[ '"$RC"' = 0 ] && [ "$(grep -cE "^(gateway|target) " "$1")" = 4 ]' _ "$W/out"
check_eq "the killed target is unreachable" "$(health_of "$T1_ID")" unreachable
check "a warning line names the unreachable target" \
	bash -c 'grep -q "^warning: target $2 is unreachable: " "$1" && [ "$(grep -c "^warning" "$1")" = 1 ]' _ "$W/out" "$T1_ID"
check "its row has no stats" bash -c 'grep -qE "^target +$2 .* - +- +- +- +unreachable$" "$1"' _ "$W/out" "$T1_ID"
check_eq "the other target is ok" "$(health_of "$T2_ID")" ok
ctl -e "$GW" cluster show --json
check "--json: the killed target unreachable, with a detail" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
h = {n["id"]: n for n in d["nodes"]}
assert h[sys.argv[2]]["health"] == "unreachable" and h[sys.argv[2]].get("health_detail"), h
assert h[sys.argv[3]]["health"] == "ok" and "health_detail" not in h[sys.argv[3]], h
' "$W/out" "$T1_ID" "$T2_ID"

# the bound is relative to the same command with every node healthy, taken
# here: the probes' 2 s timeout and the stats fan-out's 2 s, plus slack for
# a loaded machine (a probe without a timeout would wait forever)
t0=$(date +%s%N)
ctl -e "$GW" cluster show
base=$((($(date +%s%N) - t0) / 1000000))
kill -STOP "$T2_PID"
t0=$(date +%s%N)
ctl -e "$GW" cluster show
took=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$T2_PID"
check_eq "a stopped target is unreachable" "$(health_of "$T2_ID")" unreachable
check "the health checks are bounded (took $took ms; $base ms with every node healthy)" [ "$took" -le $((base + 10000)) ]
check_eq "the gateway is still ok" "$(health_of "$GW_ID")" ok
wait_health "$T2" 10
ctl -e "$GW" cluster show
check_eq "the target is ok again after SIGCONT" "$(health_of "$T2_ID")" ok

finish
