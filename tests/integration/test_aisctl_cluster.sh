#!/usr/bin/env bash
# test_aisctl_cluster.sh - "aisctl cluster show" against a small cluster:
# a gateway and two targets started here on free ports (metadata under
# $AISD_DIR/c-*, logs $AISD_DIR/c-*.log), stopped by PID on exit. The
# runner's own target is standalone: the command must say so and exit 1.
#
# Checks: the table (header line, 3 nodes, primary marked, all ok), --json
# (the map plus a health member per node), help; then one target killed with
# -9 reads "unreachable" (the gateway keeps it in the map: cluster.grace is
# 60s) and a stopped one (SIGSTOP) also reads "unreachable" within the
# health timeout.
# timeout: 120
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
check "column header" grep -qE '^ROLE +ID +URL +STATE +HEALTH$' "$W/out"
check_eq "3 node rows" "$(grep -cE '^(gateway|target) ' "$W/out")" 3
check "the gateway is marked primary" bash -c 'grep -qE "^gateway +$1\\* +$2 +active +ok$" "$3"' _ "$GW_ID" "$GW" "$W/out"
check_eq "only the primary is marked" "$(grep -cE '^(gateway|target) +[^ ]+\* ' "$W/out")" 1
check_eq "t1 healthy" "$(health_of "$T1_ID")" ok
check_eq "t2 healthy" "$(health_of "$T2_ID")" ok
check "targets listed with their URLs" bash -c 'grep -qE "^target +$1 +$2 +active +ok$" "$3"' _ "$T1_ID" "$T1" "$W/out"
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
assert sorted(n["role"] for n in d["nodes"]) == ["gateway", "target", "target"], d
' "$W/out" "$GW_ID"

# --- a dead target, a hung one ------------------------------------------------
kill -9 "$T1_PID"
wait_gone "$T1_PID" 10
ctl -e "$GW" cluster show
check "after kill -9: exit 0, still 3 nodes" \
	bash -c '[ '"$RC"' = 0 ] && [ "$(grep -cE "^(gateway|target) " "$1")" = 3 ]' _ "$W/out"
check_eq "the killed target is unreachable" "$(health_of "$T1_ID")" unreachable
check_eq "the other target is ok" "$(health_of "$T2_ID")" ok
ctl -e "$GW" cluster show --json
check "--json: the killed target unreachable, with a detail" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
h = {n["id"]: n for n in d["nodes"]}
assert h[sys.argv[2]]["health"] == "unreachable" and h[sys.argv[2]].get("health_detail"), h
assert h[sys.argv[3]]["health"] == "ok" and "health_detail" not in h[sys.argv[3]], h
' "$W/out" "$T1_ID" "$T2_ID"

kill -STOP "$T2_PID"
t0=$(date +%s)
ctl -e "$GW" cluster show
t1=$(date +%s)
kill -CONT "$T2_PID"
check_eq "a stopped target is unreachable" "$(health_of "$T2_ID")" unreachable
check "the health checks are bounded (took $((t1 - t0)) s)" [ $((t1 - t0)) -le 5 ]
check_eq "the gateway is still ok" "$(health_of "$GW_ID")" ok
wait_health "$T2" 10
ctl -e "$GW" cluster show
check_eq "the target is ok again after SIGCONT" "$(health_of "$T2_ID")" ok

finish
