#!/usr/bin/env bash
# test_deploy.sh - the Ansible playbooks of deploy/ansible end to end, on
# four test hosts made here (deploy/ansible/testhosts.sh: systemd-nspawn
# containers booted with systemd, each in its own network namespace with
# its own sshd and host key; root logs in with a key made here, host keys
# checked against the known_hosts testhosts.sh writes).
#
# site.yml deploys, from the Debian packages of `make deb` ($BUILD/deb:
# `make test` builds them first; run `make deb` before ONLY=test_deploy;
# without them the test fails), an HTTPS cluster with a cluster
# secret (a CA and per-host certificates made here): the primary gateway g0
# on host 1, gateway g1 on host 4, targets t0 and t1 (two mountpaths each)
# on hosts 2 and 3, as the inventory written here says. (g1 has a host of
# its own, as in a real deployment: on a target's host it would share that
# host's package installs, which site.yml runs on the hosts at once.)
# Checks: every node runs as the packages' system user from the installed
# unit, secrets are 0600, a bucket with two copies takes a PUT and gives it
# back through the gateway. Then upgrade.yml rolls packages of a newer
# version out to the targets, one by one in maintenance, then to g1, then to
# the primary g0, while a load runs through both gateways (the Python
# client with both endpoints, two clients that start on different gateways:
# PUT of new objects through one, GET-and-compare through the other, GETs
# of the objects written before; bounded in count and time): zero failed
# requests, each node restarted and back, each client failed over from a
# gateway that stopped, every object acknowledged during the load read back
# whole at the end, and the map has the 4 nodes and a primary.
#
# Skips, saying why loudly, only where this machine cannot make network
# namespaces (not root, or no `ip netns`); everything else missing fails.
# The containers, namespaces and bridge go by their recorded pid and names
# (testhosts.sh down) and the load by its pid, in the EXIT trap.
# serial: nspawn hosts and systemd
# timeout: 600
set -u
source "$IT_LIB/lib.sh"
unset AIS_ENDPOINT

REPO=$(cd "$IT_LIB/../.." && pwd)
ANS=$REPO/deploy/ansible
BINDIR=$(dirname "$AISD_BIN")
W=$AISD_DIR/deploy
HOSTS_DIR=$W/hosts
NAME=dep$(($$ % 1000))
NET=10.229.$(($$ % 200 + 20))
LOAD_PID=

if [ "$(id -u)" != 0 ]; then
	diag "SKIPPING the deploy test: not root, so no network namespaces or containers can be made here"
	skip "deploy with Ansible on test hosts" "not root (network namespaces)"
	finish
fi
if ! ip netns add "${NAME}probe" 2>/dev/null; then
	diag "SKIPPING the deploy test: 'ip netns add' fails on this machine, so no test hosts can be made"
	skip "deploy with Ansible on test hosts" "ip netns add does not work here"
	finish
fi
ip netns del "${NAME}probe"
for t in ansible-playbook systemd-nspawn /usr/sbin/sshd ssh-keygen dpkg-deb openssl; do
	command -v "$t" >/dev/null || {
		fail "$t is not installed (make deps installs it)"
		finish
	}
done

mkdir -p "$W/debs/v1" "$W/debs/v2" "$W/tls" "$W/logs"
collect_logs() {
	local h
	for h in "$HOSTS_DIR"/"$NAME"-*; do
		[ -d "$h/upper/var/log/aisd" ] || continue
		mkdir -p "$W/logs/${h##*/}"
		cp -r "$h/upper/var/log/aisd/." "$W/logs/${h##*/}/" 2>/dev/null
	done
}
cleanup() {
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null && wait_gone "$LOAD_PID" 10
	collect_logs
	"$ANS/testhosts.sh" down -d "$HOSTS_DIR" >/dev/null 2>&1 ||
		echo "# testhosts.sh down failed: see $HOSTS_DIR"
}
trap cleanup EXIT
# The runner's timeout sends SIGTERM: the plays and the load are waited for
# with `wait`, which the signal interrupts, so the cleanup runs at once.
trap 'echo "# SIGTERM: cleaning up"; exit 143' TERM
# Every play ends by this deadline (the runner's timeout is 600 s).
T_END=$((SECONDS + 540))

# ---- packages --------------------------------------------------------------

# The packages of `make deb` ($BUILD/deb) are version V1; V2, for the
# upgrade, is the same packages with a later version.
DEBS_DIR=$BINDIR/deb
V1=$(dpkg-deb -f "$(ls "$DEBS_DIR"/aisd_*.deb 2>/dev/null | head -1)" Version 2>/dev/null)
if [ -z "$V1" ] || ! ls "$DEBS_DIR"/aisctl_"$V1"_*.deb >/dev/null 2>&1; then
	fail "no aisd and aisctl packages under $DEBS_DIR (make deb)"
	finish
fi
V2=$V1+deploytest1
# reversion DEB VERSION DIR: DEB with another version, into DIR.
reversion() {
	local r=$W/debroot
	rm -rf "$r"
	dpkg-deb -R "$1" "$r" &&
		sed -i "s/^Version: .*/Version: $2/" "$r/DEBIAN/control" &&
		dpkg-deb -Zgzip -b "$r" "$3/$(dpkg-deb -f "$1" Package)_$2_$(dpkg-deb -f "$1" Architecture).deb" >/dev/null
}
cp "$DEBS_DIR"/aisd_"$V1"_*.deb "$DEBS_DIR"/aisctl_"$V1"_*.deb "$W/debs/v1/"
if reversion "$W"/debs/v1/aisd_*.deb "$V2" "$W/debs/v2" && reversion "$W"/debs/v1/aisctl_*.deb "$V2" "$W/debs/v2"; then
	ok "packages of make deb ($V1) and the same as $V2"
else
	fail "packages $V2 made"
	finish
fi

# ---- hosts, keys, certificates, inventory ----------------------------------

ssh-keygen -q -t ed25519 -N '' -C deploy-test -f "$W/id_ed25519"
t0=$SECONDS
if "$ANS/testhosts.sh" up -n "$NAME" -d "$HOSTS_DIR" -a "$NET" -k "$W/id_ed25519.pub" 4 >"$W/testhosts.log" 2>&1; then
	ok "4 test hosts booted with systemd, sshd answering ($((SECONDS - t0)) s)"
else
	fail "test hosts up"
	sed 's/^/#   /' "$W/testhosts.log" | tail -20
	finish
fi
H1=$NET.11 H2=$NET.12 H3=$NET.13 H4=$NET.14
SSH=(ssh -i "$W/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$HOSTS_DIR/known_hosts"
	-o ConnectTimeout=5)
on() {
	local ip=$1
	shift
	"${SSH[@]}" "root@$ip" "$@"
}

(
	cd "$W/tls" || exit 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=deploy-test-ca \
		-keyout ca.key -out ca.pem 2>/dev/null || exit 1
	for i in 1 2 3 4; do
		ip=$NET.$((10 + i))
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$ip" \
			-keyout "h$i.key" -out "h$i.csr" 2>/dev/null || exit 1
		printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$ip" >"h$i.ext"
		openssl x509 -req -in "h$i.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-extfile "h$i.ext" -out "h$i.pem" 2>/dev/null || exit 1
	done
) || {
	fail "TLS material made"
	finish
}
SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$W/inventory.yml" <<EOF
# The test's inventory: 2 gateways, 2 targets, HTTPS, a cluster secret.
aisd:
  vars:
    ansible_user: root
    ansible_python_interpreter: /usr/bin/python3
    ansible_ssh_private_key_file: $W/id_ed25519
    ansible_ssh_common_args: -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$HOSTS_DIR/known_hosts
    aisd_tls: true
    aisd_tls_ca_file: $W/tls/ca.pem
    aisd_cluster_secret: $SECRET
    aisd_log_file: /var/log/aisd/aisd.log
    aisd_config:
      cluster.keepalive: 1s
  hosts:
    $NAME-1:
      ansible_host: $H1
      aisd_role: gateway
      aisd_node_id: g0
      aisd_tls_cert_file: $W/tls/h1.pem
      aisd_tls_key_file: $W/tls/h1.key
    $NAME-2:
      ansible_host: $H2
      aisd_node_id: t0
      aisd_port: 8081
      aisd_mountpaths: [/var/lib/aisd/mp1, /srv/aisd/mp2]
      aisd_tls_cert_file: $W/tls/h2.pem
      aisd_tls_key_file: $W/tls/h2.key
    $NAME-3:
      ansible_host: $H3
      aisd_node_id: t1
      aisd_port: 8081
      aisd_mountpaths: [/var/lib/aisd/mp1, /srv/aisd/mp2]
      aisd_tls_cert_file: $W/tls/h3.pem
      aisd_tls_key_file: $W/tls/h3.key
    $NAME-4:
      ansible_host: $H4
      aisd_role: gateway
      aisd_node_id: g1
      aisd_tls_cert_file: $W/tls/h4.pem
      aisd_tls_key_file: $W/tls/h4.key
EOF
export ANSIBLE_CONFIG=$ANS/ansible.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
# each task's time in the logs
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
# play NAME ARGS...: ansible-playbook ARGS, its output in $W/NAME.log;
# returns its status and prints the recap's tail when it failed.
play() {
	local log=$W/$1.log rc
	shift
	local left=$((T_END - SECONDS))
	[ $left -gt 10 ] || left=10
	timeout "$left" ansible-playbook -i "$W/inventory.yml" "$@" </dev/null >"$log" 2>&1 &
	wait $!
	rc=$?
	[ $rc = 0 ] || grep -E 'FAILED|fatal|ERROR|msg' "$log" | head -15 | sed 's/^/#   /'
	return $rc
}

# ---- deploy ----------------------------------------------------------------

EP=https://$H1:8080
EP1=https://$H4:8080
CTL=("$AISCTL" --endpoint "$EP" --cacert "$W/tls/ca.pem")
t0=$SECONDS
if play site "$ANS/site.yml" -e "aisd_deb_dir=$W/debs/v1"; then
	ok "site.yml deployed the cluster ($((SECONDS - t0)) s)"
else
	fail "site.yml deployed the cluster"
	finish
fi
show=$("${CTL[@]}" cluster show 2>&1)
n_ok=$(echo "$show" | grep -cE '^(gateway|target) .* active .* ok$')
check_eq "cluster show: 4 nodes active and healthy" "$n_ok" 4
echo "$show" | grep -q "https://$H2:8081" && ok "t0 in the map at its https URL" || fail "t0's URL (got: $show)"
users=$(on "$H2" 'ps -o user= -C aisd; stat -c "%a %U" /etc/aisd/cluster.secret /etc/aisd/tls/node.key; dpkg-query -W -f="\${Version}" aisd')
check_eq "t0: aisd runs as aisd, secrets 0600, package $V1" "$(echo $users)" "aisd 600 aisd 600 aisd $V1"
curl -s -o /dev/null -w '%{http_code}' "http://$H1:8080/v1/health" | grep -q '^000$\|^400$' &&
	ok "the gateway answers plain http with no service (HTTPS only)" || fail "plain http to the gateway"

"${CTL[@]}" bucket create data >/dev/null 2>&1 &&
	"${CTL[@]}" bucket props set data mirror.enabled=true mirror.copies=2 >/dev/null 2>&1 ||
	fail "bucket data with 2 copies"
CURL=(curl -sS --fail --cacert "$W/tls/ca.pem" --max-time 30 -L)
head -c 100000 /dev/urandom >"$W/seed"
if "${CURL[@]}" -T "$W/seed" "$EP/v1/objects/data/seed" -o /dev/null &&
	"${CURL[@]}" "$EP/v1/objects/data/seed" -o "$W/seed.got" && cmp -s "$W/seed" "$W/seed.got"; then
	ok "PUT and GET through the gateway (https, redirected to a target)"
else
	fail "PUT and GET through the gateway"
fi
# Objects written before the upgrade, read during it.
mkdir -p "$W/pre"
for i in $(seq 1 20); do
	head -c $((1000 + i * 997)) /dev/urandom >"$W/pre/p$i"
	"${CURL[@]}" -T "$W/pre/p$i" "$EP/v1/objects/data/pre/p$i" -o /dev/null || fail "PUT pre/p$i"
done

# ---- rolling upgrade under load --------------------------------------------

# The load (the Python client, tools/python/aisd): until $W/load.stop
# appears (at most 5000 rounds, 500 s, at most 10 rounds a second), a new
# object PUT through client A (endpoints g0, g1) and read back through
# client B (g1, g0), and one of the earlier ones read and compared through
# A or B in turn. Each failed request is a line in load.fail, each
# acknowledged PUT a line in load.acked (its bytes in load/); load.rounds:
# rounds done, then each client's failovers (its endpoint in use changed).
# `load.py W EP0 EP1 CA verify` reads every acknowledged object back and
# prints "ACKED LOST".
cat >"$W/load.py" <<'EOF'
import os, sys, time
from aisd import Client
W, ep0, ep1, ca = sys.argv[1:5]
a = Client([ep0, ep1], cafile=ca, timeout=20, retry_for=60, local=False)
b = Client([ep1, ep0], cafile=ca, timeout=20, retry_for=60, local=False)
if sys.argv[5:] == ["verify"]:
    names, lost = open(W + "/load.acked").read().split(), 0
    for o in names:
        try:
            ok = a.get("data", "load/" + o) == open("%s/load/%s" % (W, o), "rb").read()
        except Exception as e:
            ok = False
            print("# %s: %r" % (o, e), file=sys.stderr)
        lost += not ok
    print(len(names), lost)
    sys.exit(0)
pre = {k: open("%s/pre/p%d" % (W, k), "rb").read() for k in range(1, 21)}
last, moves = [a.endpoint, b.endpoint], [0, 0]
fail, acked = open(W + "/load.fail", "a", buffering=1), open(W + "/load.acked", "a", buffering=1)
i, t_end = 0, time.monotonic() + 500
while i < 5000 and time.monotonic() < t_end and not os.path.exists(W + "/load.stop"):
    i += 1
    t_round = time.monotonic()
    data = b"object %d\n" % i + os.urandom(i * 7919 % 32768)
    try:
        a.put("data", "load/o%d" % i, data)
        with open("%s/load/o%d" % (W, i), "wb") as f:
            f.write(data)
        acked.write("o%d\n" % i)
    except Exception as e:
        fail.write("PUT o%d: %r\n" % (i, e))
        continue
    try:
        if b.get("data", "load/o%d" % i) != data:
            fail.write("GET o%d: other bytes\n" % i)
    except Exception as e:
        fail.write("GET o%d: %r\n" % (i, e))
    k = i % 20 + 1
    try:
        if (a, b)[i % 2].get("data", "pre/p%d" % k) != pre[k]:
            fail.write("GET pre/p%d: other bytes\n" % k)
    except Exception as e:
        fail.write("GET pre/p%d: %r\n" % (k, e))
    for j, c in enumerate((a, b)):
        if c.endpoint != last[j]:
            last[j], moves[j] = c.endpoint, moves[j] + 1
    with open(W + "/load.rounds.new", "w") as f:
        f.write("%d %d %d\n" % (i, moves[0], moves[1]))
    os.replace(W + "/load.rounds.new", W + "/load.rounds")
    time.sleep(max(0.0, t_round + 0.1 - time.monotonic()))
EOF
: >"$W/load.fail"
: >"$W/load.acked"
mkdir -p "$W/load"
PYTHONPATH=$REPO/tools/python /usr/bin/python3 "$W/load.py" "$W" "$EP" "$EP1" "$W/tls/ca.pem" 2>"$W/load.err" &
LOAD_PID=$!
t0=$SECONDS
play upgrade-targets "$ANS/upgrade.yml" -e aisd_upgrade_roles=target -e "aisd_deb_dir=$W/debs/v2"
rc=$?
read -r rounds _ < <(cat "$W/load.rounds" 2>/dev/null || echo 0)
if [ $rc = 0 ]; then
	ok "upgrade.yml for the targets: both targets upgraded in turn ($((SECONDS - t0)) s, $rounds load rounds so far)"
else
	fail "upgrade.yml for the targets"
fi
maint=$(grep -A3 'TASK \[aisd : maintenance start\]' "$W/upgrade-targets.log" | grep -c '^changed:')
check_eq "each target went into maintenance" "$maint" 2
for ip in "$H2" "$H3"; do
	check_eq "target at $ip runs package $V2" "$(on "$ip" 'dpkg-query -W -f="\${Version}" aisd')" "$V2"
done

# ---- the gateways under the same load, then nothing lost -------------------

read -r rounds_gw0 _ < <(cat "$W/load.rounds" 2>/dev/null || echo 0)
t0=$SECONDS
if play upgrade-gateways "$ANS/upgrade.yml" -e aisd_upgrade_roles=gateway -e "aisd_deb_dir=$W/debs/v2"; then
	ok "upgrade.yml for the gateways: g1, then the primary g0, under the load ($((SECONDS - t0)) s)"
else
	fail "upgrade.yml for the gateways"
fi
read -r rounds_gw1 _ < <(cat "$W/load.rounds" 2>/dev/null || echo 0)
touch "$W/load.stop"
wait_gone "$LOAD_PID" 60 || kill "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
LOAD_PID=
read -r rounds moves_a moves_b < <(cat "$W/load.rounds" 2>/dev/null || echo 0 0 0)
order=$(awk '/^TASK \[aisd : node restarted\]/ { f = 1; next } f && /^(changed|ok): / { print $2; f = 0 }' \
	"$W/upgrade-gateways.log" | grep -oE "$NAME-[0-9]+" | tr '\n' ' ')
check_eq "the gateways restarted in turn: g1 (host 4), then the primary g0 (host 1)" "$order" "$NAME-4 $NAME-1 "
[ "$rounds" -ge 5 ] && [ $((rounds_gw1 - rounds_gw0)) -ge 5 ] &&
	ok "the load ran $rounds rounds during the upgrade, $((rounds_gw1 - rounds_gw0)) during the gateways'" ||
	fail "the load ran only $rounds rounds, $((rounds_gw1 - rounds_gw0)) during the gateways' upgrade"
if [ -s "$W/load.fail" ]; then
	fail "zero failed requests under the upgrade: $(wc -l <"$W/load.fail") failed, e.g. $(head -3 "$W/load.fail" | tr '\n' ' ')"
	head -5 "$W/load.err" | sed 's/^/#   /'
else
	ok "zero failed requests during the rolling upgrade of targets and gateways ($rounds rounds of PUT, GET, GET)"
fi
[ "${moves_a:-0}" -ge 1 ] && [ "${moves_b:-0}" -ge 1 ] &&
	ok "both clients failed over from a stopping gateway (A $moves_a times, B $moves_b times)" ||
	fail "each client failed over at least once (A ${moves_a:-0}, B ${moves_b:-0} times)"
for ip in "$H1" "$H4"; do
	check_eq "gateway at $ip runs package $V2" "$(on "$ip" 'dpkg-query -W -f="\${Version}" aisd')" "$V2"
done
read -r acked lost < <(PYTHONPATH=$REPO/tools/python timeout 300 /usr/bin/python3 "$W/load.py" "$W" "$EP" "$EP1" \
	"$W/tls/ca.pem" verify 2>>"$W/load.err" || echo 0 0)
[ "${acked:-0}" -ge 5 ] && [ "$lost" = 0 ] && [ "$acked" = "$(wc -l <"$W/load.acked")" ] &&
	ok "all $acked objects acknowledged during the upgrade read back whole" ||
	fail "$lost of $acked acknowledged objects lost or changed"
show=$("${CTL[@]}" cluster show 2>&1)
n_ok=$(echo "$show" | grep -cE '^(gateway|target) .* active .* ok$')
check_eq "after the upgrade: 4 nodes active and healthy" "$n_ok" 4
n_prim=$(echo "$show" | grep -cE '^gateway +g[01]\* ')
check_eq "after the upgrade: the map has a primary gateway" "$n_prim" 1
finish
