#!/usr/bin/env bash
# cluster.sh - an aisd cluster with every node in its own network namespace,
# for testing failures of the network (root only).
#
#   cluster.sh up        [-g GATEWAYS] [-t TARGETS] [-d DIR] [-n NAME] [-a NET]
#                        [-p PORT] [-b BINDIR] [-s KEY=VALUE]...
#   cluster.sh down      [-d DIR]
#   cluster.sh status    [-d DIR]
#   cluster.sh cut       NODE... [-d DIR]   the node's link goes down: it reaches no one
#   cluster.sh partition NODE... [-d DIR]   the nodes reach each other, not the rest
#   cluster.sh heal      [NODE...] [-d DIR] undo cut/partition (all nodes by default)
#   cluster.sh url       NODE [-d DIR]      the node's URL
#   cluster.sh exec      NODE [-d DIR] -- CMD...  run CMD in the node's namespace
#
# The same cluster as deploy/local/cluster.sh (g0 the primary, g1.. and
# t0.. join it; DIR/<node>/ holds aisd.conf, aisd.log, aisd.pid, data), but
# node N runs in namespace NAME-N with one veth whose other end (NAMEN on the
# host) is on the bridge NAMEbr0; the bridge has NET.1/24, gateway i has
# NET.(10+i), target i NET.(100+i), every node listens on PORT there.
# "partition" moves the nodes' host ends to a second bridge NAMEbr1 (no
# address: the host reaches them only through "exec"); "cut" sets the host
# end down.
#
# Everything up creates is recorded in DIR/netns.env; down stops the nodes
# (SIGTERM, then SIGKILL after 10 s; only the pids it recorded, after
# checking each is still that node's aisd), deletes the veths, namespaces and
# bridges, and keeps the data. A failed up undoes itself (trap).
#
# Defaults: -g 1 -t 3 -d <repo>/run-netns -n ais -a 10.213.0 -p 8080
# -b <repo>/build (or $BUILD). NAME: 1-6 letters/digits (interface names are
# at most 15 bytes). -s adds "KEY = VALUE" to every node's config (e.g.
# -s cluster.grace=2s).
set -Eeuo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)
HEALTH_TIMEOUT=20
STOP_TIMEOUT=10

usage() {
	sed -n '4,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

cmd=${1:-}
[ -n "$cmd" ] || {
	usage >&2
	exit 2
}
shift
case $cmd in
up | down | status | cut | partition | heal | url | exec) ;;
-h | --help | help)
	usage
	exit 0
	;;
*)
	usage >&2
	exit 2
	;;
esac

gateways=1 targets=3 dir=$REPO/run-netns name=ais net=10.213.0 port=8080 bindir=
sets=() args=() cmdline=()
while [ $# -gt 0 ]; do
	case $1 in
	-g) gateways=${2:?}; shift 2 ;;
	-t) targets=${2:?}; shift 2 ;;
	-d) dir=${2:?}; shift 2 ;;
	-n) name=${2:?}; shift 2 ;;
	-a) net=${2:?}; shift 2 ;;
	-p) port=${2:?}; shift 2 ;;
	-b) bindir=${2:?}; shift 2 ;;
	-s) sets+=("${2:?}"); shift 2 ;;
	--) shift; cmdline=("$@"); break ;;
	-h | --help) usage; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) args+=("$1"); shift ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
if ! is_uint "$gateways" || ! is_uint "$targets"; then die "-g and -t want numbers"; fi
[ "$targets" -ge 1 ] || die "no targets to start (-t 0)"
[[ $name =~ ^[a-z0-9]{1,6}$ ]] || die "-n wants 1-6 lowercase letters or digits"
[[ $net =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "-a wants the first three bytes of a /24, like 10.213.0"
is_uint "$port" || die "-p wants a port number"
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
if [ -z "$bindir" ]; then
	bindir=${BUILD:-$REPO/build}
	case $bindir in /*) ;; *) bindir=$REPO/$bindir ;; esac
fi

env_file=$dir/netns.env

# The recorded cluster (all commands but up read it).
load_env() {
	[ -f "$env_file" ] || die "no netns cluster under $dir"
	# shellcheck disable=SC1090
	source "$env_file"
}

node_ns() { echo "$NAME-$1"; }
node_veth() { echo "$NAME$1"; }
node_ip() {
	case $1 in
	g*) echo "$NET.$((10 + ${1#g}))" ;;
	t*) echo "$NET.$((100 + ${1#t}))" ;;
	esac
}
node_url() { echo "http://$(node_ip "$1"):$PORT"; }
node_pid() { cat "$dir/$1/aisd.pid" 2>/dev/null || true; }

# running NODE: its recorded pid is alive and is that node's aisd.
running() {
	local pid
	pid=$(node_pid "$1")
	is_uint "$pid" && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir/$1/aisd.conf"
}

known_node() {
	local n
	for n in $NODES; do [ "$n" = "$1" ] && return 0; done
	die "no node $1 (nodes: $NODES)"
}

# ---- down ------------------------------------------------------------------

cmd_down() {
	local n pid pids=() waited=0
	[ -f "$env_file" ] || {
		echo "no netns cluster under $dir"
		return 0
	}
	# shellcheck disable=SC1090
	source "$env_file"
	for n in $NODES; do
		if running "$n"; then
			pid=$(node_pid "$n")
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	while [ ${#pids[@]} -gt 0 ]; do
		local left=()
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
		pids=("${left[@]+"${left[@]}"}")
		[ ${#pids[@]} -eq 0 ] && break
		if [ "$waited" -ge $((STOP_TIMEOUT * 10)) ]; then
			echo "cluster.sh: pid(s) ${pids[*]} ignored SIGTERM for ${STOP_TIMEOUT}s: SIGKILL" >&2
			kill -KILL "${pids[@]}" 2>/dev/null || true
			sleep 0.2
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	for n in $NODES; do
		rm -f "$dir/$n/aisd.pid"
		ip link del "$(node_veth "$n")" 2>/dev/null || true
		ip netns del "$(node_ns "$n")" 2>/dev/null || true
	done
	ip link del "${NAME}br1" 2>/dev/null || true
	ip link del "${NAME}br0" 2>/dev/null || true
	rm -f "$env_file"
	echo "netns cluster $NAME under $dir: down"
}

# ---- up --------------------------------------------------------------------

write_conf() {
	local n=$1 role=$2 join=$3 nd=$dir/$1 kv
	{
		echo "# aisd.conf for $n, written by deploy/netns/cluster.sh"
		echo "role = $role"
		echo "node.id = $n"
		echo "net.host = $(node_ip "$n")"
		echo "net.port = $PORT"
		if [ "$role" = target ]; then
			echo "store.mountpaths = $nd/mp1"
			echo "node.dir = $nd"
		else
			echo "node.dir = $nd"
		fi
		echo "log.file = $nd/aisd.log"
		[ -n "$join" ] && echo "cluster.join = $join"
		for kv in "${sets[@]+"${sets[@]}"}"; do
			echo "${kv%%=*} = ${kv#*=}"
		done
	} >"$nd/aisd.conf.tmp"
	chmod 600 "$nd/aisd.conf.tmp" # --set values may be secrets
	mv "$nd/aisd.conf.tmp" "$nd/aisd.conf"
}

start_node() {
	local n=$1 role=$2 join=$3 nd=$dir/$1
	mkdir -p "$nd"
	[ "$role" = target ] && mkdir -p "$nd/mp1"
	write_conf "$n" "$role" "$join"
	rm -f "$nd/aisd.pid"
	# the child writes its own pid, then execs aisd inside the namespace
	# shellcheck disable=SC2016
	nohup setsid ip netns exec "$(node_ns "$n")" bash -c 'echo $$ >"$1"; shift; exec "$@"' node \
		"$nd/aisd.pid" "$bindir/aisd" --config "$nd/aisd.conf" </dev/null >>"$nd/aisd.out" 2>&1 &
}

wait_node() {
	local n=$1 deadline=$((SECONDS + HEALTH_TIMEOUT))
	until curl -fsS -o /dev/null --max-time 2 "$(node_url "$n")/v1/health" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ] || { [ -n "$(node_pid "$n")" ] && ! running "$n"; }; then
			echo "cluster.sh: $n did not come up; last lines of its log:" >&2
			tail -n 20 "$dir/$n/aisd.log" "$dir/$n/aisd.out" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.2
	done
	echo "$n: up at $(node_url "$n"), pid $(node_pid "$n")"
}

cmd_up() {
	local n i all=() join
	command -v curl >/dev/null || die "curl is needed"
	[ -x "$bindir/aisd" ] || die "no aisd at $bindir/aisd (run make, or pass -b)"
	[ -f "$env_file" ] && die "a netns cluster is already up under $dir (down first)"
	ip link show "${name}br0" >/dev/null 2>&1 && die "interface ${name}br0 exists: another cluster uses -n $name"
	ip netns add "${name}-probe" 2>/dev/null || die "cannot create network namespaces here"
	ip netns del "${name}-probe"
	mkdir -p "$dir"
	NAME=$name NET=$net PORT=$port NODES=
	for ((i = 0; i < gateways; i++)); do NODES="$NODES g$i"; done
	for ((i = 0; i < targets; i++)); do NODES="$NODES t$i"; done
	NODES=${NODES# }
	printf 'NAME=%s\nNET=%s\nPORT=%s\nNODES="%s"\n' "$NAME" "$NET" "$PORT" "$NODES" >"$env_file"
	trap 'echo "cluster.sh: up failed: undoing" >&2; cmd_down >&2' ERR INT TERM

	ip link add "${NAME}br0" type bridge
	ip link set "${NAME}br0" up
	ip addr add "$NET.1/24" dev "${NAME}br0"
	ip link add "${NAME}br1" type bridge
	ip link set "${NAME}br1" up
	for n in $NODES; do
		local ns veth
		ns=$(node_ns "$n") veth=$(node_veth "$n")
		ip netns add "$ns"
		ip link add "$veth" type veth peer name "${veth}p"
		ip link set "${veth}p" netns "$ns"
		ip -n "$ns" link set "${veth}p" name eth0
		ip -n "$ns" addr add "$(node_ip "$n")/24" dev eth0
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
		ip link set "$veth" master "${NAME}br0" up
	done

	join=
	if [ "$gateways" -gt 0 ]; then
		start_node g0 gateway ""
		wait_node g0
		join=$(node_url g0)
	fi
	for n in $NODES; do
		[ "$n" = g0 ] && continue
		case $n in g*) start_node "$n" gateway "$join" ;; t*) start_node "$n" target "$join" ;; esac
		all+=("$n")
	done
	for n in "${all[@]+"${all[@]}"}"; do wait_node "$n"; done
	if [ -n "$join" ]; then
		local want have=0 deadline=$((SECONDS + HEALTH_TIMEOUT))
		want=$(wc -w <<<"$NODES")
		while [ "$SECONDS" -lt "$deadline" ]; do
			have=$(curl -fsS --max-time 2 "$join/v1/cluster?what=smap" 2>/dev/null | grep -o '"role":' | wc -l) || true
			[ "$have" -ge "$want" ] && break
			sleep 0.2
		done
		[ "$have" -ge "$want" ] || {
			echo "cluster.sh: the cluster map lists $have of $want nodes" >&2
			false
		}
		echo "cluster map: $have nodes, primary g0; endpoint $join"
	fi
	trap - ERR INT TERM
}

# ---- status, cut, partition, heal --------------------------------------------

cmd_status() {
	local n state link rc=0
	load_env
	printf '%-5s %-15s %-8s %-6s %-10s %s\n' NODE ADDRESS PID LINK BRIDGE STATE
	for n in $NODES; do
		link=$(ip -o link show "$(node_veth "$n")" 2>/dev/null | grep -q 'state UP\|,UP' && echo up || echo down)
		local br
		br=$(ip -o link show "$(node_veth "$n")" 2>/dev/null | sed -n 's/.* master \([^ ]*\).*/\1/p')
		if running "$n"; then
			if ip netns exec "$(node_ns "$n")" curl -fsS -o /dev/null --max-time 2 "$(node_url "$n")/v1/health" 2>/dev/null; then
				state=up
			else
				state="not answering"
				rc=1
			fi
		else
			state=down
			rc=1
		fi
		printf '%-5s %-15s %-8s %-6s %-10s %s\n' "$n" "$(node_ip "$n")" "$(node_pid "$n")" "$link" "${br:--}" "$state"
	done
	return $rc
}

cmd_cut() {
	local n
	load_env
	[ ${#args[@]} -gt 0 ] || die "cut: which node?"
	for n in "${args[@]}"; do known_node "$n"; done
	for n in "${args[@]}"; do
		ip link set "$(node_veth "$n")" down
		echo "$n: cut off"
	done
}

cmd_partition() {
	local n
	load_env
	[ ${#args[@]} -gt 0 ] || die "partition: which nodes?"
	for n in "${args[@]}"; do known_node "$n"; done
	for n in "${args[@]}"; do
		ip link set "$(node_veth "$n")" master "${NAME}br1"
	done
	echo "partitioned: ${args[*]} | the rest"
}

cmd_heal() {
	local n list
	load_env
	list=("${args[@]+"${args[@]}"}")
	[ ${#list[@]} -gt 0 ] || read -ra list <<<"$NODES"
	for n in "${list[@]}"; do known_node "$n"; done
	for n in "${list[@]}"; do
		ip link set "$(node_veth "$n")" master "${NAME}br0"
		ip link set "$(node_veth "$n")" up
	done
	echo "healed: ${list[*]}"
}

case $cmd in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
cut) cmd_cut ;;
partition) cmd_partition ;;
heal) cmd_heal ;;
url)
	load_env
	[ ${#args[@]} -eq 1 ] || die "url: one node"
	known_node "${args[0]}"
	node_url "${args[0]}"
	;;
exec)
	load_env
	if [ ${#args[@]} -ne 1 ] || [ ${#cmdline[@]} -eq 0 ]; then die "exec NODE -- CMD..."; fi
	known_node "${args[0]}"
	exec ip netns exec "$(node_ns "${args[0]}")" "${cmdline[@]}"
	;;
esac
