package aio

// The helpers of the package's tests, in one place. Every test starts its
// loops with startLoop (or startLoopOn, for several loops on one runtime it
// checks); goroutine leaks are checked once, by TestMain (main_test.go), and
// at a given point of a test by requireNoLeak.

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/require"

	"github.com/valkyria/aio/internal/sock"
)

// waitTimeout bounds every blocking wait in the tests: a hang fails the test
// instead of the whole run.
const waitTimeout = 60 * time.Second

// deepTimeout bounds the waits of the deep-graph tests instead (deepN):
// building, settling or cancelling their graphs took some 10-30 s of CPU
// when the race run built a million handles, and make test's other
// packages, running alongside on a 2-core CI machine at a load of 9-13,
// stretch even today's smaller ones; a million without the detector takes
// a few seconds. A hang still fails, in minutes, well inside make test's
// -timeout.
const deepTimeout = 5 * time.Minute

// errBoom is the tests' stock failure.
var errBoom = errors.New("boom")

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newRuntime returns a runtime that is shut down when the test ends: every
// loop still running on it is stopped, bounded by waitTimeout, and no slot
// may be held after (Stop is idempotent: tests may stop loops themselves).
func newRuntime(t testing.TB, cfg RuntimeConfig) *Runtime {
	t.Helper()
	rt := NewRuntime(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx), "the test's loops did not stop in time")
		require.Equal(t, 0, rt.Running(), "a stopped loop kept its slot")
	})
	return rt
}

// startLoop starts a loop on a runtime of its own, named after the test
// unless cfg names it, and stops it when the test ends (see newRuntime).
func startLoop(t testing.TB, cfg ...Config) *Loop {
	t.Helper()
	return startLoopOn(t, newRuntime(t, RuntimeConfig{}), cfg...)
}

// startLoopOn is startLoop on rt (made by newRuntime, which stops the loop),
// for tests of the runtime or of several loops sharing one.
func startLoopOn(t testing.TB, rt *Runtime, cfg ...Config) *Loop {
	t.Helper()
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.Name == "" {
		c.Name = t.Name()
	}
	l, err := rt.Start(c)
	require.NoError(t, err)
	return l
}

// requireNoLeak requires that no goroutine but the test's own is left at
// this point (TestMain checks the whole run; this names the point).
func requireNoLeak(t testing.TB, msg string) {
	t.Helper()
	require.NoError(t, goleak.Find(), msg)
}

// holdLoop blocks l in a posted callback until release is called (at the
// latest when the test ends), and returns once that callback runs: what
// happens meanwhile lands in l's next poll batch.
func holdLoop(t testing.TB, l *Loop) (release func()) {
	t.Helper()
	held, hold := make(chan struct{}), make(chan struct{})
	require.NoError(t, l.Post(func() { close(held); <-hold }))
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	recv(t, held)
	return release
}

// heldStop starts a loop, holds it in a callback and stops it: Stop's handle
// stays pending until release lets the callback return.
func heldStop(t *testing.T) (rt *Runtime, stop *Handle[struct{}], release func()) {
	rt = newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	release = holdLoop(t, l) // teardown waits behind this callback
	return rt, l.Stop(), release
}

// onLoop runs fn on l and waits for it.
func onLoop(t testing.TB, l *Loop, fn func()) {
	t.Helper()
	onLoopWithin(t, l, waitTimeout, fn)
}

// onLoopWithin is onLoop failing the test after d.
func onLoopWithin(t testing.TB, l *Loop, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, l.Post(func() { defer close(done); fn() }))
	recvWithin(t, d, done)
}

// recv receives from ch, failing the test after waitTimeout.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	return recvWithin(t, waitTimeout, ch)
}

// recvWithin is recv failing the test after d.
func recvWithin[T any](t testing.TB, d time.Duration, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("nothing received in %v", d)
		panic("unreachable")
	}
}

// wait waits for h and returns its outcome.
func wait[T any](t testing.TB, h *Handle[T]) (T, error) {
	t.Helper()
	return waitWithin(t, waitTimeout, h)
}

// waitWithin is wait failing the test after d.
func waitWithin[T any](t testing.TB, d time.Duration, h *Handle[T]) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	v, err := h.Wait(ctx)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "handle did not finish in %v", d)
	return v, err
}

// buildChain builds, in one callback on l, a promise followed by depth links
// made by extend, and returns the promise and the far end of the chain.
func buildChain(t testing.TB, l *Loop, depth int, extend func(*Handle[int]) *Handle[int]) (*Promise[int], *Handle[int]) {
	t.Helper()
	var p *Promise[int]
	var last *Handle[int]
	onLoopWithin(t, l, deepTimeout, func() {
		p = NewPromise[int](l)
		last = p.Handle()
		for i := 0; i < depth; i++ {
			last = extend(last)
		}
	})
	return p, last
}

// deepN is the size of the deep-graph tests (seeds UT-10, UT-12, NFR-3):
// 1,000,000 handles, 100,000 under -short or the race detector. Either is
// far beyond what a walk of the graph by recursion survives under
// boundStack. The race detector makes a million handles cost some two
// minutes of a 2-core machine, the longest stretch of make test, while the
// graph code the detector checks is the same at any size; so make test runs
// these tests once more at full size without it, selecting them by name:
// a test that asks for deepN must be named TestDeep..., and fails if not.
func deepN(t testing.TB) int {
	t.Helper()
	require.True(t, strings.HasPrefix(t.Name(), "TestDeep"),
		"%s sizes by deepN, so its name must start with TestDeep for make test's full-size run", t.Name())
	if testing.Short() || sock.RaceEnabled {
		return 100_000
	}
	return 1_000_000
}

// deepStackLimit is the most stack any goroutine may use under boundStack:
// ample for the loop walking a graph with its job queue whatever the depth,
// and exhausted by a recursion of a few thousand links (each link takes
// several frames of a few hundred bytes: schedFinish, finish, finishRest,
// the dependent's inputDone...).
const deepStackLimit = 256 << 10

// boundStack limits every goroutine's stack to deepStackLimit until the test
// ends, so that a graph walked by recursion instead of iteratively fails the
// run with "goroutine stack exceeds 262144-byte limit" naming the frames.
// (The limit is process-wide: tests that use it must not run in parallel.)
func boundStack(t testing.TB) {
	t.Helper()
	old := debug.SetMaxStack(deepStackLimit)
	t.Cleanup(func() { debug.SetMaxStack(old) })
}

// deepChain starts a loop under boundStack and checks chains of deepN()
// links made by extend, each adding one to its input: resolving the root
// with 0 gives deepN() at the far end, and cancelling the far end withdraws
// interest link by link down to the root, which ends cancelled with its
// cleanups run. It returns the loop and a builder of such chains.
func deepChain(t *testing.T, extend func(*Loop, *Handle[int]) *Handle[int]) (*Loop, func() (*Promise[int], *Handle[int])) {
	t.Helper()
	depth := deepN(t)
	boundStack(t)
	l := startLoop(t)
	build := func() (*Promise[int], *Handle[int]) {
		return buildChain(t, l, depth, func(h *Handle[int]) *Handle[int] { return extend(l, h) })
	}
	p, last := build()
	p.Resolve(0)
	v, err := waitWithin(t, deepTimeout, last)
	require.NoError(t, err)
	require.Equal(t, depth, v)

	p, last = build()
	var rootCleanup atomic.Bool
	p.Handle().OnCleanup(func() { rootCleanup.Store(true) })
	require.True(t, last.Cancel())
	_, err = waitWithin(t, deepTimeout, p.Handle())
	require.ErrorIs(t, err, ErrCancelled, "cancellation withdrew interest down the whole chain")
	require.True(t, rootCleanup.Load())
	return l, build
}

// fdCount is the number of fds the process has open.
func fdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd here: %v", err)
	}
	return len(ents)
}

// raceStop starts a loop, lets `producers` goroutines create handles with mk
// in a loop until the loop refuses them, stops the loop 200 µs in (a window
// for the race, not synchronisation), and checks that Stop completes, that
// every producer call returns, and that every handle created ends: nothing is
// left pending after Stop, whatever the interleaving. It repeats for
// stopRaceRounds rounds.
func raceStop(t *testing.T, producers int, mk func(l *Loop) *Handle[int]) {
	t.Helper()
	for iter := 0; iter < stopRaceRounds(); iter++ {
		l := startLoop(t)
		var mu sync.Mutex
		var hs []*Handle[int]
		var wg sync.WaitGroup
		for g := 0; g < producers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					h := mk(l)
					mu.Lock()
					hs = append(hs, h)
					mu.Unlock()
					if _, err := h.Result(); err == ErrStopped {
						return
					}
				}
			}()
		}
		time.Sleep(200 * time.Microsecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := l.Stop().Wait(ctx)
		if err != nil {
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
		}
		require.NoError(t, err, "round %d: Stop hung", iter)
		returned := make(chan struct{})
		go func() { wg.Wait(); close(returned) }()
		select {
		case <-returned:
		case <-ctx.Done():
			t.Fatalf("round %d: a producer call racing Stop never returned", iter)
		}
		for i, h := range hs {
			select {
			case <-h.Done():
			case <-ctx.Done():
				t.Fatalf("round %d: handle %d is %v forever after Stop (Stats %+v)", iter, i, h.Status(), l.Stats())
			}
		}
		cancel()
	}
}

// stopRaceRounds is how many start/race/stop rounds the Stop race tests run:
// 40 by default (a few seconds under -race), AIO_STOP_RACE_ROUNDS to soak.
func stopRaceRounds() int {
	if n, err := strconv.Atoi(os.Getenv("AIO_STOP_RACE_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 40
}

// goexitStopWithin is how long a Goexit test waits for what should be
// immediate.
const goexitStopWithin = 3 * time.Second

// requireStops requires Stop's handle to complete within goexitStopWithin;
// if it does not, rescue first undoes what the regression left (so that the
// failure leaks nothing into the run), then the test fails with msg.
func requireStops(t *testing.T, l *Loop, rescue func(), msg string) {
	t.Helper()
	if doneWithin(l.Stop()) {
		return
	}
	rescue()
	t.Fatal(msg)
}

// requireStopsCut is requireStops for a loop where a runtime.Goexit cut
// the terminal transition of c short: teardown must find c's record
// listed and run its cleanups. The rescue finishes the record by hand.
func requireStopsCut(t *testing.T, l *Loop, c *core) {
	t.Helper()
	requireStops(t, l, func() {
		_ = l.enqueue(func() { c.rare.rec.finish() }, stateStopping)
		_, _ = l.Stop().Wait(testCtx(t))
	}, "Stop's handle did not complete")
}

// doneWithin reports whether h is done within goexitStopWithin.
func doneWithin[T any](h *Handle[T]) bool {
	select {
	case <-h.Done():
		return true
	case <-time.After(goexitStopWithin):
		return false
	}
}

// rescueStop finishes, on a goroutine of its own acting as the loop, the
// teardown that a loop goroutine killed by a second Goexit never did: the
// work pool's goroutines exit, the poller closes, the slot comes back and
// Stop's handle completes. Only for loops without Do bodies (a coroutine
// cannot be resumed off its thread).
func rescueStop(t *testing.T, l *Loop) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.postMu.Lock()
		if l.state.Load() == stateRunning {
			l.state.Store(stateStopping)
		}
		l.postMu.Unlock()
		g := getg()
		l.loopG.Store(g)
		l.ownerG.Store(g)
		l.teardown()
		l.finishStop()
	}()
	recv(t, done)
}

// collectUntil runs the garbage collector until ch receives (the cleanup of
// an abandoned handle reporting, say) and returns what it received, failing
// the test after waitTimeout. The collector offers no event to wait on, so
// it is polled.
func collectUntil[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		runtime.GC()
		select {
		case v := <-ch:
			return v
		case <-time.After(10 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "nothing was collected in time")
	}
}

// requireAbandoned waits, running the collector, for the cleanup of a
// handle dropped on l to report on ran whether it ran on l, and checks that
// it did and that l counted the handle as abandoned and has none left.
func requireAbandoned(t testing.TB, l *Loop, ran <-chan bool) {
	t.Helper()
	require.True(t, collectUntil(t, ran), "an abandoned handle's cleanups run on its loop")
	onLoop(t, l, func() {})
	require.Equal(t, uint64(1), l.Stats().Abandoned)
	require.Equal(t, 0, l.Stats().Handles)
}
