package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/valkyria/aio"
)

// options are the knobs every workload reads; flags fill them in main.
type options struct {
	Duration  time.Duration // bounds each duration-based section
	Timers    int           // timers workload: how many timers
	Posts     int           // post workload: total callbacks; 0 means run for Duration
	Producers int           // post workload: posting goroutines
	Handles   int           // handles workloads: create/complete/continue cycles
	Batch     int           // handles workloads: cycles per posted callback
	Chain     int           // chain: links; cancel-tree: handles in the large tree
	Awaits    int           // do-await: suspend/resume round trips
	Spin      time.Duration // pingpong-loops-spin: aio.Config.Spin on both loops
	Timeout   time.Duration // longest any single wait may take before it counts as a hang
	TCPConns  int           // tcp-pound: connections (no flag: tcp.go)
	TCPIdle   int           // tcp-idle: idle connections held (no flag: tcp.go)
	TLSIdle   int           // tls-idle: idle TLS connections held (no flag: tls.go)
	// CPUProfile is the file -cpuprofile writes the run's CPU profile to
	// ("": none).
	CPUProfile string
	// Rows, when not nil, are the only rows to report ("workload/impl",
	// -rows). A workload made of separate sections (tls) also skips the
	// sections of the rows left out, so that each runs alone in its process.
	Rows map[string]bool
}

// wantRow reports whether the row of workload and impl is to be reported.
func (o options) wantRow(workload, impl string) bool {
	return o.Rows == nil || o.Rows[workload+"/"+impl]
}

// parseRows reads -rows, a comma list of rows ("tls-handshake-percore/aio"),
// into the set options.Rows holds and the workloads that make those rows.
func parseRows(list string) (map[string]bool, string, error) {
	rows := map[string]bool{}
	var ws []string
	for _, row := range strings.Split(list, ",") {
		row = strings.TrimSpace(row)
		if row == "" {
			continue
		}
		name, impl, ok := strings.Cut(row, "/")
		if !ok || (impl != "aio" && impl != "gostd") {
			return nil, "", fmt.Errorf("row %q: want workload/aio or workload/gostd", row)
		}
		if _, err := selectWorkloads(name); err != nil {
			return nil, "", fmt.Errorf("row %q: %w", row, err)
		}
		rows[row] = true
		ws = append(ws, name)
	}
	if len(rows) == 0 {
		return nil, "", fmt.Errorf("-rows names no row")
	}
	return rows, strings.Join(ws, ","), nil
}

func defaultOptions() options {
	return options{
		Duration:  2 * time.Second,
		Timers:    1_000_000,
		Producers: 8,
		Handles:   1_000_000,
		Batch:     1000,
		Chain:     1_000_000,
		Awaits:    200_000,
		Spin:      50 * time.Microsecond,
		Timeout:   60 * time.Second,
		TCPConns:  20_000,
		TCPIdle:   10_000,
		TLSIdle:   2000,
	}
}

// workload is one entry of the menu. run returns every row it measured,
// even when it also returns an error (a later part failed).
type workload struct {
	name    string
	aliases []string // row names it produces besides name, accepted by -workload
	run     func(o options) ([]result, error)
}

// workloads is the menu, in the order of a default run. chain is last:
// its Go baseline starts a million goroutines at once, and Go never frees
// a goroutine's record (about 0.5 GB of them stay live, and every later
// GC cycle walks them), which doubled what tls-idle measured per
// connection for both servers when it ran before them.
var workloads = []workload{
	{name: "timers", run: runTimers},
	{name: "post", run: runPost},
	{name: "pingpong-loops", aliases: []string{"pingpong-loops-spin"}, run: runPingPong},
	{name: "handles", aliases: []string{"handles-new"}, run: runHandles},
	{name: "loop-iter", aliases: []string{"loop-iter-fd"}, run: runLoopIter},
	{name: "cancel-tree", aliases: []string{"cancel-tree-small", "cancel-tree-aged"}, run: runCancelTree},
	{name: "do-await", run: runDoAwait},
	{name: "tcp-pingpong", aliases: []string{"tcp-pingpong-2loops", "tcp-pingpong-2loops-spin"}, run: runTCPPingPong},
	{name: "tcp-pound", aliases: []string{"tcp-pound-2loops", "tcp-pound-percore"}, run: runTCPPound},
	{name: "tcp-echo", aliases: []string{"tcp-echo-2loops", "tcp-echo-percore"}, run: runTCPEcho},
	{name: "tcp-proxy", aliases: []string{"tcp-proxy-percore"}, run: runTCPProxy},
	{name: "tcp-idle", run: runTCPIdle},
	{name: "tls", aliases: []string{"tls-handshake", "tls-handshake-percore", "tls-echo", "tls-echo-percore", "tls-idle"}, run: runTLS},
	{name: "tls-storm", aliases: []string{"tls-storm-quiet"}, run: runTLSStorm},
	{name: "chain", run: runChain},
}

// selectWorkloads resolves a comma list of names ("all" for every
// workload) into menu entries, in menu order, each once; a list that
// names none is an error.
func selectWorkloads(list string) ([]workload, error) {
	list = strings.TrimSpace(list)
	if list == "all" {
		return workloads, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for _, w := range workloads {
			if name == w.name || contains(w.aliases, name) {
				want[w.name] = true
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown workload %q (have %s)", name, names())
		}
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("-workload names no workload (have %s, or all)", names())
	}
	var out []workload
	for _, w := range workloads {
		if want[w.name] {
			out = append(out, w)
		}
	}
	return out, nil
}

func names() string {
	var s []string
	for _, w := range workloads {
		s = append(s, w.name)
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startLoops starts one loop per config on a fresh runtime, so that every
// workload begins from an empty slab and no earlier workload's loop competes
// for the CPU.
func startLoops(cfgs ...aio.Config) (*aio.Runtime, []*aio.Loop, error) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	reserveProcs(rt, len(cfgs))
	var ls []*aio.Loop
	for _, c := range cfgs {
		l, err := rt.Start(c)
		if err != nil {
			_ = stopLoops(rt, ls...)
			return nil, nil, fmt.Errorf("start loop %q: %w", c.Name, err)
		}
		ls = append(ls, l)
	}
	return rt, ls, nil
}

// stopLoops stops the loops and waits for their teardown, outside any measured
// section. A loop that does not finish stopping in time is reported rather
// than waited for forever: that is a bug in aio the run should show.
func stopLoops(rt *aio.Runtime, ls ...*aio.Loop) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, l := range ls {
		if _, err := l.Stop().Wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop loop %q: %w (stats %+v)", l.Name(), err, l.Stats()))
		}
	}
	if len(errs) == 0 && rt.Running() != 0 {
		errs = append(errs, fmt.Errorf("runtime still has %d systems after every Stop completed", rt.Running()))
	}
	restoreProcs(rt)
	return errors.Join(errs...)
}

// reserved holds GOMAXPROCS as it was before a runtime's loops reserved a
// spare P, by runtime, until stopLoops puts it back.
var reserved struct {
	sync.Mutex
	prev map[*aio.Runtime]int
}

// reserveProcs gives rt's loops a spare P (aio.ReserveProcs) when they are
// as many as GOMAXPROCS, as aio is deployed with a loop per core; the Go
// standard library rows keep Go's default GOMAXPROCS.
func reserveProcs(rt *aio.Runtime, loops int) {
	if loops < runtime.GOMAXPROCS(0) {
		return
	}
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.prev == nil {
		reserved.prev = make(map[*aio.Runtime]int)
	}
	reserved.prev[rt] = aio.ReserveProcs(loops)
}

// restoreProcs puts GOMAXPROCS back as it was before rt's loops started.
func restoreProcs(rt *aio.Runtime) {
	reserved.Lock()
	defer reserved.Unlock()
	if prev, ok := reserved.prev[rt]; ok {
		runtime.GOMAXPROCS(prev)
		delete(reserved.prev, rt)
	}
}

// await waits for done, at most limit. On timeout it describes the loops, so
// a hang in aio shows where it stopped (how many timers are armed, how many
// callbacks ran, ...).
func await(done <-chan struct{}, limit time.Duration, what string, ls ...*aio.Loop) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		var st []string
		for _, l := range ls {
			st = append(st, fmt.Sprintf("%+v", l.Stats()))
		}
		return fmt.Errorf("%s: not finished after %v (hang?); loops: %s", what, limit, strings.Join(st, "; "))
	}
}

// finisher ends an aio section exactly once, from whichever loop gets there
// first: the normal end, or a Post that failed on the way. Its fields are
// written before done is closed and read after, so the close orders them.
type finisher struct {
	once sync.Once
	done chan struct{}
	end  time.Time
	err  error
}

func newFinisher() *finisher { return &finisher{done: make(chan struct{})} }

// wait waits for finish, up to limit (see await), and returns the error it
// was given.
func (f *finisher) wait(limit time.Duration, what string, ls ...*aio.Loop) error {
	if err := await(f.done, limit, what, ls...); err != nil {
		return err
	}
	return f.err
}

func (f *finisher) finish(err error) {
	f.once.Do(func() {
		f.end = time.Now()
		f.err = err
		close(f.done)
	})
}

// sectionLimit is how long a section expected to take about d may run before
// await calls it a hang.
func (o options) sectionLimit(d time.Duration) time.Duration {
	return d + o.Timeout
}
