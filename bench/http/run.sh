#!/usr/bin/env bash
# bench/http/run.sh: examples/webserver beside net/http, fasthttp and
# nghttpd under wrk and h2load, in one run, on this machine's loopback.
# What make bench-http runs.
#
# Servers:
#   webserver   examples/webserver, one loop per CPU (its default)
#   webserver1  examples/webserver -loops 1: one loop, to set beside nghttpd
#   nethttp     net/http, HTTP/1.1 and h2c (bench/http/baseline)
#   fasthttp    fasthttp, HTTP/1.1 only (bench/http/baseline)
#   nghttpd     nghttpd --no-tls -n 1: nghttp2's single-threaded C server,
#               /health a file "ok"; HTTP/2 only
# and over TLS, with one certificate (ECDSA P-256, made by openssl at
# start) for all:
#   webserver-tls   examples/webserver -tls-cert -tls-key, one loop per CPU
#   webserver1-tls  the same with -loops 1, to set beside nghttpd-tls
#   nethttp-tls     net/http's HTTPS server (bench/http baseline -tls-cert)
#   nghttpd-tls     nghttpd -n 1 PORT KEY CERT
# Scenarios (wrk -t$THREADS -c$CONNS -d$DUR --latency):
#   health     GET /health
#   pipelined  GET /health, 16 requests pipelined per write (pipeline.lua)
#   slow       GET /slow?ms=1 (an asynchronous handler: a loop timer)
# and over HTTP/2 by prior knowledge (h2load -c$H2CONNS -m10 -t1 -D $DUR;
# h2load has no percentiles: their p99 reads 0):
#   h2c        GET /health
#   h2slow     GET /slow?ms=1
# and over TLS (connections set up once, so these measure the record
# layer; cmd/loopbench's tls rows measure the handshakes):
#   https      wrk on https://…/health (HTTP/1.1: wrk offers no ALPN),
#              webserver-tls and nethttp-tls
#   h2tls      h2load on https://…/health (h2 by ALPN), webserver1-tls and
#              nghttpd-tls
# A server runs only the scenarios it can serve (webserver1 and nghttpd
# the HTTP/2 ones, nghttpd not h2slow, fasthttp not HTTP/2); the table
# leaves out the cells not run.
# Each round runs every server once per scenario, servers interleaved, and
# the table gives the medians over REPS rounds: requests/s, p99 latency,
# requests per CPU-second of the server process, and the ratios of
# webserver to nethttp and fasthttp and of webserver1 to nghttpd (and of
# their -tls forms). A server that runs none of SCENARIOS is not started.
# A run with non-2xx responses or socket errors is reported and counts 0.
set -euo pipefail
PATH=$PATH:/usr/sbin # where Debian puts nghttpd, outside a user's PATH
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REPS=${REPS:-3} DUR=${DUR:-8s} CONNS=${CONNS:-64} THREADS=${THREADS:-2} H2CONNS=${H2CONNS:-16}
OUT=${OUT:-$HERE/results.tsv}
SERVERS=${SERVERS:-webserver webserver1 nethttp fasthttp nghttpd webserver-tls webserver1-tls nethttp-tls nghttpd-tls}
SCENARIOS=${SCENARIOS:-health pipelined slow h2c h2slow https h2tls}
BIN=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$BIN"; }
trap cleanup EXIT

tools="wrk h2load"
case " $SERVERS " in *" nghttpd"*) tools="$tools nghttpd" ;; esac
case " $SERVERS " in *-tls*) tools="$tools openssl" ;; esac
for tool in $tools; do
	command -v $tool >/dev/null || { echo "bench-http: $tool not found (make bench-http installs it)" >&2; exit 1; }
done
case " $SERVERS " in *" webserver"*) (cd "$ROOT" && go build -o "$BIN/webserver" ./examples/webserver) ;; esac
(cd "$HERE" && go build -o "$BIN/baseline" ./baseline)
mkdir "$BIN/www" && printf ok >"$BIN/www/health" # nghttpd's /health
case " $SERVERS " in *-tls*)
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
		-keyout "$BIN/key.pem" -out "$BIN/cert.pem" 2>"$BIN/openssl.err" ||
		{ echo "bench-http: openssl could not make the certificate:" >&2; cat "$BIN/openssl.err" >&2; exit 1; }
	;;
esac
CLK=$(getconf CLK_TCK)

# runs SERVER SCENARIO: whether SERVER serves SCENARIO.
runs() {
	case $1:$2 in
	webserver-tls:https | nethttp-tls:https) return 0 ;;
	webserver1-tls:h2tls | nghttpd-tls:h2tls) return 0 ;;
	*-tls:* | *:https | *:h2tls) return 1 ;;
	fasthttp:h2*) return 1 ;;
	webserver1:h2* | nghttpd:h2c) return 0 ;;
	webserver1:* | nghttpd:*) return 1 ;;
	esac
}

# free_port: a loopback port nothing listens on (nghttpd takes no port 0).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

TLSFLAGS=(-tls-cert "$BIN/cert.pem" -tls-key "$BIN/key.pem")

# start NAME: start a server on a free port; sets PID and ADDR.
start() {
	local log=$BIN/$1.out
	local port=
	case $1 in
	webserver) "$BIN/webserver" -addr 127.0.0.1:0 >"$log" 2>"$BIN/$1.err" & ;;
	webserver1) "$BIN/webserver" -loops 1 -addr 127.0.0.1:0 >"$log" 2>"$BIN/$1.err" & ;;
	webserver-tls) "$BIN/webserver" "${TLSFLAGS[@]}" -addr 127.0.0.1:0 >"$log" 2>"$BIN/$1.err" & ;;
	webserver1-tls) "$BIN/webserver" "${TLSFLAGS[@]}" -loops 1 -addr 127.0.0.1:0 >"$log" 2>"$BIN/$1.err" & ;;
	nethttp-tls) "$BIN/baseline" -server nethttp "${TLSFLAGS[@]}" -addr 127.0.0.1:0 >"$log" 2>"$BIN/$1.err" & ;;
	nghttpd)
		port=$(free_port)
		nghttpd --no-tls -n 1 -d "$BIN/www" "$port" >"$log" 2>"$BIN/$1.err" &
		;;
	nghttpd-tls)
		port=$(free_port)
		nghttpd -n 1 -d "$BIN/www" "$port" "$BIN/key.pem" "$BIN/cert.pem" >"$log" 2>"$BIN/$1.err" &
		;;
	*) "$BIN/baseline" -server "$1" -addr 127.0.0.1:0 >"$log" 2>"$BIN/$1.err" & ;;
	esac
	PID=$!
	for _ in $(seq 1 100); do
		if [ -n "$port" ]; then
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { ADDR=127.0.0.1:$port; return 0; }
		else
			ADDR=$(sed -n 's/^listening on //p' "$log")
			[ -n "$ADDR" ] && return 0
		fi
		sleep 0.1
	done
	echo "bench-http: $1 did not print 'listening on'" >&2; cat "$BIN/$1.err" >&2; exit 1
}

stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }

# to_ms VALUE: wrk's latency (e.g. 812.00us, 1.20ms, 2.00s) in ms.
to_ms() {
	awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u);
		if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000;
		printf "%.3f", n }'
}

# scenario NAME SERVER: run it against ADDR, print "rps p99ms".
scenario() {
	case $1 in
	h2c) h2c /health; return ;;
	h2slow) h2c "/slow?ms=1"; return ;;
	h2tls) h2c /health https; return ;;
	esac
	local args=(-t"$THREADS" -c"$CONNS" -d"$DUR" --latency)
	case $1 in
	health) args+=("http://$ADDR/health") ;;
	pipelined) args+=(-s "$HERE/pipeline.lua" "http://$ADDR/" -- 16 /health) ;;
	slow) args+=("http://$ADDR/slow?ms=1") ;;
	https) args+=("https://$ADDR/health") ;;
	esac
	local out
	out=$(wrk "${args[@]}")
	if grep -q -e 'Non-2xx' -e 'Socket errors' <<<"$out"; then
		echo "bench-http: $1 had errors:" >&2; grep -e 'Non-2xx' -e 'Socket errors' <<<"$out" >&2
		echo "0 0"; return
	fi
	local rps p99
	rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
	p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
	echo "$rps $(to_ms "$p99")"
}

# h2c PATH [SCHEME]: h2load on PATH over h2c (or h2 over TLS when SCHEME
# is https) against ADDR, print "rps 0".
h2c() {
	local out
	local scheme=${2:-http} proto=h2c
	[ "$scheme" = https ] && proto=h2
	out=$(h2load -c "$H2CONNS" -m 10 -t 1 -D "${DUR%s}" "$scheme://$ADDR$1" 2>&1)
	if ! grep -q ' 0 failed, 0 errored, 0 timeout' <<<"$out" || ! grep -q "^Application protocol: $proto\$" <<<"$out"; then
		echo "bench-http: h2load $scheme had errors:" >&2; grep -e '^Application protocol' <<<"$out" >&2; grep -e '^requests:' -e '^status codes:' <<<"$out" >&2
		echo "0 0"; return
	fi
	echo "$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out") 0"
}

printf 'round\tserver\tscenario\treq_per_s\tp99_ms\treq_per_cpu_s\n' >"$OUT"
# serves SERVER: whether SERVER runs any of SCENARIOS.
serves() {
	local sc
	for sc in $SCENARIOS; do runs "$1" "$sc" && return 0; done
	return 1
}

for r in $(seq 1 "$REPS"); do
	for s in $SERVERS; do
		serves "$s" || continue
		start "$s"
		for sc in $SCENARIOS; do
			runs "$s" "$sc" || continue
			t0=$(cpu_ticks)
			read -r rps p99 < <(scenario "$sc" "$s")
			t1=$(cpu_ticks)
			cpu=$(awk -v a="$t0" -v b="$t1" -v c="$CLK" 'BEGIN { printf "%.3f", (b - a) / c }')
			per=$(awk -v r="$rps" -v c="$cpu" -v d="${DUR%s}" 'BEGIN { printf "%.0f", (c > 0 ? r * d / c : 0) }')
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$s" "$sc" "$rps" "$p99" "$per" | tee -a "$OUT"
		done
		stop
	done
done

echo
echo "medians over $REPS rounds (wrk -t$THREADS -c$CONNS -d$DUR; h2load -c$H2CONNS -m10 -t1 -D ${DUR%s})"
awk -F'\t' -v scs="$SCENARIOS" -v svs="$SERVERS" '
NR > 1 { k = $3 FS $2; n[k]++; rps[k, n[k]] = $4; p99[k, n[k]] = $5; per[k, n[k]] = $6 }
function med(a, k, c,   i, j, t, v) { for (i = 1; i <= c; i++) v[i] = a[k, i] + 0
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2 }
END {
	nsc = split(scs, sc, " "); nsv = split(svs, sv, " ")
	printf "%-10s %-14s %12s %9s %12s\n", "scenario", "server", "req/s", "p99 ms", "req/cpu-s"
	for (i = 1; i <= nsc; i++) {
		delete R; delete P
		for (j = 1; j <= nsv; j++) { k = sc[i] FS sv[j]
			if (!n[k]) continue
			R[sv[j]] = med(rps, k, n[k]); P[sv[j]] = med(per, k, n[k])
			printf "%-10s %-14s %12.0f %9.2f %12.0f\n", sc[i], sv[j], R[sv[j]], med(p99, k, n[k]), P[sv[j]] }
		ratio(sc[i], "webserver", "nethttp"); ratio(sc[i], "webserver", "fasthttp")
		ratio(sc[i], "webserver1", "nghttpd")
		ratio(sc[i], "webserver-tls", "nethttp-tls"); ratio(sc[i], "webserver1-tls", "nghttpd-tls")
	}
}
function ratio(s, a, b) {
	if ((a in R) && (b in R) && R[b] > 0 && P[b] > 0)
		printf "%-10s %s / %s: %.2fx req/s, %.2fx req per CPU-s\n", s, a, b, R[a] / R[b], P[a] / P[b]
}' "$OUT"
