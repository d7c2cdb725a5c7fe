# aio: an event-loop runtime for Go.
# Everything here needs only Go; targets install what else they use.
GO ?= go
PKGS := ./...
CROSS := darwin/amd64 darwin/arm64 freebsd/amd64 netbsd/amd64 openbsd/amd64 linux/arm64 linux/riscv64 linux/386 linux/arm

.PHONY: all build test race short debug soak vet lint cross bench bench-http conformance fuzz fuzz-short clean tools

all: build test

build:
	$(GO) build $(PKGS)

# test: formatting, vet, then every test under the race detector, then the
# deep-graph tests (TestDeep*) at their full million handles, which the
# race run sizes down to 100,000 (see deepN), then the aiodebug
# assertions, then a short run of each fuzz target, then (on linux/amd64,
# which runs 386 binaries) the short suite as 32-bit code: word-size bugs
# do not show in a vet.
test: lint tools
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	$(GO) test -count=1 -timeout 10m -run '^TestDeep' .
	$(GO) test -tags aiodebug -short -count=1 -timeout 5m $(PKGS)
	@$(MAKE) --no-print-directory fuzz-short
	@if [ "$$($(GO) env GOHOSTOS)/$$($(GO) env GOHOSTARCH)" != linux/amd64 ]; then \
		echo "not linux/amd64: the 386 run is left to make cross's vet"; \
	elif GOARCH=386 $(GO) test -count=1 -run '^$$' ./internal/goid 2>&1 | grep -q 'exec format error'; then \
		echo "this kernel does not run 386 binaries: the 386 run is left to make cross's vet"; \
	else \
		echo "GOARCH=386 $(GO) test -short"; \
		GOARCH=386 $(GO) test -short -count=1 -timeout 5m $(PKGS); \
	fi

race: test

# tools: the programs the tests drive besides Go (curl for httpd's and
# the webserver's HTTP/1.1, HTTP/2 and HTTPS checks, openssl s_client for
# TLS's KeyUpdate and ALPN), installed where they are missing.
TOOLS := curl openssl
tools:
	@missing=; for t in $(TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq $$missing; \
	fi

# short: the quick loop for development (skips the million-handle graphs).
short: tools
	$(GO) test -race -short -count=1 $(PKGS)

# debug: the loop-affinity assertions of the aiodebug build tag.
debug: tools
	$(GO) test -tags aiodebug -short -count=1 -timeout 5m $(PKGS)

# soak: the stress plan (ST-02 rapid connect/close 60 s, ST-03 deep
# chains with cancellation 30 s, ST-04 mixed outcomes 60 s) under the race
# detector, each ending with handles, fds and goroutines at their baseline.
# Not part of test. SOAK_SCALE=0.1 shortens every run tenfold.
SOAK_SCALE ?= 1
soak:
	$(GO) test -tags soak -race -count=1 -timeout 15m -run Soak -v . -args -soak.scale=$(SOAK_SCALE)

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags soak .

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# cross: the kqueue backends and the other architectures must compile and vet.
cross:
	@set -e; for p in $(CROSS); do \
		echo "vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet $(PKGS); \
	done

# bench: every loopbench workload, aio beside the Go standard library.
bench:
	$(GO) run ./cmd/loopbench

# bench-http: examples/webserver beside net/http, fasthttp and nghttpd under
# wrk and h2load, in one run (bench/http/run.sh: REPS rounds of DUR seconds,
# CONNS, THREADS, H2CONNS; the table goes to bench/http/results.tsv).
# Installs wrk, h2load (nghttp2-client) and nghttpd (nghttp2-server) if
# they are missing, and openssl (tools), which makes the TLS rows'
# certificate.
bench-http: tools
	@PATH=$$PATH:/usr/sbin; command -v wrk >/dev/null && command -v h2load >/dev/null && command -v nghttpd >/dev/null || \
		{ sudo=$$(command -v sudo || true); \
		$$sudo apt-get install -y wrk nghttp2-client nghttp2-server || \
		{ $$sudo apt-get update && $$sudo apt-get install -y wrk nghttp2-client nghttp2-server; }; }
	bench/http/run.sh

# conformance: h2spec in strict mode (146 tests) against examples/webserver
# on a free port, over h2c and over TLS (-tls-self-signed, h2spec -t -k),
# any failure or skip failing it (.ci/conformance).
# Installs h2spec, pinned, into .bin with the Go toolchain.
conformance:
	GO=$(GO) .ci/conformance

# FUZZ lists the fuzz targets as package:Target:time, the time being that
# of the short run in make test. The fuzzing runs without the race
# detector (too slow under it to find anything in seconds); the targets'
# seed corpora run under it with the other tests. A failing input is
# written to the package's testdata/fuzz, where go test replays it.
FUZZ := ./httpd/internal/h1:FuzzParseRequest:10s ./httpd/internal/h1:FuzzChunked:5s \
	./httpd/internal/route:FuzzRouteMatch:5s ./httpd/internal/route:FuzzRoutePatterns:5s \
	./httpd:FuzzH2Frames:5s

# fuzz: every fuzz target for FUZZTIME each. Not part of test.
FUZZTIME ?= 5m
fuzz:
	@$(MAKE) --no-print-directory fuzz-short FUZZTIME_EACH=$(FUZZTIME)

# fuzz-short: every fuzz target for its time in FUZZ (or FUZZTIME_EACH),
# minimising what it finds for a few seconds at most.
#
# Go before 1.27 may fail a run just as its -fuzztime ends, on a busy
# machine, with a bare "context deadline exceeded": a race in its fuzzing
# coordinator (go.dev/issue/75804), not a finding. Such a run is reported
# and passes if it found nothing. The race can also strike while a crash
# found in the last seconds is being minimised: Go then writes the input
# to testdata/fuzz but prints no "Failing input written" line. So the run
# passes only with one FAIL, that message, and no failing input minimised
# or written, in the output or in the target's testdata/fuzz; any other
# failure fails.
fuzz-short:
	@set -e; out=$$(mktemp); trap 'rm -f $$out $$out.rc' EXIT; for f in $(FUZZ); do \
		pkg=$${f%%:*}; rest=$${f#*:}; name=$${rest%%:*}; t=$${FUZZTIME_EACH:-$${rest#*:}}; \
		corpus=$$pkg/testdata/fuzz/$$name; before=$$(ls -A $$corpus 2>/dev/null || true); \
		echo "$(GO) test -run '^\$$' -fuzz '^$$name\$$' -fuzztime $$t -fuzzminimizetime 5s $$pkg"; \
		{ rc=0; $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$t -fuzzminimizetime 5s $$pkg || rc=$$?; \
			echo $$rc >$$out.rc; } 2>&1 | tee $$out; \
		rc=$$(cat $$out.rc); [ "$$rc" = 0 ] && continue; \
		if [ "$$(grep -c -e '--- FAIL' $$out)" = 1 ] && grep -qx '    context deadline exceeded' $$out && \
			! grep -q -e 'Failing input written' -e 'minimizing .*failing input' $$out && \
			[ "$$(ls -A $$corpus 2>/dev/null || true)" = "$$before" ]; then \
			echo "fuzz-short: $$name ended on Go's -fuzztime race (go.dev/issue/75804), not a finding"; \
		else exit $$rc; fi; \
	done

clean:
	$(GO) clean -testcache
