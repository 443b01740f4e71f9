#!/usr/bin/env bash
# cluster.sh - run a local aisd cluster on this machine, for development.
#
#   cluster.sh up     [-g GATEWAYS] [-t TARGETS] [-d DIR] [-p BASEPORT] [-b BINDIR] [-s]
#   cluster.sh down   [-d DIR]
#   cluster.sh status [-d DIR]
#
# Every node has a directory DIR/<node>/ holding its config (aisd.conf,
# written on the first `up` only), its log (aisd.log, plus aisd.out for
# anything printed before the log opens), its pid (aisd.pid) and its port
# (port); a target also its mountpath (mp1/, where it keeps its cluster
# metadata too), a gateway its cluster metadata (node.dir = DIR/g<i>).
# Gateway i is node g<i> on BASEPORT+i, target i is t<i> on
# BASEPORT+GATEWAYS+i, or another free port if that one is busy; the port is
# remembered, so a restart finds the node where it was.
#
# g0 is the primary gateway (it starts a new cluster, or its old one); the
# other gateways and every target join it (cluster.join in their config,
# set to g0's URL on every `up`). With -g 0 the targets run standalone.
# Clients use g0's URL and follow its redirects (curl -L).
#
# `up` on an existing DIR restarts the stopped nodes with their data (they
# rejoin) and leaves running ones alone. `down` sends SIGTERM, waits up to
# 10 s, then SIGKILL; it only signals the pids it recorded, after checking
# that each is still that node's aisd.
#
# S3: the first `up` makes a key pair for the cluster (DIR/s3.key, mode
# 600: ACCESS:SECRET:local:Local Admin) and every node gets it as an
# s3.key line in its config; `up` prints it on one line that scripts can
# parse:
#   s3: endpoint=URL access_key=AK secret_key=SK region=REGION
# The first `up` also makes DIR/cluster.secret (mode 600), which every node
# gets as cluster.secret_file: only these nodes can join or push metadata.
#
# HTTPS: `up -s` on a new DIR makes a CA and a node certificate for
# 127.0.0.1 with the openssl CLI (DIR/tls/: ca.pem, node.pem, node.key) and
# every node serves HTTPS only (net.tls.cert, net.tls.key, net.tls.ca in its
# config); a DIR that has DIR/tls/node.pem stays HTTPS on every later `up`.
# Clients then use --cacert DIR/tls/ca.pem (curl, aisctl, aisloader).
#
# Defaults: -g 1 -t 3 -d <repo>/run -p 8080 -b <repo>/build (or $BUILD).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)

HEALTH_TIMEOUT=20 # seconds a node has to answer /v1/health
STOP_TIMEOUT=10   # seconds between SIGTERM and SIGKILL

usage() {
	cat <<EOF
usage: $0 up     [-g GATEWAYS] [-t TARGETS] [-d DIR] [-p BASEPORT] [-b BINDIR] [-s]
       $0 down   [-d DIR]
       $0 status [-d DIR]

  -g N   gateways (default 1; 0: standalone targets; on an existing DIR, at
         least the gateways it has); g0 is the primary, the endpoint
  -t N   targets (default 3; on an existing DIR, at least the targets it has)
  -d DIR cluster directory (default: $REPO/run)
  -p N   first port (default 8080); gateway i listens on N+i, target i on
         N+GATEWAYS+i, or another free port if that one is busy
  -b DIR where the aisd binary is (default: \$BUILD or $REPO/build)
  -s     HTTPS: a CA and a certificate made under DIR/tls on the first up
         (a DIR made with -s stays HTTPS)
EOF
}

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# abspath PATH: PATH made absolute against the current directory.
abspath() {
	case $1 in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s\n' "$PWD/$1" ;;
	esac
}

# ---- options --------------------------------------------------------------

cmd=${1:-}
[ -n "$cmd" ] || {
	usage >&2
	exit 2
}
shift
case $cmd in
up | down | status) ;;
-h | --help | help)
	usage
	exit 0
	;;
*)
	usage >&2
	exit 2
	;;
esac

gateways=1
gateways_set=0
targets=3
targets_set=0
dir=$REPO/run
baseport=8080
baseport_set=0
bindir=
tls_opt=0
while getopts "g:t:d:p:b:sh" opt; do
	case $opt in
	s) tls_opt=1 ;;
	g) gateways=$OPTARG gateways_set=1 ;;
	t) targets=$OPTARG targets_set=1 ;;
	d) dir=$OPTARG ;;
	p) baseport=$OPTARG baseport_set=1 ;;
	b) bindir=$OPTARG ;;
	h)
		usage
		exit 0
		;;
	*)
		usage >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument: $1"
is_uint "$gateways" || die "-g wants a number, not '$gateways'"
is_uint "$targets" || die "-t wants a number, not '$targets'"
if ! is_uint "$baseport" || [ "$baseport" -lt 1 ] || [ "$baseport" -gt 65535 ]; then
	die "-p wants a port number, not '$baseport'"
fi
[ "$cmd" = up ] || [ "$targets_set$gateways_set" = 00 ] || die "-g and -t are for 'up' only"

dir=$(abspath "$dir")
# physical path: pids are matched against the config path aisd was given
[ -d "$dir" ] && dir=$(cd "$dir" && pwd -P)

if [ -z "$bindir" ]; then
	b=${BUILD:-$REPO/build}
	case $b in
	/*) bindir=$b ;;
	*) if [ -x "$PWD/$b/aisd" ]; then bindir=$PWD/$b; else bindir=$REPO/$b; fi ;;
	esac
fi
bindir=$(abspath "$bindir")

# ---- helpers --------------------------------------------------------------

# nodes: the node names under $dir, gateways first, in numeric order.
nodes() {
	local kind d
	for kind in g t; do
		for d in "$dir"/"$kind"[0-9]*; do
			if [ -d "$d" ] && [[ $(basename "$d") =~ ^${kind}[0-9]+$ ]]; then
				basename "$d"
			fi
		done | sort -k1.2n
	done
}

node_pid() { cat "$dir/$1/aisd.pid" 2>/dev/null || true; }
node_port() { cat "$dir/$1/port" 2>/dev/null || true; }
# node_role NODE: its role (from its config; else g<i> gateway, t<i> target).
node_role() {
	local r
	r=$(sed -n 's/^[[:space:]]*role[[:space:]]*=[[:space:]]*\([a-z]*\).*/\1/p' "$dir/$1/aisd.conf" 2>/dev/null | tail -1)
	[ -n "$r" ] || case $1 in g*) r=gateway ;; *) r=target ;; esac
	echo "$r"
}

# running NODE: true if the pid recorded for NODE is alive and is that
# node's aisd (so a recycled pid is never signalled).
running() {
	local pid cmdline
	pid=$(node_pid "$1")
	is_uint "$pid" || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	if [ -r "/proc/$pid/cmdline" ]; then
		cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
		[[ $cmdline == *"$dir/$1/aisd.conf"* ]] || return 1
	fi
	return 0
}

# The scheme of the nodes' URLs, and curl's options for them.
scheme() { [ -s "$dir/tls/node.pem" ] && echo https || echo http; }
curl_tls() {
	if [ -s "$dir/tls/ca.pem" ]; then curl --cacert "$dir/tls/ca.pem" "$@"; else curl "$@"; fi
}

healthy() {
	curl_tls -fsS -o /dev/null --max-time 2 "$(scheme)://127.0.0.1:$1/v1/health" 2>/dev/null
}

# port_busy PORT: something listens on PORT (any address).
port_busy() {
	if command -v ss >/dev/null 2>&1; then
		[ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}

# port_claimed PORT NODE: another node of this cluster owns PORT.
port_claimed() {
	local n
	for n in $(nodes); do
		[ "$n" != "$2" ] && [ "$(node_port "$n")" = "$1" ] && return 0
	done
	return 1
}

# free_port NODE WANT: WANT if it is free, else the next free port above the
# cluster's range that no other node of this cluster owns.
free_port() {
	local node=$1 p=$2
	if ! port_busy "$p" && ! port_claimed "$p" "$node"; then
		echo "$p"
		return
	fi
	p=$((baseport + ngateways + ntargets))
	while [ "$p" -le 65535 ]; do
		if ! port_busy "$p" && ! port_claimed "$p" "$node"; then
			echo "$p"
			return
		fi
		p=$((p + 1))
	done
	die "no free port for $node"
}

show_logs() {
	local f
	for f in "$dir/$1/aisd.out" "$dir/$1/aisd.log"; do
		if [ -s "$f" ]; then
			echo "--- last lines of $f:" >&2
			tail -n 20 "$f" >&2
		fi
	done
}

# stop_pids PID...: SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL.
stop_pids() {
	local pid left waited=0
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	while :; do
		left=()
		for pid in "$@"; do
			kill -0 "$pid" 2>/dev/null && left+=("$pid")
		done
		[ ${#left[@]} -eq 0 ] && return 0
		if [ "$waited" -ge $((STOP_TIMEOUT * 10)) ]; then
			echo "cluster.sh: pid(s) ${left[*]} ignored SIGTERM for ${STOP_TIMEOUT}s: SIGKILL" >&2
			kill -KILL "${left[@]}" 2>/dev/null || true
			return 0
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
}

# ---- up -------------------------------------------------------------------

# write_conf NODE ROLE PORT: the node's config, first time only.
write_conf() {
	local node=$1 role=$2 port=$3 nd=$dir/$1
	[ -f "$nd/aisd.conf" ] && return 0
	{
		echo "# aisd.conf for $node, written by deploy/local/cluster.sh."
		echo "# Edit freely: later 'up' runs keep it (except net.port, see $nd/port, and cluster.join: g0's URL)."
		echo "role = $role"
		echo "node.id = $node"
		echo "net.host = 127.0.0.1"
		echo "net.port = $port"
		if [ "$role" = target ]; then
			echo "store.mountpaths = $nd/mp1"
		else
			echo "node.dir = $nd"
		fi
		echo "log.file = $nd/aisd.log"
	} >"$nd/aisd.conf.tmp"
	chmod 600 "$nd/aisd.conf.tmp" # it gets the S3 secret (s3_key_conf)
	mv "$nd/aisd.conf.tmp" "$nd/aisd.conf"
}

# set_key NODE KEY VALUE: sets KEY in the node's config (replacing its
# line, or appending one); an empty VALUE removes the line.
set_key() {
	local f=$dir/$1/aisd.conf k=${2//./\\.}
	if grep -q "^[[:space:]]*${k}[[:space:]]*=" "$f"; then
		if [ -n "$3" ]; then
			sed -i "s|^[[:space:]]*${k}[[:space:]]*=.*|$2 = $3|" "$f"
		else
			sed -i "/^[[:space:]]*${k}[[:space:]]*=/d" "$f"
		fi
	elif [ -n "$3" ]; then
		echo "$2 = $3" >>"$f"
	fi
}

# s3_key_make: the cluster's S3 key pair (DIR/s3.key), made on first use.
s3_key_make() {
	local f=$dir/s3.key hex secret
	[ -s "$f" ] && return 0
	hex=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	secret=$(head -c 30 /dev/urandom | base64 | tr -d '\n')
	(
		umask 077
		echo "AIS$(tr a-f A-F <<<"${hex:0:17}"):$secret:local:Local Admin" >"$f.tmp"
	)
	mv "$f.tmp" "$f"
}

# cluster_secret_make: the secret the nodes sign their calls to each other
# with (DIR/cluster.secret, mode 600; cluster.secret_file in each config),
# made on first use, so a process that is not one of these nodes cannot
# join the cluster or push it a map.
cluster_secret_make() {
	local f=$dir/cluster.secret
	[ -s "$f" ] && return 0
	(
		umask 077
		od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$f.tmp"
		echo >>"$f.tmp"
	)
	mv "$f.tmp" "$f"
}

# tls_make: with -s on a DIR without one, a CA and a certificate for
# 127.0.0.1 and localhost (DIR/tls/, keys mode 600) that every node uses.
tls_make() {
	local d=$dir/tls
	[ -s "$d/node.pem" ] && return 0
	[ "$tls_opt" = 1 ] || return 0
	command -v openssl >/dev/null 2>&1 || die "-s needs the openssl command"
	mkdir -p "$d"
	(
		umask 077
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
			-subj "/CN=aisd local CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null &&
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=aisd local node" \
				-keyout "$d/node.key" -out "$d/node.csr" 2>/dev/null &&
			printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$d/ext" &&
			openssl x509 -req -in "$d/node.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
				-days 3650 -extfile "$d/ext" -out "$d/node.pem.tmp" 2>/dev/null
	) || die "openssl could not make the certificates under $d"
	chmod 644 "$d/ca.pem" "$d/node.pem.tmp"
	mv "$d/node.pem.tmp" "$d/node.pem"
}

# s3_key_field N: field N (1 access key, 2 secret) of the cluster's key.
s3_key_field() { cut -d: -f"$1" <"$dir/s3.key"; }

# s3_key_conf NODE: the node's config has the cluster's key (an s3.key
# line for its access key; other s3.key lines are left alone).
s3_key_conf() {
	local f=$dir/$1/aisd.conf ak
	chmod 600 "$f" # one written world-readable by an older version
	ak=$(s3_key_field 1)
	grep -q "^[[:space:]]*s3\.key[[:space:]]*=[[:space:]]*$ak:" "$f" ||
		echo "s3.key = $(cat "$dir/s3.key")" >>"$f"
}

# s3_region: the region g0 (or t0) is configured with.
s3_region() {
	local n r
	for n in g0 t0; do
		[ -f "$dir/$n/aisd.conf" ] || continue
		r=$(sed -n 's/^[[:space:]]*s3\.region[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$dir/$n/aisd.conf" | tail -1)
		break
	done
	echo "${r:-us-east-1}"
}

# start_node NODE ROLE PORTINDEX [JOIN_URL]: start it unless it runs.
start_node() {
	local node=$1 role=$2 i=$3 join=${4:-} nd=$dir/$1 port want
	mkdir -p "$nd"
	[ "$role" = target ] && mkdir -p "$nd/mp1"
	if running "$node"; then
		echo "$node: already running (pid $(node_pid "$node"))" >&2
		return 0
	fi
	port=$(node_port "$node")
	if is_uint "$port"; then
		if port_busy "$port"; then
			want=$port
			port=$(free_port "$node" "$want")
			echo "$node: port $want is taken by another process: moving to $port" >&2
		fi
	else
		port=$(free_port "$node" $((baseport + i)))
		[ "$port" = $((baseport + i)) ] ||
			echo "$node: port $((baseport + i)) is busy: using $port" >&2
	fi
	echo "$port" >"$nd/port"
	write_conf "$node" "$role" "$port"
	set_key "$node" net.port "$port"
	set_key "$node" cluster.join "$join"
	set_key "$node" cluster.secret_file "$dir/cluster.secret"
	if [ "$(scheme)" = https ]; then
		set_key "$node" net.tls.cert "$dir/tls/node.pem"
		set_key "$node" net.tls.key "$dir/tls/node.key"
		set_key "$node" net.tls.ca "$dir/tls/ca.pem"
	fi
	s3_key_conf "$node"
	rm -f "$nd/aisd.pid"
	# The child writes its own pid, then execs aisd: the pid file names
	# aisd itself whether or not setsid had to fork.
	# shellcheck disable=SC2016 # expanded by the child shell
	nohup setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' cluster-node \
		"$nd/aisd.pid" "$bindir/aisd" --config "$nd/aisd.conf" \
		</dev/null >>"$nd/aisd.out" 2>&1 &
}

# wait_node NODE: until it answers /v1/health. On timeout or death, shows
# its log, stops it, and fails.
wait_node() {
	local node=$1 port pid deadline
	port=$(node_port "$node")
	deadline=$((SECONDS + HEALTH_TIMEOUT))
	while :; do
		if healthy "$port"; then
			echo "$node: up, pid $(node_pid "$node")"
			return 0
		fi
		pid=$(node_pid "$node")
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			echo "cluster.sh: $node exited during start-up" >&2
			show_logs "$node"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "cluster.sh: $node did not answer $(scheme)://127.0.0.1:$port/v1/health within ${HEALTH_TIMEOUT}s" >&2
			show_logs "$node"
			if [ -n "$pid" ] && running "$node"; then
				stop_pids "$pid"
			fi
			rm -f "$dir/$node/aisd.pid"
			return 1
		fi
		sleep 0.2
	done
}

# smap_count URL: how many nodes the cluster map at URL lists (0 if none).
smap_count() {
	local m
	m=$(curl_tls -fsS --max-time 2 "$1/v1/cluster?what=smap" 2>/dev/null) || {
		echo 0
		return 0
	}
	grep -o '"role":' <<<"$m" | wc -l
}

cmd_up() {
	command -v curl >/dev/null 2>&1 || die "curl is needed (health checks)"
	[ -x "$bindir/aisd" ] || die "no aisd binary at $bindir/aisd (run 'make' first, or pass -b)"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	# New nodes of an existing cluster get ports from the same range.
	if [ "$baseport_set" = 0 ] && is_uint "$(cat "$dir/baseport" 2>/dev/null)"; then
		baseport=$(cat "$dir/baseport")
	fi
	echo "$baseport" >"$dir/baseport"
	s3_key_make
	cluster_secret_make
	tls_make

	# On an existing DIR, every node it has comes back.
	local n hg=0 ht=0 i node fail=0 join="" all=()
	for n in $(nodes); do
		case $n in
		g*) hg=$((hg + 1)) ;;
		t*) ht=$((ht + 1)) ;;
		esac
	done
	ngateways=$((gateways > hg ? gateways : hg))
	ntargets=$((targets > ht ? targets : ht))
	[ "$ntargets" -gt 0 ] || die "no targets to start (-t 0)"

	# The primary first: the others join its URL.
	if [ "$ngateways" -gt 0 ]; then
		start_node g0 gateway 0
		wait_node g0 || die "the primary gateway g0 did not start; see its log above"
		join=$(scheme)://127.0.0.1:$(node_port g0)
		all+=(g0)
	fi
	for ((i = 1; i < ngateways; i++)); do
		start_node "g$i" gateway "$i" "$join"
		all+=("g$i")
	done
	for ((i = 0; i < ntargets; i++)); do
		start_node "t$i" target $((ngateways + i)) "$join"
		all+=("t$i")
	done
	for node in "${all[@]}"; do
		[ "$node" = g0 ] || wait_node "$node" || fail=1
	done
	[ "$fail" = 0 ] || die "some nodes did not start; see the logs above (and 'cluster.sh down -d $dir')"

	local ep stop have=0 deadline
	if [ -n "$join" ]; then
		# bounded: a node retries its join every cluster.keepalive
		deadline=$((SECONDS + HEALTH_TIMEOUT))
		while :; do
			have=$(smap_count "$join")
			[ "$have" -ge "${#all[@]}" ] && break
			if [ "$SECONDS" -ge "$deadline" ]; then
				echo "cluster.sh: the cluster map lists $have of ${#all[@]} nodes after ${HEALTH_TIMEOUT}s; see the logs" >&2
				break
			fi
			sleep 0.2
		done
		echo "cluster map: $have nodes, primary gateway g0"
		ep=$join
	else
		for ((i = 0; i < ntargets; i++)); do
			echo "standalone target t$i: $(scheme)://127.0.0.1:$(node_port "t$i")"
		done
		ep=$(scheme)://127.0.0.1:$(node_port t0)
	fi
	echo "endpoint: $ep"
	echo "s3: endpoint=$ep access_key=$(s3_key_field 1) secret_key=$(s3_key_field 2) region=$(s3_region)"
	local ca=""
	if [ "$(scheme)" = https ]; then
		echo "tls: ca=$dir/tls/ca.pem"
		ca=" --cacert $dir/tls/ca.pem"
	fi
	if [ "$dir" = "$(cd "$REPO" && pwd -P)/run" ]; then
		stop="make stop   (or: deploy/local/cluster.sh down -d ./run)"
	else
		stop="deploy/local/cluster.sh down -d $dir"
	fi
	cat <<EOF

Cluster is up under $dir (logs: $dir/<node>/aisd.log). Try (-L follows
the gateway's redirects: objects to their target, bucket changes to the
primary):

  EP=$ep
  curl$ca -L -X POST \$EP/v1/buckets/mybucket -d '{"action":"create-bck"}'
  curl$ca -L -T file \$EP/v1/objects/mybucket/file
  curl$ca -L -o file.copy \$EP/v1/objects/mybucket/file
  curl$ca -L -X GET \$EP/v1/buckets/mybucket -d '{"action":"list"}'
  curl$ca "\$EP/v1/cluster?what=smap"

Status: deploy/local/cluster.sh status -d $dir
Stop:   $stop

Paste these lines into your shell: aisctl, aisloader, the aisd Python
package and the S3 clients (aws, boto3, s3cmd) then use this cluster:

$(paste_lines "$ep")
EOF
}

# paste_lines EP: the shell lines `up` ends with (PATH, endpoint, Python
# package, S3 key pair, and with TLS the CA), each indented by two spaces;
# tests/check-docs-run.py reads them from there as a user pastes them.
paste_lines() {
	echo "  export PATH=\"$bindir:\$PATH\" AIS_ENDPOINT=$1 EP=$1"
	echo "  export PYTHONPATH=\"$REPO/tools/python\""
	echo "  export AWS_ACCESS_KEY_ID=$(s3_key_field 1) AWS_SECRET_ACCESS_KEY=$(s3_key_field 2) AWS_DEFAULT_REGION=$(s3_region)"
	if [ "$(scheme)" = https ]; then
		echo "  export AIS_CACERT=$dir/tls/ca.pem AWS_CA_BUNDLE=$dir/tls/ca.pem CURL_CA_BUNDLE=$dir/tls/ca.pem"
	fi
}

# ---- down -----------------------------------------------------------------

cmd_down() {
	local n pids=() names=()
	if [ ! -d "$dir" ]; then
		echo "no cluster under $dir"
		return 0
	fi
	for n in $(nodes); do
		if running "$n"; then
			pids+=("$(node_pid "$n")")
			names+=("$n")
		fi
	done
	if [ ${#pids[@]} -gt 0 ]; then
		stop_pids "${pids[@]}"
	fi
	for n in $(nodes); do
		rm -f "$dir/$n/aisd.pid"
	done
	if [ ${#names[@]} -gt 0 ]; then
		echo "stopped: ${names[*]}"
	else
		echo "nothing running under $dir"
	fi
}

# ---- status ---------------------------------------------------------------

cmd_status() {
	local n pid port state all_up=0
	if [ ! -d "$dir" ] || [ -z "$(nodes)" ]; then
		echo "no cluster under $dir"
		return 1
	fi
	printf '%-6s %-8s %-8s %-6s %s\n' NODE ROLE PID PORT STATE
	for n in $(nodes); do
		pid=- port=$(node_port "$n")
		[ -n "$port" ] || port=-
		if running "$n"; then
			pid=$(node_pid "$n")
			if [ "$port" != - ] && healthy "$port"; then
				state=up
			else
				state="down (pid alive, /v1/health does not answer)"
				all_up=1
			fi
		else
			state=down
			all_up=1
		fi
		printf '%-6s %-8s %-8s %-6s %s\n' "$n" "$(node_role "$n")" "$pid" "$port" "$state"
	done
	return "$all_up"
}

ngateways=$gateways
ntargets=$targets
case $cmd in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
esac
