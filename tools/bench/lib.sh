# shellcheck shell=bash
# lib.sh - helpers shared by the bench scripts (sourced, not run).

# stop_pid PID: SIGTERM, up to 5 s to exit, then SIGKILL; reaps it.
stop_pid() {
	local pid=$1
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# json_field NAME < line: a number field of aisloader's --json line.
json_field() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }

# median < numbers (one a line): the median, or n/a for none.
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print v[(NR+1)/2]; else printf "%.4f\n", (v[NR/2]+v[NR/2+1])/2}'; }

# free_port: a TCP port on 127.0.0.1 that nobody listens on right now.
free_port() {
	python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}
