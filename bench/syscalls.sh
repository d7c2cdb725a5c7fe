#!/usr/bin/env bash
# bench/syscalls.sh: system calls per unit of work, the figures that do not
# depend on the machine's load (a wall-clock ratio on a shared machine
# does). Counted by the kernel's syscall tracepoints (perf, as root or
# with perf_event_paranoid <= -1), so the servers run unmodified.
#
#   health  GET /health under wrk (keep-alive, -c$CONNS -t$THREADS, $DUR):
#           per request, for examples/webserver -loops 1, examples/webserver
#           (a loop per CPU) and net/http (bench/http/baseline), each server
#           alone; also its CPU and wrk's per request.
#   proxy   cmd/loopbench -workload tcp-proxy (-duration $DUR): per echo
#           (a 64 KiB message through the proxy and back) and per MB of
#           message, for each row, counting the proxy's process only (each
#           row's clients and upstream run in a child process of their own;
#           a row's window is the life of its child).
#
# Usage: bench/syscalls.sh [health] [proxy]   (default both)
# Environment: DUR (seconds, default 4), CONNS (64), THREADS (2).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DUR=${DUR:-4} CONNS=${CONNS:-64} THREADS=${THREADS:-2}
WHAT=${*:-health proxy}
BIN=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$BIN"; }
trap cleanup EXIT

for tool in perf wrk; do
	command -v $tool >/dev/null || { echo "syscalls: $tool not found" >&2; exit 1; }
done
perf stat -e 'raw_syscalls:sys_enter' -- true >/dev/null 2>&1 ||
	{ echo "syscalls: perf cannot count syscall tracepoints here (root, or perf_event_paranoid)" >&2; exit 1; }

# The calls worth naming; the rest are summed in "other".
CALLS="read write writev readv splice epoll_pwait epoll_pwait2 epoll_ctl futex nanosleep sched_yield tgkill accept4 close setsockopt pipe2 fcntl"
EVENTS=raw_syscalls:sys_enter
for c in $CALLS; do EVENTS=$EVENTS,syscalls:sys_enter_$c; done
CLK=$(getconf CLK_TCK)

# table UNIT N FILE: perf stat -x, output as counts per UNIT (N of them).
table() {
	awk -F, -v unit="$1" -v n="$2" '
	$3 == "raw_syscalls:sys_enter" { total = $1; next }
	$1 + 0 > 0 { sub(/^syscalls:sys_enter_/, "", $3); named += $1; c[$3] = $1 }
	END {
		printf "    %-14s %10.3f per %s\n", "all", total / n, unit
		for (k in c) printf "    %-14s %10.3f\n", k, c[k] / n
		if (total > named) printf "    %-14s %10.3f\n", "other", (total - named) / n
	}' "$3" | sort -k2 -g -r
}

health() {
	(cd "$ROOT" && go build -o "$BIN/webserver" ./examples/webserver)
	(cd "$ROOT/bench/http" && go build -o "$BIN/baseline" ./baseline)
	local s log out req rps t0 t1 wcpu pp
	for s in webserver1 webserver nethttp; do
		log=$BIN/$s.out
		case $s in
		webserver1) "$BIN/webserver" -loops 1 -addr 127.0.0.1:0 >"$log" 2>&1 & ;;
		webserver) "$BIN/webserver" -addr 127.0.0.1:0 >"$log" 2>&1 & ;;
		nethttp) "$BIN/baseline" -server nethttp -addr 127.0.0.1:0 >"$log" 2>&1 & ;;
		esac
		PID=$!
		ADDR=
		for _ in $(seq 1 100); do
			ADDR=$(sed -n 's/^listening on //p' "$log")
			[ -n "$ADDR" ] && break
			sleep 0.1
		done
		[ -n "$ADDR" ] || { echo "syscalls: $s did not start" >&2; cat "$log" >&2; exit 1; }
		wrk -t"$THREADS" -c"$CONNS" -d1s "http://$ADDR/health" >/dev/null # connections and paths warm
		t0=$(awk '{print $14 + $15}' "/proc/$PID/stat")
		perf stat -x, -e "$EVENTS" -p "$PID" -o "$BIN/$s.stat" &
		pp=$!
		sleep 0.2 # perf attached
		out=$({ TIMEFORMAT='wrkcpu %U %S'; time wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" "http://$ADDR/health"; } 2>&1)
		kill -INT $pp
		wait $pp || true
		t1=$(awk '{print $14 + $15}' "/proc/$PID/stat")
		kill "$PID"
		wait "$PID" 2>/dev/null || true
		PID=
		if grep -q -e 'Non-2xx' -e 'Socket errors' <<<"$out"; then
			echo "syscalls: $s had errors" >&2
			exit 1
		fi
		req=$(awk '/ requests in / {print $1}' <<<"$out")
		rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		wcpu=$(awk '/^wrkcpu/ {print $2 + $3}' <<<"$out")
		awk -v s="$s" -v r="$req" -v rps="$rps" -v a="$t0" -v b="$t1" -v c="$CLK" -v w="$wcpu" 'BEGIN {
			printf "health %s: %d requests, %.0f req/s, server %.2f us CPU/req, wrk %.2f us CPU/req\n",
				s, r, rps, (b - a) / c * 1e6 / r, w * 1e6 / r }'
		table request "$req" "$BIN/$s.stat"
	done
}

proxy() {
	(cd "$ROOT" && go build -o "$BIN/loopbench" ./cmd/loopbench)
	# -m: a buffer large enough that no event is lost (checked below).
	perf record -q -m 16M -o "$BIN/proxy.data" -e "$EVENTS" -- \
		"$BIN/loopbench" -workload tcp-proxy -duration "${DUR}s" -json >"$BIN/proxy.json" 2>"$BIN/proxy.err" ||
		{ cat "$BIN/proxy.err" >&2; exit 1; }
	if perf report -i "$BIN/proxy.data" --stats 2>/dev/null | grep -q 'LOST_SAMPLES\|LOST events'; then
		echo "syscalls: perf lost events; the counts below are low" >&2
	fi
	perf script -i "$BIN/proxy.data" -F pid,time,event 2>/dev/null >"$BIN/proxy.txt"
	# Rows in the order loopbench ran them: workload impl ops.
	sed -n 's/.*"workload":"\([^"]*\)","impl":"\([^"]*\)","ops":\([0-9]*\).*/\1 \2 \3/p' "$BIN/proxy.json" >"$BIN/rows"
	awk -v rowsf="$BIN/rows" '
	BEGIN { while ((getline l < rowsf) > 0) { nr++; row[nr] = l } }
	{ t = $2 + 0; sub(/:$/, "", $3); sub(/^syscalls:sys_enter_/, "", $3); sub(/^raw_syscalls:sys_enter/, "all", $3)
		p = $1 + 0
		if (!parent) parent = p # the first to make a call: loopbench, before its children
		if (p == parent) { n++; pt[n] = t; pe[n] = $3; next }
		if (!(p in first)) { seen[++ns] = p; first[p] = t }
		last[p] = t; calls[p]++ }
	END {
		for (k = 1; k <= ns; k++) if (calls[seen[k]] > 100) kids[++nk] = seen[k] # not a fork that only exec-ed
		if (nk != nr) { printf "syscalls: %d peer processes for %d rows\n", nk, nr > "/dev/stderr"; exit 1 }
		for (k = 1; k <= nk; k++) {
			split(row[k], f, " "); ops = f[3]; mb = ops * 65536 / 1e6
			delete c
			for (i = 1; i <= n; i++) if (pt[i] >= first[kids[k]] && pt[i] <= last[kids[k]]) c[pe[i]]++
			printf "proxy %s/%s: %d echoes (%.0f MB of message each way)\n", f[1], f[2], ops, mb
			printf "    %-14s %10.3f per echo %8.2f per MB\n", "all", c["all"] / ops, c["all"] / mb
			cmd = "sort -k2 -g -r"
			for (e in c) if (e != "all") printf "    %-14s %10.3f %17.2f\n", e, c[e] / ops, c[e] / mb | cmd
			close(cmd)
		}
	}' "$BIN/proxy.txt"
}

for w in $WHAT; do
	case $w in
	health) health ;;
	proxy) proxy ;;
	*) echo "syscalls: unknown $w (health, proxy)" >&2; exit 2 ;;
	esac
done
