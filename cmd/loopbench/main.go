// Command loopbench measures the aio event loop against the Go standard
// library doing the same work, in one process, one after the other, and
// prints both side by side.
//
// Usage:
//
//	go run ./cmd/loopbench [flags]
//
// Workloads (-workload takes a comma list; default all, in this order):
//
//	timers          1,000,000 one-shot timers, timer i due i/1000+1 ms after
//	                its creation (1000 per millisecond, spread over 1 s),
//	                all created by one callback on the loop with aio.Delay; run
//	                until every one fired. seconds = start of creation to the
//	                last firing: creation plus about 1 s. gostd:
//	                time.AfterFunc with the same delays. (libuv counts every
//	                delay from one cached time, so its creation hides under
//	                the 1 s: compare its setup in the reference.)
//	post            8 goroutines Post a callback that increments a counter on
//	                the loop, for -duration (or -posts in all); the section
//	                ends when the loop has run the last one. gostd: a
//	                chan func() of capacity 1024 drained by one goroutine.
//	pingpong-loops  two loops bounce a message with Post (A posts to B, B back
//	                to A) for -duration; ops = round trips. Every hop wakes a
//	                sleeping thread. gostd: two goroutines locked to their OS
//	                threads over unbuffered channels.
//	pingpong-loops-spin
//	                the same with aio.Config{Spin: -spin} on both loops (a row
//	                of the pingpong-loops workload; same gostd baseline).
//	handles         create, continue and complete one handle per cycle
//	                (NewPromise, Then, Resolve), -handles cycles in batches of
//	                -batch per posted callback. gostd: a goroutine per cycle
//	                sends the value on its own buffered channel and the receiver
//	                continues with it.
//	handles-new     the same cycle with aio.New resolving in its executor, then
//	                Then (a row of the handles workload; same baseline).
//	loop-iter       empty loop iterations per second: one callback re-posts
//	                itself for -duration; ops = the loop's Stats().Iterations.
//	                With no fd registered the loop makes no system call.
//	                loop-iter-fd keeps an idle listener in the poller, so
//	                every iteration polls with epoll_wait(0), as libuv's
//	                loop_count does. No Go baseline. Beside loop_count, note
//	                that a poll costs more in a process with more than one
//	                thread (as every Go process has): see loopiter.go.
//	cancel-tree     cancel the root of a two-level tree (All of All of
//	                promises) and time until every handle ended; rows for
//	                10,000 (cancel-tree-small) and -chain handles, and
//	                cancel-tree-aged for the large tree after its leaves were
//	                tracked weakly. gostd: the same tree of context.WithCancel.
//	do-await        a Do body awaits promises resolved by callbacks it posts;
//	                ops = suspend/resume round trips (-awaits). gostd: a
//	                request/reply over unbuffered channels.
//	tcp-pingpong    one TCP connection over loopback, 5-byte round trips for
//	                -duration, server and client on one loop (TCP_NODELAY);
//	                tcp-pingpong-2loops puts the client on a second loop,
//	                tcp-pingpong-2loops-spin makes both of those spin (-spin).
//	                gostd: net with a goroutine per side.
//	tcp-pound       100 client slots connect, write 2 bytes, read the echo and
//	                close, 20,000 connections; reports conns/s and CPU seconds.
//	                tcp-pound-2loops puts the clients on a second loop,
//	                tcp-pound-percore runs a loop per core, each accepting
//	                (SO_REUSEPORT) and running its share of the clients.
//	tcp-echo        64 connections echoing 4 KiB messages for -duration
//	                (throughput in MB/s = ops/s × 4 KiB); tcp-echo-2loops puts
//	                the clients on a second loop, tcp-echo-percore runs a loop
//	                per core as tcp-pound-percore does.
//	tcp-proxy       16 clients ↔ proxy ↔ echo upstream, 64 KiB messages for
//	                -duration; the clients and the upstream are Go net
//	                goroutines in a child process, shared by every row, so
//	                cpu_s is the proxy's alone. aio: Listen, Dial and Pipe on
//	                one loop (tcp-proxy-percore: a loop per core, a listener
//	                each); gostd: io.Copy each way on net.
//	tcp-idle        memory per idle connection: 10,000 connections held open
//	                from a child process; HeapAlloc+StackInuse delta / 10,000.
//	tls             crypto/tls served on one loop (ListenConfig.TLS) against a
//	                goroutine per connection, the same crypto/tls clients in a
//	                child process: tls-handshake (full TLS 1.3 handshakes, 16
//	                clients), tls-echo (16 conns, 16 KiB messages, p99 in
//	                config), each also -percore (the aio server on a loop
//	                per core, a listener each), tls-idle (memory per idle
//	                TLS connection, 2,000).
//	tls-storm       one loop serving plaintext GET /health (httpd) and a TLS
//	                listener: /health's p99 over 8 keep-alive connections
//	                from a child process (as wrk -c8 --latency), alone
//	                (tls-storm-quiet) and while 16 clients in another child
//	                storm full TLS handshakes on the same loop (tls-storm).
//	chain           a Then chain of -chain links (default 1,000,000), built and
//	                completed in one callback; ops = links. gostd: a pipeline
//	                of one goroutine per stage over unbuffered channels
//	                (last: Go never frees the records of its million
//	                goroutines, which would weigh on every later row).
//	                (The TCP workloads are described in more detail in tcp.go
//	                and proxy.go. A -percore row is how the runtime is
//	                deployed: loops = cores, GOMAXPROCS of them.)
//
// A row that runs as many loops as GOMAXPROCS (the -percore rows; the
// -2loops rows and pingpong-loops on two cores) runs with one P to spare,
// as aio.ReserveProcs recommends: GOMAXPROCS is loops+1 while its loops
// run (the JSON's gomaxprocs field says so) and back to Go's default for
// the next row. The Go standard library rows run with Go's default.
//
// Each row reports ops, seconds, ops/s, ns/op, allocs/op and bytes/op (from
// runtime.ReadMemStats around the section, so they include whatever every
// goroutine of the process allocated meanwhile, the loop's own bookkeeping
// included), the process CPU seconds of the section (getrusage: a spinning
// loop burns CPU a sleeping one does not), ops per CPU-second (ops /
// cpu_s) and, for aio rows, the ratios of their ops/s and of their ops per
// CPU-second to the gostd baseline's. Every aio workload starts its own
// Runtime and loops and stops them after the section; runtime.GC runs before
// each section.
//
// Flags:
//
//	-workload LIST  comma list of workloads (default all)
//	-duration D     length of each duration-based section (default 2s)
//	-json           one JSON object per line instead of a table: workload,
//	                impl, ops, seconds, ops_per_sec, ns_per_op, allocs_per_op,
//	                bytes_per_op, cpu_seconds, ops_per_cpu_sec, and extras
//	                (ratio_vs_gostd, cpu_ratio_vs_gostd, setup_seconds,
//	                config, gomaxprocs, reference)
//	-timers N       timers to create (default 1000000)
//	-posts N        post: total callbacks instead of running for -duration
//	-producers N    post: posting goroutines (default 8)
//	-chain N        chain: links; cancel-tree: handles in the large tree
//	-awaits N       do-await: round trips (default 200000)
//	-handles N      handles: cycles per row (default 1000000; a row stops
//	                early, at a batch boundary, after 5×-duration)
//	-batch N        handles: cycles per posted callback (default 1000)
//	-spin D         pingpong-loops-spin, tcp-pingpong-2loops-spin: Config.Spin (default 50µs)
//	-timeout D      how long a wait may last before it is reported as a hang
//	                (default 60s, on top of the section's expected length)
//	-cpuprofile F   write a CPU profile of the whole run to F (go tool pprof;
//	                samples carry a workload label: -tagfocus workload=NAME)
//	-rows LIST      comma list of rows (workload/impl) instead of -workload:
//	                runs their workloads and prints only these rows; the tls
//	                workload runs no section but theirs, so that a row can
//	                be measured alone in its process (the first section of
//	                a process pays its warm-up)
//
// A default run takes about two minutes. The exit status is 1 if any workload
// failed (a hang, a wrong count, a loop that would not stop); the rows that
// did run are printed anyway. It is 2, with nothing run, for a usage error:
// an unknown flag, workload or row, a list that names none, a count or
// duration out of range.
//
// # Comparing with libuv
//
// Every workload's gostd row is the Go standard library baseline, measured
// in the same run. To compare with libuv, write or take the equivalent C
// programs (million timers, an async ping-pong between two loops, an empty
// loop counting its iterations) and run them in the same sitting on a quiet
// machine, then go run ./cmd/loopbench -json. The matching figures are:
// timers seconds with the C program's total time (libuv's setup counted);
// pingpong-loops with a blocking async ping-pong, pingpong-loops-spin with a
// spinning one (round trips per second); loop-iter with iterations per
// second. post and handles have no libuv counterpart: their gostd rows are
// the baseline. Run under GOMAXPROCS=1 as well to compare with single-core
// figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it parses args, runs the selected
// workloads and prints to stdout, reporting failures to stderr. It returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o, sel, asJSON, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "loopbench:", err)
		return 2
	}
	if o.CPUProfile != "" {
		stop, err := startCPUProfile(o.CPUProfile)
		if err != nil {
			fmt.Fprintln(stderr, "loopbench:", err)
			return 2
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintln(stderr, "loopbench:", err)
			}
		}()
	}
	var (
		all    []result
		failed bool
	)
	for _, w := range sel {
		var rs []result
		var err error
		// The label follows the goroutines the workload starts (its loops
		// among them), so that a profile of several workloads splits by
		// workload (pprof -tagfocus workload=tcp-echo).
		pprof.Do(context.Background(), pprof.Labels("workload", w.name), func(context.Context) {
			rs, err = w.run(o)
		})
		rs = slices.DeleteFunc(rs, func(r result) bool { return !o.wantRow(r.Workload, r.Impl) })
		annotate(rs)
		if err != nil {
			failed = true
			fmt.Fprintf(stderr, "loopbench: %s: %v\n", w.name, err)
		}
		if asJSON {
			// Streamed workload by workload: a long run shows progress and a
			// later hang does not lose what was measured.
			if err := writeJSON(stdout, rs); err != nil {
				fmt.Fprintln(stderr, "loopbench:", err)
				return 1
			}
		}
		all = append(all, rs...)
	}
	if !asJSON {
		if err := writeTable(stdout, all); err != nil {
			fmt.Fprintln(stderr, "loopbench:", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
}

// parseFlags turns the command line into options and the workloads to run.
func parseFlags(args []string, stderr io.Writer) (options, []workload, bool, error) {
	o := defaultOptions()
	fs := flag.NewFlagSet("loopbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.String("workload", "all", "comma list of workloads: "+names()+" (or all)")
	asJSON := fs.Bool("json", false, "print one JSON object per line instead of a table")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "length of each duration-based section")
	fs.IntVar(&o.Timers, "timers", o.Timers, "timers: how many timers")
	fs.IntVar(&o.Posts, "posts", o.Posts, "post: total callbacks (0: post for -duration)")
	fs.IntVar(&o.Producers, "producers", o.Producers, "post: posting goroutines")
	fs.IntVar(&o.Handles, "handles", o.Handles, "handles: cycles per row")
	fs.IntVar(&o.Batch, "batch", o.Batch, "handles: cycles per posted callback")
	fs.IntVar(&o.Chain, "chain", o.Chain, "chain: links; cancel-tree: handles in the large tree")
	fs.IntVar(&o.Awaits, "awaits", o.Awaits, "do-await: round trips")
	fs.DurationVar(&o.Spin, "spin", o.Spin, "pingpong-loops-spin, tcp-pingpong-2loops-spin: aio.Config.Spin of both loops")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long a wait may last beyond its expected length before it counts as a hang")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	rows := fs.String("rows", "", "comma list of rows (workload/impl, as tls-handshake-percore/aio) to run and print, instead of -workload")
	if err := fs.Parse(args); err != nil {
		return o, nil, false, err
	}
	if fs.NArg() > 0 {
		return o, nil, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.Duration <= 0 || o.Timeout <= 0 {
		return o, nil, false, fmt.Errorf("-duration and -timeout must be positive")
	}
	if err := o.checkCounts(); err != nil {
		return o, nil, false, err
	}
	if *rows != "" {
		var names string
		var err error
		if o.Rows, names, err = parseRows(*rows); err != nil {
			return o, nil, false, err
		}
		if *list != "all" {
			return o, nil, false, fmt.Errorf("-rows and -workload together")
		}
		*list = names
	}
	sel, err := selectWorkloads(*list)
	return o, sel, *asJSON, err
}

// checkCounts says what is wrong with the counts, if anything: a usage
// error before anything runs, not a failed workload after the others ran.
// The workloads check their own too, for callers that build options.
func (o options) checkCounts() error {
	switch {
	case o.Timers <= 0:
		return fmt.Errorf("-timers must be positive")
	case o.Handles <= 0 || o.Batch <= 0:
		return fmt.Errorf("-handles and -batch must be positive")
	case o.Chain <= 0:
		return fmt.Errorf("-chain must be positive")
	case o.Awaits <= 0:
		return fmt.Errorf("-awaits must be positive")
	case o.Producers <= 0 || o.Posts != 0 && o.Posts < o.Producers:
		return fmt.Errorf("-producers must be positive, and -posts 0 or at least -producers")
	case o.Spin < 0:
		return fmt.Errorf("-spin must not be negative")
	}
	return nil
}

// startCPUProfile starts profiling the process's CPU into path; stop ends
// the profile and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
